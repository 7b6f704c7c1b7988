#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/decompose_modes.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/subprocess.hpp"
#include "engine/backends.hpp"
#include "report/ops_report.hpp"
#include "scenario/ops_run.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

namespace {

struct OpsArgs {
    OpsCommandOptions o;
    std::string stage = "both";
    std::string huge_pages = "on";
    bool quiet = false;
    TraceArgs trace;
    int device_timer_pass = 0;  // the hidden child mode: prefills to time (0: not the child)
};

// The device-timer pass as a child process: this binary's `ops --device-timer-pass N` with the
// profile's options and ggml-vulkan's logger on from the backend's start (fusion off, one
// name per op; not CONCURRENT, which times groups), stdout discarded, stderr kept; killed at
// the request's deadline, on Ctrl-C, and with this process.
DeviceTimerLauncher device_timer_launcher(std::vector<std::string> rpc_servers) {
    return [rpc = std::move(rpc_servers)](const DeviceTimerRequest& q) {
        DeviceTimerRun r;
        std::error_code ec;
        const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
        if (ec) {
            r.error = "this program's own path could not be read: " + ec.message();
            return r;
        }
        const OpsOptions& o = q.ops;
        std::vector<std::string> argv{"env",
                                      "-u",
                                      "GGML_VK_PERF_LOGGER_CONCURRENT",
                                      "-u",
                                      "GGML_VK_PERF_LOGGER_FREQUENCY",
                                      "GGML_VK_PERF_LOGGER=1",
                                      "GGML_VK_DISABLE_FUSION=1",
                                      self,
                                      "ops",
                                      "-m",
                                      o.workload.model_path,
                                      "-p",
                                      std::to_string(o.n_prompt),
                                      "-d",
                                      std::to_string(o.n_depth),
                                      "--stage",
                                      o.prefill && o.decode ? "both"
                                      : o.prefill           ? "prefill"
                                                            : "decode",
                                      "--device",
                                      o.workload.devices.empty() ? "CPU" : o.workload.devices.str(),
                                      "-t",
                                      std::to_string(q.threads),
                                      "--huge-pages",
                                      o.huge_pages ? "on" : "off",
                                      "--decode-tokens",
                                      std::to_string(o.decode_tokens),
                                      "--seed",
                                      std::to_string(o.seed),
                                      "--device-timer-pass",
                                      std::to_string(q.prefill_reps),
                                      "-q"};
        const auto engine_flags = workload_child_flags(o.workload);
        argv.insert(argv.end(), engine_flags.begin(), engine_flags.end());
        if (!rpc.empty()) {
            std::string list;
            for (const auto& s : rpc)
                list += (list.empty() ? "" : ",") + s;
            argv.push_back("--rpc");
            argv.push_back(list);
        }
        ProcessOptions po;
        po.timeout_s = q.timeout_s;
        po.stdout_path = "/dev/null";
        const int64_t t0 = now_ns();
        const ProcessResult p = run_process(argv, po);
        r.duration_ns = now_ns() - t0;
        r.output = p.err;
        if (!p.started)
            r.error = "the pass could not be started";
        else if (p.timed_out)
            r.error =
                fmt::format("the pass did not end within its deadline of {:.0f} s", q.timeout_s);
        else if (p.interrupted)
            r.error = "interrupted (Ctrl-C)";
        else if (!p.ok())
            r.error = p.signal
                          ? fmt::format("the pass was killed by signal {}", p.signal)
                          : fmt::format("the pass exited with {}: {}", p.exit_code, p.last_line());
        return r;
    };
}

}  // namespace

// `ops` and `decompose` share their options; decompose also measures dispatch and
// conversion and prints the decomposition first. Declared in cmd_decompose.cpp too.
void add_ops_like_command(CLI::App& app, Context& ctx, bool decompose) {
    auto* cmd =
        decompose
            ? app.add_subcommand(
                  "decompose",
                  "Split prefill and decode along the accelerator path. With --mode: the "
                  "backend's own pipeline modes, each in a fresh process, and the differences "
                  "between them; without: a probe model (compute, activation conversion, "
                  "communication as a no-work dispatch, copies between backends, fallback ops, "
                  "host)")
            : app.add_subcommand(
                  "ops",
                  "Per-operator profile of the real prefill and decode graphs: op time vs call "
                  "time by op type, layer and backend; splits, copies between backends, "
                  "fallback");
    auto a = std::make_shared<OpsArgs>();
    OpsOptions& o = a->o.ops;
    add_model_flag(cmd, o.workload.model_path);
    add_prompt_flag(cmd, o.n_prompt);
    cmd->add_option("-d,--n-depth", o.n_depth, "KV cache depth before the prompt")
        ->check(tokens_check(0))
        ->capture_default_str();
    cmd->add_option("--stage", a->stage, "stages to profile: prefill, decode or both")
        ->check(CLI::IsMember({"prefill", "decode", "both"}))
        ->capture_default_str();
    add_device_flag(cmd, o.workload.devices);
    cmd->add_option("--rpc", a->o.rpc_servers, "RPC servers host:port to use (comma list)")
        ->delimiter(',');
    add_stage_timeout_option(cmd);
    add_threads_flag(cmd, o.workload.n_threads);
    add_engine_flags(cmd, o.workload);
    cmd->add_option("--replay", o.replay_copies,
                    "copies of each op replayed back to back for its op time (0: no op times)")
        ->check(int_range(0, 1000, "0..1000"))
        ->capture_default_str();
    cmd->add_option("--reps", o.traced_reps,
                    "node-by-node traced repetitions (a prefill and the decode steps each); 0: "
                    "1, or up to 3 while the prefills add up to under 1.5 s")
        ->check(int_range(0, 100000, "0..100000"))
        ->capture_default_str();
    cmd->add_option("--plain-reps", o.plain_reps,
                    "uninstrumented prefills, interleaved with the traced repetitions (decode's "
                    "uninstrumented samples are the untraced steps between the traced ones); 0: as "
                    "--reps 0")
        ->check(int_range(0, 100000, "0..100000"))
        ->capture_default_str();
    cmd->add_option("--decode-tokens", o.decode_tokens,
                    "traced one-token decode steps per traced repetition, each followed by an "
                    "untraced one (the uninstrumented samples of the decode stage)")
        ->check(int_range(1, 4096, "1..4096"))
        ->capture_default_str();
    cmd->add_option("--isolate-every", o.isolation_stride,
                    "traced decode steps dispatch every Nth node alone, in turn (1: every node in "
                    "every step; 0: min(8, traced steps / 2))")
        ->check(int_range(0, 64, "0..64"))
        ->capture_default_str();
    cmd->add_option("--huge-pages", a->huge_pages,
                    "advise the weights onto transparent huge pages as they load: a shorter "
                    "load (on|off; recorded in the profile)")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    cmd->add_option("--top", o.top_n, "rows in the top-ops table")
        ->check(int_range(1, 100000, "1..100000"))
        ->capture_default_str();
    cmd->add_option("--seed", o.seed, "seed for the random tokens")->capture_default_str();
    add_format_option(cmd, a->o.format, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
    add_out_flag(cmd, a->o.out_path);
    add_db_option(cmd, ctx);
    cmd->add_flag("-q,--quiet", a->quiet, "no progress lines on stderr");
    add_trace_option(cmd, a->trace);
    // The device-timer pass this command starts as its own child (hidden: not for users).
    cmd->add_option("--device-timer-pass", a->device_timer_pass)
        ->check(int_range(0, 100, "0..100"))
        ->group("");
    // decompose --mode: the backend's own modes in fresh processes (cli/decompose_modes.hpp).
    std::shared_ptr<DecomposeModeArgs> modes;
    if (decompose)
        modes = add_decompose_mode_options(cmd);
    cmd->callback([&ctx, a, decompose, modes] {
        OpsOptions& o = a->o.ops;
        check_context(o.n_prompt, o.n_depth, 1);
        o.prefill = a->stage != "decode";
        o.decode = a->stage != "prefill";
        o.huge_pages = a->huge_pages == "on";
        a->o.progress = !a->quiet;
        if (a->device_timer_pass > 0) {
            for (const auto& ep : a->o.rpc_servers)
                add_rpc_server(ep);
            // The markers go to std::cerr itself: the stream ggml-vulkan's logger writes to.
            device_timer_pass(o, a->device_timer_pass, std::cerr);
            return;
        }
        if (modes && !modes->modes.empty()) {
            run_decompose_modes(ctx, *modes, {a->o, a->stage, a->quiet});
            return;
        }
        o.decompose = decompose;
        a->o.brief = decompose;
        a->o.device_timer = device_timer_launcher(a->o.rpc_servers);
        check_trace_path(a->trace);
        // No keep_measured(): the profile is one measurement, and a stop inside llama.cpp
        // leaves nothing of it to print or store (run_ops's last word says so).
        const RunResult r =
            run_ops(a->o, RunEnv(new_document(decompose ? "decompose" : "ops", ctx.argv), ctx.err));
        print_ops_document(r.doc, a->o.format, ctx.out, a->o.ops.top_n, a->o.brief);
        finish_run(ctx, r);  // --db
        write_trace_if_asked(a->trace, r.doc, ctx.err);
    });
}

void add_ops_command(CLI::App& app, Context& ctx) {
    add_ops_like_command(app, ctx, false);
}

}  // namespace sb::cli
