#include "cli/commands.hpp"
#include "cli/run_options.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "core/error.hpp"

namespace sb::cli {

void add_run_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "run", "Measure prefill and decode separately over a test matrix (like llama-bench)");
    auto a = std::make_shared<RunArgs>();
    cmd->add_option("-m,--model", a->run.matrix.models,
                    "GGUF model file(s), comma list; with --url the server's model name(s)")
        ->delimiter(',');
    add_matrix_options(cmd, *a);
    add_output_options(cmd, *a);
    add_engine_options(cmd, *a);
    add_fidelity_options(cmd, a->run.fidelity);
    add_db_option(cmd, ctx);
    auto trace = std::make_shared<TraceArgs>();
    add_trace_option(cmd, *trace);
    cmd->callback([&ctx, a, trace] {
        finish_run_args(*a);
        check_trace_path(*trace);
        ResultDocument doc = new_document("run", ctx.argv);
        const auto last = keep_measured(ctx, doc, a->run.format == OutputFormat::json);
        try {
            ReporterListener rows(a->run.format, ctx.out);
            ctx.exit_code = run_benchmark(a->run, doc, &rows, ctx.err);
        } catch (const Error&) {
            // What was measured before the failure (e.g. an --out that cannot take the final
            // document) still reaches the store.
            if (!doc.tests.empty())
                store_document(ctx, doc);
            throw;
        }
        finish_document(ctx, doc);
        write_trace_if_asked(*trace, doc, ctx.err);
    });
}

}  // namespace sb::cli
