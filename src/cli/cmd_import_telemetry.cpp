#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "core/error.hpp"
#include "report/telemetry_report.hpp"
#include "scenario/run_command.hpp"
#include "telemetry/tegrastats.hpp"

namespace sb::cli {

void add_import_tegrastats(CLI::App* import, Context& ctx) {
    auto* cmd = import->add_subcommand(
        "tegrastats",
        "Read a Jetson tegrastats log (TX1 to Orin) into telemetry series: RAM, SWAP, CPU load "
        "and clock per core, EMC, GR3D, temperatures, power rails (instant and average)");
    struct Flags {
        std::string path;
        std::optional<std::string> start, out;
        std::optional<int64_t> interval_ms;
        OutputFormat format = OutputFormat::md;
    };
    auto f = std::make_shared<Flags>();
    cmd->add_option("FILE", f->path, "the log (tegrastats --logfile FILE, or its output)")
        ->required();
    cmd->add_option("--interval", f->interval_ms,
                    "MS: tegrastats' --interval (default: from the date stamps where the log has "
                    "them, else tegrastats' default 1000)")
        ->check(int_range(1, 3'600'000, "1..3600000"));
    cmd->add_option("--start", f->start,
                    "TIME of the first line of a log without date stamps: YYYY-MM-DDTHH:MM:SS "
                    "local time, or UTC with a trailing Z (without: times from the first line)");
    add_out_flag(cmd, f->out);
    add_format_option(cmd, f->format, {OutputFormat::md, OutputFormat::json});
    add_db_option(cmd, ctx);
    cmd->callback([&ctx, f] {
        TegrastatsImportOptions o;
        o.path = f->path;
        if (f->interval_ms)
            o.timing.interval_ns = *f->interval_ms * 1'000'000;
        if (f->start) {
            o.timing.start_ns = parse_start_time(*f->start);
            if (!o.timing.start_ns)
                throw usage_error("--start '" + *f->start +
                                  "': expected YYYY-MM-DDTHH:MM:SS (local) or ...Z (UTC)");
        }
        ResultDocument doc = new_document("import", ctx.argv);
        import_tegrastats(o, doc, ctx.err);
        if (f->out)
            write_document(doc, *f->out);
        print_telemetry_document(doc, f->format, ctx.out);
        store_document(ctx, doc);
    });
}

}  // namespace sb::cli
