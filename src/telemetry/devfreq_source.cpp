// GPU and other devfreq frequencies. Adreno: /sys/class/kgsl/kgsl-3d0/{gpuclk (Hz),
// max_gpuclk, gpu_busy_percentage ("12 %"), temp (m°C)}; Mali:
// /sys/class/misc/mali0/device/devfreq/*/cur_freq (Hz); generic devfreq:
// /sys/class/devfreq/*/{cur_freq,min_freq,max_freq} (Hz). Devices already covered by kgsl or
// Mali are not listed twice.
// Desktop and laptop GPUs through their DRM driver (discover_gpu_drm), per card
// /sys/class/drm/cardN: amdgpu's device/gpu_busy_percent and mem_busy_percent (%); i915's
// gt_act_freq_mhz (the hardware's), gt_cur_freq_mhz (requested), gt_min/max_freq_mhz (MHz);
// xe's device/tile0/gt0/freq0/{act,cur,min,max}_freq (MHz). Power, energy and temperature of
// these cards come through hwmon (amdgpu's power1_average, i915's energy1_input), by name.
#include "telemetry/discover.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {
namespace {

struct DevfreqItem {
    std::string path;
    Metric metric;
    double scale = 1, lo = 0, hi = 0;
    bool leading = false;  // value followed by text ("12 %")
};

class FileSource : public Source {
  public:
    FileSource(std::string name, std::vector<DevfreqItem> items, std::string cls = "gpu_devfreq")
        : name_(std::move(name)), items_(std::move(items)), class_(std::move(cls)) {}
    std::string name() const override { return name_; }
    std::string source_class() const override { return class_; }
    std::vector<Metric> describe() const override {
        std::vector<Metric> out;
        for (const auto& it : items_)
            out.push_back(it.metric);
        return out;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < items_.size(); ++i) {
            const auto& it = items_[i];
            if (!it.leading) {
                out[i] = read_number_file(it.path, it.metric.name, it.scale, it.lo, it.hi);
                continue;
            }
            auto r = read_file(it.path);
            out[i] = std::nullopt;
            if (!r.text) {
                note_read_error(it.metric.name, r.err);
                continue;
            }
            auto v = sysfs::parse_leading_number(*r.text);
            if (!v || *v * it.scale < it.lo || *v * it.scale > it.hi) {
                note_malformed(it.metric.name, *r.text);
                continue;
            }
            out[i] = *v * it.scale;
        }
    }

  private:
    std::string name_;
    std::vector<DevfreqItem> items_;
    std::string class_;
};

constexpr double kMaxKhz = 1e8;

// Adds a metric for path when the file exists.
void add(std::vector<DevfreqItem>& items, const std::string& path, const std::string& sensor,
         const std::string& field, Quantity q, double scale, double lo, double hi,
         bool leading = false) {
    if (!sysfs::exists(path))
        return;
    DevfreqItem it;
    it.path = path;
    it.metric.sensor = sensor;
    it.metric.name = sensor + "." + field;
    it.metric.quantity = q;
    it.scale = scale;
    it.lo = lo;
    it.hi = hi;
    it.leading = leading;
    items.push_back(it);
}

}  // namespace

void discover_gpu_devfreq(const std::string& root, Discovery& d) {
    SourceClassStatus st{"gpu_devfreq", 0, ""};
    bool kgsl = false, mali = false;
    std::string mali_devfreq;
    {
        const std::string k = root + "/class/kgsl/kgsl-3d0";
        std::vector<DevfreqItem> items;
        const std::string s = "gpu.kgsl-3d0";
        if (sysfs::exists(k + "/gpuclk")) {
            add(items, k + "/gpuclk", s, "cur_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
        } else {
            add(items, k + "/devfreq/cur_freq", s, "cur_freq_khz", Quantity::frequency, 1e-3, 0,
                kMaxKhz);
        }
        add(items, k + "/max_gpuclk", s, "max_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
        // The floor the governor may go down to: devfreq's (Hz), else kgsl's own (MHz).
        if (sysfs::exists(k + "/devfreq/min_freq"))
            add(items, k + "/devfreq/min_freq", s, "min_freq_khz", Quantity::frequency, 1e-3, 0,
                kMaxKhz);
        else
            add(items, k + "/min_clock_mhz", s, "min_freq_khz", Quantity::frequency, 1e3, 0,
                kMaxKhz);
        add(items, k + "/gpu_busy_percentage", s, "busy_pct", Quantity::percent, 1, 0, 100, true);
        add(items, k + "/temp", s, "temp_mc", Quantity::temperature, 1, -60'000, 250'000);
        if (!items.empty()) {
            d.sources.push_back(std::make_unique<FileSource>("gpu.kgsl-3d0", std::move(items)));
            ++st.found;
            kgsl = true;
        }
    }
    {
        const std::string m = root + "/class/misc/mali0/device/devfreq";
        auto devs = sysfs::list_dir(m);
        if (!devs.empty()) {
            std::vector<DevfreqItem> items;
            mali_devfreq = devs.front();
            const std::string p = m + "/" + mali_devfreq, s = "gpu.mali0";
            add(items, p + "/cur_freq", s, "cur_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
            add(items, p + "/max_freq", s, "max_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
            add(items, p + "/min_freq", s, "min_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
            if (!items.empty()) {
                d.sources.push_back(std::make_unique<FileSource>("gpu.mali0", std::move(items)));
                ++st.found;
                mali = true;
            }
        }
    }
    const std::string g = root + "/class/devfreq";
    for (const auto& dev : sysfs::list_dir(g)) {
        if (kgsl && dev.find("kgsl") != std::string::npos)
            continue;
        if (mali && (dev == mali_devfreq || dev.find("mali") != std::string::npos))
            continue;
        std::vector<DevfreqItem> items;
        const std::string p = g + "/" + dev, s = "devfreq." + sysfs::sanitize(dev);
        add(items, p + "/cur_freq", s, "cur_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
        add(items, p + "/min_freq", s, "min_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
        add(items, p + "/max_freq", s, "max_freq_khz", Quantity::frequency, 1e-3, 0, kMaxKhz);
        if (items.empty())
            continue;
        d.sources.push_back(std::make_unique<FileSource>(s, std::move(items)));
        ++st.found;
    }
    if (st.found == 0)
        st.note = "no kgsl-3d0, mali0 or " + g + "/*";
    d.classes.push_back(st);
}

void discover_gpu_drm(const std::string& root, Discovery& d) {
    SourceClassStatus st{"gpu_drm", 0, ""};
    const std::string drm = root + "/class/drm";
    for (const auto& card : sysfs::list_dir(drm)) {
        // cardN only: "card0-DP-1" and the like are its connectors, "renderD128" its render node.
        if (card.rfind("card", 0) != 0 || card.size() == 4 ||
            card.find_first_not_of("0123456789", 4) != std::string::npos)
            continue;
        const std::string c = drm + "/" + card, s = "gpu.drm-" + card;
        std::vector<DevfreqItem> items;
        add(items, c + "/device/gpu_busy_percent", s, "busy_pct", Quantity::percent, 1, 0, 100);
        add(items, c + "/device/mem_busy_percent", s, "mem_busy_pct", Quantity::percent, 1, 0, 100);
        // amdgpu's own memory (VRAM), bytes as MB (10^6 bytes), up to 1 PB
        add(items, c + "/device/mem_info_vram_used", s, "mem_used_mb", Quantity::memory, 1e-6, 0,
            1e9);
        add(items, c + "/device/mem_info_vram_total", s, "mem_total_mb", Quantity::memory, 1e-6, 0,
            1e9);
        // i915 (the hardware's frequency first: the requested one may differ under a limit)
        add(items, c + "/gt_act_freq_mhz", s, "cur_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        if (!sysfs::exists(c + "/gt_act_freq_mhz"))
            add(items, c + "/gt_cur_freq_mhz", s, "cur_freq_khz", Quantity::frequency, 1e3, 0,
                kMaxKhz);
        add(items, c + "/gt_min_freq_mhz", s, "min_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        add(items, c + "/gt_max_freq_mhz", s, "max_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        // xe
        const std::string xe = c + "/device/tile0/gt0/freq0";
        add(items, xe + "/act_freq", s, "cur_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        add(items, xe + "/min_freq", s, "min_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        add(items, xe + "/max_freq", s, "max_freq_khz", Quantity::frequency, 1e3, 0, kMaxKhz);
        if (items.empty())
            continue;
        d.sources.push_back(std::make_unique<FileSource>(s, std::move(items), "gpu_drm"));
        ++st.found;
    }
    if (st.found == 0)
        st.note = "no GPU busy or frequency files under " + drm + "/card*";
    d.classes.push_back(st);
}

}  // namespace sb
