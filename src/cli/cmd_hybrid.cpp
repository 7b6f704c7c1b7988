#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_options.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "report/reporter.hpp"
#include "scenario/hybrid.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

void add_hybrid_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "hybrid",
        "Prefill on one device set, move the KV cache, decode on another; compared side by side "
        "with each device set alone");
    auto o = std::make_shared<HybridOptions>();
    auto quiet = std::make_shared<bool>(false);
    auto no_warmup = std::make_shared<bool>(false);
    auto no_baselines = std::make_shared<bool>(false);
    struct Typed {
        std::string prefill = "CPU", decode;
        std::string telemetry = "auto";
    };
    auto t = std::make_shared<Typed>();
    add_model_flag(cmd, o->workload.model_path);
    cmd->add_option("--prefill-device", t->prefill,
                    "device set that prefills (join with +), e.g. CPU or BLAS")
        ->check(device_set_check())
        ->capture_default_str();
    cmd->add_option("--decode-device", t->decode,
                    "device set that decodes after the state moved, e.g. RPC0")
        ->check(device_set_check())
        ->required();
    add_prompt_flag(cmd, o->n_prompt);
    add_gen_flag(cmd, o->n_gen, 1);
    cmd->add_option("-r,--repetitions", o->reps, "repetitions of every mode")
        ->check(reps_check())
        ->capture_default_str();
    add_threads_flag(cmd, o->workload.n_threads);
    add_engine_flags(cmd, o->workload);
    cmd->add_option("--seed", o->seed, "seed for the random tokens")->capture_default_str();
    cmd->add_flag("--no-warmup", *no_warmup, "skip the warmup of every mode");
    cmd->add_flag("--no-baselines", *no_baselines,
                  "measure the hybrid only, not each device set alone");
    cmd->add_option("--rpc", o->rpc_servers, "RPC servers host:port to use (comma list)")
        ->delimiter(',');
    add_stage_timeout_option(cmd);
    add_format_option(cmd, o->format, {OutputFormat::md, OutputFormat::json});
    add_out_flag(cmd, o->out_path, "result document", "after every point");
    add_fidelity_options(cmd, o->fidelity);
    cmd->add_flag("-q,--quiet", *quiet, "no progress lines on stderr");
    add_db_option(cmd, ctx);
    auto trace = std::make_shared<TraceArgs>();
    add_trace_option(cmd, *trace);
    cmd->add_option("--telemetry", t->telemetry, "sample sensors around every stage: auto, on, off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_option("--sysfs-root", o->telemetry.sysfs_root, "where the sensors are")
        ->capture_default_str();
    cmd->add_option("--telemetry-hz", o->telemetry.hz, "sampling rate")
        ->check(hz_check())
        ->capture_default_str();
    cmd->add_option("--idle", o->telemetry.idle_s, "seconds of idle baseline first")
        ->check(seconds_check(true))
        ->capture_default_str();
    cmd->callback([&ctx, o, quiet, no_warmup, no_baselines, trace, t] {
        o->placement = Placement{DeviceSet(t->prefill), DeviceSet(t->decode)};
        o->telemetry.mode = enum_from_text<TelemetryMode>(t->telemetry, "--telemetry");
        check_not_empty(o->n_prompt, "-p");
        check_not_empty(o->n_gen, "-n");
        check_context(*std::max_element(o->n_prompt.begin(), o->n_prompt.end()), 0,
                      *std::max_element(o->n_gen.begin(), o->n_gen.end()));
        check_trace_path(*trace);
        o->progress = !*quiet;
        o->warmup = !*no_warmup;
        o->baselines = !*no_baselines;
        RunEnv env(new_document("hybrid", ctx.argv), ctx.err);
        env.on_last_word = keep_on_stop(ctx, o->format == OutputFormat::json);
        const RunResult r = run_hybrid(*o, std::move(env));
        print_document(o->format, r.doc, ctx.out);
        finish_run(ctx, r);
        write_trace_if_asked(*trace, r.doc, ctx.err);
    });
}

}  // namespace sb::cli
