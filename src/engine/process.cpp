#include "engine/process.hpp"

#include "engine/backends.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/subprocess.hpp"

extern char** environ;

namespace sb {

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv,
                                 const std::string& log_path) {
    if (argv.empty())
        throw input_error("no program to start");
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    // llama.cpp's abort handler attaches gdb to the aborting process for a backtrace: the log's
    // last line would be gdb's "[Inferior 1 (process N) detached]" instead of the reason, and a
    // debugger would hold the dying peer. Its message is enough.
    std::vector<char*> env;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "GGML_NO_BACKTRACE=", 18) != 0)
            env.push_back(*e);
    static char no_backtrace[] = "GGML_NO_BACKTRACE=1";
    env.push_back(no_backtrace);
    env.push_back(nullptr);
    // Whether exec failed, and why: its errno through a pipe that exec closes.
    int report[2] = {-1, -1};
    if (pipe2(report, O_CLOEXEC) != 0)
        throw runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec: the parent has other threads.
        die_with_parent(parent);
        int err = 0;
        const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (log < 0 || in < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
            err = errno;
        if (err == 0) {
            execve(args[0], args.data(), env.data());
            err = errno;
        }
        (void)!write(report[1], &err, sizeof err);
        _exit(127);
    }
    close(report[1]);
    if (pid < 0) {
        const int err = errno;
        close(report[0]);
        throw runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(err));
    }
    int err = 0;
    ssize_t got;
    while ((got = ::read(report[0], &err, sizeof err)) < 0 && errno == EINTR) {
    }
    close(report[0]);
    if (got == static_cast<ssize_t>(sizeof err)) {
        waitpid(pid, nullptr, 0);  // it exits at once (127)
        throw input_error("cannot start " + argv[0] + ": " + std::strerror(err));
    }
    ChildProcess p;
    p.pid_ = pid;
    return p;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_), ended_how_(std::move(o.ended_how_)) {
    o.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
    if (this != &o) {
        stop();
        pid_ = o.pid_;
        ended_how_ = std::move(o.ended_how_);
        o.pid_ = -1;
    }
    return *this;
}

ChildProcess::~ChildProcess() {
    stop();
}

bool ChildProcess::running() {
    if (pid_ <= 0)
        return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status))
            ended_how_ = "exited with status " + std::to_string(WEXITSTATUS(status));
        else if (WIFSIGNALED(status)) {
            const int sig = WTERMSIG(status);
            const char* name = sig == SIGABRT   ? "ABRT"
                               : sig == SIGSEGV ? "SEGV"
                               : sig == SIGBUS  ? "BUS"
                               : sig == SIGILL  ? "ILL"
                               : sig == SIGFPE  ? "FPE"
                               : sig == SIGKILL ? "KILL"
                               : sig == SIGTERM ? "TERM"
                               : sig == SIGINT  ? "INT"
                                                : nullptr;
            ended_how_ = "killed by signal " + std::to_string(WTERMSIG(status)) +
                         (name ? std::string(" (SIG") + name + ")" : std::string());
        }
        return false;
    }
    return true;
}

void ChildProcess::stop() {
    if (pid_ <= 0)
        return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    // Bounded as well: a program stuck in the kernel is left behind rather than waited on.
    for (int i = 0; i < 300; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
}

int free_loopback_port() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw runtime_error("cannot create a socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        close(fd);
        throw runtime_error("cannot find a free port on 127.0.0.1");
    }
    close(fd);
    return ntohs(a.sin_port);
}

bool accepts_connection(const std::string& host, int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    return ok;
}

bool wait_for_port(const std::string& host, int port, int timeout_ms, ChildProcess* proc) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
        if (proc && !proc->running())
            return false;
        if (interrupt_requested())  // Ctrl-C ends the wait
            return false;
        if (accepts_connection(host, port))
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

std::string find_peer_program(const std::string& name) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates;
    if (!ec)
        candidates.push_back(self.parent_path().parent_path() / "peers" / name);
    if (const std::string lib = llama_library_dir(); !lib.empty())
        candidates.push_back(fs::path(lib) / name);
    for (const auto& c : candidates)
        if (fs::exists(c, ec) && access(c.c_str(), X_OK) == 0)
            return c.string();
    return {};
}

}  // namespace sb
