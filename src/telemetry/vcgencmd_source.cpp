// Raspberry Pi throttle flags from `vcgencmd get_throttled` ("throttled=0x50005"): bits 0
// under-voltage, 1 frequency capped, 2 throttled, 3 soft temperature limit; bits 16-19 the same
// "has occurred since boot". Running a process costs about a millisecond of CPU, so the source
// runs it at most once per second and repeats the last value in between.
//
// The command is a peer like any other: its answer is a claim that must parse, and it runs
// with a deadline (core/subprocess.hpp). One that does not finish within it (it closed its
// output and kept running, or floods it ignoring SIGPIPE) is killed with its process group,
// and the source stops asking: the flags are absent from then on, with a warning. Waiting on
// it again every second would stall the sampler for the deadline each time.
#include <cstdlib>

#include "core/subprocess.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

constexpr int64_t kRefreshNs = 1'000'000'000;
// vcgencmd answers in about 10 ms; its output is one short line.
constexpr double kDeadlineS = 2;
constexpr std::size_t kMaxOutputBytes = 4096;

struct Capture {
    std::optional<std::string> text;  // its stdout when it exited 0 within the deadline
    std::string why;                  // otherwise why not, in words
    bool timed_out = false;
};

Capture run_capture(const std::string& path, const std::string& arg) {
    ProcessOptions o;
    o.timeout_s = kDeadlineS;
    o.kill_grace_s = 0;  // nothing to save: SIGKILL at the deadline
    o.max_capture = kMaxOutputBytes;
    const ProcessResult r = run_process({path, arg}, o);
    Capture c;
    c.timed_out = r.timed_out;
    if (!r.started)
        c.why = "cannot start it";
    else if (r.timed_out)
        c.why = "it did not finish within 2 s and was killed";
    else if (r.interrupted)
        c.why = "interrupted";
    else if (!r.ok())
        c.why = r.signal ? "it was killed by signal " + std::to_string(r.signal)
                         : "it exited with status " + std::to_string(r.exit_code);
    else
        c.text = r.out;
    return c;
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
        if (!given_up_ && (!last_ns_ || t_ns - *last_ns_ >= kRefreshNs || t_ns < *last_ns_)) {
            last_ns_ = t_ns;
            const Capture c = run_capture(path_, "get_throttled");
            value_ = c.text ? parse_throttled(*c.text) : std::nullopt;
            if (c.timed_out) {
                given_up_ = true;
                note_read_failure("rpi.throttled_flags",
                                  path_ + " get_throttled: " + c.why + "; not run again");
            } else if (!c.text) {
                note_read_failure("rpi.throttled_flags", path_ + " get_throttled: " + c.why);
            } else if (!value_) {
                note_malformed("rpi.throttled_flags", *c.text);
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
    bool given_up_ = false;  // it overran its deadline once: not run again
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
    } else if (const Capture c = run_capture(path, "get_throttled");
               !c.text || !parse_throttled(*c.text)) {
        // A vcgencmd that is there but fails is a sensor that failed: absent, with a warning.
        st.note = path + " get_throttled gave no throttled=0x... line" +
                  (c.text ? "" : " (" + c.why + ")");
        d.warnings.push_back(
            {"telemetry_command_failed",
             "rpi.throttled_flags: " + st.note + "; the Raspberry Pi throttle flags are absent",
             "Run `" + path +
                 " get_throttled` by hand; on a Raspberry Pi it prints "
                 "throttled=0x... at once."});
    } else {
        d.sources.push_back(std::make_unique<VcgencmdSource>(path));
        st.found = 1;
    }
    d.classes.push_back(st);
}

}  // namespace sb
