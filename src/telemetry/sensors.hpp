#pragma once
// `stagebench sensors`: the sources found with their current values and, over a duration,
// per sensor: energy, mean/max power, min/max temperature and frequency range. The measuring
// and its JSON; the Markdown is report/sensors_report.hpp.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/parse.hpp"  // parse_duration_ns: the --duration of `sensors`
#include "telemetry/discover.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

struct SensorsOptions {
    DiscoverOptions discover;
    int64_t duration_ns = 5'000'000'000;  // 0: current values only
    double hz = 10;                       // (0, 1000]
};

struct CurrentValue {
    std::string metric, unit;
    std::optional<double> value;
};

// One sensor over the measured window, in canonical units.
struct SensorWindow {
    std::string sensor;
    std::string energy_method;  // "counter" | "power_integral" | "" (no energy)
    std::optional<double> energy_j, mean_power_mw, max_power_mw;
    std::optional<double> temp_min_mc, temp_max_mc;
    std::optional<double> freq_min_khz, freq_max_khz, freq_mean_khz;
};

struct SensorsReport {
    int64_t duration_ns = 0;  // the measured window (0 when none)
    double hz = 0;
    std::vector<TelemetrySource> sources;
    std::vector<TelemetryClass> classes;
    std::vector<CurrentValue> current;  // first sample (residency counters left out)
    std::vector<SensorWindow> window;   // empty when duration_ns was 0
    std::optional<StageWindow> stage;   // the full summary of the window
    Warnings warnings;
};

// Discovers, samples for options.duration_ns (stopping early on sb::interrupt_requested()) and
// summarises. Progress lines go to log. Throws sb::Error(usage) for a bad hz or duration.
SensorsReport run_sensors(const SensorsOptions& options, std::ostream& log);

// {"duration_ns", "hz", "sources", "classes", "absent", "current": [{"metric", "unit",
//  "value"}], "window": [{"sensor", "energy_method", "energy_j", "mean_power_mw",
//  "max_power_mw", "temp_min_mc", "temp_max_mc", "freq_min_khz", "freq_max_khz",
//  "freq_mean_khz"}], "stage", "warnings"}
nlohmann::json to_json(const SensorsReport& report);

}  // namespace sb
