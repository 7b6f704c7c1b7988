#include "core/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/interrupt.hpp"

namespace sb {

namespace {

using SteadyClock = std::chrono::steady_clock;

void append_capped(std::string& s, const char* p, std::size_t n, std::size_t cap) {
    if (s.size() < cap)
        s.append(p, std::min(n, cap - s.size()));
}

// Writes all n bytes of p to fd (retrying short writes and EINTR); false on an error.
bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

std::string trim_line(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string last_nonempty_line(const std::string& text) {
    std::size_t end = text.size();
    while (end > 0) {
        const std::size_t nl = text.rfind('\n', end - 1);
        const std::size_t begin = nl == std::string::npos ? 0 : nl + 1;
        std::string line = trim_line(text.substr(begin, end - begin));
        if (!line.empty())
            return line;
        if (nl == std::string::npos)
            break;
        end = nl;
    }
    return "";
}

}  // namespace

std::string ProcessResult::last_line() const {
    std::string l = last_nonempty_line(err);
    return l.empty() ? last_nonempty_line(out) : l;
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=./:,@%") == std::string::npos)
        return s;
    std::string q = "'";
    for (char c : s)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty())
            out += ' ';
        out += shell_quote(a);
    }
    return out;
}

void die_with_parent(pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have ended between fork and prctl: the child then has another parent
    // already and would never get the signal.
    if (::getppid() != parent)
        ::_exit(127);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& o) {
    ProcessResult r;
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (argv.empty() || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        r.started = false;
        r.err = argv.empty() ? "no program" : std::strerror(errno);
        for (int fd : {out_pipe[0], out_pipe[1]})
            if (fd >= 0)
                ::close(fd);
        return r;
    }
    const int in_fd =
        ::open(o.stdin_path.empty() ? "/dev/null" : o.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    const int file_fd =
        o.stdout_path.empty()
            ? -1
            : ::open(o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in_fd < 0 || (!o.stdout_path.empty() && file_fd < 0)) {
        r.started = false;
        r.err = std::string("cannot open ") + (in_fd < 0 ? o.stdin_path : o.stdout_path) + ": " +
                std::strerror(errno);
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_fd, file_fd})
            if (fd >= 0)
                ::close(fd);
        return r;
    }
    // A limit on the file: the output comes through the pipe and is written here, counted.
    const bool capped = file_fd >= 0 && o.max_stdout_file > 0;
    std::uint64_t written = 0;
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec: the parent has other threads.
        die_with_parent(parent);
        ::setpgid(0, 0);
        ::dup2(in_fd, 0);
        ::dup2(file_fd >= 0 && !capped ? file_fd : out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::signal(SIGPIPE, SIG_DFL);
        ::execvp(args[0], args.data());
        const char* why = std::strerror(errno);
        const char* head = "cannot start ";
        (void)!::write(2, head, std::strlen(head));
        (void)!::write(2, args[0], std::strlen(args[0]));
        (void)!::write(2, ": ", 2);
        (void)!::write(2, why, std::strlen(why));
        (void)!::write(2, "\n", 1);
        ::_exit(127);
    }
    ::close(in_fd);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (file_fd >= 0 && !capped)
        ::close(file_fd);
    if (pid < 0) {
        if (capped)
            ::close(file_fd);
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        r.started = false;
        r.err = std::string("fork: ") + std::strerror(errno);
        return r;
    }
    // Both sides set the group, so the deadline's kill reaches it whoever runs first.
    ::setpgid(pid, pid);
    const double timeout_s = o.timeout_s > 0 ? o.timeout_s : 86400;
    const auto start = SteadyClock::now();
    const auto deadline = start + std::chrono::duration_cast<SteadyClock::duration>(
                                      std::chrono::duration<double>(timeout_s));
    SteadyClock::time_point kill_at{}, give_up_at{};
    bool term_sent = false, kill_sent = false;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    int status = 0;
    bool exited = false, lost = false, over = false;
    char buf[65536];
    // Until the program has exited and its pipes are closed: a program that closes its
    // output and keeps running, or exits leaving a grandchild that holds the pipes, is waited
    // for only until the deadline.
    while (open_fds > 0 || !exited) {
        // With both pipes closed, poll() only sleeps: the wait for the exit is polled too.
        const int n = ::poll(fds, 2, open_fds > 0 ? 100 : 20);
        if (n > 0) {
            for (int k = 0; k < 2; ++k) {
                if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                const ssize_t got = ::read(fds[k].fd, buf, sizeof buf);
                if (got > 0 && k == 0 && capped) {
                    const auto room = o.max_stdout_file - written;
                    const auto n = std::min<std::uint64_t>(room, static_cast<std::uint64_t>(got));
                    if (n > 0 && r.output_error.empty() &&
                        !write_all(file_fd, buf, static_cast<std::size_t>(n))) {
                        // Nothing more can be kept: the program is stopped as if over.
                        r.output_error =
                            "cannot write " + o.stdout_path + ": " + std::strerror(errno);
                        over = true;
                    }
                    written += n;
                    if (n < static_cast<std::uint64_t>(got)) {
                        r.over_limit = true;
                        over = true;
                    }
                } else if (got > 0) {
                    append_capped(k == 0 ? r.out : r.err, buf, static_cast<std::size_t>(got),
                                  o.max_capture);
                } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                    ::close(fds[k].fd);
                    fds[k].fd = -1;
                    --open_fds;
                }
            }
        }
        if (!exited) {
            const pid_t w = ::waitpid(pid, &status, WNOHANG);
            lost = w < 0 && errno == ECHILD;  // reaped elsewhere: its status is unknown
            exited = w == pid || lost;
        }
        const auto now = SteadyClock::now();
        const bool late = now > deadline;
        if (!term_sent && (late || over || (!o.after_interrupt && interrupt_requested()))) {
            r.timed_out = late && !over;
            r.interrupted = !late && !over;
            const bool at_once = !(o.kill_grace_s > 0);
            ::kill(-pid, at_once ? SIGKILL : SIGTERM);
            term_sent = true;
            kill_sent = at_once;
            kill_at = now + std::chrono::duration_cast<SteadyClock::duration>(
                                std::chrono::duration<double>(o.kill_grace_s));
            give_up_at = now + std::chrono::seconds(3);
        } else if (term_sent && !kill_sent && now > kill_at) {
            ::kill(-pid, SIGKILL);
            kill_sent = true;
            give_up_at = now + std::chrono::seconds(3);
        } else if (kill_sent && now > give_up_at) {
            break;  // something outside the group holds the pipes, or the program is stuck
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0)
            ::close(f.fd);
    if (capped)
        ::close(file_fd);
    if (!exited) {
        r.reaped = false;
        return r;
    }
    if (lost)
        return r;
    if (WIFEXITED(status)) {
        r.exit_code = WEXITSTATUS(status);
        if (r.exit_code == 127 && r.err.rfind("cannot start ", 0) == 0)
            r.started = false;
    } else if (WIFSIGNALED(status)) {
        r.signal = WTERMSIG(status);
    }
    return r;
}

}  // namespace sb
