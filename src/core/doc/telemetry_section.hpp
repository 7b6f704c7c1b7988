#pragma once
// Telemetry, typed: the run's record (ResultDocument::telemetry: sources, metrics, raw series,
// stage marks, every stage window, the idle baseline) and each test's stage windows with the
// medians people compare (TestResult::telemetry). The one set of telemetry types: the sampler
// (telemetry/sampler.hpp) fills them directly (Sampler::record, stage_summary) and the document
// reads them back. Units are in the names (t_ns, energy_j, power_mw, freq_khz) or in a
// metric's "unit"; missing values are nullopt / null.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/stats.hpp"
#include "core/warning.hpp"

namespace sb {

// A metric a source provides. kind: gauge (a value now) or counter (cumulative, e.g.
// energy_uj; may wrap at wrap_range). quantity: "temperature", "power", ...; unit: its
// canonical unit ("mC", "mW", ...). system_total: a whole-device meter; within: the meter this
// one is nested in (never add the two).
struct TelemetryMetric {
    std::string name, sensor, quantity, unit;
    MetricKind kind = MetricKind::gauge;
    std::optional<double> wrap_range;
    std::optional<int64_t> refresh_ns;
    bool system_total = false;
    std::optional<std::string> within;
};

struct TelemetrySource {
    std::string name, source_class;  // "class" in JSON
    std::vector<std::string> metrics;
    std::map<std::string, std::string> properties;
};

// A family of sources and how many were found (0: absent, note says why).
struct TelemetryClass {
    std::string source_class;  // "class" in JSON
    int64_t found = 0;
    std::string note;
};

// One metric's samples. values as read (counters not unwrapped); cumulative for counters only:
// unwrapped, from 0. Parallel to t_ns; null where a read failed.
struct TelemetrySeries {
    std::string metric, unit;
    MetricKind kind = MetricKind::gauge;
    std::vector<int64_t> t_ns;
    std::vector<std::optional<double>> values;
    std::optional<std::vector<std::optional<double>>> cumulative;
};

struct TelemetryMark {
    std::string stage;
    bool begin = true;
    int64_t t_ns = 0;     // the boundary
    int64_t read_ns = 0;  // how long the boundary reads took after it
};

// A meter's energy over one stage window. method: "counter" (exact boundary reads) or
// "power_integral" (a power gauge integrated, trapezoid, for a sensor without a counter).
struct StageEnergy {
    std::string metric, sensor, method;
    std::optional<double> energy_j, net_energy_j, mean_power_mw, max_power_mw, idle_power_mw;
    std::optional<double> j_per_token, net_j_per_token;
    bool system_total = false;
    std::optional<std::string> within;
    bool below_refresh = false;  // the window is shorter than the meter's refresh
};

// A gauge (temperature, frequency, voltage, current, percent, flags, and power gauges of a
// sensor that has an energy counter) over one stage window, in its unit. The value in force at
// the window's start is the last reading at or before it; mean is time-weighted (sample and
// hold); for flags max is the OR of all values.
struct StageGauge {
    std::string metric, unit;
    std::optional<double> start, end, min, max, mean;
    std::size_t samples = 0, missing = 0;
};

struct ResidencyBin {
    double freq_khz = 0, fraction = 0;
};
struct StageResidency {
    std::string sensor, method;  // method: "time_in_state" | "sampled"
    std::vector<ResidencyBin> bins;
};

// The whole-system totals of a stage window (from the first system-total meter with a value).
struct StageTotal {
    std::optional<std::string> metric;
    std::optional<double> energy_j, net_energy_j, j_per_token, net_j_per_token;
};

// One begin/end pair of a stage as the sampler measured it.
struct StageWindow {
    std::string stage;
    int occurrence = 0;  // 0 for the first pair with this name, 1 for the next, ...
    int64_t begin_ns = 0, end_ns = 0, duration_ns = 0;
    // How long the counter reads at each boundary took (the counters' values are from within
    // [begin_ns, begin_ns + begin_read_ns]); large values mean slow sensors (I2C, NVML).
    int64_t begin_read_ns = 0, end_read_ns = 0;
    std::optional<int64_t> tokens;
    StageTotal total;
    std::vector<StageEnergy> energy;
    std::vector<StageGauge> gauges;
    std::vector<StageResidency> residency;
    Warnings warnings;  // short windows, throttling, not on battery, missing boundary reads...

    // The energy of metric over the window, if it has one.
    const StageEnergy* energy_of(const std::string& metric) const;
};

struct IdlePower {
    int64_t duration_ns = 0;
    std::map<std::string, double> power_mw;  // energy metric -> mean idle power
};

// The run's telemetry record.
struct TelemetrySection {
    double hz = 0;
    std::vector<TelemetrySource> sources;
    std::vector<TelemetryClass> classes;
    std::vector<std::string> absent;  // classes with no source found
    std::vector<TelemetryMetric> metrics;
    std::optional<std::vector<TelemetrySeries>> series;  // absent: recorded without series
    std::vector<TelemetryMark> marks;
    std::vector<StageWindow> stages;  // every completed begin/end pair, in begin order
    std::optional<IdlePower> idle;
    Warnings warnings;
};

// Medians over a test's repetitions of one stage (J/token, net J/token, energy, mean power in
// mW) and the meter they were read from.
struct StageEnergySummary {
    Summary j_per_token, net_j_per_token, energy_j, mean_power_mw;
    std::optional<std::string> total_metric;
};

// A battery's drain over a span of stage windows (telemetry/battery_drain.hpp computes it): from
// the battery's gauges in force at the first window's start and at the last window's end, in
// percent of a full charge and per hour of that span (span_s). Two ways, each null where the
// battery lacks what it needs:
//  - capacity: the `capacity` file's percent (whole-percent steps: coarse);
//  - counter: a charge or energy counter against its full value: charge_counter (µAh, Android)
//    or charge_now (µAh) against charge_full, or energy_now (µWh) against energy_full.
// drain_pct and drain_pct_per_h are the finer of the two, the counter where there is one; `from`
// names it ("charge_counter", "charge_now", "energy_now" or "capacity"). A battery that charged
// drains a negative amount.
struct BatteryDrain {
    std::string battery;               // the sensor, "battery.BAT0"
    int64_t begin_ns = 0, end_ns = 0;  // the span, on the sampler's clock
    double span_s = 0;                 // (end_ns - begin_ns) / 1e9
    std::optional<double> capacity_start_pct, capacity_end_pct;
    std::optional<double> capacity_drain_pct, capacity_drain_pct_per_h;
    std::optional<std::string> counter;  // charge_counter | charge_now | energy_now
    // The counter at the span's ends and its full value, in its metric's unit (µAh; energy_now
    // and energy_full in µJ).
    std::optional<double> counter_start, counter_end, counter_full;
    std::optional<double> counter_drain_pct, counter_drain_pct_per_h;
    std::string from;
    std::optional<double> drain_pct, drain_pct_per_h;
    bool operator==(const BatteryDrain&) const = default;
};

// One test's telemetry: the stage windows of every repetition, their summary per stage, and the
// battery's drain over the test (its first window's start to its last window's end; null without
// a battery). JSON: {"prefill": [StageWindow...], "decode": [...], "summary": {stage: ...},
// "battery": BatteryDrain}; a stage without windows and a test without a battery drain are
// absent.
struct TestTelemetry {
    std::vector<StageWindow> prefill, decode;
    std::map<std::string, StageEnergySummary> summary;  // "prefill", "decode"
    std::optional<BatteryDrain> battery;
};

nlohmann::json to_json(const TelemetryMetric&);
nlohmann::json to_json(const TelemetrySeries&);
nlohmann::json to_json(const StageEnergy&);
nlohmann::json to_json(const StageGauge&);
nlohmann::json to_json(const StageWindow&);
nlohmann::json to_json(const TelemetrySection&);
nlohmann::json to_json(const StageEnergySummary&);
nlohmann::json to_json(const BatteryDrain&);
nlohmann::json to_json(const TestTelemetry&);

void read(const JsonIn&, TelemetryMetric&);
void read(const JsonIn&, TelemetrySource&);
void read(const JsonIn&, TelemetryClass&);
void read(const JsonIn&, TelemetrySeries&);
void read(const JsonIn&, TelemetryMark&);
void read(const JsonIn&, StageEnergy&);
void read(const JsonIn&, StageGauge&);
void read(const JsonIn&, ResidencyBin&);
void read(const JsonIn&, StageResidency&);
void read(const JsonIn&, StageTotal&);
void read(const JsonIn&, StageWindow&);
void read(const JsonIn&, IdlePower&);
void read(const JsonIn&, TelemetrySection&);
void read(const JsonIn&, StageEnergySummary&);
void read(const JsonIn&, BatteryDrain&);
void read(const JsonIn&, TestTelemetry&);

}  // namespace sb
