#include "cli/run_options.hpp"

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "core/error.hpp"
#include "engine/wire_api.hpp"

namespace sb::cli {

ReporterListener::ReporterListener(OutputFormat format, std::ostream& out)
    : reporter_(make_reporter(format, out)) {}

std::vector<DeviceSet> device_sets_of(const std::vector<std::string>& texts) {
    return std::vector<DeviceSet>(texts.begin(), texts.end());
}

void add_matrix_options(CLI::App* cmd, RunArgs& a) {
    MatrixSpec& m = a.run.matrix;
    add_prompt_flag(cmd, m.n_prompt, 0);
    add_gen_flag(cmd, m.n_gen, 0);
    cmd->add_option("-d,--n-depth", m.n_depth, "KV cache depth before the prompt, comma list")
        ->check(tokens_check(0))
        ->delimiter(',')
        ->capture_default_str();
    add_threads_flag(cmd, m.n_threads);
    add_batch_flag(cmd, m.n_batch);
    add_ubatch_flag(cmd, m.n_ubatch);
    add_gpu_layers_flag(cmd, m.n_gpu_layers);
    add_device_flag(cmd, a.devices);
    add_flash_attn_flag(cmd, a.flash_attn);
    add_cache_type_flags(cmd, a.type_k, a.type_v);
    cmd->add_option("-r,--repetitions", m.reps, "repetitions (minimum with --target-ci)")
        ->check(reps_check())
        ->capture_default_str();
    cmd->add_option("--target-ci", a.target_ci,
                    "adaptive: repeat until the 95% CI half-width is below this, e.g. 2%")
        ->check(target_ci_check());
    cmd->add_option("--max-reps", m.max_reps, "adaptive: repetitions at most (default 50)")
        ->check(reps_check());
    cmd->add_flag("--no-warmup", a.no_warmup, "skip the warmup run");
    cmd->add_option("--seed", m.seed, "seed for the random prompt tokens")->capture_default_str();
}

void add_output_options(CLI::App* cmd, RunArgs& a) {
    add_format_option(
        cmd, a.run.format,
        {OutputFormat::md, OutputFormat::csv, OutputFormat::json, OutputFormat::jsonl});
    add_out_flag(cmd, a.run.out_path, "result document", "after every test");
    cmd->add_option("--membw", a.run.membw,
                    "machine memory bandwidth for the roofline: auto (measure), off, or GB/s")
        ->check(CLI::IsMember({"auto", "off"}) |
                real_range(0, 1e6, true, false, "auto, off, or more than 0 to 1000000 GB/s"))
        ->capture_default_str();
    cmd->add_option("--rpc", a.run.rpc_servers, "RPC servers host:port to use (comma list)")
        ->delimiter(',');
    add_stage_timeout_option(cmd);
    cmd->add_flag("-q,--quiet", a.quiet, "no progress lines on stderr");
    cmd->add_option("--telemetry", a.telemetry,
                    "sample sensors around every stage: auto (where sources exist), on, off")
        ->check(CLI::IsMember({"auto", "on", "off"}))
        ->capture_default_str();
    cmd->add_option("--sysfs-root", a.run.telemetry.sysfs_root,
                    "where the sensors are (default /sys)")
        ->capture_default_str();
    cmd->add_option("--telemetry-hz", a.run.telemetry.hz, "sampling rate")
        ->check(hz_check())
        ->capture_default_str();
    cmd->add_option("--idle", a.run.telemetry.idle_s,
                    "seconds of idle baseline before the first test")
        ->check(seconds_check(true))
        ->capture_default_str();
    add_telemetry_log_options(cmd, a.telemetry_log);
}

void add_engine_options(CLI::App* cmd, RunArgs& a) {
    HttpRunOptions& h = a.run.http;
    cmd->add_option("--engine", a.engines,
                    "llama (in-process), http (a server: --url, or a llama-server started on "
                    "127.0.0.1 for -m FILE), or llama,http for both side by side")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--url", h.url,
                    "server for --engine http, e.g. http://127.0.0.1:8080; -m then names the "
                    "server's model (optional)");
    cmd->add_option("--api", a.api, "HTTP API: " + http_api_help())
        ->check(CLI::IsMember(http_api_names()))
        ->capture_default_str();
    cmd->add_option("--timeout", h.timeout_s,
                    "seconds to wait for a connection and for each silence of the server")
        ->check(seconds_check(false))
        ->capture_default_str();
}

void add_fidelity_options(CLI::App* cmd, RunFidelityOptions& f) {
    auto* flag = cmd->add_flag(
        "--fidelity", f.enabled,
        "also compare each test's logits with a reference (KL, top-1, top-k; untimed)");
    cmd->add_option_function<std::string>(
           "--reference", [&f](const std::string& s) { f.reference_devices = DeviceSet(s); },
           "--fidelity: the reference device set")
        ->check(device_set_check())
        ->needs(flag)
        ->default_str(f.reference_devices.str());
    cmd->add_option("--reference-model", f.reference_model,
                    "--fidelity: the reference model file (same vocabulary; default: the test's)")
        ->needs(flag);
    cmd->add_option("--top-k", f.top_k, "--fidelity: k of the top-k overlap")
        ->check(int_range(1, 1000, "1..1000"))
        ->needs(flag)
        ->capture_default_str();
}

void finish_run_args(RunArgs& a) {
    MatrixSpec& m = a.run.matrix;
    check_not_empty(a.devices, "--device");
    check_not_empty(a.flash_attn, "-fa");
    check_not_empty(a.type_k, "-ctk");
    check_not_empty(a.type_v, "-ctv");
    m.devices = device_sets_of(a.devices);
    m.flash_attn = enums_of<FlashAttn>(a.flash_attn, "--flash-attn");
    m.type_k = enums_of<KvType>(a.type_k, "--cache-type-k");
    m.type_v = enums_of<KvType>(a.type_v, "--cache-type-v");
    a.run.http.engines = enums_of<EngineKind>(a.engines, "--engine");
    a.run.http.api = parse_http_api(a.api);
    a.run.telemetry.mode = enum_from_text<TelemetryMode>(a.telemetry, "--telemetry");
    apply_telemetry_log(a.telemetry_log, a.run.telemetry);
    m.warmup = !a.no_warmup;
    a.run.progress = !a.quiet;
    if (!a.target_ci.empty())
        m.target_ci = parse_target_ci(a.target_ci);
    check_matrix(m);
}

void check_matrix(const MatrixSpec& m) {
    check_not_empty(m.n_prompt, "-p");
    check_not_empty(m.n_gen, "-n");
    check_not_empty(m.n_depth, "-d");
    check_not_empty(m.n_threads, "-t");
    check_not_empty(m.n_batch, "-b");
    check_not_empty(m.n_ubatch, "-ub");
    check_not_empty(m.n_gpu_layers, "-ngl");
    check_not_empty(m.devices, "--device");
    check_not_empty(m.flash_attn, "-fa");
    check_not_empty(m.type_k, "-ctk");
    check_not_empty(m.type_v, "-ctv");
    // The largest context of the matrix is the one of the largest values.
    const int64_t p = *std::max_element(m.n_prompt.begin(), m.n_prompt.end());
    const int64_t d = *std::max_element(m.n_depth.begin(), m.n_depth.end());
    const int64_t n = *std::max_element(m.n_gen.begin(), m.n_gen.end());
    check_context(p, d, n);
    if (m.max_reps > 0 && m.max_reps < m.reps)
        throw usage_error("--max-reps " + std::to_string(m.max_reps) + " is below -r " +
                          std::to_string(m.reps) + " (the repetitions every test runs)");
    const int64_t max_reps =
        m.max_reps > 0 ? m.max_reps : (m.target_ci ? std::max(50, m.reps) : m.reps);
    if (max_reps * n > kMaxTokenSamples)
        throw usage_error("-n " + std::to_string(n) + " x " + std::to_string(max_reps) +
                          " repetitions keeps " + std::to_string(max_reps * n) +
                          " token latencies, more than " + std::to_string(kMaxTokenSamples) +
                          " (1 GiB); use fewer repetitions or tokens");
}

}  // namespace sb::cli
