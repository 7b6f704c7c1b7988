// `stagebench serve`: a server under concurrent load, closed or open loop (scenario/serve.hpp).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/junit_option.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "cli/trace_option.hpp"
#include "core/file_io.hpp"
#include "core/interrupt.hpp"
#include "core/parse.hpp"
#include "engine/wire_api.hpp"
#include "report/reporter.hpp"
#include "scenario/explain_settings.hpp"
#include "scenario/run_command.hpp"
#include "scenario/serve.hpp"

namespace sb::cli {

void add_serve_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "serve",
        "A server under concurrent load: a sweep over --concurrency (closed loop) or --rate "
        "(open loop), per request TTFT/ITL/TPOT/E2E, per point throughput, percentiles, goodput");
    struct Args {
        ServeOptions o;
        std::string model, slo;
        std::optional<std::string> out_path;
        OutputFormat format = OutputFormat::md;
        std::vector<std::string> rates;
        std::string n_prompt = "128", n_gen = "64";
        std::optional<std::string> lengths_file, duration;
        std::string api = "openai", client = "thread", telemetry = "auto";
        std::string server_args;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--url", a->o.url,
                    "the server (http://host:port); none: -m FILE starts "
                    "llama-server on 127.0.0.1");
    cmd->add_option("--api", a->api, "HTTP API: " + http_api_help())->capture_default_str();
    cmd->add_option("-m,--model", a->model,
                    "the model name on the server, or a GGUF file for the llama-server it starts");
    cmd->add_option("--slots", a->o.slots, "parallel slots of the llama-server it starts (-np)")
        ->check(int_range(1, 256, "1..256"))
        ->capture_default_str();
    add_threads_flag(cmd, a->o.threads, "of the llama-server it starts");
    cmd->add_option("--server-args", a->server_args,
                    "more flags for the llama-server it starts, e.g. \"-ngl 99 -dev Vulkan0\"");
    cmd->add_option("--concurrency", a->o.concurrency, "closed-loop points: clients, comma list")
        ->delimiter(',');
    cmd->add_option("--rate", a->rates,
                    "open-loop points: requests/s, comma list (inf: all at once)")
        ->delimiter(',');
    cmd->add_option("--client", a->client,
                    "thread (a thread per in-flight request) or loop (one thread, libcurl's "
                    "multi interface)")
        ->capture_default_str();
    cmd->add_option("--burstiness", a->o.burstiness,
                    "gamma shape of the open-loop arrivals (1: Poisson; above 1: steadier)")
        ->capture_default_str();
    auto* requests = cmd->add_option("--requests", a->o.requests,
                                     "requests per point (with --duration: the most a point "
                                     "sends, default 1000)")
                         ->check(int_range(1, 100000, "1..100000"))
                         ->capture_default_str();
    cmd->add_option("--duration", a->duration,
                    "per point: send requests for this long (e.g. 30s), then wait for those in "
                    "flight");
    cmd->add_option("-p,--n-prompt", a->n_prompt,
                    "prompt tokens per request, or a uniform range LO-HI (e.g. 64-256)")
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", a->n_gen,
                    "output tokens per request (EOS ignored), or a uniform range LO-HI")
        ->capture_default_str();
    cmd->add_option("--lengths", a->lengths_file,
                    "CSV of 'prompt,output' token counts, one request a line (in order, "
                    "repeated); replaces -p and -n");
    cmd->add_option("--telemetry", a->telemetry,
                    "auto, on, off: energy per request and per output token")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_option("--sysfs-root", a->o.telemetry.sysfs_root, "where the sensors are")
        ->capture_default_str();
    cmd->add_option("--telemetry-hz", a->o.telemetry.hz, "sampling rate")
        ->check(hz_check())
        ->capture_default_str();
    cmd->add_option("--idle", a->o.telemetry.idle_s,
                    "seconds of idle baseline (server up, no requests) for net energy")
        ->check(seconds_check(true))
        ->capture_default_str();
    cmd->add_option("--slo", a->slo,
                    "service levels for goodput, e.g. ttft=500ms,tpot=50ms,e2e=5s");
    cmd->add_option("--max-error-rate", a->o.max_error_rate,
                    "end a point early once more than this share (0..1) of its finished "
                    "requests failed (from the 4th on)")
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--seed", a->o.seed, "seed of the prompts and arrivals")->capture_default_str();
    cmd->add_option("--timeout", a->o.timeout_s, "seconds a connection or a silent stream may take")
        ->check(seconds_check(false))
        ->capture_default_str();
    add_out_flag(cmd, a->out_path, "result document", "after every point");
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    add_db_option(cmd, ctx);
    auto trace = std::make_shared<TraceArgs>();
    add_trace_option(cmd, *trace);
    auto junit = std::make_shared<JunitOutput>("serve");
    junit->add_option(cmd);

    cmd->callback(junit->wrap([&ctx, a, requests, trace, junit] {
        a->o.api = parse_http_api(a->api);
        const auto client = parse_enum<ClientKind>(a->client);
        if (!client)
            throw usage_error("--client '" + a->client + "': expected thread or loop");
        a->o.client = *client;
        a->o.telemetry.mode = enum_from_text<TelemetryMode>(a->telemetry, "--telemetry");
        const LengthRange pr = parse_length_range(a->n_prompt, "-p", kMaxTokens);
        const LengthRange gr = parse_length_range(a->n_gen, "-n", kMaxTokens);
        a->o.n_prompt = static_cast<int>(pr.lo);
        a->o.n_prompt_max = static_cast<int>(pr.hi);
        a->o.n_gen = static_cast<int>(gr.lo);
        a->o.n_gen_max = static_cast<int>(gr.hi);
        if (a->lengths_file)
            a->o.lengths = parse_lengths_csv(read_input_file(*a->lengths_file, "--lengths file"),
                                             *a->lengths_file, kMaxTokens);
        if (a->duration) {
            const int64_t ns = parse_duration_ns(*a->duration);
            if (ns <= 0)
                throw usage_error("--duration must be above 0 (e.g. 30s)");
            a->o.duration_s = static_cast<double>(ns) * 1e-9;
            if (requests->count() == 0)
                a->o.requests = 1000;
        }
        for (const auto& r : a->rates) {
            if (r == "inf") {
                a->o.rates.push_back(std::numeric_limits<double>::infinity());
                continue;
            }
            const auto v = parse_decimal(r);  // decimal only: not 0x10
            if (!v || !(*v > 0))
                throw usage_error("--rate '" + r + "': expected requests/s above 0, or inf");
            a->o.rates.push_back(*v);
        }
        if (!a->slo.empty())
            a->o.slo_ms = parse_slo(a->slo);
        if (!a->o.url) {
            if (a->model.empty())
                throw usage_error(
                    "serve needs --url URL, or -m FILE.gguf for a llama-server it "
                    "starts");
            require_regular_file(a->model, "model");
            a->o.model_file = a->model;
            a->o.server_args = split_server_args(a->server_args);
            check_server_args(a->o.server_args, max_threads(), kMaxTokens);
        } else {
            if (!a->server_args.empty())
                throw usage_error(
                    "--server-args is for the llama-server serve starts (-m FILE), "
                    "not a --url server");
            a->o.model = a->model;
        }
        if (a->out_path)
            check_output_path(*a->out_path, "result document");
        a->o.out_path = a->out_path;
        check_trace_path(*trace);
        junit->check();
        const RunResult r = run_serve(a->o, RunEnv(new_document("serve", ctx.argv), ctx.err));
        print_document(a->format, r.doc, ctx.out);
        finish_run_with_junit(ctx, r, *junit);
        write_trace_if_asked(*trace, r.doc, ctx.err);
    }));
}

}  // namespace sb::cli
