#include "loopback_sshd.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/process.hpp"

namespace sbtest {

namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";  // absolute: sshd re-execs itself per connection
constexpr const char* kSshKeygen = "ssh-keygen";

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& text, mode_t mode) {
    {
        std::ofstream f(path, std::ios::trunc);
        f << text;
        if (!f)
            throw std::runtime_error("loopback sshd: cannot write " + path);
    }
    if (chmod(path.c_str(), mode) != 0)
        throw std::runtime_error("loopback sshd: cannot chmod " + path);
}

// The key type and base64 of an OpenSSH public key line, without its comment.
std::string public_key(const std::string& pub_path) {
    std::istringstream in(slurp(pub_path));
    std::string type, key;
    in >> type >> key;
    if (type.empty() || key.empty())
        throw std::runtime_error("loopback sshd: no public key in " + pub_path);
    return type + " " + key;
}

// Waits for pid at most timeout_ms; true when it has been reaped (or is not our child).
bool reap(pid_t pid, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD))
            return true;
        if (r < 0 && errno != EINTR)
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// Runs argv[0] (looked up in PATH) with stdin /dev/null and stdout/stderr appended to log;
// throws when it does not exit 0.
void run_checked(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> a;
    for (const auto& s : argv)
        a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0)
        throw std::runtime_error("loopback sshd: cannot open " + log);
    const pid_t pid = fork();
    if (pid == 0) {
        const int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, 0);
        dup2(log_fd, 1);
        dup2(log_fd, 2);
        execvp(a[0], a.data());
        _exit(127);
    }
    close(log_fd);
    if (pid < 0)
        throw std::runtime_error("loopback sshd: fork failed");
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("loopback sshd: " + argv[0] + " failed:\n" + slurp(log));
}

void keygen(const std::string& path, const std::string& comment, const std::string& log) {
    run_checked({kSshKeygen, "-q", "-N", "", "-t", "ed25519", "-C", comment, "-f", path}, log);
}

// True when an SSH server answers on 127.0.0.1:port. Reads its banner and answers with one, so
// that sshd does not log the probe as a failed key exchange ("kex_exchange_identification").
bool ssh_answers(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    bool ok = false;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        char buf[4] = {};
        size_t got = 0;
        while (got < sizeof buf) {
            const ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
            if (n <= 0)
                break;
            got += static_cast<size_t>(n);
        }
        ok = got == sizeof buf && std::memcmp(buf, "SSH-", 4) == 0;
        if (ok) {
            static const char kBanner[] = "SSH-2.0-sbtest_probe\r\n";
            (void)!send(fd, kBanner, sizeof kBanner - 1, MSG_NOSIGNAL);
        }
    }
    close(fd);
    return ok;
}

}  // namespace

LoopbackSshd::LoopbackSshd() {
    std::string tmpl = "/tmp/sb-sshd.XXXXXX";
    if (!mkdtemp(tmpl.data()))
        throw std::runtime_error("loopback sshd: mkdtemp failed: " +
                                 std::string(std::strerror(errno)));
    dir_ = tmpl;
    try {
        chmod(dir_.c_str(), 0700);
        const passwd* pw = getpwuid(geteuid());
        if (!pw)
            throw std::runtime_error("loopback sshd: no passwd entry for the current user");
        user_ = pw->pw_name;

        const std::string keylog = path("keygen.log");
        keygen(path("host_ed25519"), "sbtest-host", keylog);
        keygen(path("id_ed25519"), "sbtest-client", keylog);
        keygen(path("wrong_host_ed25519"), "sbtest-wrong-host", keylog);

        port_ = sb::free_loopback_port();
        const std::string host = "[127.0.0.1]:" + std::to_string(port_) + " ";
        write_file(path("known_hosts"), host + public_key(path("host_ed25519.pub")) + "\n", 0600);
        write_file(path("wrong_known_hosts"),
                   host + public_key(path("wrong_host_ed25519.pub")) + "\n", 0600);
        write_file(path("authorized_keys"), slurp(path("id_ed25519.pub")), 0600);

        std::ostringstream cfg;
        cfg << "Port " << port_ << "\n"
            << "ListenAddress 127.0.0.1\n"
            << "HostKey " << path("host_ed25519") << "\n"
            << "PidFile " << path("sshd.pid") << "\n"
            << "AuthorizedKeysFile " << path("authorized_keys") << "\n"
            << "StrictModes no\n"
            << "UsePAM no\n"
            << "PasswordAuthentication no\n"
            << "KbdInteractiveAuthentication no\n"
            << "PermitRootLogin prohibit-password\n"
            << "PubkeyAuthentication yes\n"
            << "AllowUsers " << user_ << "\n"
            << "LogLevel INFO\n"  // "Accepted publickey ...": accepted() counts them
            << "Subsystem sftp internal-sftp\n";
        write_file(path("sshd_config"), cfg.str(), 0600);

        start();
    } catch (...) {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        throw;
    }
}

LoopbackSshd::~LoopbackSshd() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string LoopbackSshd::identity() const {
    return path("id_ed25519");
}

std::string LoopbackSshd::known_hosts() const {
    return path("known_hosts");
}

std::string LoopbackSshd::wrong_known_hosts() const {
    return path("wrong_known_hosts");
}

std::string LoopbackSshd::transport() const {
    return "ssh://" + user_ + "@127.0.0.1:" + std::to_string(port_);
}

std::string LoopbackSshd::log() const {
    return slurp(path("sshd.log"));
}

namespace {

int count_lines_starting(const std::string& text, const std::string& prefix) {
    int n = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        n += line.rfind(prefix, 0) == 0;
    return n;
}

}  // namespace

int LoopbackSshd::accepted() const {
    return count_lines_starting(log(), "Accepted publickey for ");
}

int LoopbackSshd::disconnected() const {
    return count_lines_starting(log(), "Disconnected from user ");
}

void LoopbackSshd::start() {
    if (pid_ > 0)
        return;
    // sshd running as root refuses to start without its privilege separation directory.
    if (geteuid() == 0 && mkdir("/run/sshd", 0755) != 0 && errno != EEXIST)
        throw std::runtime_error("loopback sshd: cannot create /run/sshd: " +
                                 std::string(std::strerror(errno)));
    unlink(path("sshd.pid").c_str());

    const std::string log_path = path("sshd.log");
    const std::string config = path("sshd_config");
    std::vector<std::string> argv{kSshd, "-D", "-e", "-f", config};
    std::vector<char*> a;
    for (const auto& s : argv)
        a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0)
        throw std::runtime_error("loopback sshd: cannot open " + log_path);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        // The listener dies with the test process (a crashed test leaves no sshd behind).
        // PDEATHSIG follows the forking thread: call start() from a long-lived thread.
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        const int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, 0);
        dup2(log_fd, 1);
        dup2(log_fd, 2);
        execv(a[0], a.data());
        _exit(127);
    }
    close(log_fd);
    if (pid < 0)
        throw std::runtime_error("loopback sshd: fork failed");
    pid_ = pid;

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            std::string how = WIFEXITED(status)
                                  ? "exited with " + std::to_string(WEXITSTATUS(status))
                                  : "was killed by signal " + std::to_string(WTERMSIG(status));
            throw std::runtime_error("loopback sshd: " + std::string(kSshd) + " " + how +
                                     " before listening on 127.0.0.1:" + std::to_string(port_) +
                                     "; its log:\n" + log());
        }
        if (ssh_answers(port_))
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    throw std::runtime_error("loopback sshd: 127.0.0.1:" + std::to_string(port_) +
                             " did not accept connections within 10 s; sshd log:\n" + log());
}

namespace {

// The descendants of pid (children first found, then theirs), from /proc.
std::vector<pid_t> descendants(pid_t pid) {
    std::map<pid_t, std::vector<pid_t>> children;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string n = e.path().filename().string();
        if (n.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream f(e.path() / "stat");
        std::string stat;
        std::getline(f, stat);
        const auto close = stat.rfind(')');
        if (close == std::string::npos)
            continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        pid_t ppid = 0;
        rest >> state >> ppid;
        children[ppid].push_back(static_cast<pid_t>(std::stol(n)));
    }
    std::vector<pid_t> out;
    std::vector<pid_t> todo = {pid};
    while (!todo.empty()) {
        const pid_t p = todo.back();
        todo.pop_back();
        for (pid_t c : children[p]) {
            out.push_back(c);
            todo.push_back(c);
        }
    }
    return out;
}

}  // namespace

void LoopbackSshd::kill_all() {
    if (pid_ <= 0)
        return;
    // The sessions first (while they are still the listener's descendants), then the listener.
    for (pid_t p : descendants(pid_))
        kill(p, SIGKILL);
    stop();
}

void LoopbackSshd::stop() {
    if (pid_ <= 0)
        return;
    // Only the listener: sessions already forked have called setsid() and end on their own
    // when their client goes; the listening socket closes with the listener.
    kill(pid_, SIGTERM);
    if (!reap(pid_, 5000)) {
        kill(pid_, SIGKILL);
        reap(pid_, 5000);
    }
    pid_ = -1;
}

}  // namespace sbtest
