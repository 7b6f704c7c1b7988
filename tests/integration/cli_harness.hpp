#pragma once
// Runs the real stagebench binary (and peers) for integration tests: exit code, stdout and
// stderr captured separately, every run bounded by a timeout so a hang fails instead of
// blocking CI.
#include <sys/types.h>

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

// Starts a background process; returns its pid (stdout/stderr to log).
pid_t spawn_bg(const std::vector<std::string>& argv, const std::string& log);
// Sends sig to pid and waits for it; returns its exit code (128 + signal if killed).
int signal_and_wait(pid_t pid, int sig, int timeout_s = 60);
int wait_exit(pid_t pid, int timeout_s);

std::string read_file(const std::string& path);

}  // namespace sbtest
