#include "scenario/llama_server.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "core/utf8.hpp"
#include "engine/backends.hpp"
#include "engine/http_client.hpp"
#include "engine/out_of_memory.hpp"
#include "engine/process.hpp"
#include "scenario/explain_settings.hpp"

namespace sb {

namespace {

std::string lowercase(std::string s) {
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// What a debugger prints after llama.cpp's abort message when the abort handler attaches one for
// a backtrace (gdb's thread and frame lines, "[Inferior 1 (process N) detached]"): never the
// reason.
bool debugger_noise(const std::string& line) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos)
        return true;
    const std::string_view l(line.data() + b, line.size() - b);
    for (std::string_view p : {"[Inferior ", "[New LWP", "[New Thread", "[Thread debugging",
                               "Using host libthread_db", "0x", "warning: ", "(lldb)"})
        if (l.substr(0, p.size()) == p)
            return true;
    return l.size() >= 2 && l[0] == '#' && std::isdigit(static_cast<unsigned char>(l[1]));
}

}  // namespace

namespace {

// startup_failure's reading; nullopt when no line names an error, failure or abort (and
// with_last is false).
std::optional<std::string> failure_in_log(const std::string& log_path, bool with_last) {
    // The first line that names an error says why (llama.cpp logs the reason first, then the
    // callers that gave up: "failed to load model", "exiting due to model loading error"); else
    // the first failed assertion or abort (GGML_ASSERT(...) failed); else the last line that is
    // not a debugger's (llama.cpp's abort handler attaches gdb for a backtrace).
    std::string first_error, first_failed, last, line;
    std::vector<std::string> allocations;  // what an out-of-memory reason reads
    std::ifstream f(log_path);
    for (int n = 0; n < 100000 && std::getline(f, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos || debugger_noise(line))
            continue;
        last = line;
        // A peer's log: at most 64 such lines of at most 4096 bytes (llama.cpp's own lines are
        // short; the regular expressions that read them run over no more).
        if (allocations.size() < 64 && line.find("allocat") != std::string::npos)
            allocations.push_back(llama_reason(line.substr(0, 4096)));
        const std::string l = lowercase(line);
        if (first_error.empty() && l.find("error") != std::string::npos)
            first_error = line;
        if (first_failed.empty() &&
            (line.find("GGML_ASSERT") != std::string::npos ||
             l.find("failed") != std::string::npos || l.find("abort") != std::string::npos))
            first_failed = line;
    }
    if (!with_last && first_error.empty() && first_failed.empty())
        return std::nullopt;
    // A device out of memory, said as in-process llama.cpp says it (engine/out_of_memory.hpp),
    // without the device's memory: the server's view of its devices is its own.
    const auto oom = out_of_memory_reason(allocations, AllocStep::unknown, {});
    std::string why = oom                    ? *oom
                      : !first_error.empty() ? llama_reason(first_error)
                      : !first_failed.empty()
                          ? llama_reason(strip_source_location(llama_text_line(first_failed)))
                          : llama_reason(strip_source_location(llama_text_line(last)));
    if (why.size() > 300)
        why = utf8_prefix(why, 297) + "...";
    return why.empty() ? "it printed nothing" : why;
}

}  // namespace

std::string startup_failure(const std::string& log_path) {
    return *failure_in_log(log_path, true);
}

LlamaServer::LlamaServer(const LlamaServerSpec& s,
                         const std::function<void(const std::string&)>& progress,
                         const Clock& clock, const Pause& pause) {
    const int port = free_loopback_port();
    log_ = (std::filesystem::temp_directory_path() /
            ("stagebench-llama-server-" + std::to_string(getpid()) + "-" + std::to_string(port) +
             ".log"))
               .string();
    std::vector<std::string> argv{s.binary,
                                  "-m",
                                  s.model,
                                  "--host",
                                  "127.0.0.1",
                                  "--port",
                                  std::to_string(port),
                                  "-c",
                                  std::to_string(s.n_ctx),
                                  "-np",
                                  std::to_string(s.slots),
                                  "--no-webui"};
    if (s.threads > 0)
        argv.insert(argv.end(),
                    {"-t", std::to_string(s.threads), "-tb", std::to_string(s.threads)});
    argv.insert(argv.end(), s.extra_args.begin(), s.extra_args.end());
    if (progress)
        progress("starting llama-server on 127.0.0.1:" + std::to_string(port) + " (log " + log_ +
                 ")");
    extra_args_ = s.extra_args;
    proc_ = ChildProcess::spawn(argv, log_);
    url_ = "http://127.0.0.1:" + std::to_string(port);
    const int64_t wait_ms = std::max<int64_t>(120000, static_cast<int64_t>(s.timeout_s * 1000));
    // The wait is on the run's clock: until its port accepts a connection and /health says 200,
    // trying every 50 ms; it ends when the process does, on Ctrl-C or at the deadline.
    const int64_t deadline = clock() + wait_ms * 1'000'000;
    HttpClient probe(url_, HttpTimeouts{2000, 10000});
    bool ready = false;
    for (;;) {
        if (!proc_.running() || interrupt_requested())
            break;
        if (accepts_connection("127.0.0.1", port)) {
            try {
                if (probe.get("/health").status == 200) {
                    ready = true;
                    break;
                }
            } catch (const Error&) {
            }
        }
        const int64_t now = clock();
        if (now >= deadline)
            break;
        pause(std::min<int64_t>(50'000'000, deadline - now));
    }
    if (!ready) {
        keep_log_ = true;
        if (interrupt_requested())
            throw runtime_error("interrupted while llama-server was starting (log " + log_ + ")");
        const bool died = !proc_.running();
        // The log may quote the flags (an --api-key it refused): its value never leaves here.
        const std::string why = redact_api_keys(startup_failure(log_), s.extra_args);
        // It ended before serving: what it was given (the model, the options) is what it
        // refused, as run refuses a model llama.cpp cannot load.
        if (died)
            throw input_error("llama-server could not start on '" + s.model + "': " + why +
                              " (log " + log_ + ")");
        throw runtime_error("llama-server did not become ready within " +
                            std::to_string(wait_ms / 1000) + " s: " + why + " (log " + log_ + ")");
    }
    HttpEngineOptions eo;
    eo.url = url_;
    eo.api = s.api;
    eo.timeouts.connect_ms = static_cast<int64_t>(s.timeout_s * 1000);
    eo.timeouts.read_ms = eo.timeouts.connect_ms;
    eo.banned_tokens = s.banned_tokens;
    engine_ = std::make_unique<HttpEngine>(eo);
    engine_->connect();
}

std::string LlamaServer::log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::optional<std::string> LlamaServer::ended() {
    if (proc_.running())
        return std::nullopt;
    keep_log_ = true;
    const std::string how = proc_.ended_how().empty() ? "ended" : proc_.ended_how();
    // Its last line is whatever it was doing (a slot's progress): a reason only where a line
    // names one.
    const auto why = failure_in_log(log_, false);
    return "the llama-server stagebench started has stopped (" + how + ")" +
           (why ? ": " + redact_api_keys(*why, extra_args_) : "; its log names no reason") +
           " (log " + log_ + ")";
}

LlamaServer::~LlamaServer() {
    engine_.reset();
    proc_.stop();
    std::error_code ec;
    if (!keep_log_ && !log_.empty())
        std::filesystem::remove(log_, ec);
}

}  // namespace sb
