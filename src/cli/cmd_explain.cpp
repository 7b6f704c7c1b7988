// `stagebench explain`: where a served token's time goes, from the op to the request
// (scenario/explain.hpp).
#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "model/inspect.hpp"
#include "report/reporter.hpp"
#include "scenario/explain.hpp"
#include "scenario/explain_settings.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

void add_explain_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "explain",
        "Why a server is slower than llama-bench: one workload measured at every level (op "
        "time, the bench's stage, the application's loop, llama-server with 1 and N clients) "
        "in interleaved rounds, the gap split into the settings that differ, each measured "
        "alone, and the server's own overhead");
    struct Args {
        ExplainOptions o;
        OutputFormat format = OutputFormat::md;
        TraceArgs trace;
        bool quiet = false;
    };
    auto a = std::make_shared<Args>();
    ExplainOptions& o = a->o;
    add_model_flag(cmd, o.workload.model_path, "in-process and the server's");
    add_prompt_flag(cmd, o.n_prompt);
    add_gen_flag(cmd, o.n_gen, 2);
    add_threads_flag(cmd, o.workload.n_threads, "of the bench (the in-process engine)");
    add_device_flag(cmd, o.workload.devices, "of the bench (the in-process engine)");
    cmd->add_option("--server-args", o.server_args,
                    "more flags for the llama-server it starts (e.g. \"-ub 64 -t 2\"); with --url: "
                    "the flags that server was started with, for the settings' comparison");
    cmd->add_option("--url", o.url, "a running server (http://host:port) instead of starting one");
    cmd->add_option("--concurrency", o.concurrency,
                    "level 5: clients at once, comma list (e.g. 1,4)")
        ->delimiter(',');
    cmd->add_option("-r,--rounds", o.rounds, "rounds: each runs every level once")
        ->check(int_range(1, 1000, "1..1000"))
        ->capture_default_str();
    cmd->add_option("--replay", o.replay_copies,
                    "ops level: copies of each op replayed back to back for its op time")
        ->check(int_range(1, 1000, "1..1000"))
        ->capture_default_str();
    cmd->add_flag(
        "--no-ops", [a](int64_t) { a->o.ops = false; },
        "leave out the ops level (the profiler: the slowest level to measure)");
    cmd->add_option("--seed", o.seed, "seed of the prompts and sampling")->capture_default_str();
    cmd->add_option("--timeout", o.timeout_s, "seconds a connection or a silent stream may take")
        ->check(seconds_check(false))
        ->capture_default_str();
    add_out_flag(cmd, o.out_path, "result document", "after every run");
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    add_db_option(cmd, ctx);
    add_trace_option(cmd, a->trace);
    cmd->add_flag("-q,--quiet", a->quiet, "no progress lines on stderr");

    cmd->callback([&ctx, a] {
        ExplainOptions& o = a->o;
        o.progress = !a->quiet;
        require_regular_file(o.workload.model_path, "model");
        // What the graph level would be measured with: refused before anything is measured.
        check_server_args(split_server_args(o.server_args), max_threads(), kMaxTokens);
        if (o.out_path)
            check_output_path(*o.out_path, "result document");
        check_trace_path(a->trace);
        const RunResult r = run_explain(o, RunEnv(new_document("explain", ctx.argv), ctx.err));
        print_document(a->format, r.doc, ctx.out);
        finish_run(ctx, r);  // --db
        write_trace_if_asked(a->trace, r.doc, ctx.err);
    });
}

}  // namespace sb::cli
