#pragma once
// Results of `stagebench sustained`: the same fixed workload repeated for many rounds, per
// round and across rounds, for each phase (without and with background load). The "sustained"
// section of a result document (ResultDocument::sustained); each round is also a test of the
// document, in the order of the phases and rounds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/doc/json_in.hpp"
#include "core/doc/ops_section.hpp"
#include "core/doc/telemetry_section.hpp"
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
    PassStatus status = PassStatus::ok;
    std::optional<std::string> error;
    std::string devices;  // '+'-joined
    std::vector<std::string> backends;
    int n_threads = 0;
    std::string method;
    std::vector<StageProfile> stages;  // as the ops section's stages (op times not replayed)
};

// Mean and spread of one per-round figure over a phase's rounds that ended ok and have it (the
// study's "mean ± sd"). cv = sd / mean, null where a ratio means nothing (temperatures in °C)
// or the mean is 0; sd null with fewer than 2 rounds. No confidence bounds: the rounds of one
// run are a series (warming, throttling), not independent draws.
struct RoundSpread {
    std::size_t n = 0;
    std::optional<double> mean, sd, cv, min, max;
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
    std::optional<double> decode_s;  // the decode stage's own time (in-process engine)
    // Gross energy of the whole-system meter over each stage, and net of the idle baseline
    // (null without one: --idle 0, or no idle reading of that meter), as `run` reports them.
    std::optional<double> prefill_energy_j, decode_energy_j, decode_j_per_token;
    std::optional<double> prefill_net_energy_j, decode_net_energy_j, decode_net_j_per_token;
    std::optional<double> temp_start_c, temp_end_c, temp_max_c;  // hottest sensor
    std::map<std::string, FreqStat> freq;     // per cpufreq policy / GPU frequency metric
    std::optional<double> cpu_freq_mean_khz;  // mean over the CPU policies (for detection)
    double cooldown_s = 0;                    // waited before this round
    // The round's request as the sustained-load study tables it (add_request_figures,
    // analysis/sustained_summary.hpp), from the measured repetition and its prefill and decode
    // telemetry windows; null where not measured (no meter, no sensor of that kind).
    // e2e_s: first prompt token sent to last token generated (prefill + decode in-process; the
    // client's E2E over HTTP). combined_tps: (prompt_tokens + generated_tokens) / e2e_s.
    std::optional<double> e2e_s;
    std::optional<int64_t> prompt_tokens, generated_tokens;
    std::optional<double> combined_tps;
    // Gross energy of the whole-system meter over the prefill and decode windows, its mean
    // power over them, and that energy per generated token.
    std::optional<double> energy_j, power_w, j_per_token;
    // Mean power over the request of the rails whose names say CPU, GPU or NPU (rails nested in
    // another rail of the same kind not added twice).
    std::optional<double> power_cpu_w, power_gpu_w, power_npu_w;
    // The hottest sensor of each kind (named CPU, GPU or NPU by its zone or chip), its mean
    // over the request.
    std::optional<double> temp_cpu_c, temp_gpu_c, temp_npu_c;
    // The battery's capacity (%) as the request began and ended, and the battery meter's energy
    // over the request as a percentage of a full charge (charge_full × mean voltage).
    std::optional<double> battery_capacity_start_pct, battery_capacity_end_pct;
    std::optional<double> battery_drain_pct;
    // The battery's drain over the request (its prefill and decode windows) in % and %/h, from
    // the capacity and from a charge or energy counter (telemetry/battery_drain.hpp); null
    // without a battery.
    std::optional<BatteryDrain> battery;
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
    // Mean ± sd of the per-round request figures (SustainedRound).
    RoundSpread e2e_s, combined_tps, energy_j, power_w, j_per_token;
    RoundSpread power_cpu_w, power_gpu_w, power_npu_w;
    RoundSpread temp_cpu_c, temp_gpu_c, temp_npu_c;
    // Battery drain over the phase in percent of a full charge: from the capacity at the first
    // round's start to the last round's end (whole percent steps, the cool-downs included), and
    // the sum of the rounds' battery_drain_pct (the requests only; null unless every ok round
    // has it).
    std::optional<double> battery_drain_capacity_pct, battery_drain_energy_pct;
    // The battery's drain from the first ok round's request start to the last ok round's end
    // (the cool-downs included), in % and %/h, by capacity and by counter; null without one.
    std::optional<BatteryDrain> battery;
    // Mean ± sd of the ok rounds' battery->drain_pct_per_h (n = 0 without a battery).
    RoundSpread battery_drain_pct_per_h;
    std::optional<double> first_last_change;  // decode tok/s last / first - 1
    // The first round of a lower level (a change point), by what found it first: throughput or
    // the CPU clock. throttle_onset_round is set only with evidence of throttling at that round
    // (throttle_evidence: a clock lower from that round on, or the device heating up to it);
    // drop_round is the first round of a lower decode throughput, with or without evidence.
    std::optional<int> throttle_onset_round;     // 1-based
    std::optional<int> drop_round;               // 1-based
    std::string onset_basis;                     // throughput | frequency | ""
    std::vector<std::string> throttle_evidence;  // one sentence per clock or sensor
    // What loaded the machine while the phase ran (its background load, or the run's
    // other_load warning), when anything did; named in the verdict of a drop.
    std::optional<std::string> load;
    std::optional<double> steady_decode_tps;  // mean from the onset on (all rounds if none)
    std::optional<double> peak_to_steady;     // best round / steady state
    std::optional<int> freq_onset_round;
    std::vector<FloorTime> time_at_floor;
    // "stable", "throttled at round k", "throughput dropped at round k (no clock or temperature
    // evidence[; load])", "degraded[ (load)]", "no data" (verdict_text).
    std::string verdict;
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

nlohmann::json to_json(const RoundSpread&);
nlohmann::json to_json(const SustainedConfig&);
nlohmann::json to_json(const RoundTracedPass&);
nlohmann::json to_json(const SustainedRound&);
nlohmann::json to_json(const AcrossRounds&);
nlohmann::json to_json(const SustainedResult&);

void read(const JsonIn&, RoundSpread&);
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
