#pragma once
// What a server said about its own work on one request (llama-server's `timings`, Ollama's
// *_duration, MLC's usage.extra, vLLM's metrics), as read by engine/http_engine.cpp, and the
// same kept beside the client's measurement as a claim (serve's requests, explain's server
// levels). Counts in tokens, times in ns; absent fields were not reported.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"

namespace sb {

// One request's stage timings as an engine behind HTTP reported them; absent fields were not
// reported. source: "llama-server" (timings{}), "ollama" (*_duration), "mlc" (usage.extra),
// "vllm" (metrics{}).
struct ServerTimings {
    std::string source;
    std::optional<int64_t> prompt_n, cache_n, predicted_n;  // tokens
    std::optional<int64_t> prompt_ns, predicted_ns;         // prompt processing, generation
    std::optional<int64_t> queue_ns, load_ns;               // waiting, model load (Ollama)
};

// A server's timings of one request kept beside the client's own measurement of that request
// (serve's requests, explain's server levels): `said` as the server sent it (only values that
// are no count or no duration at all left out), and every way the client's measurement
// contradicts it (engine/http_engine.hpp request_measure: token counts that differ, times the
// client's wall time cannot contain). A claim with disagreements is kept, never used.
struct ServerClaim {
    ServerTimings said;
    std::vector<std::string> disagreements;
};

// How far a server's time may exceed the client's span that must contain it (its prompt time
// the client's TTFT, prompt and generation together its E2E) before the two disagree: 1 ms (the
// server's rounding, its clock read around its own work) plus 1 % of the span (two clocks'
// rates). Nanoseconds.
inline constexpr int64_t kServerClaimSlackNs = 1'000'000;
inline constexpr double kServerClaimSlackFraction = 0.01;
inline int64_t server_claim_slack_ns(int64_t span_ns) {
    return kServerClaimSlackNs +
           static_cast<int64_t>(kServerClaimSlackFraction * static_cast<double>(span_ns));
}
// The same in words, for reports: "1 ms + 1 % of the client's span".
inline constexpr const char* kServerClaimSlackText = "1 ms + 1 % of the client's span";

// {"source", "prompt_n", "cache_n", "predicted_n", "prompt_ns", "predicted_ns", "queue_ns",
// "load_ns"}; a ServerClaim adds "disagreements": [strings].
nlohmann::json to_json(const ServerTimings&);
nlohmann::json to_json(const ServerClaim&);
void read(const JsonIn&, ServerTimings&);
void read(const JsonIn&, ServerClaim&);

}  // namespace sb
