#pragma once
// Results of `stagebench sustained`: the same fixed workload repeated for many rounds, per
// round and across rounds, for each phase (without and with background load). The "sustained"
// section of a result document (ResultDocument::sustained); each round is also a test of the
// document, in the order of the phases and rounds.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/doc/json_in.hpp"
#include "core/doc/ops_section.hpp"
#include "core/enums.hpp"
#include "core/stats.hpp"

namespace sb {

// The workload and schedule as the command line gave them.
struct SustainedConfig {
    std::string model;
    std::string devices;  // '+'-joined, as given
    int threads = 0;      // as resolved
    int rounds = 0;
    int prompt_tokens = 0, max_tokens = 0;
    std::optional<int> chunk;               // prefill batch size; nullopt: the default
    std::string cooldown;                   // as given: "0", "10s", "until-temp:45C"
    std::optional<std::string> background;  // load spec of the loaded phase
    uint64_t seed = 0;
    std::vector<int> trace_ops_rounds;  // rounds followed by a traced pass, ascending
};

// --trace-ops-rounds: the node-by-node traced pass (scenario/traced_pass.hpp) run after a round
// ended, outside the round's start_ns..end_ns.
struct RoundTracedPass {
    std::string label;  // "traced pass after round 3"
    int64_t start_ns = 0, end_ns = 0;
    std::string status = "ok";  // ok | error
    std::optional<std::string> error;
    std::string devices;  // '+'-joined
    std::vector<std::string> backends;
    int n_threads = 0;
    std::string method;
    std::vector<StageProfile> stages;  // as the ops section's stages (op times not replayed)
};

struct FreqStat {
    std::optional<double> mean_khz, min_khz;  // over the round (time-weighted mean)
};

struct SustainedRound {
    int round = 0;  // 1-based
    Status status = Status::ok;
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
    // --trace-ops-rounds: the traced pass run after this round. Absent for rounds not chosen.
    std::optional<RoundTracedPass> ops;
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
    SustainedConfig config;
    std::vector<SustainedPhase> phases;
    std::vector<Slowdown> slowdown;  // loaded vs baseline, when both phases ran
};

nlohmann::json to_json(const SustainedConfig&);
nlohmann::json to_json(const RoundTracedPass&);
nlohmann::json to_json(const SustainedRound&);
nlohmann::json to_json(const AcrossRounds&);
nlohmann::json to_json(const SustainedResult&);

void read(const JsonIn&, SustainedConfig&);
void read(const JsonIn&, RoundTracedPass&);
void read(const JsonIn&, FreqStat&);
void read(const JsonIn&, SustainedRound&);
void read(const JsonIn&, FloorTime&);
void read(const JsonIn&, AcrossRounds&);
void read(const JsonIn&, SustainedPhase&);
void read(const JsonIn&, Slowdown&);
void read(const JsonIn&, SustainedResult&);

}  // namespace sb
