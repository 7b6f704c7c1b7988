// Pixel on-device power monitor (ODPM): /sys/bus/iio/devices/iio:device*/energy_value,
//   t=<ms since boot>
//   CH<n>(T=<ms>)[<rail>], <energy in µW·s = µJ>
// one cumulative counter per rail. The driver caches reads for 50 ms.
#include <fmt/format.h>

#include <map>
#include <set>
#include <sstream>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

// rail -> µJ; nullopt when the text is not in the format above.
std::optional<std::vector<std::pair<std::string, double>>> parse_energy_value(
    const std::string& text) {
    std::vector<std::pair<std::string, double>> out;
    std::istringstream in(text);
    std::string line;
    bool any = false;
    while (std::getline(in, line)) {
        auto t = sb::trim(line);
        if (t.empty() || t.substr(0, 2) == "t=")
            continue;
        auto lb = t.find('['), rb = t.find(']'), comma = t.find(',', rb == t.npos ? 0 : rb);
        if (t.substr(0, 2) != "CH" || lb == t.npos || rb == t.npos || rb < lb || comma == t.npos) {
            return std::nullopt;
        }
        auto v = sysfs::parse_number(t.substr(comma + 1));
        if (!v || *v < 0)
            return std::nullopt;
        out.emplace_back(std::string(t.substr(lb + 1, rb - lb - 1)), *v);
        any = true;
    }
    if (!any)
        return std::nullopt;
    return out;
}

class OdpmSource : public Source {
  public:
    OdpmSource(std::string name, std::string path, std::vector<std::string> rails,
               std::vector<Metric> metrics)
        : name_(std::move(name)),
          path_(std::move(path)),
          rails_(std::move(rails)),
          metrics_(std::move(metrics)) {}
    std::string name() const override { return name_; }
    std::string source_class() const override { return "odpm"; }
    std::vector<Metric> describe() const override { return metrics_; }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (auto& o : out)
            o.reset();
        auto r = read_file(path_);
        if (!r.text) {
            note_read_error(name_ + ".energy_value", r.err);
            return;
        }
        auto parsed = parse_energy_value(*r.text);
        if (!parsed) {
            note_malformed(name_ + ".energy_value", *r.text);
            return;
        }
        for (std::size_t i = 0; i < rails_.size(); ++i) {
            for (const auto& [rail, uj] : *parsed) {
                if (rail == rails_[i])
                    out[i] = uj;
            }
            if (!out[i])
                note_malformed(metrics_[i].name, "rail missing");
        }
    }

  private:
    std::string name_, path_;
    std::vector<std::string> rails_;
    std::vector<Metric> metrics_;
};

}  // namespace

void discover_odpm(const std::string& root, Discovery& d) {
    const std::string dir = root + "/bus/iio/devices";
    SourceClassStatus st{"odpm", 0, ""};
    std::set<std::string> used;
    for (const auto& dev : sysfs::list_dir(dir, "iio:device")) {
        std::string path = dir + "/" + dev + "/energy_value";
        auto text = sysfs::read_text(path).text;
        if (!text)
            continue;
        auto parsed = parse_energy_value(*text);
        if (!parsed)
            continue;
        std::vector<std::string> rails;
        std::vector<Metric> metrics;
        for (const auto& [rail, uj] : *parsed) {
            std::string sensor = fmt::format("odpm.{}", sysfs::sanitize(rail));
            if (used.count(sensor))
                sensor += fmt::format("-{}", sysfs::sanitize(dev));
            used.insert(sensor);
            Metric m;
            m.sensor = sensor;
            m.name = sensor + ".energy_uj";
            m.quantity = Quantity::energy;
            m.kind = MetricKind::counter;
            m.refresh_ns = 50'000'000;
            m.max_plausible_mw = 1e5;
            rails.push_back(rail);
            metrics.push_back(m);
        }
        auto n = sysfs::read_trimmed(dir + "/" + dev + "/name");
        std::string name = fmt::format("odpm.{}", sysfs::sanitize(n && !n->empty() ? *n : dev));
        if (used.count(name))
            name += fmt::format("-{}", sysfs::sanitize(dev));
        used.insert(name);
        d.sources.push_back(
            std::make_unique<OdpmSource>(name, path, std::move(rails), std::move(metrics)));
        ++st.found;
    }
    if (st.found == 0)
        st.note = "no " + dir + "/iio:device*/energy_value";
    d.classes.push_back(st);
}

}  // namespace sb
