#include <fstream>

#include "cli/commands.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "trace/chrome_trace.hpp"

namespace sb::cli {

void add_trace_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "trace",
        "Convert a saved result document (--out) into a Chrome/Perfetto trace: stages, "
        "repetitions and rounds as slices, traced ops per backend, telemetry as counters");
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto opts = std::make_shared<TraceOptions>();
    auto no_ops = std::make_shared<bool>(false);
    auto no_tokens = std::make_shared<bool>(false);
    auto no_counters = std::make_shared<bool>(false);
    cmd->add_option("result", *in, "result document (JSON) written by --out")->required();
    cmd->add_option("-o,--output", *out, "trace file to write (default: stdout)");
    cmd->add_flag("--no-ops", *no_ops, "leave out the per-op and copy slices");
    cmd->add_flag("--no-tokens", *no_tokens, "leave out the per-token slices of decode");
    cmd->add_flag("--no-counters", *no_counters, "leave out the telemetry counter tracks");
    cmd->callback([&ctx, in, out, opts, no_ops, no_tokens, no_counters] {
        with_documents({*in}, [&] {
            opts->ops = !*no_ops;
            opts->tokens = !*no_tokens;
            opts->counters = !*no_counters;
            const ResultDocument doc = load_result_document(*in);
            if (out->empty()) {
                ctx.out << dump_json(chrome_trace(doc, *opts)) << "\n";
            } else {
                write_chrome_trace(doc, *out, *opts);
                ctx.err << "stagebench: trace written to " << *out << "\n";
            }
        });
    });
}

}  // namespace sb::cli
