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
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"

namespace sb {

// One request as the client saw it (stage definitions of engine/http_engine.hpp).
struct ServeRequest {
    int index = 0;
    int64_t send_ns = 0;
    std::optional<int64_t> ttft_ns, tpot_ns, e2e_ns;
    std::vector<int64_t> itl_ns;
    std::optional<int64_t> prompt_tokens, output_tokens;
    std::optional<std::string> error;
};

struct LatencyStats {
    size_t n = 0;
    std::optional<double> mean, median, p90, p99;  // ms
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
    std::optional<double> client_cpu_pct;  // the client's CPU time / wall time, % of one core

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
    std::string model;               // the name sent to the server ("" its default)
    int n_prompt = 0, n_gen = 0;
    int requests_per_point = 0;
    double burstiness = 1.0;  // gamma shape of the open-loop arrivals (1: Poisson)
    uint64_t seed = 1;
    std::map<std::string, double> slo_ms;  // ttft, tpot, e2e: upper bounds in ms
    nlohmann::json server;                 // what the server said about itself (free-form)
    std::vector<ServePoint> points;
};

// {"api", "url", "slots", "model", "n_prompt", "n_gen", "requests_per_point", "burstiness",
// "seed", "slo_ms", "server", "points": [{"mode", "value", "start_ns", "duration_ns", "ok",
// "errors", "error_rate", "request_per_s", "output_tokens_per_s", "total_tokens_per_s", "ttft",
// "tpot", "itl", "e2e": {"n", "mean_ms", "median_ms", "p90_ms", "p99_ms"}, "meeting_slo",
// "goodput_per_s", "client_cpu_pct", "requests": [{"index", "send_ns", "ttft_ns", "tpot_ns",
// "e2e_ns", "itl_ns", "prompt_tokens", "output_tokens", "error"}]}]}.
nlohmann::json to_json(const ServeRequest&);
nlohmann::json to_json(const LatencyStats&);
nlohmann::json to_json(const ServePoint&);
nlohmann::json to_json(const ServeSection&);

void read(const JsonIn&, ServeRequest&);
void read(const JsonIn&, LatencyStats&);
void read(const JsonIn&, ServePoint&);
void read(const JsonIn&, ServeSection&);

}  // namespace sb
