#pragma once
// `--telemetry-log tegrastats:FILE` (with --telemetry-log-rail NAME and
// --telemetry-log-interval MS) for run and sustained: a tegrastats log recorded beside the run,
// aligned to its stages by time (scenario/telemetry_log.hpp).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "scenario/telemetry_setup.hpp"

namespace sb::cli {

struct TelemetryLogArgs {
    std::optional<std::string> spec, rail;
    std::optional<int64_t> interval_ms;
};

void add_telemetry_log_options(CLI::App* cmd, TelemetryLogArgs& a);
// Into choice.log when --telemetry-log was given; sb::Error(usage) for a bad spec or a rail or
// interval without it.
void apply_telemetry_log(const TelemetryLogArgs& a, TelemetryChoice& choice);

}  // namespace sb::cli
