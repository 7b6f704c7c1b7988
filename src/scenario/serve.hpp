#pragma once
// `stagebench serve`: a server under concurrent load. A sweep of points, each either closed
// loop (`--concurrency C`: C clients, each sending its next request when the last one ended) or
// open loop (`--rate R` requests/s: arrivals of a seeded gamma process, Poisson at burstiness 1,
// each request on its own thread); every request streams with the stage definitions of
// engine/http_engine.hpp (TTFT, ITL, TPOT, E2E), on one monotonic clock, and every prompt is
// distinct (made before the point's clock starts, so no prefix cache helps and no tokenizer
// call sits in the measurement). Per point: request and token throughput, latency percentiles,
// error rate, goodput under the SLOs, and the client's own CPU use.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/serve_section.hpp"
#include "core/result.hpp"
#include "core/stats_bootstrap.hpp"
#include "engine/http_engine.hpp"
#include "scenario/run_context.hpp"
#include "scenario/serve_analysis.hpp"
#include "scenario/serve_workload.hpp"
#include "scenario/telemetry_setup.hpp"

namespace sb {

struct ServeOptions {
    std::optional<std::string> url;  // a running server; none: a llama-server for model_file
    HttpApi api = HttpApi::openai;
    std::string model;                      // the name sent to a server ("" its default)
    std::optional<std::string> model_file;  // -m FILE: a llama-server started on 127.0.0.1
    int slots = 4;                          // that llama-server's parallel slots (-np)
    int threads = 0;                        // its threads (0: its default)
    // More of that llama-server's own flags, after the ones serve gives it (-ngl 99 -dev
    // Vulkan0: the devices it offloads to; without, llama-server's default: every layer on every
    // GPU it finds). The document keeps them with --api-key's value redacted.
    std::vector<std::string> server_args;
    std::vector<int> concurrency;  // closed-loop points
    std::vector<double> rates;     // open-loop points (requests/s; inf: all at once)
    double burstiness = 1.0;       // gamma shape of the arrivals (1: Poisson)
    int requests = 16;             // per point
    int n_prompt = 128, n_gen = 64;
    uint64_t seed = 1;
    std::map<std::string, double> slo_ms;  // ttft, tpot, e2e: upper bounds in ms
    double timeout_s = 120;
    // Workload shapes: -p/-n ranges (max 0: n_prompt/n_gen fixed), (prompt, output) pairs
    // from --lengths (when given they decide every request's lengths), --duration per point
    // (requests is then the most a point sends; their prompts are made before its clock).
    int n_prompt_max = 0, n_gen_max = 0;
    std::vector<std::pair<int64_t, int64_t>> lengths;
    std::optional<double> duration_s;
    TelemetryChoice telemetry;               // energy per request and per output token
    std::size_t bootstrap_resamples = 1000;  // per CI (seeded with seed)
    // How the requests in flight are driven: thread (one thread per in-flight request, each
    // with its own HttpEngine) or loop (one thread, every request on libcurl's multi
    // interface: HttpMulti). Both record the same per-request times (bench/
    // serve_client_models.sh measures their cost).
    ClientKind client = ClientKind::thread;
    std::optional<std::string> out_path;  // the result document, saved after every point
    bool progress = true;
    // --max-error-rate R: a point stops sending once more than R of its finished requests
    // failed (checked from the kServeErrorRateMinFinished-th finished request on); those in
    // flight finish, the point is marked stopped_by "max_error_rate". Null: never.
    std::optional<double> max_error_rate;
};

// Requests a point must have finished before --max-error-rate can stop it: one failure alone
// does not.
inline constexpr int kServeErrorRateMinFinished = 4;

// The point's statistics from its request records (no clock read): percentiles interpolate
// linearly between order statistics (core/stats.hpp's percentile: numpy's default, as vLLM's
// benchmark); goodput counts the
// successful requests whose TTFT, TPOT and E2E are within every SLO given.
// The latency CIs are seeded bootstraps (resamples, seed: the same records give the same
// intervals); the window rates cut duration_ns from the first send into kServeWindows.
void summarize_point(ServePoint& p, const std::map<std::string, double>& slo_ms,
                     std::size_t resamples = 1000, uint64_t seed = 42);

// The saturation test's inputs of the points (serve_analysis.hpp).
Saturation saturation_of(const std::vector<ServePoint>& points, bool slo_given,
                         std::size_t resamples = 2000, uint64_t seed = 42);

// Seeded inter-arrival gaps (seconds) of n requests at rate per second: gamma with shape
// burstiness and mean 1/rate (burstiness 1: exponential, a Poisson process; CV 1/sqrt(shape)).
// An infinite rate gives zeros.
std::vector<double> arrival_gaps(int n, double rate, double burstiness, uint64_t seed);

// "ttft=500ms,tpot=50ms,e2e=2s" -> {ttft: 500, tpot: 50, e2e: 2000}. Throws sb::Error(usage).
std::map<std::string, double> parse_slo(const std::string& text);

// Runs the sweep through a RunContext into env.doc: the serve section (the options and every
// point with its requests, saved after every point), the model (a GGUF's inspection for the
// llama-server serve starts, else the name the server is asked for), the server as
// engines["http"], telemetry, warnings. Throws sb::Error(usage) for bad options,
// sb::Error(input) when the model is unusable or the server cannot be reached or started; a
// failed request is recorded, never thrown (the outcome: failed). The server's prompts and
// clients come from env.engines' serve_target (engine/serve_target.hpp); every time is read
// on env.clock, and an open loop's wait for its next arrival passes through the target.
RunResult run_serve(const ServeOptions& o, RunEnv env);

}  // namespace sb
