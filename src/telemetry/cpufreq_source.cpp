// cpufreq policies: /sys/devices/system/cpu/cpufreq/policy*/ scaling_cur_freq (kHz, the last
// request; cpuinfo_cur_freq when it is the only one), scaling_min_freq, scaling_max_freq, and
// stats/time_in_state ("<kHz> <time in 10 ms units>" lines) as residency counters. The
// residency counters are read only at stage boundaries: they need no periodic reads to stay
// exact, and a policy can have dozens of them.
#include <fmt/format.h>

#include <map>
#include <sstream>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

constexpr double kMaxFreqKhz = 1e8;  // 100 GHz: anything above is garbage

struct Policy {
    std::string name;  // policy0
    std::string dir;
    std::string related_cpus;
};

class CpufreqSource : public Source {
  public:
    struct Item {
        std::string path;
        Metric metric;
    };
    CpufreqSource(std::vector<Item> items, std::map<std::string, std::string> props)
        : items_(std::move(items)), props_(std::move(props)) {}
    std::string name() const override { return "cpufreq"; }
    std::string source_class() const override { return "cpufreq"; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& it : items_)
            out.push_back(it.metric);
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < items_.size(); ++i) {
            out[i] = read_number_file(items_[i].path, items_[i].metric.name, 1.0, 1.0, kMaxFreqKhz);
        }
    }
    std::map<std::string, std::string> properties() const override { return props_; }

  private:
    std::vector<Item> items_;
    std::map<std::string, std::string> props_;
};

// Parses time_in_state into kHz -> ms; nullopt when any line is malformed.
std::optional<std::map<double, double>> parse_time_in_state(const std::string& text) {
    std::map<double, double> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto t = sb::trim(line);
        if (t.empty())
            continue;
        auto sp = t.find_first_of(" \t");
        if (sp == std::string_view::npos)
            return std::nullopt;
        auto f = sysfs::parse_number(t.substr(0, sp));
        auto v = sysfs::parse_number(t.substr(sp + 1));
        if (!f || !v || *f <= 0 || *v < 0)
            return std::nullopt;
        out[*f] = *v * 10.0;  // units of 10 ms
    }
    return out;
}

class TimeInStateSource : public Source {
  public:
    struct PolicyBins {
        std::string path;  // stats/time_in_state
        std::string sensor;
        std::vector<double> bins_khz;
        std::size_t first = 0;  // index of its first metric
    };
    explicit TimeInStateSource(std::vector<PolicyBins> policies) : policies_(std::move(policies)) {}
    std::string name() const override { return "cpufreq_time_in_state"; }
    std::string source_class() const override { return "cpufreq"; }
    bool boundary_only() const override { return true; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& p : policies_) {
            for (double f : p.bins_khz) {
                Metric m;
                m.sensor = p.sensor;
                m.name = fmt::format("{}.residency_{}khz_ms", p.sensor, static_cast<int64_t>(f));
                m.quantity = Quantity::residency;
                m.kind = MetricKind::counter;
                m.refresh_ns = 10'000'000;
                m.bin_khz = f;
                out.push_back(m);
            }
        }
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (const auto& p : policies_) {
            auto r = read_file(p.path);
            std::optional<std::map<double, double>> tis;
            if (!r.text) {
                note_read_error(p.sensor + ".residency", r.err);
            } else if (!(tis = parse_time_in_state(*r.text))) {
                note_malformed(p.sensor + ".residency", *r.text);
            }
            for (std::size_t k = 0; k < p.bins_khz.size(); ++k) {
                std::optional<double> v;
                if (tis) {
                    auto it = tis->find(p.bins_khz[k]);
                    if (it != tis->end())
                        v = it->second;
                }
                out[p.first + k] = v;
            }
        }
    }

  private:
    std::vector<PolicyBins> policies_;
};

}  // namespace

void discover_cpufreq(const std::string& root, Discovery& d) {
    const std::string dir = root + "/devices/system/cpu/cpufreq";
    std::vector<CpufreqSource::Item> items;
    std::map<std::string, std::string> props;
    std::vector<TimeInStateSource::PolicyBins> tis;
    std::size_t tis_count = 0;
    for (const auto& pol : sysfs::list_dir(dir, "policy")) {
        std::string p = dir + "/" + pol;
        std::string sensor = "cpufreq." + sysfs::sanitize(pol);
        auto add = [&](const std::string& file, const std::string& field) {
            if (!sysfs::exists(p + "/" + file))
                return false;
            CpufreqSource::Item it;
            it.path = p + "/" + file;
            it.metric.sensor = sensor;
            it.metric.name = sensor + "." + field;
            it.metric.quantity = Quantity::frequency;
            items.push_back(it);
            return true;
        };
        if (!add("scaling_cur_freq", "cur_freq_khz"))
            add("cpuinfo_cur_freq", "cur_freq_khz");
        add("scaling_min_freq", "min_freq_khz");
        add("scaling_max_freq", "max_freq_khz");
        if (auto rc = sysfs::read_trimmed(p + "/related_cpus"))
            props[pol + ".cpus"] = *rc;
        if (auto g = sysfs::read_trimmed(p + "/scaling_governor"))
            props[pol + ".governor"] = *g;
        if (auto text = sysfs::read_text(p + "/stats/time_in_state").text) {
            if (auto parsed = parse_time_in_state(*text); parsed && !parsed->empty()) {
                TimeInStateSource::PolicyBins b;
                b.path = p + "/stats/time_in_state";
                b.sensor = sensor;
                for (const auto& [f, ms] : *parsed)
                    b.bins_khz.push_back(f);
                b.first = tis_count;
                tis_count += b.bins_khz.size();
                tis.push_back(std::move(b));
            }
        }
    }
    SourceClassStatus st{"cpufreq", 0, ""};
    if (!items.empty()) {
        d.sources.push_back(std::make_unique<CpufreqSource>(std::move(items), std::move(props)));
        ++st.found;
    }
    if (!tis.empty()) {
        d.sources.push_back(std::make_unique<TimeInStateSource>(std::move(tis)));
        ++st.found;
    } else if (st.found > 0) {
        st.note = "no stats/time_in_state (residency from sampled frequencies)";
    }
    if (st.found == 0)
        st.note = "no " + dir + "/policy*";
    d.classes.push_back(st);
}

}  // namespace sb
