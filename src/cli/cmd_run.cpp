#include "cli/commands.hpp"
#include "cli/junit_option.hpp"
#include "cli/run_options.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "core/error.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

void add_run_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "run", "Measure prefill and decode separately over a test matrix (like llama-bench)");
    auto a = std::make_shared<RunArgs>();
    add_model_flag(cmd, a->run.matrix.models, "with --url the server's model names");
    add_matrix_options(cmd, *a);
    add_output_options(cmd, *a);
    add_engine_options(cmd, *a);
    add_fidelity_options(cmd, a->run.fidelity);
    add_db_option(cmd, ctx);
    auto trace = std::make_shared<TraceArgs>();
    add_trace_option(cmd, *trace);
    auto junit = std::make_shared<JunitOutput>("run");
    junit->add_option(cmd);
    cmd->callback(junit->wrap([&ctx, a, trace, junit] {
        finish_run_args(*a);
        check_trace_path(*trace);
        junit->check();
        ReporterListener rows(a->run.format, ctx.out);
        RunEnv env(new_document("run", ctx.argv), ctx.err);
        env.listener = &rows;
        env.on_last_word =
            junit->on_last_word(keep_on_stop(ctx, a->run.format == OutputFormat::json));
        const RunResult r = run_benchmark(a->run, std::move(env));
        // What was measured before a failure (e.g. an --out that cannot take the final
        // document) still reaches the store and the JUnit file; then the failure is reported.
        finish_run_with_junit(ctx, r, *junit);
        write_trace_if_asked(*trace, r.doc, ctx.err);
    }));
}

}  // namespace sb::cli
