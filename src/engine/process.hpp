#pragma once
// Peer programs started by stagebench (an RPC server for the demo, llama-server for HTTP
// runs): a child process that is always stopped when its owner goes out of scope. Its
// deadlines are its owner's: the wait until it serves (wait_for_port and the owner's readiness
// check) and the end of the run, when stop() ends it. It stays in stagebench's process group,
// so a Ctrl-C at the terminal reaches it too, and the kernel kills it when stagebench ends
// without unwinding (a second Ctrl-C, SIGKILL, llama.cpp's abort: core/subprocess.hpp
// die_with_parent), so it must be spawned from a thread that outlives it. Programs run to
// completion use core/subprocess.hpp instead.
#include <sys/types.h>
#include <string>
#include <vector>

namespace sb {

class ChildProcess {
  public:
    ChildProcess() = default;
    // Starts argv[0] (a path) with argv and stagebench's environment plus GGML_NO_BACKTRACE=1
    // (an abort in a llama.cpp peer logs its reason last, no debugger attached); stdout and
    // stderr go to log_path (appended). Throws sb::Error(input) when the program cannot be
    // started.
    static ChildProcess spawn(const std::vector<std::string>& argv, const std::string& log_path);
    ChildProcess(ChildProcess&& o) noexcept;
    ChildProcess& operator=(ChildProcess&& o) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess();  // stop()

    pid_t pid() const { return pid_; }
    bool running();
    // How it ended, once running() saw it end: "exited with status 1", "killed by signal 6
    // (SIGABRT)"; "" while it runs or when stop() ended it.
    const std::string& ended_how() const { return ended_how_; }
    // SIGTERM, SIGKILL after 2 s; returns within about 5 s.
    void stop();

  private:
    pid_t pid_ = -1;
    std::string ended_how_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();

// Whether host:port accepts a TCP connection now (one try; a refused or unreachable port: false).
bool accepts_connection(const std::string& host, int port);

// Waits until host:port accepts a connection (true) or timeout_ms passes, the process exits
// or an interrupt (Ctrl-C) is requested (false).
bool wait_for_port(const std::string& host, int port, int timeout_ms, ChildProcess* proc = nullptr);

// Finds a peer program built from the same llama.cpp tree: next to the stagebench binary's
// ../peers/, then in the llama.cpp bin directory. Empty when not found.
std::string find_peer_program(const std::string& name);

}  // namespace sb
