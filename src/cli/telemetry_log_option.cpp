#include "cli/telemetry_log_option.hpp"

#include "cli/flag_checks.hpp"
#include "core/error.hpp"

namespace sb::cli {

void add_telemetry_log_options(CLI::App* cmd, TelemetryLogArgs& a) {
    cmd->add_option("--telemetry-log", a.spec,
                    "tegrastats:FILE: a tegrastats log with date stamps recorded beside the run "
                    "(tegrastats --interval MS --logfile FILE), aligned to the stages by time: "
                    "its rails' energy per stage, the whole-device total from VDD_IN (or "
                    "POM_5V_IN)");
    cmd->add_option("--telemetry-log-rail", a.rail,
                    "the log's rail that measures the whole device (AGX Xavier and AGX Orin have "
                    "no VDD_IN: name one)");
    cmd->add_option("--telemetry-log-interval", a.interval_ms,
                    "MS: tegrastats' --interval (default: from the log's date stamps)")
        ->check(int_range(1, 3'600'000, "1..3600000"));
}

void apply_telemetry_log(const TelemetryLogArgs& a, TelemetryChoice& choice) {
    if (!a.spec) {
        if (a.rail || a.interval_ms)
            throw usage_error(
                "--telemetry-log-rail and --telemetry-log-interval need "
                "--telemetry-log tegrastats:FILE");
        return;
    }
    TelemetryLogChoice c = parse_telemetry_log(*a.spec);
    c.rail = a.rail;
    if (a.interval_ms)
        c.interval_ns = *a.interval_ms * 1'000'000;
    choice.log = std::move(c);
}

}  // namespace sb::cli
