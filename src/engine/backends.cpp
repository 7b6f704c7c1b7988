#include "engine/backends.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string_view>

#include "core/arm_level.hpp"
#include "core/crash.hpp"
#include "core/error.hpp"
#include "core/last_word.hpp"
#include "core/utf8.hpp"
#include "core/watchdog.hpp"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#include "ggml.h"
#include "llama.h"

#ifndef SB_LLAMA_TAG
#define SB_LLAMA_TAG "unknown"
#endif
#ifndef SB_LLAMA_COMMIT
#define SB_LLAMA_COMMIT "unknown"
#endif

namespace fs = std::filesystem;

namespace sb {
namespace {

bool g_initialised = false;
bool g_dynamic = false;
// Module name ("blas") -> device types it registered when it was last loaded, so that an
// unloaded module is still known to be an accelerator.
std::map<std::string, std::vector<std::string>> g_module_device_names;
std::set<std::string> g_accel_modules;
// Accelerator module -> models alive that were placed while it was loaded (and may use it):
// select_devices() does not unload a held module under them.
std::map<std::string, int> g_held_modules;

std::mutex g_llama_error_mu;
// The error lines since take_llama_error(s), first first (kLlamaErrorsKept at most).
std::vector<std::string> g_llama_errors;
bool g_llama_error_open = false;  // the last line has not ended yet (llama.cpp logs in pieces)
constexpr size_t kLlamaErrorsKept = 16;

FatalHandler g_fatal_handler = nullptr;

// ggml's abort message (GGML_ABORT("... %s\n")), as one line, to the handler main() installed.
void fatal_one_line(const char* message) {
    const std::string line = llama_text_line(message ? message : "");
    g_fatal_handler(line.c_str());
}

// Device name ("Vulkan0") -> what its backend said of it as it started (gpu_device_line).
std::mutex g_gpu_lines_mu;
std::map<std::string, GpuDeviceLine> g_gpu_lines;
// The module loader's last error (from the log callback, under g_gpu_lines_mu), and by module
// name why it could not be loaded (kept by load_module, on the loading thread).
std::string g_load_error;
std::map<std::string, std::string> g_module_errors;
bool g_echo_log = false;  // STAGEBENCH_LLAMA_LOG=1: llama.cpp's log on stderr too

void quiet_log(enum ggml_log_level level, const char* text, void*) {
    // llama.cpp logs to stderr by default; stagebench keeps stderr for its own progress, and
    // keeps the first error, the reason behind a failed call, for the message it gives, and
    // what GPU backends say of their devices as they start (the driver `devices` shows).
    if (text && std::string_view(text).substr(0, 14) == "load_backend: ") {
        // ggml's module loader: why a module could not be loaded is that module's note
        // (list_modules), not the reason behind the next failed call.
        if (level == GGML_LOG_LEVEL_ERROR ||
            std::string_view(text).find("not supported") != std::string_view::npos) {
            std::lock_guard<std::mutex> lock(g_gpu_lines_mu);
            g_load_error = llama_reason(text);
        }
    } else {
        record_llama_log(level, text);
    }
    if (text)
        if (auto line = gpu_device_line(text)) {
            std::lock_guard<std::mutex> lock(g_gpu_lines_mu);
            g_gpu_lines[line->device] = std::move(*line);
        }
    if (g_echo_log && text)
        std::fputs(text, stderr);
}

}  // namespace

void record_llama_log(int level, const char* text) {
    if (!text)
        return;
    std::lock_guard<std::mutex> lock(g_llama_error_mu);
    const bool cont = level == GGML_LOG_LEVEL_CONT && g_llama_error_open;
    if (level != GGML_LOG_LEVEL_ERROR && !cont) {
        g_llama_error_open = false;
        return;
    }
    if (!cont) {
        if (g_llama_errors.size() >= kLlamaErrorsKept)
            return;  // the first ones say why
        g_llama_errors.emplace_back();
    }
    std::string_view t(text);
    g_llama_error_open = t.empty() || t.back() != '\n';
    if (!g_llama_error_open)
        t.remove_suffix(1);
    std::string& line = g_llama_errors.back();
    if (line.size() < 4096)
        line.append(t.substr(0, 4096 - line.size()));
}

std::vector<std::string> take_llama_errors() {
    std::vector<std::string> lines;
    {
        std::lock_guard<std::mutex> lock(g_llama_error_mu);
        lines.swap(g_llama_errors);
        g_llama_error_open = false;
    }
    for (auto& line : lines)
        line = llama_reason(std::move(line));
    return lines;
}

std::string take_llama_error() {
    std::vector<std::string> lines = take_llama_errors();
    return lines.empty() ? std::string() : std::move(lines.front());
}

std::string llama_reason(std::string e) {
    e = llama_text_line(e);
    // "llama_model_load: error loading model: unknown model architecture: 'x'": the function
    // names in front say nothing to a user.
    for (;;) {
        const size_t colon = e.find(": ");
        if (colon == std::string::npos || colon == 0)
            break;
        const std::string_view head(e.data(), colon);
        const bool name = std::all_of(head.begin(), head.end(), [](char c) {
            return std::islower(static_cast<unsigned char>(c)) || c == '_' ||
                   std::isdigit(static_cast<unsigned char>(c));
        });
        if (!name && head != "error loading model")
            break;
        e.erase(0, colon + 2);
    }
    return valid_utf8(e);
}

std::optional<GpuDeviceLine> gpu_device_line(std::string_view t) {
    auto trim = [](std::string_view v) {
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front())))
            v.remove_prefix(1);
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())))
            v.remove_suffix(1);
        return v;
    };
    // The digits at the front of v, taken off; nullopt when there are none.
    auto index = [](std::string_view& v) -> std::optional<std::string> {
        size_t n = 0;
        while (n < v.size() && n < 4 && std::isdigit(static_cast<unsigned char>(v[n])))
            ++n;
        if (n == 0)
            return std::nullopt;
        std::string i(v.substr(0, n));
        v.remove_prefix(n);
        return i;
    };
    t = trim(t);
    constexpr std::string_view vk = "ggml_vulkan: ", cuda = "Device ";
    if (t.substr(0, vk.size()) == vk) {
        // "<i> = <name> (<driver>) | uma: ..."; the name may hold parentheses of its own.
        t.remove_prefix(vk.size());
        auto i = index(t);
        const size_t bar = t.find(" | ");
        if (!i || t.substr(0, 3) != " = " || bar == std::string_view::npos)
            return std::nullopt;
        const std::string_view head = t.substr(3, bar - 3);
        const size_t open = head.rfind(" (");
        if (head.empty() || head.back() != ')' || open == std::string_view::npos)
            return std::nullopt;
        return GpuDeviceLine{"Vulkan" + *i,
                             valid_utf8(std::string(head.substr(open + 2, head.size() - open - 3))),
                             valid_utf8(std::string(trim(t.substr(bar + 3))))};
    }
    if (t.substr(0, cuda.size()) == cuda) {
        // "<i>: <name>, <the rest>"
        t.remove_prefix(cuda.size());
        auto i = index(t);
        const size_t comma = t.find(", ");
        if (!i || t.substr(0, 2) != ": " || comma == std::string_view::npos)
            return std::nullopt;
        return GpuDeviceLine{"CUDA" + *i, std::nullopt,
                             valid_utf8(std::string(trim(t.substr(comma + 2))))};
    }
    return std::nullopt;
}

std::string llama_library_dir() {
    if (const char* env = std::getenv("STAGEBENCH_BACKEND_DIR"); env && *env)
        return env;
    // The directory of the libllama.so this process runs with: the llama.cpp build a build tree
    // links (its RUNPATH), a dist's lib/ ($ORIGIN/../lib), or wherever a user's loader found
    // it. Nothing of the machine that built stagebench is compiled in, so a dist moved to
    // another machine never looks into a build tree or cache it cannot have.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&llama_backend_init), &info) && info.dli_fname) {
        std::error_code ec;
        const fs::path lib = fs::canonical(info.dli_fname, ec);
        if (!ec)
            return lib.parent_path().string();
    }
    return {};
}

namespace {

// The score ggml gives a CPU variant module on this CPU (ggml_backend_score: 0 when the CPU
// lacks an instruction the variant uses), read the way ggml_backend_load_best does.
int variant_score(const fs::path& file) {
    void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    using score_fn_t = int (*)();
    auto score = reinterpret_cast<score_fn_t>(dlsym(h, "ggml_backend_score"));
    const int s = score ? score() : 0;
    dlclose(h);
    return s;
}

std::optional<std::vector<std::string>> read_cpu_features() {
    // The hwcaps (core/arm_level.hpp), not /proc/cpuinfo: under qemu-user the file is the
    // host's, the hwcaps are those of the emulated CPU. Named as ggml's variants name them.
    const auto hw = this_cpu_arm_features();
    if (!hw)
        return std::nullopt;
    std::vector<std::string> out;
    const std::pair<const char*, const char*> names[] = {
        {"asimddp", "dotprod"}, {"asimdhp", "fp16"}, {"sve", "sve"},
        {"sve2", "sve2"},       {"i8mm", "i8mm"},    {"sme", "sme"},
    };
    for (const auto& [kernel, ggml] : names)
        if (hw->count(kernel))
            out.push_back(ggml);
    return out;
}

// With GGML_CPU_ALL_VARIANTS the CPU backend is one module per instruction-set level
// (libggml-cpu-armv8.2_1.so...): the best this CPU runs stands for "cpu", as in ggml's own
// loader, so that exactly one CPU device is registered. Chosen once per process.
std::optional<std::pair<std::string, fs::path>> g_cpu_variant;
bool g_cpu_variant_chosen = false;

std::string type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU:
            return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU:
            return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU:
            return "igpu";
        case GGML_BACKEND_DEVICE_TYPE_ACCEL:
            return "accel";
        default:
            return "other";
    }
}

// Module files in the backend directory: "cpu" -> /path/libggml-cpu.so.
std::map<std::string, fs::path> module_files() {
    std::map<std::string, fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(llama_library_dir(), ec)) {
        const std::string f = e.path().filename().string();
        if (f.rfind("libggml-", 0) != 0 || f.size() < 12 || f.substr(f.size() - 3) != ".so")
            continue;
        std::string name = f.substr(8, f.size() - 11);
        if (name == "base")
            continue;
        out.emplace(name, e.path());
    }
    std::vector<std::pair<std::string, fs::path>> variants;
    for (auto it = out.begin(); it != out.end();) {
        if (it->first.rfind("cpu-", 0) == 0) {
            variants.emplace_back(it->first.substr(4), it->second);
            it = out.erase(it);
        } else {
            ++it;
        }
    }
    if (!variants.empty() && !out.count("cpu")) {
        if (!g_cpu_variant_chosen) {
            g_cpu_variant_chosen = true;
            int best = 0;
            for (const auto& v : variants)
                if (int score = variant_score(v.second); score > best) {
                    best = score;
                    g_cpu_variant = v;
                }
        }
        if (g_cpu_variant)
            out.emplace("cpu", g_cpu_variant->second);
    }
    return out;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// The module that registered device dev ("BLAS" -> "blas"), if known.
std::optional<std::string> module_of(const std::string& dev) {
    for (const auto& [module, names] : g_module_device_names)
        if (std::find(names.begin(), names.end(), dev) != names.end())
            return module;
    return std::nullopt;
}

ggml_backend_reg_t find_reg(const std::string& module) {
    for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        if (lower(ggml_backend_reg_name(reg)) == module)
            return reg;
    }
    return nullptr;
}

// Why a module file could not be loaded, for `devices` and a device that is not there. A module
// whose backend does not start (its init returns no registry: ggml's loader says only
// "ggml_backend_init returned NULL") is named for what a user can fix.
std::string module_load_note(const std::string& module, const std::string& why) {
    if (why.empty())
        return "ggml could not load it";
    if (why.find("ggml_backend_init returned NULL") == std::string::npos)
        return why;
    if (module == "vulkan")
        return "the Vulkan loader found no driver it could start (no ICD installed, or none "
               "creates an instance): install the GPU's Vulkan driver (Mesa's "
               "mesa-vulkan-drivers, or the vendor's); `vulkaninfo --summary` shows what the "
               "loader finds";
    if (module == "cuda")
        return "the CUDA runtime did not start (no NVIDIA driver, or one older than the "
               "toolkit the module was built with; nvidia-smi tells)";
    return "its backend did not start on this machine (ggml_backend_init returned NULL)";
}

ggml_backend_reg_t load_module(const std::string& module) {
    if (auto* reg = find_reg(module))
        return reg;
    auto files = module_files();
    auto it = files.find(module);
    if (it == files.end())
        return nullptr;
    {
        std::lock_guard<std::mutex> lock(g_gpu_lines_mu);
        g_load_error.clear();
    }
    ggml_backend_reg_t reg = ggml_backend_load(it->second.c_str());
    if (!reg) {
        std::string why;
        {
            std::lock_guard<std::mutex> lock(g_gpu_lines_mu);
            why.swap(g_load_error);
        }
        g_module_errors[module] = module_load_note(module, why);
        return nullptr;
    }
    g_module_errors.erase(module);
    auto& names = g_module_device_names[module];
    names.clear();
    bool all_accel = ggml_backend_reg_dev_count(reg) > 0;
    for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
        ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, i);
        names.push_back(ggml_backend_dev_name(dev));
        all_accel = all_accel && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL;
    }
    if (all_accel)
        g_accel_modules.insert(module);
    return reg;
}

DeviceInfo describe(ggml_backend_dev_t dev) {
    DeviceInfo d;
    d.name = ggml_backend_dev_name(dev);
    d.description = ggml_backend_dev_description(dev);
    d.type = type_name(ggml_backend_dev_type(dev));
    d.backend = ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev));
    ggml_backend_dev_props props{};
    ggml_backend_dev_get_props(dev, &props);
    if (props.memory_total > 0) {
        d.memory_total_bytes = props.memory_total;
        d.memory_free_bytes = props.memory_free;
    }
    if (props.device_id && *props.device_id)
        d.device_id = valid_utf8(props.device_id);
    std::lock_guard<std::mutex> lock(g_gpu_lines_mu);
    if (auto it = g_gpu_lines.find(d.name); it != g_gpu_lines.end()) {
        d.driver = it->second.driver;
        d.details = it->second.details;
    }
    return d;
}

// A socket connected to endpoint within timeout_ms (non-blocking, close-on-exec); throws
// sb::Error(input) naming the endpoint when it cannot be resolved or does not accept.
int connect_bounded(const std::string& endpoint, int timeout_ms) {
    auto colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size())
        throw input_error("RPC endpoint '" + endpoint + "' is not host:port");
    std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
    // llama.cpp's RPC client splits host:port at the first ':' (an IPv6 address stopped the
    // process with "Failed to parse endpoint") and connects over IPv4 only (gethostbyname):
    // the probe resolves names as it will.
    if (host.find_first_of(":[]") != std::string::npos)
        throw input_error("RPC endpoint '" + endpoint +
                          "': llama.cpp's RPC client connects over IPv4 only (host:port with an "
                          "IPv4 address or a name)");
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
        throw input_error("RPC server " + endpoint + ": cannot resolve: " + gai_strerror(rc));
    std::string why = "no address";
    int connected = -1;
    for (addrinfo* a = res; a && connected < 0; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            rc = poll(&p, 1, timeout_ms);
            if (rc == 0) {
                why = "no answer within " + std::to_string(timeout_ms) + " ms";
                rc = -1;
            } else if (rc > 0) {
                int err = 0;
                socklen_t len = sizeof(err);
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
                rc = err == 0 ? 0 : -1;
                if (err)
                    why = std::strerror(err);
            } else {
                why = std::strerror(errno);
            }
        } else if (rc != 0) {
            why = std::strerror(errno);
        }
        if (rc == 0)
            connected = fd;
        else
            close(fd);
    }
    freeaddrinfo(res);
    if (connected < 0)
        throw input_error("RPC server " + endpoint + " is unreachable: " + why);
    return connected;
}

// The ggml RPC protocol as the pinned llama.cpp speaks it (ggml-rpc.cpp): a request is
// | command (1 byte) | size (uint64) | data |, a reply | size (uint64) | data |, both in the
// host's byte order. HELLO (command 14, fixed across versions) carries the client's 24 bytes
// of transport capabilities (all zero: plain TCP) and is answered with major, minor, patch,
// padding and the server's 24 capability bytes. DEVICE_COUNT (15) has no data and is answered
// with a uint32.
constexpr uint8_t kRpcCmdHello = 14;
constexpr uint8_t kRpcCmdDeviceCount = 15;
constexpr size_t kRpcConnCapsBytes = 24;
constexpr size_t kRpcHelloReplyBytes = 4 + kRpcConnCapsBytes;
constexpr uint32_t kMaxRpcDevices = 16;

class ProbeSocket {
  public:
    ProbeSocket(std::string endpoint, int fd, int timeout_ms)
        : endpoint_(std::move(endpoint)), fd_(fd), timeout_ms_(timeout_ms) {}
    ~ProbeSocket() { close(fd_); }
    ProbeSocket(const ProbeSocket&) = delete;
    ProbeSocket& operator=(const ProbeSocket&) = delete;

    void send_all(const std::vector<uint8_t>& bytes, const char* what) {
        size_t off = 0;
        while (off < bytes.size()) {
            wait_for(POLLOUT, what);
            ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                closed(what);
            if (n <= 0)
                fail(std::string("failed during ") + what + ": " + std::strerror(errno));
            off += static_cast<size_t>(n);
        }
    }
    void recv_all(void* out, size_t size, const char* what) {
        auto* p = static_cast<uint8_t*>(out);
        size_t off = 0;
        while (off < size) {
            wait_for(POLLIN, what);
            ssize_t n = ::recv(fd_, p + off, size - off, 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (n == 0 || (n < 0 && errno == ECONNRESET))
                closed(what);
            if (n < 0)
                fail(std::string("failed during ") + what + ": " + std::strerror(errno));
            off += static_cast<size_t>(n);
        }
    }
    [[noreturn]] void fail(const std::string& why) {
        throw input_error("RPC server " + endpoint_ + " " + why);
    }
    [[noreturn]] void closed(const char* what) {
        fail(std::string("closed the connection during ") + what +
             " (not a ggml RPC server, or one that refused this client)");
    }

  private:
    // The deadline is per wait: a server that goes silent at any point fails the probe.
    void wait_for(short events, const char* what) {
        pollfd p{fd_, events, 0};
        int rc;
        do {
            rc = poll(&p, 1, timeout_ms_);
        } while (rc < 0 && errno == EINTR);
        if (rc == 0)
            fail(std::string("accepted the connection but did not answer the ") + what +
                 " within " + std::to_string(timeout_ms_) +
                 " ms (not a ggml RPC server, or busy serving another client)");
        if (rc < 0)
            fail(std::string("failed during ") + what + ": " + std::strerror(errno));
    }
    std::string endpoint_;
    int fd_;
    int timeout_ms_;
};

void append_request(std::vector<uint8_t>& out, uint8_t cmd, const std::vector<uint8_t>& data) {
    out.push_back(cmd);
    const uint64_t size = data.size();
    const auto* s = reinterpret_cast<const uint8_t*>(&size);
    out.insert(out.end(), s, s + sizeof size);
    out.insert(out.end(), data.begin(), data.end());
}

// Speaks the RPC protocol's handshake with endpoint before llama.cpp does: ggml's RPC client
// stops the process (ggml_abort) on a refused connection or a malformed reply and waits
// without a deadline for one that never comes. Returns the server's device count.
uint32_t rpc_handshake(ProbeSocket& sock) {
    std::vector<uint8_t> req;
    append_request(req, kRpcCmdHello, std::vector<uint8_t>(kRpcConnCapsBytes, 0));
    sock.send_all(req, "RPC hello");
    uint64_t size = 0;
    sock.recv_all(&size, sizeof size, "RPC hello");
    // Other protocol versions answer with other sizes (3 bytes before 6.0): read a plausible
    // reply to name its version; anything else is not this protocol.
    if (size < 3 || size > 256) {
        // Another protocol's text (an HTTP server, say) is worth showing; binary is not.
        std::string text(reinterpret_cast<const char*>(&size), sizeof size);
        const bool printable =
            std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
        sock.fail("does not speak the ggml RPC protocol (" +
                  (printable ? "its answer begins \"" + text + "\""
                             : "a hello reply of " + std::to_string(size) + " bytes") +
                  ", expected " + std::to_string(kRpcHelloReplyBytes) + " bytes)");
    }
    std::vector<uint8_t> hello(size);
    sock.recv_all(hello.data(), hello.size(), "RPC hello");
    if (hello[0] != RPC_PROTO_MAJOR_VERSION || hello[1] > RPC_PROTO_MINOR_VERSION ||
        size != kRpcHelloReplyBytes)
        sock.fail("speaks RPC protocol " + std::to_string(hello[0]) + "." +
                  std::to_string(hello[1]) + "." + std::to_string(hello[2]) +
                  "; this llama.cpp speaks " + std::to_string(RPC_PROTO_MAJOR_VERSION) + "." +
                  std::to_string(RPC_PROTO_MINOR_VERSION) +
                  " (use a server of the same llama.cpp)");
    req.clear();
    append_request(req, kRpcCmdDeviceCount, {});
    sock.send_all(req, "RPC device count request");
    sock.recv_all(&size, sizeof size, "RPC device count request");
    uint32_t count = 0;
    if (size != sizeof count)
        sock.fail("sent a malformed device count (" + std::to_string(size) + " bytes)");
    sock.recv_all(&count, sizeof count, "RPC device count request");
    // A claim: llama.cpp allocates a device per counted one, so an absurd count (0xFFFFFFFF)
    // would end the process in std::bad_alloc. A scheduler runs at most 16 backends
    // (GGML_SCHED_MAX_BACKENDS), so no more can be used anyway.
    if (count > kMaxRpcDevices)
        sock.fail("reports " + std::to_string(count) + " devices (at most " +
                  std::to_string(kMaxRpcDevices) +
                  " can be used: a ggml scheduler runs at most 16 backends)");
    return count;
}

uint32_t probe_rpc(const std::string& endpoint, int timeout_ms) {
    ProbeSocket sock(endpoint, connect_bounded(endpoint, timeout_ms), timeout_ms);
    return rpc_handshake(sock);
}

// Device name ("RPC0") -> the endpoint of the server that offers it.
std::map<std::string, std::string> g_rpc_endpoint_of;

}  // namespace

void set_fatal_handler(FatalHandler handler) {
    g_fatal_handler = handler;
    ggml_set_abort_callback(handler ? fatal_one_line : nullptr);
}

std::string llama_text_line(std::string_view text) {
    std::string out;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find_first_of("\r\n", pos);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view l = text.substr(pos, end - pos);
        while (!l.empty() && (l.front() == ' ' || l.front() == '\t'))
            l.remove_prefix(1);
        while (!l.empty() && (l.back() == ' ' || l.back() == '\t'))
            l.remove_suffix(1);
        if (!l.empty()) {
            if (!out.empty())
                out += ' ';
            out.append(l);
        }
        pos = end + 1;
    }
    return out;
}

void init_backends() {
    if (g_initialised)
        return;
    g_initialised = true;
    const char* env = std::getenv("STAGEBENCH_LLAMA_LOG");
    g_echo_log = env && std::string(env) == "1";
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    g_dynamic = ggml_backend_reg_count() == 0 || !module_files().empty();
    if (g_dynamic && !find_reg("cpu")) {
        if (!load_module("cpu"))
            throw input_error("cannot load the ggml CPU backend from '" + llama_library_dir() +
                              "' (set STAGEBENCH_BACKEND_DIR to the llama.cpp bin directory)");
    }
}

BuildInfo build_info() {
    init_backends();
    BuildInfo b;
    b.llama_tag = SB_LLAMA_TAG;
    b.llama_commit = SB_LLAMA_COMMIT;
    b.llama_lib_dir = llama_library_dir();
    b.dynamic_backends = g_dynamic;
    if (g_dynamic) {
        for (const auto& [name, path] : module_files())
            b.backends_available.push_back(name);
    } else {
        for (size_t i = 0; i < ggml_backend_reg_count(); ++i)
            b.backends_available.push_back(lower(ggml_backend_reg_name(ggml_backend_reg_get(i))));
    }
    if (g_cpu_variant)
        b.cpu_variant = g_cpu_variant->first;
    b.cpu_features = read_cpu_features();
    b.system_info = llama_print_system_info();
    return b;
}

std::vector<DeviceInfo> list_devices() {
    init_backends();
    if (g_dynamic)
        for (const auto& [name, path] : module_files())
            load_module(name);
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i)
        out.push_back(describe(ggml_backend_dev_get(i)));
    return out;
}

std::vector<ModuleInfo> list_modules() {
    init_backends();
    std::vector<ModuleInfo> out;
    if (!g_dynamic)
        return out;
    for (const auto& [name, path] : module_files()) {
        ModuleInfo m;
        m.name = name;
        m.path = path.string();
        m.loaded = load_module(name) != nullptr;
        if (!m.loaded) {
            m.note = g_module_errors.count(name) ? g_module_errors[name] : "not loaded";
        } else {
            m.devices = g_module_device_names[name];
            if (m.devices.empty() && name == "vulkan") {
                // Named devices are shown whatever their type: then the index is wrong, or
                // the loader dropped the driver, which it does without a word.
                const char* visible = std::getenv("GGML_VK_VISIBLE_DEVICES");
                if (visible && *visible)
                    m.note = std::string(
                                 "no Vulkan device found among those "
                                 "GGML_VK_VISIBLE_DEVICES=") +
                             visible +
                             " names; a driver the Vulkan loader could not load is left out "
                             "silently (VK_LOADER_DEBUG=driver says why)";
                else
                    m.note =
                        "no Vulkan GPU found; ggml-vulkan leaves out devices of the CPU type "
                        "(Mesa's lavapipe) unless GGML_VK_VISIBLE_DEVICES names them, e.g. "
                        "GGML_VK_VISIBLE_DEVICES=0";
            } else if (m.devices.empty() && name == "cuda")
                m.note = "no CUDA GPU found (is the NVIDIA driver loaded? nvidia-smi tells)";
        }
        out.push_back(std::move(m));
    }
    return out;
}

std::string modules_without_devices() {
    std::string out;
    for (const auto& m : list_modules())
        if (m.devices.empty() && m.note && m.name != "cpu")
            out += "; the " + m.name + " module: " + *m.note;
    return out;
}

std::string missing_module_hint(const std::string& device) {
    // The device names ggml's GPU and NPU backends give (a prefix and the index), their module
    // files (libggml-<module>.so) and how a user gets one.
    struct Kind {
        const char* prefix;
        const char* module;
        const char* backend;
        const char* how;
    };
    static const char* const own =
        "build your own llama.cpp with it and point stagebench's build at it "
        "(docs/install.md, \"Your own llama.cpp\")";
    static const Kind kinds[] = {
        {"CUDA", "cuda", "CUDA", "`make cuda` builds it where nvcc exists (docs/gpu.md)"},
        {"Vulkan", "vulkan", "Vulkan",
         "`make build` builds it unless VULKAN=off; its log says why it could not (docs/gpu.md)"},
        {"ROCm", "hip", "HIP (ROCm)", own},
        {"MUSA", "musa", "MUSA", own},
        {"MTL", "metal", "Metal", own},
        {"SYCL", "sycl", "SYCL", own},
        {"GPUOpenCL", "opencl", "OpenCL", own},
        {"HTP", "hexagon", "Hexagon", own},
        {"CANN", "cann", "CANN", own},
    };
    init_backends();
    if (!g_dynamic)
        return "";
    for (const Kind& k : kinds) {
        const std::string prefix = k.prefix;
        if (device.rfind(prefix, 0) != 0)
            continue;
        const std::string rest = device.substr(prefix.size());
        if (!rest.empty() && !std::isdigit(static_cast<unsigned char>(rest[0])))
            continue;
        if (module_files().count(k.module))
            return "";
        return std::string("; this build's llama.cpp has no ") + k.backend +
               " module (no libggml-" + k.module + ".so in " + llama_library_dir() + "): " + k.how;
    }
    return "";
}

double rpc_setup_budget_s(const char* env) {
    if (!env || !*env)
        return kRpcSetupBudgetS;
    // Decimal digits and one point only (no sign, exponent, hex, inf or nan), read the same in
    // every locale.
    const std::string_view text(env);
    const bool digits = std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
    double s = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    if (!digits || ec != std::errc() || end != text.data() + text.size() || !(s > 0) || s > 86400) {
        // Echoed in printable ASCII only, so that the error stays one line.
        std::string shown(text.substr(0, 40));
        for (char& c : shown)
            if (c < 0x20 || c > 0x7e)
                c = '?';
        throw input_error("STAGEBENCH_RPC_SETUP_S='" + shown +
                          "' is not a number of seconds more than 0 to 86400");
    }
    return s;
}

std::vector<DeviceInfo> add_rpc_server(const std::string& endpoint, int timeout_ms) {
    init_backends();
    // Read first: a bad value is bad input before any connection.
    const double budget_s = rpc_setup_budget_s(std::getenv("STAGEBENCH_RPC_SETUP_S"));
    const uint32_t probed = probe_rpc(endpoint, timeout_ms);
    if (probed == 0)
        throw input_error("RPC server " + endpoint + " reports no devices");
    ggml_backend_reg_t rpc = g_dynamic ? load_module("rpc") : find_reg("rpc");
    if (!rpc)
        throw input_error("this llama.cpp build has no RPC backend (build with GGML_RPC=ON)");
    using add_fn_t = ggml_backend_reg_t (*)(const char*);
    auto add = reinterpret_cast<add_fn_t>(
        ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server"));
    if (!add)
        throw input_error("this llama.cpp RPC backend cannot add servers");
    // The hello above had a deadline; llama.cpp's own connection that follows has none. A
    // server that answered the probe and then stopped (or a link that broke) would hold the
    // process here for ever, Ctrl-C included: a setup step with its own deadline.
    // The watchdog keeps the name by pointer: each one stays for the life of the process.
    static std::deque<std::string> stage_names;
    stage_names.push_back("RPC server " + endpoint +
                          " answered the hello, but registering its devices");
    StageGuard guard(stage_names.back().c_str(), SetupBudget{budget_s});
    ggml_backend_reg_t reg = add(endpoint.c_str());
    if (!reg)
        throw input_error("RPC server " + endpoint + " reports no devices");
    // llama.cpp asks for the count again on its own connection: a server whose second answer
    // differs from the probe's is not one to measure on.
    if (const size_t n = ggml_backend_reg_dev_count(reg); n != probed)
        throw input_error("RPC server " + endpoint + " reported " + std::to_string(probed) +
                          " device(s), then " + std::to_string(n) + " to llama.cpp");
    // Registering the same server twice would duplicate its devices.
    bool known = false;
    for (size_t i = 0; i < ggml_backend_reg_count(); ++i)
        known |= ggml_backend_reg_get(i) == reg;
    if (!known)
        ggml_backend_register(reg);
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
        out.push_back(describe(ggml_backend_reg_dev_get(reg, i)));
        g_rpc_endpoint_of[out.back().name] = endpoint;
    }
    return out;
}

std::vector<std::string> rpc_endpoints_of(const std::string& device_set) {
    std::vector<std::string> out;
    for (const auto& d : split_device_set(device_set)) {
        auto it = g_rpc_endpoint_of.find(d);
        if (it != g_rpc_endpoint_of.end() &&
            std::find(out.begin(), out.end(), it->second) == out.end())
            out.push_back(it->second);
    }
    return out;
}

std::string describe_llama_stop(const std::string& llama_message, const std::string& device_set,
                                const std::string& activity) {
    const std::string during = activity.empty() ? "" : " during " + activity;
    const auto endpoints = rpc_endpoints_of(device_set);
    // A crash (core/crash.hpp): the process's own fault, whatever the devices.
    if (llama_message.rfind(kCrashMarker, 0) == 0)
        return "crashed" + during + ": " + llama_message.substr(std::string(kCrashMarker).size());
    // The stage watchdog ended the run (core/watchdog.hpp), not llama.cpp.
    const bool overrun = llama_message.rfind(kOverrunMarker, 0) == 0;
    const std::string what = overrun ? llama_message.substr(std::string(kOverrunMarker).size())
                                     : strip_source_location(llama_message);
    if (endpoints.empty())
        return overrun ? what : "llama.cpp stopped" + during + ": " + what;
    // Whether a server still answers tells a dead server from a broken reply. A dying
    // server's port may take a connection for a moment more (the kernel's backlog), so the
    // hello decides, not the connect. A live server first finishes what it was computing for
    // the broken connection, on a machine that may be loaded: 2 s. A dead one refuses or
    // resets at once.
    constexpr int kRecheckMs = 2000;
    std::string out;
    for (const auto& ep : endpoints) {
        int fd = -1;
        try {
            fd = connect_bounded(ep, kRecheckMs);
        } catch (const Error&) {
        }
        bool answers = false;
        if (fd >= 0) {
            ProbeSocket sock(ep, fd, kRecheckMs);
            try {
                rpc_handshake(sock);
                answers = true;
            } catch (const Error&) {
            }
        }
        out += (out.empty() ? "" : "; ") + std::string("RPC server ") + ep +
               (answers ? " broke the connection or sent a malformed reply" + during +
                              ", and answers a new connection"
                : fd < 0 ? " went away" + during + ": it no longer accepts connections"
                         : " went away" + during + ": it no longer answers");
    }
    return out + (overrun ? " (" : " (llama.cpp: ") + what + ")";
}

DeviceSelection select_devices(const std::vector<std::string>& devices) {
    init_backends();
    DeviceSelection sel;
    std::set<std::string> wanted_accel;
    if (g_dynamic) {
        // Know every module's device names (loading is cheap and needed to tell accelerators).
        for (const auto& [name, path] : module_files())
            if (!g_module_device_names.count(name))
                load_module(name);
    }
    for (const auto& d : devices) {
        if (d == "CPU" || d.empty())
            continue;
        auto m = module_of(d);
        if (g_dynamic && m && g_accel_modules.count(*m)) {
            wanted_accel.insert(*m);
        } else if (!m && !ggml_backend_dev_by_name(d.c_str())) {
            std::string avail;
            for (const auto& info : list_devices())
                avail += (avail.empty() ? "" : ", ") + info.name;
            throw input_error("unknown device '" + d + "' (available: " + avail +
                              missing_module_hint(d) + modules_without_devices() + ")");
        }
    }
    if (g_dynamic) {
        for (const auto& m : g_accel_modules) {
            if (wanted_accel.count(m)) {
                load_module(m);
            } else if (auto* reg = find_reg(m); reg && g_held_modules[m] == 0) {
                ggml_backend_unload(reg);
            }
        }
    }
    for (const auto& d : devices) {
        if (d == "CPU" || d.empty())
            continue;
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(d.c_str());
        if (!dev)
            throw input_error("device '" + d + "' is not available");
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_ACCEL)
            sel.offload.push_back(d);
    }
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL) {
            std::string name = ggml_backend_dev_name(dev);
            sel.active.push_back(name);
            if (std::find(devices.begin(), devices.end(), name) == devices.end()) {
                auto m = module_of(name);
                sel.notes.push_back(
                    m && g_held_modules[*m] > 0
                        ? "accelerator " + name +
                              " stays loaded for another model in this process and runs ops "
                              "here too"
                        : "accelerator " + name +
                              " is linked into llama.cpp and cannot be "
                              "disabled");
            }
        }
    }
    sel.active.insert(sel.active.begin(), sel.offload.begin(), sel.offload.end());
    sel.active.push_back("CPU");
    return sel;
}

void hold_devices(const DeviceSelection& sel) {
    for (const auto& name : sel.active)
        if (auto m = module_of(name); m && g_accel_modules.count(*m))
            ++g_held_modules[*m];
}

void release_devices(const DeviceSelection& sel) {
    for (const auto& name : sel.active)
        if (auto m = module_of(name); m && g_accel_modules.count(*m) && g_held_modules[*m] > 0)
            --g_held_modules[*m];
}

std::vector<std::string> named_accelerators(const std::vector<std::string>& devices) {
    init_backends();
    std::vector<std::string> out;
    for (const auto& d : devices) {
        auto m = module_of(d);
        if (m && g_accel_modules.count(*m))
            out.push_back(d);
        else if (ggml_backend_dev_t dev = ggml_backend_dev_by_name(d.c_str());
                 dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL)
            out.push_back(d);
    }
    return out;
}

}  // namespace sb

namespace sb {
void check_device_names(const std::vector<std::string>& names) {
    const auto devs = list_devices();
    for (const auto& n : names) {
        if (n == "CPU")
            continue;
        bool found = false;
        for (const auto& d : devs)
            found |= d.name == n;
        if (!found) {
            std::string avail;
            for (const auto& d : devs)
                avail += (avail.empty() ? "" : ", ") + d.name;
            // A comma lists several device sets, which only run's --device takes.
            const std::string hint = n.find(',') != std::string::npos
                                         ? "; this command takes one device set: join its "
                                           "devices with +"
                                         : "";
            throw input_error("unknown device '" + n + "' (available: " + avail + hint +
                              missing_module_hint(n) + modules_without_devices() + ")");
        }
    }
}
std::vector<std::string> split_device_set(const std::string& spec) {
    if (spec.empty())
        return {"CPU"};
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t plus; (plus = spec.find('+', start)) != std::string::npos; start = plus + 1)
        out.push_back(spec.substr(start, plus - start));
    out.push_back(spec.substr(start));
    return out;
}

}  // namespace sb
