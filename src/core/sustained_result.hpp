#pragma once
// Results of `stagebench sustained`: the same fixed workload repeated for many rounds, per
// round and across rounds, for each phase (without and with background load). Feeds the
// reporters through to_json and the Markdown writer in src/report.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"

namespace sb {

struct FreqStat {
    std::optional<double> mean_khz, min_khz;  // over the round (time-weighted mean)
};

struct SustainedRound {
    int round = 0;  // 1-based
    std::string status = "ok";
    std::optional<std::string> error;
    int64_t start_ns = 0, end_ns = 0;
    std::optional<double> ttft_ms, prefill_tps, decode_tps, itl_p50_ms, itl_p99_ms;
    // Gross energy of the whole-system meter over each stage, and net of the idle baseline
    // (null without one: --idle 0, or no idle reading of that meter), as `run` reports them.
    std::optional<double> prefill_energy_j, decode_energy_j, decode_j_per_token;
    std::optional<double> prefill_net_energy_j, decode_net_energy_j, decode_net_j_per_token;
    std::optional<double> temp_start_c, temp_end_c, temp_max_c;  // hottest sensor
    std::map<std::string, FreqStat> freq;     // per cpufreq policy / GPU frequency metric
    std::optional<double> cpu_freq_mean_khz;  // mean over the CPU policies (for detection)
    double cooldown_s = 0;                    // waited before this round
    // --trace-ops-rounds: the node-by-node traced pass run after this round ended (outside
    // start_ns..end_ns): label, start_ns, end_ns, status, error and stages[] in the shape of
    // the ops document's ops.stages[]. Absent for rounds not chosen.
    std::optional<nlohmann::json> ops;
};

struct FloorTime {
    std::string metric;
    double floor_khz = 0;
    double seconds = 0, fraction = 0;  // of the phase's sampled time
};

struct AcrossRounds {
    Summary prefill_tps, decode_tps, ttft_ms, decode_j_per_token, decode_net_j_per_token;
    std::optional<double> first_last_change;  // decode tok/s last / first - 1
    std::optional<int> throttle_onset_round;  // 1-based, the first round of the lower level
    std::string onset_basis;                  // throughput | frequency | ""
    std::optional<double> steady_decode_tps;  // mean from the onset on (all rounds if none)
    std::optional<double> peak_to_steady;     // best round / steady state
    std::optional<int> freq_onset_round;
    std::vector<FloorTime> time_at_floor;
    std::string verdict;  // "stable", "throttled at round k", "degraded"
};

struct SustainedPhase {
    std::string name;        // "baseline" or "loaded"
    std::string background;  // load spec, "" for none
    std::vector<SustainedRound> rounds;
    AcrossRounds across;
};

struct Slowdown {
    std::string stage;  // prefill | decode
    double ratio = 0;   // baseline median tok/s / loaded median tok/s (> 1: slower)
    double ci_lo = 0, ci_hi = 0;
    bool no_difference = false;
};

struct SustainedResult {
    nlohmann::json config;
    std::vector<SustainedPhase> phases;
    std::vector<Slowdown> slowdown;  // loaded vs baseline, when both phases ran
};

nlohmann::json to_json(const SustainedRound&);
nlohmann::json to_json(const AcrossRounds&);
nlohmann::json to_json(const SustainedResult&);

}  // namespace sb
