#pragma once
// The "serve" section of a result document (`stagebench serve`, scenario/serve.hpp): a server
// under concurrent load, a sweep of points each either closed loop (mode "concurrency", value
// the clients) or open loop (mode "rate", value requests/s; an unbounded rate is written
// "inf"). Every request is kept raw beside its point's statistics. Times of requests in ns on
// the sb::now_ns clock, send_ns from the point's start; statistics in ms; rates per second.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/doc/server_claim.hpp"
#include "core/stats_bootstrap.hpp"

namespace sb {

// One request as the client saw it (stage definitions of engine/http_engine.hpp).
struct ServeRequest {
    int index = 0;
    int64_t send_ns = 0;
    std::optional<int64_t> ttft_ns, tpot_ns, e2e_ns;
    std::vector<int64_t> itl_ns;
    std::optional<int64_t> prompt_tokens, output_tokens;
    // The stream's own count, and what the server claimed (usage.completion_tokens) as it
    // said it; output_tokens is the claim when believable, else the stream's count
    // (engine/http_engine.hpp compute_timing). notes: where the server's claims and the
    // counts disagree (absent from the JSON when none).
    std::optional<int64_t> streamed_tokens, claimed_output_tokens;
    std::vector<std::string> notes;
    std::optional<std::string> error;
    bool interrupted = false;  // in flight at Ctrl-C: neither a success nor a failure
    // TTFT by the other definitions harnesses use (ttft_ns is the first streamed token, see
    // ServeSection::ttft_definition): the first byte of the stream, whatever it carries, and
    // the first token of answer content (null when none came). From the request's send.
    std::optional<int64_t> ttft_first_byte_ns, ttft_first_content_ns;
    // The server's id of the request, when its API returns one (OpenAI "id"): joins this
    // record with the server's logs. A claim, at most 128 bytes.
    std::optional<std::string> request_id;
    // The server's own timings of the request (llama-server's `timings`, Ollama's durations,
    // ...), a claim kept as it said it beside the client's measurement above (TTFT, E2E, the
    // token counts), with every way the two disagree (engine/http_engine.hpp request_measure);
    // null when the server said nothing. Used for no statistic.
    std::optional<ServerClaim> server_claim;
};

// The definition of a serve request's TTFT (ServeRequest::ttft_ns).
inline constexpr const char* kServeTtftDefinition =
    "first streamed token (answer content, reasoning or a tool call) from the request's send";

struct LatencyStats {
    size_t n = 0;
    std::optional<double> mean, median, p90, p99;  // ms
    // Seeded percentile-bootstrap 95 % CIs (core/stats_bootstrap.hpp bootstrap_cis),
    // resampling whole requests (ITL: a request's gaps together); none with fewer than two.
    std::optional<Ci95> mean_ci, median_ci, p90_ci, p99_ci;
};

// A point's energy, from the telemetry stage that spans it (scenario/serve_analysis.hpp).
struct ServeEnergy {
    std::string metric;  // the system-total meter, else the first energy meter not nested in
                         // another (e.g. RAPL package-0)
    std::string method;  // "counter" | "power_integral"
    double duration_s = 0;
    std::optional<double> energy_j, net_energy_j, mean_power_mw, idle_power_mw;
    std::optional<double> j_per_request, net_j_per_request;
    std::optional<double> j_per_output_token, net_j_per_output_token;
};

// From one point of the sweep to the next (in increasing value).
struct SaturationStep {
    double from = 0, to = 0;
    std::optional<RatioCi> throughput;  // mean window rate (to / from); none: no windows
    std::optional<RatioCi> latency;     // median E2E (to / from); none: no latencies
    bool throughput_grew = false;       // the throughput ratio's 95 % CI is above 1
    bool latency_grew = false;          // the latency ratio's 95 % CI is above 1
};

// The saturation test over the sweep (scenario/serve_analysis.hpp find_saturation).
struct Saturation {
    std::vector<SaturationStep> steps;
    // The first step where throughput did not grow (its ratio's CI reaches down to 1 or below)
    // while latency did (its ratio's CI is above 1): saturated_at is its `from`, the point past
    // which more load only adds waiting. None: no step shows it.
    std::optional<double> saturated_at, next;
    // Largest value with slo_attainment >= slo_attainment_needed.
    std::optional<double> max_meeting_slo;
    bool slo_given = false;
    int windows = 10;                    // windows a point's span is cut into
    double slo_attainment_needed = 0.9;  // share of requests meeting every SLO
    std::string verdict;                 // one sentence, for the Markdown
};

struct ServePoint {
    std::string mode;  // "concurrency" | "rate"
    double value = 0;  // clients, or requests/s (infinity: all at once)
    // When the point's clock started (sb::now_ns, the clock of telemetry and traces): its
    // requests' send_ns count from here. Absent in documents of earlier builds.
    std::optional<int64_t> start_ns;
    int64_t duration_ns = 0;  // first send to last completion
    std::vector<ServeRequest> requests;
    int ok = 0, errors = 0;
    double request_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
    LatencyStats ttft, tpot, itl, e2e;
    std::optional<double> goodput_per_s;  // requests/s meeting every SLO (with SLOs)
    int meeting_slo = 0;
    std::optional<double> client_cpu_pct;     // the client's CPU time / wall time, % of one core
    int interrupted = 0;                      // requests cut by Ctrl-C
    std::vector<double> window_tokens_per_s;  // output tokens/s in equal windows of the span
    std::optional<double> slo_attainment;     // meeting_slo / (ok + errors), with SLOs
    std::optional<ServeEnergy> energy;        // with an energy meter
    std::optional<double> client_cpu_ms_per_request;  // client CPU time / requests sent
    // Why the point ended before sending every request: "max_error_rate" (the errors among
    // the requests finished passed --max-error-rate; the requests not sent are not in
    // `requests`). Null: it ran to its end (or Ctrl-C, see `interrupted`).
    std::optional<std::string> stopped_by;

    double error_rate() const {
        return requests.empty()
                   ? 0.0
                   : static_cast<double>(errors) / static_cast<double>(requests.size());
    }
    // "concurrency 4", "rate 0.5", "rate inf".
    std::string label() const;
};

struct ServeSection {
    std::string api = "openai";
    std::optional<std::string> url;  // the --url server; null: a llama-server it started
    std::optional<int> slots;        // that llama-server's parallel slots
    // That llama-server's flags beyond serve's own (serve --server-args, --api-key's value
    // redacted); empty for a --url server and in documents of earlier builds.
    std::vector<std::string> server_args;
    std::string model;  // the name sent to the server ("" its default)
    int n_prompt = 0, n_gen = 0;
    int requests_per_point = 0;
    double burstiness = 1.0;  // gamma shape of the open-loop arrivals (1: Poisson)
    uint64_t seed = 1;
    std::map<std::string, double> slo_ms;  // ttft, tpot, e2e: upper bounds in ms
    nlohmann::json server;                 // what the server said about itself (free-form)
    std::vector<ServePoint> points;
    // Workload shapes (-p/-n ranges LO-HI, --lengths pairs, --duration per point), the
    // saturation test over the points, and whether Ctrl-C ended the sweep.
    int n_prompt_max = 0, n_gen_max = 0;
    std::vector<std::pair<int64_t, int64_t>> lengths;
    std::optional<double> duration_s;
    Saturation saturation;
    bool interrupted = false;
    // How serve drove the requests in flight: "thread" or "loop" (serve --client); null in
    // documents written before the choice existed (they used threads).
    std::optional<std::string> client;
    // --max-error-rate: a point stops sending once more than this share of its finished
    // requests failed (null: never).
    std::optional<double> max_error_rate;
    // What ttft_ns (and the TTFT statistics) measure; each request also keeps the first byte's
    // and the first content token's. Documents of earlier builds lack it (the same definition).
    std::string ttft_definition = kServeTtftDefinition;
    // What the reader should know of how the requests were made (a synthetic model's tokens
    // that were banned, engine/text_generation.hpp synthetic_token_ban); absent from the JSON
    // when none.
    std::vector<std::string> notes;
};

// {"api", "url", "slots", "model", "n_prompt", "n_gen", "requests_per_point", "burstiness",
// "seed", "slo_ms", "server", "points": [{"mode", "value", "start_ns", "duration_ns", "ok",
// "errors", "error_rate", "request_per_s", "output_tokens_per_s", "total_tokens_per_s", "ttft",
// "tpot", "itl", "e2e": {"n", "mean_ms", "median_ms", "p90_ms", "p99_ms"}, "meeting_slo",
// "goodput_per_s", "client_cpu_pct", "requests": [{"index", "send_ns", "ttft_ns", "tpot_ns",
// "e2e_ns", "itl_ns", "prompt_tokens", "output_tokens", "streamed_tokens",
// "claimed_output_tokens", "notes" (when any), "error", "interrupted"}],
// "interrupted", "window_tokens_per_s", "slo_attainment", "energy": {"metric", "method",
// "duration_s", "energy_j", "net_energy_j", "mean_power_mw", "idle_power_mw", "j_per_request",
// "net_j_per_request", "j_per_output_token", "net_j_per_output_token"} | null,
// "client_cpu_ms_per_request"}], "n_prompt_max", "n_gen_max", "lengths": [[p, n]...],
// "duration_s", "saturation": {"test", "windows", "steps": [{"from", "to", "throughput_ratio",
// "latency_ratio": {"ratio", "ci95": [lo, hi]} | null, "throughput_grew", "latency_grew"}],
// "saturated_at", "next", "slo_attainment_needed", "max_meeting_slo", "verdict"}, "client",
// "interrupted"}; each statistic also "mean_ci95_ms" ... "p99_ci95_ms": [lo, hi] | null.
nlohmann::json to_json(const ServeRequest&);
nlohmann::json to_json(const LatencyStats&);
nlohmann::json to_json(const ServePoint&);
nlohmann::json to_json(const ServeSection&);

void read(const JsonIn&, ServeRequest&);
void read(const JsonIn&, LatencyStats&);
void read(const JsonIn&, ServePoint&);
void read(const JsonIn&, ServeSection&);
nlohmann::json to_json(const ServeEnergy&);
nlohmann::json to_json(const Saturation&);
void read(const JsonIn&, ServeEnergy&);
void read(const JsonIn&, Saturation&);

}  // namespace sb
