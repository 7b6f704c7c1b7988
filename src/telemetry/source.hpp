#pragma once
// Telemetry sources: one object per sensor family instance (all thermal zones, one hwmon chip,
// one battery, the RAPL domains, one GPU...). A source is built on a root directory (the sysfs
// root, "/sys" on a real device, a fixture tree in tests), says what it measures with
// describe(), and reads current values with read(). A file that is absent means "not on this
// device"; a value that cannot be read or parsed is a missing sample (std::nullopt) and a
// counted warning, never an exception.
//
// Every value is converted to one canonical unit per quantity (see unit_of()), which is also
// the suffix of the metric's name: thermal.cpu-0-0.temp_mc, rapl.package-0.energy_uj.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enums.hpp"
#include "core/warning.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {

enum class Quantity {
    temperature,  // mC (milli-degrees Celsius)
    power,        // mW
    energy,       // uJ (cumulative counters)
    frequency,    // kHz
    voltage,      // mV
    current,      // mA
    charge,       // uAh
    percent,      // % (0..100)
    residency,    // ms spent at a frequency (cumulative counters, cpufreq time_in_state)
    flags,        // bit set (throttle reasons, throttle flags, on-battery 0/1)
    memory,       // MB (tegrastats' RAM and SWAP)
};

// Canonical unit of a quantity: "mC", "mW", "uJ", "kHz", "mV", "mA", "uAh", "%", "ms", "bits",
// "MB".
const char* unit_of(Quantity q);
// Name of a quantity for JSON and reports: "temperature", "power", ...
const char* quantity_name(Quantity q);

struct Metric {
    std::string name;    // unique: "<sensor>.<field>_<unit>", e.g. "thermal.cpu-0-0.temp_mc"
    std::string sensor;  // grouping key: the metrics of one physical sensor or rail
    Quantity quantity = Quantity::temperature;
    MetricKind kind = MetricKind::gauge;
    // Counters: the raw value wraps to 0 after reaching this (RAPL max_energy_range_uj).
    std::optional<double> wrap_range;
    // How often the hardware or driver refreshes the value, when known (RAPL ~1 ms, ODPM 50 ms,
    // NVML energy ~100 ms, battery fuel gauges ~1 s). Windows shorter than this are flagged.
    std::optional<int64_t> refresh_ns;
    // Energy counters: an increase implying more than this power is a glitch (torn read).
    std::optional<double> max_plausible_mw;
    // Residency counters: the frequency this counter accumulates time at.
    std::optional<double> bin_khz;
    // Measures the whole device (battery discharge, RAPL psys, Jetson VDD_IN): preferred for
    // the stage totals.
    bool system_total = false;
    // The sensor this one is part of (RAPL core within package within psys). Nested domains
    // overlap and are never summed.
    std::optional<std::string> within;

    const char* unit() const { return unit_of(quantity); }
};

// A sensor family instance. Not thread-safe: the Sampler serialises all calls to one source.
class Source {
  public:
    virtual ~Source() = default;

    // Instance name, e.g. "thermal", "hwmon.coretemp", "battery.BAT0", "nvml.gpu0".
    virtual std::string name() const = 0;
    // Family, one of: thermal, hwmon, cpufreq, gpu_devfreq, battery, rapl, odpm,
    // rpi_throttle, nvml.
    virtual std::string source_class() const = 0;
    // The metrics read() fills, in order. Fixed for the life of the source.
    virtual std::vector<Metric> describe() const = 0;
    // Reads every metric into out (resized to describe().size() by the caller): a value in the
    // metric's canonical unit, or std::nullopt when absent, unreadable or malformed. t_ns is the
    // sampler's clock at the read (sources that rate-limit themselves use it). Never throws.
    virtual void read(int64_t t_ns, std::vector<std::optional<double>>& out) = 0;
    // Reads at a stage boundary: at least every counter and power metric; others may be left
    // std::nullopt. Defaults to read(); sources with slow gauges read only what is needed.
    virtual void read_boundary(int64_t t_ns, std::vector<std::optional<double>>& out) {
        read(t_ns, out);
    }
    // True for sources read only at stage boundaries, not by the periodic sampler (cpufreq
    // time_in_state: counters that need no periodic reads to stay correct).
    virtual bool boundary_only() const { return false; }
    // True for sources whose samples were recorded elsewhere (a log read beside the run): the
    // sampler never reads them, the run gives their samples with Sampler::ingest.
    virtual bool replayed() const { return false; }
    // How the source interpreted the device (battery unit and sign calibration, GPU model...).
    virtual std::map<std::string, std::string> properties() const { return {}; }

    // One warning per metric with malformed or failed reads so far, with counts.
    Warnings warnings() const;

  protected:
    // Counts a value that could not be parsed or is implausible (raw text kept for the message).
    void note_malformed(const std::string& metric, std::string_view raw);
    // Counts a read that failed (errno), e.g. ENODATA from a thermal zone.
    void note_read_error(const std::string& metric, int err);
    // Counts a read that failed for a reason that is no errno (a sensor's command that did not
    // finish within its deadline), said in words.
    void note_read_failure(const std::string& metric, const std::string& why);
    // Reads a file through a FileReader of this source (kept open on sysfs).
    sysfs::ReadResult read_file(const std::string& path);
    // Reads a decimal number from a file, multiplies it by scale and checks that the result lies
    // in [lo, hi]. Anything else (unreadable, "N/A", empty, out of range) is noted and nullopt.
    std::optional<double> read_number_file(const std::string& path, const std::string& metric,
                                           double scale, double lo, double hi);

  private:
    struct Issue {
        std::size_t malformed = 0, failed = 0;
        std::string last_raw;
        int last_errno = 0;
        std::string last_why;  // note_read_failure's reason; empty after an errno
    };
    std::map<std::string, Issue> issues_;
    std::map<std::string, sysfs::FileReader> readers_;
};

}  // namespace sb
