#pragma once
// `stagebench serve`'s analysis of a sweep, from its records only (no clock read): the rate at
// which tokens arrived in equal windows of a point, the saturation test across the sweep's
// points, and a point's energy per request and per output token from its telemetry stage.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/stats_bootstrap.hpp"
#include "telemetry/sampler.hpp"

namespace sb {

// Windows a point's span is cut into for its throughput's confidence interval.
inline constexpr int kServeWindows = 10;

// A point's share of the SLOs' requests that must meet every SLO (failed requests miss) for the
// point to count as meeting them, as DistServe's "SLO attainment".
inline constexpr double kSloAttainment = 0.9;

// One request's token arrivals, as the records hold them: the first at send + TTFT, each next one
// an ITL later; output_tokens spread evenly over them (a stream may carry several tokens in one
// message). Without a TTFT the tokens arrive at send + E2E.
struct TokenArrivals {
    int64_t send_ns = 0;
    std::optional<int64_t> ttft_ns, e2e_ns;
    std::vector<int64_t> itl_ns;
    int64_t output_tokens = 0;
};

// Output tokens/s in each of `windows` equal windows of [start_ns, start_ns + span_ns) (an
// arrival at or past the end counts in the last window). Empty when span_ns <= 0.
std::vector<double> window_token_rates(const std::vector<TokenArrivals>& requests, int64_t start_ns,
                                       int64_t span_ns, int windows = kServeWindows);

// What the saturation test reads of one point.
struct SaturationInput {
    double value = 0;                         // its concurrency or rate
    std::vector<double> window_tokens_per_s;  // window_token_rates
    std::vector<double> latency_ms;           // E2E of its successful requests
    std::optional<double> slo_attainment;     // meeting every SLO / requests; none without SLOs
};

// From one point to the next (in increasing value).
struct SaturationStep {
    double from = 0, to = 0;
    std::optional<RatioCi> throughput;  // mean window rate (to / from); none: no windows
    std::optional<RatioCi> latency;     // median E2E (to / from); none: no latencies
    bool throughput_grew = false;       // the throughput ratio's 95 % CI is above 1
    bool latency_grew = false;          // the latency ratio's 95 % CI is above 1
};

struct Saturation {
    std::vector<SaturationStep> steps;
    // The first step where throughput did not grow (its ratio's CI reaches down to 1 or below)
    // while latency did (its ratio's CI is above 1): saturated_at is its `from`, the point past
    // which more load only adds waiting. None: no step shows it.
    std::optional<double> saturated_at, next;
    std::optional<double> max_meeting_slo;  // largest value with slo_attainment >= kSloAttainment
    bool slo_given = false;
    std::string verdict;  // one sentence, for the Markdown
};

// The saturation test over the points (sorted by value here; equal values are one step apart
// as given). Each ratio's CI is a seeded 95 % bootstrap (ratio_of_means over the windows,
// ratio_of_medians over E2E), so the same records give the same verdict. mode names the
// values in the verdict ("concurrency" or "rate").
Saturation find_saturation(std::vector<SaturationInput> points, const std::string& mode,
                           bool slo_given, std::size_t resamples = 2000, uint64_t seed = 42);

// A point's energy, from the telemetry stage that spans it.
struct ServeEnergy {
    std::string metric;  // the system-total meter, else the first energy meter not nested in
                         // another (e.g. RAPL package-0)
    std::string method;  // "counter" | "power_integral"
    double duration_s = 0;
    std::optional<double> energy_j, net_energy_j, mean_power_mw, idle_power_mw;
    std::optional<double> j_per_request, net_j_per_request;
    std::optional<double> j_per_output_token, net_j_per_output_token;
};

// Energy per successful request and per output token over the stage (gross, and net of the
// idle baseline when one was measured). None when the stage has no energy meter with a value.
std::optional<ServeEnergy> serve_energy(const StageTelemetry& stage, int requests_ok,
                                        int64_t output_tokens);

}  // namespace sb
