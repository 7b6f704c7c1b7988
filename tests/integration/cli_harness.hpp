#pragma once
// Runs the real stagebench binary (and peers) for integration tests: exit code, stdout and
// stderr captured separately, every run bounded by a timeout so a hang fails instead of
// blocking CI.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace sbtest {

struct Proc {
    int exit_code = -1;  // 128 + signal when killed by a signal
    std::string out, err;
};

std::string stagebench_bin();
std::string peer(const std::string& name);

// Runs argv (argv[0] is a path) with a timeout in seconds.
Proc run(const std::vector<std::string>& argv, int timeout_s = 600);
// Runs stagebench with args.
Proc run_sb(const std::vector<std::string>& args, int timeout_s = 600);

// A temporary directory removed at destruction.
struct TempDir {
    TempDir();
    ~TempDir();
    std::filesystem::path path;
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// The tiny synthetic model, written once per test binary.
const std::string& tiny_model();

// Starts a background process; returns its pid (stdout/stderr to log). Its TMPDIR is the log's
// folder.
pid_t spawn_bg(const std::vector<std::string>& argv, const std::string& log);
// Sends sig to pid and waits for it; returns its exit code (128 + signal if killed).
int signal_and_wait(pid_t pid, int sig, int timeout_s = 60);
int wait_exit(pid_t pid, int timeout_s);

std::string read_file(const std::string& path);
// Writes text to path (replacing it).
void write_file(const std::string& path, const std::string& text);
// The number of newlines in s.
std::size_t line_count(const std::string& s);
// The number of "stagebench: error: " lines in s.
std::size_t error_lines(const std::string& s);
// Seconds of the steady clock since t.
double seconds_since(std::chrono::steady_clock::time_point t);
// a followed by more.
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more);
// The first executable called name on PATH; "" when none.
std::string on_path(const std::string& name);
// $SB_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH; "" if none.
std::string chromium_path();
// The command line that opens html in headless Chromium (node, tests/integration/
// report_check.mjs, the vendored playwright-core), saving a screenshot to png and the charts
// to dump; the caller appends its --expect-* checks. Empty, with why set, when node, chromium
// or playwright-core is missing.
std::vector<std::string> report_check_argv(const std::string& html, const std::string& png,
                                           const std::string& dump, std::string& why);

// A real RPC server on a free 127.0.0.1 port, started exactly as the README shows:
// `stagebench rpc-server -p PORT` followed by extra_args (the README's `-t 1` for a server that
// shares the client's cores, where timings matter), or with llama_peer llama.cpp's own
// `build/peers/ggml-rpc-server -p PORT -d CPU`. Logs to <dir>/rpc.log; stopped (SIGTERM) at
// destruction unless already stopped. ready is false when it did not listen within 20 s.
struct RpcServer {
    explicit RpcServer(const TempDir& dir, const std::vector<std::string>& extra_args = {},
                       bool llama_peer = false);
    ~RpcServer();
    RpcServer(const RpcServer&) = delete;
    RpcServer& operator=(const RpcServer&) = delete;
    std::string endpoint() const { return "127.0.0.1:" + std::to_string(port); }
    void stop(int sig);  // sends sig and waits for the server to exit
    int port = 0;
    pid_t pid = -1;
    bool ready = false;
};

}  // namespace sbtest
