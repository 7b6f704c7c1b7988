// hwmon chips: /sys/class/hwmon/hwmon*/ with temp*_input (m°C), power*_input|_average (µW),
// energy*_input (µJ, cumulative), in*_input (mV), curr*_input (mA), freq*_input (Hz: a GPU's
// clocks, amdgpu's sclk and mclk). Chips are named by their
// `name` file (hwmon numbering changes across boots), channels by their *_label when present.
// Jetson INA3221 rails (name "ina3221") get a power metric derived from bus voltage × current
// of the same channel; VDD_IN / POM_5V_IN is the whole module's input.
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

struct HwmonItem {
    std::string path;  // empty for derived metrics
    Metric metric;
    double scale = 1, lo = 0, hi = 0;
    int volt = -1, curr = -1;  // derived power: indices of the voltage and current items
};

class HwmonSource : public Source {
  public:
    HwmonSource(std::string chip, std::vector<HwmonItem> items)
        : chip_(std::move(chip)), items_(std::move(items)) {}
    std::string name() const override { return "hwmon." + chip_; }
    std::string source_class() const override { return "hwmon"; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& it : items_)
            out.push_back(it.metric);
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < items_.size(); ++i) {
            const auto& it = items_[i];
            if (it.path.empty())
                continue;
            out[i] = read_number_file(it.path, it.metric.name, it.scale, it.lo, it.hi);
        }
        for (std::size_t i = 0; i < items_.size(); ++i) {
            const auto& it = items_[i];
            if (!it.path.empty())
                continue;
            const auto& v = out[static_cast<std::size_t>(it.volt)];
            const auto& c = out[static_cast<std::size_t>(it.curr)];
            out[i] = v && c ? std::optional<double>(*v * *c / 1000.0) : std::nullopt;
        }
    }

  private:
    std::string chip_;
    std::vector<HwmonItem> items_;
};

struct Channel {
    std::string type;  // temp, power, energy, in, curr, freq
    int index = 0;
    std::string file;  // e.g. temp1_input
};

// Parses "<type><n>_input" / "power<n>_average".
std::optional<Channel> parse_channel(const std::string& f) {
    static const char* kTypes[] = {"temp", "power", "energy", "in", "curr", "freq"};
    for (const char* t : kTypes) {
        std::string_view s(f), type(t);
        if (s.substr(0, type.size()) != type)
            continue;
        s.remove_prefix(type.size());
        std::size_t n = 0;
        while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n])))
            ++n;
        if (n == 0)
            continue;
        std::string_view suffix = s.substr(n);
        if (suffix != "_input" && !(type == "power" && suffix == "_average"))
            continue;
        return Channel{std::string(type), std::atoi(std::string(s.substr(0, n)).c_str()), f};
    }
    return std::nullopt;
}

std::vector<HwmonItem> chip_items(const std::string& dir, const std::string& chip) {
    std::vector<Channel> chans;
    std::set<std::string> files;
    for (const auto& f : sysfs::list_dir(dir))
        files.insert(f);
    for (const auto& f : files) {
        auto c = parse_channel(f);
        if (!c)
            continue;
        // power*_average only when there is no power*_input for that channel.
        if (c->type == "power" && f.find("_average") != std::string::npos &&
            files.count("power" + std::to_string(c->index) + "_input")) {
            continue;
        }
        chans.push_back(*c);
    }
    const bool ina3221 = chip.rfind("ina3221", 0) == 0;
    auto label_of = [&](const std::string& type, int idx) -> std::string {
        auto l = sysfs::read_trimmed(dir + "/" + type + std::to_string(idx) + "_label");
        if (!l && ina3221 && type == "curr") {
            l = sysfs::read_trimmed(dir + "/in" + std::to_string(idx) + "_label");
        }
        if (l && !l->empty())
            return sysfs::sanitize(*l);
        if (ina3221 && (type == "in" || type == "curr"))
            return "ch" + std::to_string(idx);
        return type + std::to_string(idx);
    };
    std::vector<HwmonItem> items;
    std::map<std::string, std::pair<int, int>> rails;  // ina3221 label -> (volt, curr) items
    for (const auto& c : chans) {
        HwmonItem it;
        it.path = dir + "/" + c.file;
        std::string label = label_of(c.type, c.index);
        it.metric.sensor = "hwmon." + chip + "." + label;
        if (c.type == "temp") {
            it.metric.quantity = Quantity::temperature;
            it.lo = -60'000;
            it.hi = 250'000;
        } else if (c.type == "power") {
            it.metric.quantity = Quantity::power;
            it.scale = 1e-3;  // µW -> mW
            it.hi = 1e7;
        } else if (c.type == "energy") {
            it.metric.quantity = Quantity::energy;
            it.metric.kind = MetricKind::counter;
            it.metric.max_plausible_mw = 5e6;
            it.hi = 1.8e19;
        } else if (c.type == "freq") {
            // A GPU's clocks (amdgpu: freq1 "sclk", freq2 "mclk"), in Hz.
            it.metric.quantity = Quantity::frequency;
            it.scale = 1e-3;  // Hz -> kHz
            it.hi = 1e8;
        } else if (c.type == "in") {
            it.metric.quantity = Quantity::voltage;
            it.hi = 1e6;
        } else {
            it.metric.quantity = Quantity::current;
            it.lo = -1e6;
            it.hi = 1e6;
        }
        static const std::map<Quantity, std::string> kField = {
            {Quantity::temperature, "temp_mc"}, {Quantity::power, "power_mw"},
            {Quantity::energy, "energy_uj"},    {Quantity::voltage, "voltage_mv"},
            {Quantity::current, "current_ma"},  {Quantity::frequency, "freq_khz"}};
        it.metric.name = it.metric.sensor + "." + kField.at(it.metric.quantity);
        if (ina3221 && c.index <= 3 && (c.type == "in" || c.type == "curr")) {
            auto& r = rails.try_emplace(label, -1, -1).first->second;
            (c.type == "in" ? r.first : r.second) = static_cast<int>(items.size());
        }
        items.push_back(std::move(it));
    }
    for (const auto& [label, vc] : rails) {
        if (vc.first < 0 || vc.second < 0)
            continue;
        HwmonItem it;
        it.metric.sensor = "hwmon." + chip + "." + label;
        it.metric.name = it.metric.sensor + ".power_mw";
        it.metric.quantity = Quantity::power;
        it.metric.system_total = label == "VDD_IN" || label == "POM_5V_IN";
        it.volt = vc.first;
        it.curr = vc.second;
        items.push_back(std::move(it));
    }
    // Unique names even when two channels share a label.
    std::map<std::string, int> seen;
    for (auto& it : items) {
        int n = seen[it.metric.name]++;
        if (n > 0)
            it.metric.name += fmt::format("#{}", n);
    }
    return items;
}

}  // namespace

void discover_hwmon(const std::string& root, Discovery& d) {
    const std::string dir = root + "/class/hwmon";
    struct Chip {
        std::string dir, name, device;
    };
    std::vector<Chip> chips;
    std::map<std::string, int> count;
    for (const auto& h : sysfs::list_dir(dir, "hwmon")) {
        std::string p = dir + "/" + h;
        auto n = sysfs::read_trimmed(p + "/name");
        std::string name = sysfs::sanitize(n && !n->empty() ? *n : h);
        std::string device;
        char buf[4096];
        ssize_t len = ::readlink((p + "/device").c_str(), buf, sizeof buf - 1);
        if (len > 0) {
            std::string target(buf, static_cast<std::size_t>(len));
            device = sysfs::sanitize(target.substr(target.rfind('/') + 1));
        }
        chips.push_back({p, name, device});
        ++count[name];
    }
    SourceClassStatus st{"hwmon", 0, ""};
    std::map<std::string, int> seen;
    for (const auto& c : chips) {
        std::string chip = c.name;
        if (count[c.name] > 1) {
            // Same driver twice (two INA3221 on Orin, coretemp per package): the device
            // address is stable, the hwmon number is not.
            int k = seen[c.name]++;
            chip += "-" + (c.device.empty() ? std::to_string(k) : c.device);
        }
        auto items = chip_items(c.dir, chip);
        if (items.empty())
            continue;
        d.sources.push_back(std::make_unique<HwmonSource>(chip, std::move(items)));
        ++st.found;
    }
    if (st.found == 0)
        st.note = "no readable channels under " + dir;
    d.classes.push_back(st);
}

}  // namespace sb
