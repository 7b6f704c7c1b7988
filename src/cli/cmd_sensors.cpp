#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "report/sensors_report.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb::cli {

void add_sensors_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "sensors", "List the telemetry sources found, with current values and a short summary");
    struct Args {
        std::string sysfs_root = "/sys";
        std::string duration = "5s";
        double hz = 10;
        OutputFormat format = OutputFormat::md;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--sysfs-root", a->sysfs_root,
                    "Root of the sysfs tree (a fixture tree in tests)")
        ->capture_default_str();
    cmd->add_option("--duration", a->duration, "How long to sample: 5s, 500ms, or seconds")
        ->capture_default_str();
    cmd->add_option("--hz", a->hz, "Sampling rate")->check(hz_check())->capture_default_str();
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    cmd->callback([&ctx, a] {
        if (!sysfs::is_dir(a->sysfs_root)) {
            throw input_error("--sysfs-root " + a->sysfs_root + " is not a directory");
        }
        SensorsOptions o;
        o.discover = discover_options_for_root(a->sysfs_root);
        o.duration_ns = parse_duration_ns(a->duration);
        if (o.duration_ns > static_cast<int64_t>(kMaxSeconds * 1e9))
            throw usage_error("--duration '" + a->duration + "' is longer than a day (86400 s)");
        o.hz = a->hz;
        SensorsReport r = run_sensors(o, ctx.err);
        if (a->format == OutputFormat::json) {
            ctx.out << dump_json(to_json(r), 2) << "\n";
        } else {
            write_sensors_markdown(ctx.out, r);
        }
    });
}

}  // namespace sb::cli
