// Thermal zones: /sys/class/thermal/thermal_zone*/{type,temp}, temp in m°C. Zones are named by
// `type` (numbering is not stable across kernels); a zone that fails to read (ENODATA while a
// sensor is powered down) gives a missing sample.
#include <map>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

// Anything outside this is a placeholder (-273000, 0x7fffffff), not a temperature.
constexpr double kMinTempMc = -60'000, kMaxTempMc = 250'000;

class ThermalSource : public Source {
  public:
    struct Zone {
        std::string path, metric;
    };
    explicit ThermalSource(std::vector<Zone> zones) : zones_(std::move(zones)) {}
    std::string name() const override { return "thermal"; }
    std::string source_class() const override { return "thermal"; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& z : zones_) {
            Metric m;
            m.name = z.metric;
            m.sensor = z.metric.substr(0, z.metric.rfind('.'));
            m.quantity = Quantity::temperature;
            out.push_back(m);
        }
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < zones_.size(); ++i) {
            out[i] =
                read_number_file(zones_[i].path, zones_[i].metric, 1.0, kMinTempMc, kMaxTempMc);
        }
    }

  private:
    std::vector<Zone> zones_;
};

}  // namespace

void discover_thermal(const std::string& root, Discovery& d) {
    const std::string dir = root + "/class/thermal";
    std::vector<std::pair<std::string, std::string>> found;  // (type, temp path)
    std::map<std::string, int> count;
    for (const auto& z : sysfs::list_dir(dir, "thermal_zone")) {
        std::string p = dir + "/" + z;
        if (!sysfs::exists(p + "/temp"))
            continue;
        auto type = sysfs::read_trimmed(p + "/type");
        std::string t = sysfs::sanitize(type && !type->empty() ? *type : z);
        found.emplace_back(t, p + "/temp");
        ++count[t];
    }
    std::vector<ThermalSource::Zone> zones;
    std::map<std::string, int> seen;
    for (const auto& [t, path] : found) {
        // Duplicate types (two "acpitz") get their occurrence number.
        std::string n = count[t] > 1 ? t + "-" + std::to_string(seen[t]++) : t;
        zones.push_back({path, "thermal." + n + ".temp_mc"});
    }
    SourceClassStatus st{"thermal", 0, ""};
    if (zones.empty()) {
        st.note = "no " + dir + "/thermal_zone*/temp";
    } else {
        d.sources.push_back(std::make_unique<ThermalSource>(std::move(zones)));
        st.found = 1;
    }
    d.classes.push_back(st);
}

}  // namespace sb
