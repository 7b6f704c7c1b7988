// RAPL powercap domains: /sys/class/powercap/intel-rapl:<p>[:<sub>]/{name,energy_uj,
// max_energy_range_uj} (also intel-rapl-mmio:*). energy_uj is a µJ counter that wraps at
// max_energy_range_uj and is root-only since Linux 5.10. Domains nest (psys contains the
// packages, a package its core/uncore/dram): each metric says what it is within, and nothing
// here or in the sampler ever sums them.
#include <cerrno>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

struct Domain {
    std::string path;  // energy_uj
    Metric metric;
};

class RaplSource : public Source {
  public:
    explicit RaplSource(std::vector<Domain> domains) : domains_(std::move(domains)) {}
    std::string name() const override { return "rapl"; }
    std::string source_class() const override { return "rapl"; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& d : domains_)
            out.push_back(d.metric);
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < domains_.size(); ++i) {
            const auto& m = domains_[i].metric;
            // A value above the wrap range is garbage, not energy.
            double hi = m.wrap_range.value_or(1.8e19);
            out[i] = read_number_file(domains_[i].path, m.name, 1, 0, hi);
        }
    }

  private:
    std::vector<Domain> domains_;
};

}  // namespace

void discover_rapl(const std::string& root, Discovery& d) {
    const std::string dir = root + "/class/powercap";
    SourceClassStatus st{"rapl", 0, ""};
    struct Found {
        std::string id;      // intel-rapl:0:1
        std::string prefix;  // intel-rapl or intel-rapl-mmio
        std::string name;    // package-0, core, psys
        std::string path;
        std::optional<double> range;
    };
    std::vector<Found> found;
    std::vector<std::string> unreadable;
    for (const auto& e : sysfs::list_dir(dir, "intel-rapl")) {
        auto colon = e.find(':');
        if (colon == std::string::npos)
            continue;  // the control type directory itself
        std::string p = dir + "/" + e;
        if (!sysfs::exists(p + "/energy_uj"))
            continue;
        auto r = sysfs::read_text(p + "/energy_uj");
        if (!r.text) {
            unreadable.push_back(e + " (" + (r.err == EACCES ? "permission" : "read error") + ")");
            continue;
        }
        Found f;
        f.id = e;
        f.prefix = e.substr(0, colon);
        auto n = sysfs::read_trimmed(p + "/name");
        f.name = sysfs::sanitize(n && !n->empty() ? *n : e);
        f.path = p + "/energy_uj";
        if (auto mr = sysfs::read_trimmed(p + "/max_energy_range_uj")) {
            auto v = sysfs::parse_number(*mr);
            if (v && *v > 0)
                f.range = v;
        }
        found.push_back(f);
    }
    auto find = [&](const std::string& id) -> const Found* {
        for (const auto& f : found) {
            if (f.id == id)
                return &f;
        }
        return nullptr;
    };
    auto sensor_of = [&](const Found& f) {
        std::string base = f.prefix == "intel-rapl" ? "rapl" : "rapl_mmio";
        auto last = f.id.rfind(':');
        if (last != f.id.find(':')) {
            if (const Found* parent = find(f.id.substr(0, last))) {
                return base + "." + parent->name + "." + f.name;
            }
        }
        return base + "." + f.name;
    };
    std::string psys_sensor;
    for (const auto& f : found) {
        if (f.name == "psys")
            psys_sensor = sensor_of(f);
    }
    std::vector<Domain> domains;
    for (const auto& f : found) {
        Domain dm;
        dm.path = f.path;
        dm.metric.sensor = sensor_of(f);
        dm.metric.name = dm.metric.sensor + ".energy_uj";
        dm.metric.quantity = Quantity::energy;
        dm.metric.kind = MetricKind::counter;
        dm.metric.wrap_range = f.range;
        dm.metric.refresh_ns = 1'000'000;  // RAPL updates about every millisecond
        dm.metric.max_plausible_mw = 5e6;
        dm.metric.system_total = f.name == "psys";
        auto last = f.id.rfind(':');
        if (last != f.id.find(':')) {
            if (const Found* parent = find(f.id.substr(0, last)))
                dm.metric.within = sensor_of(*parent);
        } else if (f.name != "psys" && !psys_sensor.empty()) {
            dm.metric.within = psys_sensor;
        }
        domains.push_back(dm);
    }
    if (!domains.empty()) {
        d.sources.push_back(std::make_unique<RaplSource>(std::move(domains)));
        st.found = 1;
    }
    if (!unreadable.empty()) {
        std::string list;
        for (const auto& u : unreadable)
            list += (list.empty() ? "" : ", ") + u;
        st.note = "energy_uj not readable: " + list;
        d.warnings.push_back({"rapl_unreadable",
                              "RAPL energy counters exist but cannot be read: " + list,
                              "energy_uj is root-only since Linux 5.10: run as root, or "
                              "`sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj`."});
    } else if (st.found == 0) {
        st.note = "no " + dir + "/intel-rapl:*";
    }
    d.classes.push_back(st);
}

}  // namespace sb
