#include "cli/run_options.hpp"

#include "core/error.hpp"

namespace sb::cli {

void add_matrix_options(CLI::App* cmd, RunArgs& a) {
    MatrixSpec& m = a.run.matrix;
    cmd->add_option("-p,--n-prompt", m.n_prompt, "prompt tokens (prefill stage), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", m.n_gen, "generated tokens (decode stage), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-d,--n-depth", m.n_depth, "KV cache depth before the prompt, comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-t,--threads", m.n_threads,
                    "CPU threads, comma list (0 = one per physical core that does math)")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-b,--batch-size", m.n_batch, "logical batch size, comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--ubatch-size", m.n_ubatch, "physical batch size (-ub), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--n-gpu-layers", m.n_gpu_layers, "layers to offload (-ngl), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--device", m.devices,
                    "devices per test (-dev), comma list; join with + to combine, e.g. "
                    "CPU,BLAS,RPC0 or BLAS+RPC0")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--flash-attn", m.flash_attn, "flash attention auto|on|off (-fa), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--cache-type-k", m.type_k, "K cache type (-ctk), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--cache-type-v", m.type_v, "V cache type (-ctv), comma list")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", m.reps, "repetitions (minimum with --target-ci)")
        ->capture_default_str();
    cmd->add_option("--target-ci", a.target_ci,
                    "adaptive: repeat until the 95% CI half-width is below this, e.g. 2%");
    cmd->add_option("--max-reps", m.max_reps, "adaptive: repetitions at most (default 50)");
    cmd->add_flag("--no-warmup", a.no_warmup, "skip the warmup run");
    cmd->add_option("--seed", m.seed, "seed for the random prompt tokens")->capture_default_str();
}

void add_output_options(CLI::App* cmd, RunArgs& a) {
    cmd->add_option("-o,--output", a.run.format, "stdout format: md, csv, json, jsonl")
        ->check(CLI::IsMember({"md", "csv", "json", "jsonl"}))
        ->capture_default_str();
    cmd->add_option("--out", a.run.out_path,
                    "write the result document (JSON) here, updated after every test");
    cmd->add_option("--membw", a.run.membw,
                    "machine memory bandwidth for the roofline: auto (measure), off, or GB/s")
        ->capture_default_str();
    cmd->add_option("--rpc", a.run.rpc_servers, "RPC servers host:port to use (comma list)")
        ->delimiter(',');
    cmd->add_flag("-q,--quiet", a.quiet, "no progress lines on stderr");
    cmd->add_option("--telemetry", a.run.telemetry,
                    "sample sensors around every stage: auto (where sources exist), on, off")
        ->capture_default_str();
    cmd->add_option("--sysfs-root", a.run.sysfs_root, "where the sensors are (default /sys)")
        ->capture_default_str();
    cmd->add_option("--telemetry-hz", a.run.telemetry_hz, "sampling rate")->capture_default_str();
    cmd->add_option("--idle", a.run.idle_s, "seconds of idle baseline before the first test")
        ->capture_default_str();
}

void add_engine_options(CLI::App* cmd, RunArgs& a) {
    HttpRunOptions& h = a.run.http;
    cmd->add_option("--engine", h.engines,
                    "llama (in-process), http (a server: --url, or a llama-server started on "
                    "127.0.0.1 for -m FILE), or llama,http for both side by side")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--url", h.url,
                    "server for --engine http, e.g. http://127.0.0.1:8080; -m then names the "
                    "server's model (optional)");
    cmd->add_option("--api", h.api,
                    "HTTP API: openai (/v1/completions), openai-chat (/v1/chat/completions), "
                    "llama (llama-server /completion), ollama (/api/generate)")
        ->check(CLI::IsMember({"openai", "openai-chat", "llama", "ollama"}))
        ->capture_default_str();
    cmd->add_option("--timeout", h.timeout_s,
                    "seconds to wait for a connection and for each silence of the server")
        ->capture_default_str();
}

void finish_run_args(RunArgs& a) {
    MatrixSpec& m = a.run.matrix;
    m.warmup = !a.no_warmup;
    a.run.progress = !a.quiet;
    if (!a.target_ci.empty()) {
        std::string s = a.target_ci;
        const bool percent = s.back() == '%';
        if (percent)
            s.pop_back();
        try {
            size_t used = 0;
            double v = std::stod(s, &used);
            if (used != s.size())
                throw std::invalid_argument(s);
            m.target_ci = percent ? v / 100.0 : v;
        } catch (const std::exception&) {
            throw usage_error("--target-ci must look like 2% or 0.02, not '" + a.target_ci + "'");
        }
    }
}

}  // namespace sb::cli
