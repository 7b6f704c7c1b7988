#include "cli_harness.hpp"
#include "dist_dir.hpp"

#include "engine/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace sbtest {

std::string stagebench_bin() {
    return std::string(SB_BINARY_DIR) + "/bin/stagebench";
}
std::string peer(const std::string& name) {
    return std::string(SB_BINARY_DIR) + "/peers/" + name;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::size_t line_count(const std::string& s) {
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

std::size_t error_lines(const std::string& s) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = s.find("stagebench: error: ", at)) != std::string::npos; ++at)
        ++n;
    return n;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

pid_t spawn_bg(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (log + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char*> a;
    for (const auto& s : argv)
        a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    // The child's temporary files (a failed llama-server's log, kept and named for the user) go
    // beside its log, in the test's own folder, which the test removes: none is left in /tmp.
    const std::string tmpdir = "TMPDIR=" + std::filesystem::path(log).parent_path().string();
    std::vector<char*> env;
    for (char** e = environ; *e; ++e)
        if (std::string_view(*e).substr(0, 7) != "TMPDIR=")
            env.push_back(*e);
    env.push_back(const_cast<char*>(tmpdir.c_str()));
    env.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, a.data(), env.data()) != 0)
        throw std::runtime_error("cannot start " + argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

int wait_exit(pid_t pid, int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 999;  // timed out: a hang
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

int signal_and_wait(pid_t pid, int sig, int timeout_s) {
    kill(pid, sig);
    return wait_exit(pid, timeout_s);
}

Proc run(const std::vector<std::string>& argv, int timeout_s) {
    TempDir t;
    const std::string log = t.file("out");
    pid_t pid = spawn_bg(argv, log);
    Proc p;
    p.exit_code = wait_exit(pid, timeout_s);
    p.out = read_file(log);
    p.err = read_file(log + ".err");
    return p;
}

Proc run_sb(const std::vector<std::string>& args, int timeout_s) {
    std::vector<std::string> argv{stagebench_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, timeout_s);
}

TempDir::TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sbtest.XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
        throw std::runtime_error("mkdtemp failed");
    path = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

const std::string& tiny_model() {
    static TempDir dir;
    static std::string path = [] {
        std::string p = dir.file("tiny.gguf");
        Proc r = run_sb({"synth", "--preset", "tiny", "--seed", "7", "-o", p});
        if (r.exit_code != 0)
            throw std::runtime_error("synth failed: " + r.err);
        return p;
    }();
    return path;
}

namespace {

// What the file is, as far as a cache key needs: its path, size and modification time.
std::string file_stamp(const std::filesystem::path& p) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
        return "";
    return p.string() + " " + std::to_string(std::filesystem::file_size(p, ec)) + " " +
           std::to_string(std::filesystem::last_write_time(p, ec).time_since_epoch().count()) +
           "\n";
}

std::string hex_hash(const std::string& text) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(text));
    return buf;
}

// Holds an exclusive flock on path while alive.
struct FileLock {
    explicit FileLock(const std::string& path)
        : fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd < 0)
            throw std::runtime_error("cannot open the lock " + path);
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~FileLock() { close(fd); }
    int fd;
};

}  // namespace

std::string cached_output(const std::string& name, const std::string& key,
                          const std::function<void(const std::string& dir)>& make) {
    namespace fs = std::filesystem;
    const fs::path cache = fs::path(SB_BINARY_DIR) / "test-cache";
    fs::create_directories(cache);
    FileLock lock((cache / ".lock").string());
    const fs::path dir = cache / (name + "-" + key);
    if (fs::is_directory(dir))
        return dir.string();
    // Made aside, then renamed: a folder of that name is always whole.
    const fs::path part = cache / (name + "-" + key + ".part");
    std::error_code ec;
    fs::remove_all(part, ec);
    fs::create_directories(part);
    make(part.string());
    fs::rename(part, dir);
    // Those of an older build are never asked for again.
    for (const auto& e : fs::directory_iterator(cache, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind(name + "-", 0) == 0 && e.path() != dir)
            fs::remove_all(e.path(), ec);
    }
    return dir.string();
}

// Everything scripts/dist.sh packs, by path, size and time.
const std::string& dist_key() {
    static const std::string key = [] {
        namespace fs = std::filesystem;
        std::string text = file_stamp(fs::path(SB_BINARY_DIR) / "bin" / "stagebench") +
                           file_stamp(fs::path(SB_SOURCE_DIR) / "scripts" / "dist.sh") +
                           file_stamp(fs::path(SB_SOURCE_DIR) / "CMakeLists.txt");
        std::vector<std::string> files;
        for (const fs::path& d : {fs::path(SB_BINARY_DIR) / "share" / "stagebench" / "vocab",
                                  fs::path(SB_SOURCE_DIR) / "share" / "stagebench" / "presets",
                                  fs::path(SB_LLAMA_BUILD_DIR) / "bin"}) {
            std::error_code ec;
            for (const auto& e : fs::directory_iterator(d, ec))
                files.push_back(file_stamp(e.path()));
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files)
            text += f;
        return hex_hash(text);
    }();
    return key;
}

const std::string& dist_dir() {
    static const std::string dir = [] {
        namespace fs = std::filesystem;
        const std::string made = cached_output("dist", dist_key(), [](const std::string& out) {
            Proc p = run(
                {"/bin/bash", std::string(SB_SOURCE_DIR) + "/scripts/dist.sh", "--arch", "amd64",
                 "--build", SB_BINARY_DIR, "--llama", SB_LLAMA_BUILD_DIR, "--out", out},
                300);
            if (p.exit_code != 0)
                throw std::runtime_error("scripts/dist.sh failed: " + p.err);
            std::error_code ec;
            for (const auto& e : fs::directory_iterator(out))
                if (e.is_directory())
                    fs::remove_all(e.path(), ec);  // the stage, once packed
        });
        // This process's own dist folder (fleet run keeps its jobs in DIST/jobs/), with the
        // tarball linked: the tests read it, never write it.
        static TempDir t;
        for (const auto& e : fs::directory_iterator(made)) {
            const fs::path to = t.path / e.path().filename();
            std::error_code ec;
            fs::create_hard_link(e.path(), to, ec);
            if (ec)
                fs::copy_file(e.path(), to);
        }
        return t.path.string();
    }();
    return dir;
}

RpcServer::RpcServer(const TempDir& dir, const std::vector<std::string>& extra_args,
                     bool llama_peer)
    : port(sb::free_loopback_port()) {
    const std::string p = std::to_string(port);
    std::vector<std::string> argv =
        llama_peer ? std::vector<std::string>{peer("ggml-rpc-server"), "-p", p, "-d", "CPU"}
                   : std::vector<std::string>{stagebench_bin(), "rpc-server", "-p", p};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    pid = spawn_bg(argv, dir.file("rpc.log"));
    ready = sb::wait_for_port("127.0.0.1", port, 20000);
}

RpcServer::~RpcServer() {
    if (pid > 0)
        stop(SIGTERM);
}

void RpcServer::stop(int sig) {
    signal_and_wait(pid, sig);
    pid = -1;
}

std::string on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        const std::filesystem::path p = std::filesystem::path(dir.empty() ? "." : dir) / name;
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0)
            return p.string();
    }
    return "";
}

std::string chromium_path() {
    if (const char* env = std::getenv("SB_CHROMIUM"); env && *env)
        return env;
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
        if (auto p = on_path(name); !p.empty())
            return p;
    return "";
}

std::vector<std::string> report_check_argv(const std::string& html, const std::string& png,
                                           const std::string& dump, std::string& why) {
    const std::string node = on_path("node").empty() ? on_path("nodejs") : on_path("node");
    const std::string chromium = chromium_path();
    const std::string driver = std::string(SB_REPORT_ASSETS_DIR) + "/playwright-core";
    if (node.empty() || chromium.empty() || !std::filesystem::exists(driver + "/package.json")) {
        why =
            "node, chromium or playwright-core missing (scripts/setup-deps.sh, "
            "scripts/report-assets.sh)";
        return {};
    }
    return {node,
            std::string(SB_SOURCE_DIR) + "/tests/integration/report_check.mjs",
            "--driver",
            driver,
            "--chromium",
            chromium,
            "--html",
            html,
            "--screenshot",
            png,
            "--dump-charts",
            dump};
}

}  // namespace sbtest
