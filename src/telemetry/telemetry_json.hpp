#pragma once
// JSON forms of the telemetry results, for the result document. Units are in the key names
// (t_ns, energy_j, power_mw...) or in the "unit" field of a metric; missing values are null.
//
//   Metric:          {"name", "sensor", "quantity", "unit", "kind": "gauge"|"counter",
//                     "wrap_range", "refresh_ns", "system_total", "within"}
//   Series:          {"metric", "unit", "kind", "t_ns": [...], "values": [... null ...],
//                     "cumulative": [...] (counters only: unwrapped, from 0)}
//   StageTelemetry:  {"stage", "occurrence", "begin_ns", "end_ns", "duration_ns",
//                     "begin_read_ns", "end_read_ns", "tokens",
//                     "total": {"metric", "energy_j", "net_energy_j", "j_per_token",
//                               "net_j_per_token"},
//                     "energy": [EnergyStat...], "gauges": [GaugeStat...],
//                     "residency": [{"sensor", "method", "bins": [{"freq_khz", "fraction"}]}],
//                     "warnings": [...]}
//   TelemetryRecord: {"hz", "sources": [{"name", "class", "metrics", "properties"}],
//                     "classes": [{"class", "found", "note"}], "absent": ["nvml", ...],
//                     "metrics": [Metric...], "series": [Series...],
//                     "marks": [{"stage", "begin", "t_ns", "read_ns"}],
//                     "stages": [StageTelemetry...], "idle": {...}|null, "warnings": [...]}
#include <nlohmann/json.hpp>
#include <vector>

#include "core/doc/telemetry_section.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

nlohmann::json to_json(const Metric& m);
nlohmann::json to_json(const EnergyStat& e);
nlohmann::json to_json(const GaugeStat& g);
nlohmann::json to_json(const StageTelemetry& s);
nlohmann::json to_json(const IdleBaseline& b);
nlohmann::json to_json(const Series& s);
// with_series = false leaves out the (large) time series, keeping everything else.
nlohmann::json to_json(const TelemetryRecord& r, bool with_series = true);

// The result document's typed forms (core/doc/telemetry_section.hpp) of the same records: the
// run's record, and one test's stage records (its windows of prefill and decode, one per
// repetition, with the medians over them of J/token, net J/token, energy and mean power; a stage
// without windows is left out).
TelemetrySection telemetry_section(const TelemetryRecord& r);
TestTelemetry test_telemetry_of(const std::vector<StageTelemetry>& prefill,
                                const std::vector<StageTelemetry>& decode);

// Let nlohmann convert them implicitly: json j = record;
inline void to_json(nlohmann::json& j, const Metric& v) {
    j = to_json(v);
}
inline void to_json(nlohmann::json& j, const StageTelemetry& v) {
    j = to_json(v);
}
inline void to_json(nlohmann::json& j, const TelemetryRecord& v) {
    j = to_json(v);
}

}  // namespace sb
