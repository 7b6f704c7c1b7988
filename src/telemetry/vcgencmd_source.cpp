// Raspberry Pi throttle flags from `vcgencmd get_throttled` ("throttled=0x50005"): bits 0
// under-voltage, 1 frequency capped, 2 throttled, 3 soft temperature limit; bits 16-19 the same
// "has occurred since boot". Running a process costs about a millisecond of CPU, so the source
// runs it at most once per second and repeats the last value in between.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

extern char** environ;

namespace sb {
namespace {

constexpr int64_t kRefreshNs = 1'000'000'000;

// Runs path with args, returns its stdout (nullopt when it cannot start, fails or takes > 2 s).
std::optional<std::string> run_capture(const std::string& path, const std::string& arg) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        return std::nullopt;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::string p = path, a = arg;
    char* argv[] = {p.data(), a.data(), nullptr};
    pid_t pid = 0;
    int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        return std::nullopt;
    }
    std::string out;
    bool timed_out = false;
    char buf[512];
    for (;;) {
        pollfd pfd{fds[0], POLLIN, 0};
        int pr = ::poll(&pfd, 1, 2000);
        if (pr == 0) {
            timed_out = true;
            break;
        }
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > 65536)
            break;
    }
    ::close(fds[0]);
    if (timed_out)
        ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::nullopt;
    return out;
}

std::optional<double> parse_throttled(const std::string& text) {
    auto t = sb::trim(text);
    const std::string_view key = "throttled=";
    if (t.substr(0, key.size()) != key)
        return std::nullopt;
    t.remove_prefix(key.size());
    if (t.substr(0, 2) != "0x" && t.substr(0, 2) != "0X")
        return std::nullopt;
    t.remove_prefix(2);
    if (t.empty() || t.size() > 8)
        return std::nullopt;
    unsigned long v = 0;
    for (char c : t) {
        int dgt = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                              : -1;
        if (dgt < 0)
            return std::nullopt;
        v = v * 16 + static_cast<unsigned long>(dgt);
    }
    return static_cast<double>(v);
}

class VcgencmdSource : public Source {
  public:
    explicit VcgencmdSource(std::string path) : path_(std::move(path)) {}
    std::string name() const override { return "rpi_throttle"; }
    std::string source_class() const override { return "rpi_throttle"; }
    std::vector<Metric> describe() const override {
        Metric m;
        m.sensor = "rpi";
        m.name = "rpi.throttled_flags";
        m.quantity = Quantity::flags;
        m.refresh_ns = kRefreshNs;
        return {m};
    }
    void read(int64_t t_ns, std::vector<std::optional<double>>& out) override {
        if (!last_ns_ || t_ns - *last_ns_ >= kRefreshNs || t_ns < *last_ns_) {
            last_ns_ = t_ns;
            auto text = run_capture(path_, "get_throttled");
            value_ = text ? parse_throttled(*text) : std::nullopt;
            if (!text) {
                note_read_error("rpi.throttled_flags", ECHILD);
            } else if (!value_) {
                note_malformed("rpi.throttled_flags", *text);
            }
        }
        out[0] = value_;
    }
    // The flags are not needed at stage boundaries (they are sticky bits, not counters).
    void read_boundary(int64_t, std::vector<std::optional<double>>& out) override {
        out[0].reset();
    }
    std::map<std::string, std::string> properties() const override {
        return {{"command", path_ + " get_throttled"}};
    }

  private:
    std::string path_;
    std::optional<int64_t> last_ns_;
    std::optional<double> value_;
};

std::string find_on_path(const std::string& exe) {
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= p.size()) {
        auto end = p.find(':', start);
        if (end == std::string::npos)
            end = p.size();
        std::string dir = p.substr(start, end - start);
        if (!dir.empty() && sysfs::is_executable(dir + "/" + exe))
            return dir + "/" + exe;
        start = end + 1;
    }
    return sysfs::is_executable("/usr/bin/" + exe) ? "/usr/bin/" + exe : "";
}

}  // namespace

void discover_vcgencmd(const std::string& vcgencmd_path, Discovery& d) {
    SourceClassStatus st{"rpi_throttle", 0, ""};
    std::string path = vcgencmd_path.empty() ? find_on_path("vcgencmd") : vcgencmd_path;
    if (path.empty() || !sysfs::is_executable(path)) {
        st.note = "no vcgencmd";
    } else if (auto text = run_capture(path, "get_throttled"); !text || !parse_throttled(*text)) {
        st.note = path + " get_throttled gave no throttled=0x... line";
    } else {
        d.sources.push_back(std::make_unique<VcgencmdSource>(path));
        st.found = 1;
    }
    d.classes.push_back(st);
}

}  // namespace sb
