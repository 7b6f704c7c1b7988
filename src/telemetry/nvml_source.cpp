// NVIDIA GPUs through NVML, loaded at run time with dlopen (never linked; no nvml.h needed).
// An absent library, a failed nvmlInit or zero devices mean the family is absent. Per GPU:
// total energy (mJ counter since driver load, Volta+, refreshed every 20-100 ms), power usage
// (mW; a 1 s average on Ampere+), SM and memory clocks, temperature, utilisation, the memory
// in use (MB, 10^6 bytes) and the clocks-event (throttle) reason bits; as properties, read
// once: the enforced power limit (mW), the memory's total (MB) and the driver's version. Metrics a
// GPU does not support are left out.
#include <dlfcn.h>

#include <cstring>

#include <fmt/format.h>

#include "telemetry/discover.hpp"

namespace sb {
namespace {

using nvmlReturn_t = int;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
    unsigned int gpu, memory;
};
struct nvmlMemory_t {  // nvmlDeviceGetMemoryInfo's (v1): bytes
    unsigned long long total, free, used;
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kClockSm = 1, kClockMem = 2, kTempGpu = 0;
constexpr unsigned long long kMaxMemoryBytes = 1ULL << 50;  // 1 PiB: more is no GPU's memory

struct NvmlLib {
    void* handle = nullptr;
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    nvmlReturn_t (*count)(unsigned int*) = nullptr;
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*) = nullptr;
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*) = nullptr;
    nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;
    nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
    bool initialized = false;

    ~NvmlLib() {
        if (initialized && shutdown)
            shutdown();
        if (handle)
            ::dlclose(handle);
    }
};

template <class F>
void resolve(void* h, F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(h, name));
}

enum class Field { energy, power, temp, sm_clock, mem_clock, busy, mem_used, reasons };

class NvmlSource : public Source {
  public:
    NvmlSource(std::shared_ptr<NvmlLib> lib, nvmlDevice_t dev, unsigned index, std::string model)
        : lib_(std::move(lib)), dev_(dev), index_(index), model_(std::move(model)) {
        sensor_ = fmt::format("nvml.gpu{}", index_);
        probe();
    }
    bool usable() const { return !fields_.empty(); }
    std::string name() const override { return sensor_; }
    std::string source_class() const override { return "nvml"; }
    std::vector<Metric> describe() const override { return metrics_; }
    std::map<std::string, std::string> properties() const override {
        std::map<std::string, std::string> p = {
            {"model", model_},
            {"power_note", "power_mw is NVML's power usage (a 1 s average on Ampere and newer)"}};
        // Read once, as the run starts: the enforced power limit (mW) and the driver.
        unsigned int limit = 0;
        if (lib_->power_limit && lib_->power_limit(dev_, &limit) == kNvmlSuccess)
            p["power_limit_mw"] = std::to_string(limit);
        nvmlMemory_t mem{};
        if (lib_->memory && lib_->memory(dev_, &mem) == kNvmlSuccess && mem.total > 0 &&
            mem.total <= kMaxMemoryBytes)
            p["memory_total_mb"] = fmt::format("{:.1f}", static_cast<double>(mem.total) / 1e6);
        char driver[96] = {};
        if (lib_->driver_version && lib_->driver_version(driver, sizeof driver) == kNvmlSuccess &&
            driver[0])
            p["driver"] = std::string(driver, strnlen(driver, sizeof driver));
        return p;
    }
    void read(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < fields_.size(); ++i)
            out[i] = get(i);
    }
    void read_boundary(int64_t, std::vector<std::optional<double>>& out) override {
        for (std::size_t i = 0; i < fields_.size(); ++i) {
            out[i] =
                fields_[i] == Field::energy || fields_[i] == Field::power ? get(i) : std::nullopt;
        }
    }

  private:
    std::optional<double> query(Field f, nvmlReturn_t& rc) {
        unsigned int u = 0;
        unsigned long long ull = 0;
        switch (f) {
            case Field::energy:
                rc = lib_->energy(dev_, &ull);
                return static_cast<double>(ull) * 1000.0;  // mJ -> µJ
            case Field::power:
                rc = lib_->power(dev_, &u);
                return static_cast<double>(u);
            case Field::temp:
                rc = lib_->temperature(dev_, kTempGpu, &u);
                return static_cast<double>(u) * 1000.0;
            case Field::sm_clock:
                rc = lib_->clock(dev_, kClockSm, &u);
                return static_cast<double>(u) * 1000.0;  // MHz -> kHz
            case Field::mem_clock:
                rc = lib_->clock(dev_, kClockMem, &u);
                return static_cast<double>(u) * 1000.0;
            case Field::busy: {
                nvmlUtilization_t ut{};
                rc = lib_->utilization(dev_, &ut);
                return static_cast<double>(ut.gpu);
            }
            case Field::mem_used: {
                // Used as the driver counts it (v1: the driver's reservation included, as
                // nvidia-smi's used column), in MB; bounded here by the total of the same reading.
                nvmlMemory_t mem{};
                rc = lib_->memory(dev_, &mem);
                if (mem.total == 0 || mem.total > kMaxMemoryBytes || mem.used > mem.total)
                    return std::nullopt;
                return static_cast<double>(mem.used) / 1e6;
            }
            case Field::reasons:
                rc = lib_->reasons(dev_, &ull);
                return static_cast<double>(ull);
        }
        rc = -1;
        return std::nullopt;
    }

    // What NVML says is a claim, bounded as the sysfs readers bound theirs (hwmon's ranges):
    // a temperature within -60..250 °C, a power up to 10 kW, clocks up to 100 GHz, a busy share
    // up to 100 %, an energy counter up to 1.8e19 µJ; the reason bits as they are.
    static bool plausible(Field f, double v) {
        switch (f) {
            case Field::energy:
                return v >= 0 && v <= 1.8e19;
            case Field::power:
                return v >= 0 && v <= 1e7;
            case Field::temp:
                return v >= -60'000 && v <= 250'000;
            case Field::sm_clock:
            case Field::mem_clock:
                return v >= 0 && v <= 1e8;
            case Field::busy:
                return v >= 0 && v <= 100;
            case Field::mem_used:
                return v >= 0;  // and no more than the total (query)
            case Field::reasons:
                return true;
        }
        return false;
    }

    std::optional<double> get(std::size_t i) {
        nvmlReturn_t rc = 0;
        auto v = query(fields_[i], rc);
        if (rc != kNvmlSuccess) {
            note_malformed(metrics_[i].name, fmt::format("NVML error {}", rc));
            return std::nullopt;
        }
        if (!v || !plausible(fields_[i], *v)) {
            note_malformed(metrics_[i].name, v ? fmt::format("{}", *v) : "no value");
            return std::nullopt;
        }
        return v;
    }

    void probe() {
        struct Candidate {
            Field f;
            bool available;
            const char* field;
            Quantity q;
        };
        const Candidate cands[] = {
            {Field::energy, lib_->energy != nullptr, "energy_uj", Quantity::energy},
            {Field::power, lib_->power != nullptr, "power_mw", Quantity::power},
            {Field::temp, lib_->temperature != nullptr, "temp_mc", Quantity::temperature},
            {Field::sm_clock, lib_->clock != nullptr, "sm_freq_khz", Quantity::frequency},
            {Field::mem_clock, lib_->clock != nullptr, "mem_freq_khz", Quantity::frequency},
            {Field::busy, lib_->utilization != nullptr, "busy_pct", Quantity::percent},
            {Field::mem_used, lib_->memory != nullptr, "mem_used_mb", Quantity::memory},
            {Field::reasons, lib_->reasons != nullptr, "throttle_flags", Quantity::flags},
        };
        for (const auto& c : cands) {
            if (!c.available)
                continue;
            nvmlReturn_t rc = 0;
            query(c.f, rc);
            if (rc != kNvmlSuccess)
                continue;
            Metric m;
            m.sensor = sensor_;
            m.name = sensor_ + "." + c.field;
            m.quantity = c.q;
            if (c.f == Field::energy) {
                m.kind = MetricKind::counter;
                m.refresh_ns = 100'000'000;
                m.max_plausible_mw = 5e6;
            }
            fields_.push_back(c.f);
            metrics_.push_back(m);
        }
    }

    std::shared_ptr<NvmlLib> lib_;
    nvmlDevice_t dev_;
    unsigned index_;
    std::string model_, sensor_;
    std::vector<Field> fields_;
    std::vector<Metric> metrics_;
};

}  // namespace

void discover_nvml(const std::string& library, Discovery& d) {
    SourceClassStatus st{"nvml", 0, ""};
    auto lib = std::make_shared<NvmlLib>();
    lib->handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        st.note = library + " not found";
        d.classes.push_back(st);
        return;
    }
    void* h = lib->handle;
    resolve(h, lib->init, "nvmlInit_v2");
    resolve(h, lib->shutdown, "nvmlShutdown");
    resolve(h, lib->count, "nvmlDeviceGetCount_v2");
    resolve(h, lib->by_index, "nvmlDeviceGetHandleByIndex_v2");
    resolve(h, lib->get_name, "nvmlDeviceGetName");
    resolve(h, lib->energy, "nvmlDeviceGetTotalEnergyConsumption");
    resolve(h, lib->power, "nvmlDeviceGetPowerUsage");
    resolve(h, lib->clock, "nvmlDeviceGetClockInfo");
    resolve(h, lib->temperature, "nvmlDeviceGetTemperature");
    resolve(h, lib->reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!lib->reasons)
        resolve(h, lib->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    resolve(h, lib->utilization, "nvmlDeviceGetUtilizationRates");
    resolve(h, lib->memory, "nvmlDeviceGetMemoryInfo");
    resolve(h, lib->power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    resolve(h, lib->driver_version, "nvmlSystemGetDriverVersion");
    unsigned int n = 0;
    if (!lib->init || !lib->count || !lib->by_index) {
        st.note = library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2";
    } else if (int rc = lib->init(); rc != kNvmlSuccess) {
        st.note = fmt::format("nvmlInit_v2 failed (NVML error {})", rc);
    } else {
        lib->initialized = true;
        if (lib->count(&n) != kNvmlSuccess || n == 0)
            st.note = "NVML reports no GPU";
    }
    for (unsigned i = 0; i < n; ++i) {
        nvmlDevice_t dev = nullptr;
        if (lib->by_index(i, &dev) != kNvmlSuccess)
            continue;
        char name[96] = {};
        if (!lib->get_name || lib->get_name(dev, name, sizeof name) != kNvmlSuccess)
            name[0] = 0;
        auto src = std::make_unique<NvmlSource>(lib, dev, i, name);
        if (!src->usable())
            continue;
        d.sources.push_back(std::move(src));
        ++st.found;
    }
    d.classes.push_back(st);
}

}  // namespace sb
