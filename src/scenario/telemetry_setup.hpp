#pragma once
// Telemetry as scenarios use it: open a sampler from the command line's choices, and turn a
// test's stage records into its per-test telemetry section.
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "scenario/progress.hpp"
#include "scenario/telemetry_log.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

struct TelemetryChoice {
    TelemetryMode mode = TelemetryMode::automatic;  // auto: on where sources exist
    std::string sysfs_root = "/sys";
    double hz = 10;
    double idle_s = 2;  // idle baseline before the first measurement (0: none)
    // A sensor log recorded beside the run (--telemetry-log), read with --telemetry off too.
    std::optional<TelemetryLogChoice> log;
};

// The sampler (not started) with every source found, or null when mode is off: its samples
// and marks on clock (the run's), its idle baseline waited with pause. Throws
// sb::Error(usage) for a bad rate or idle time, and sb::Error(input) for mode on when no
// source exists. Notes a line naming the sources and absent families on progress. With a
// feed (choice.log), its source joins the sampler's, also when mode is off (then alone).
std::unique_ptr<Sampler> open_telemetry(const TelemetryChoice& choice, Progress& progress,
                                        const Clock& clock, const Pause& pause,
                                        TelemetryLogFeed* feed = nullptr);

// Stops the sampler (when there is one) and keeps its record in doc: the series, marks and
// stage records as doc.telemetry, its warnings appended to doc.warnings.
void finish_telemetry(Sampler* tel, ResultDocument& doc);

// True when the sampler has at least one source to read.
bool has_sources(const Sampler& s);

// One test's telemetry from its stage windows: the windows of prefill and decode (one per
// repetition) and the medians over them of J/token, net J/token, energy and mean power (from
// each window's whole-system total); a stage without windows is left out. Pure.
TestTelemetry test_telemetry_of(std::vector<StageWindow> prefill, std::vector<StageWindow> decode);

// test_telemetry_of the sampler's windows of the stages prefix + "prefill" / "decode".
TestTelemetry test_telemetry(const Sampler& tel, const std::string& prefix);

// The same test's telemetry again from the sampler (after a log's rows were given again): its
// windows' stage names give the prefix. Unchanged when it has no windows.
TestTelemetry retimed_test_telemetry(const Sampler& tel, const TestTelemetry& before);

}  // namespace sb
