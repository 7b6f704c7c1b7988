#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/junit_option.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/telemetry_log_option.hpp"
#include "cli/trace_option.hpp"
#include "engine/wire_api.hpp"
#include "report/reporter.hpp"
#include "scenario/run_command.hpp"
#include "scenario/sustained.hpp"

namespace sb::cli {

void add_sustained_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "sustained", "Repeat one fixed workload for many rounds: throttling, DVFS, variation");
    auto o = std::make_shared<SustainedOptions>();
    struct Typed {
        std::string telemetry = "auto", engine = "llama", api = "openai";
    };
    auto t = std::make_shared<Typed>();
    add_model_flag(cmd, o->workload.model_path);
    cmd->add_option("--rounds", o->rounds, "rounds")->check(reps_check())->capture_default_str();
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "prompt tokens per round")
        ->check(tokens_check(1))
        ->capture_default_str();
    cmd->add_option("--max-tokens", o->max_tokens, "generated tokens per round (always bounded)")
        ->check(tokens_check(1))
        ->capture_default_str();
    cmd->add_option("--chunk", o->chunk, "prefill in chunks of this many tokens")
        ->check(batch_check());
    cmd->add_option("--cooldown", o->cooldown, "between rounds: 0, 10s, until-temp:45C")
        ->capture_default_str();
    cmd->add_option("--cooldown-timeout", o->cooldown_timeout_s,
                    "seconds to wait at most for until-temp")
        ->check(seconds_check(false))
        ->capture_default_str();
    cmd->add_option("--background", o->background,
                    "background load, e.g. cpu:2@50%,mem:1: adds a loaded phase compared with "
                    "the unloaded one");
    add_device_flag(cmd, o->workload.devices);
    cmd->add_option("--rpc", o->rpc_servers, "RPC servers host:port")->delimiter(',');
    add_stage_timeout_option(cmd);
    add_threads_flag(cmd, o->workload.n_threads);
    cmd->add_option("--seed", o->seed, "seed of the fixed prompt")->capture_default_str();
    cmd->add_option("--telemetry", t->telemetry, "auto, on, off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_option("--sysfs-root", o->telemetry.sysfs_root, "where the sensors are")
        ->capture_default_str();
    cmd->add_option("--telemetry-hz", o->telemetry.hz, "sampling rate")
        ->check(hz_check())
        ->capture_default_str();
    cmd->add_option("--idle", o->telemetry.idle_s, "seconds of idle baseline")
        ->check(seconds_check(true))
        ->capture_default_str();
    auto tlog = std::make_shared<TelemetryLogArgs>();
    add_telemetry_log_options(cmd, *tlog);
    add_out_flag(cmd, o->out_path, "result document", "after every round");
    add_format_option(cmd, o->format, {OutputFormat::md, OutputFormat::json});
    cmd->add_option("--engine", t->engine,
                    "llama (in-process) or http (a server: --url, or a llama-server started on "
                    "127.0.0.1 for -m FILE)")
        ->capture_default_str();
    cmd->add_option("--url", o->http.url, "server for --engine http; -m then names its model");
    cmd->add_option("--api", t->api, "HTTP API: " + http_api_help())
        ->check(CLI::IsMember(http_api_names()))
        ->capture_default_str();
    cmd->add_option("--timeout", o->http.timeout_s, "seconds to wait for the server")
        ->check(seconds_check(false))
        ->capture_default_str();
    cmd->add_option("--trace-ops-rounds", o->trace_ops_rounds,
                    "after these rounds (e.g. 1,20 or 1,last) one node-by-node traced pass of "
                    "the workload, outside the round: per-op records in the round's \"ops\" "
                    "and in --trace (in-process engine only)");
    add_db_option(cmd, ctx);
    auto quiet = std::make_shared<bool>(false);
    cmd->add_flag("-q,--quiet", *quiet, "no progress lines");
    auto trace = std::make_shared<TraceArgs>();
    add_trace_option(cmd, *trace);
    auto junit = std::make_shared<JunitOutput>("sustained");
    junit->add_option(cmd);
    cmd->callback(junit->wrap([&ctx, o, quiet, trace, t, junit, tlog] {
        o->progress = !*quiet;
        o->telemetry.mode = enum_from_text<TelemetryMode>(t->telemetry, "--telemetry");
        apply_telemetry_log(*tlog, o->telemetry);
        o->http.engines = {enum_from_text<EngineKind>(t->engine, "--engine")};
        o->http.api = parse_http_api(t->api);
        check_context(o->prompt_tokens, 0, o->max_tokens);
        check_trace_path(*trace);
        junit->check();
        RunEnv env(new_document("sustained", ctx.argv), ctx.err);
        env.on_last_word = junit->on_last_word(keep_on_stop(ctx, o->format == OutputFormat::json));
        const RunResult r = run_sustained(*o, std::move(env));
        print_document(o->format, r.doc, ctx.out);
        finish_run_with_junit(ctx, r, *junit);
        write_trace_if_asked(*trace, r.doc, ctx.err);
    }));
}

}  // namespace sb::cli
