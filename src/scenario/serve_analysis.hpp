#pragma once
// `stagebench serve`'s analysis of a sweep, from its records only (no clock read): the rate at
// which tokens arrived in equal windows of a point, the saturation test across the sweep's
// points, and a point's energy per request and per output token from its telemetry stage.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/doc/serve_section.hpp"
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

// The saturation test over the points (sorted by value here; equal values are one step apart
// as given). Each ratio's CI is a seeded 95 % bootstrap (ratio_of_means over the windows,
// ratio_of_medians over E2E), so the same records give the same verdict. mode names the
// values in the verdict ("concurrency" or "rate").
Saturation find_saturation(std::vector<SaturationInput> points, const std::string& mode,
                           bool slo_given, std::size_t resamples = 2000, uint64_t seed = 42);

// Energy per successful request and per output token over the stage (gross, and net of the
// idle baseline when one was measured). None when the stage has no energy meter with a value.
std::optional<ServeEnergy> serve_energy(const StageWindow& stage, int requests_ok,
                                        int64_t output_tokens);

}  // namespace sb
