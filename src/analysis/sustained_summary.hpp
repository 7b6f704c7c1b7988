#pragma once
// The across-rounds analysis of `stagebench sustained` (pure functions over the rounds a run
// recorded; tests feed them fixture rounds): per round, the request figures the sustained-load
// study tables (E2E seconds, combined tokens/s, mean power and energy, CPU/GPU/NPU
// temperatures, battery); per phase, their mean ± sd, the throughput and energy summaries, the
// change point (the first round of a lower level of decode throughput or CPU clock), whether
// clocks or temperatures show throttling there, the steady state after it, the time the clocks
// spent at their floor and a verdict; and the slowdown of a loaded phase against its baseline.
#include <optional>
#include <string>
#include <vector>

#include "core/doc/telemetry_section.hpp"
#include "core/result.hpp"
#include "core/sustained_result.hpp"
#include "core/warning.hpp"

namespace sb {

// A clock lower by at least this fraction from the change point on is evidence of throttling.
inline constexpr double kClockDropEvidence = 0.05;
// The hottest sensor at least this many °C above the first round's start by the change point
// is evidence of (thermal) throttling.
inline constexpr double kHeatingEvidenceC = 5.0;

enum class Component { cpu, gpu, npu };

// The component a sensor, rail or clock belongs to, from its metric name (the sensor part,
// case-insensitive): CPU for cpufreq policies and names with cpu, coretemp, k10temp, x86_pkg,
// a core or a big/mid/little cluster; GPU for nvml, gpu, kgsl, mali, g3d, adreno or a Tegra GPU
// (ga10b, gv11b, gp10b); NPU for npu, nsp, cdsp, hexagon, tpu, dla, hailo. nullopt for anything
// else (skin, battery, SoC, PMIC), for memory and interconnect (ddr, llcc, dram, uncore, bw,
// bus, mem) and for names of two kinds ("VDD_CPU_GPU_CV").
std::optional<Component> component_of(const std::string& metric);

// Fills r's e2e_s, prompt_tokens, generated_tokens and combined_tps from the round's test (its
// first measured repetition); null where a stage did not run.
void add_request_figures(const TestResult& test, SustainedRound& r);

// Fills r's energy_j, power_w, j_per_token (with r.generated_tokens), power_*_w, temp_*_c,
// battery_* and battery (its drain, telemetry/battery_drain.hpp) from the round's telemetry: the
// first prefill and decode windows (those of the repetition add_request_figures read). A figure
// stays null where its meter or sensor is absent.
void add_request_telemetry(const TestTelemetry& telemetry, SustainedRound& r);

// Across-round statistics of a phase's rounds (only rounds with status ok count). freq_series
// are the sampled frequency series of the phase for time-at-floor (may be empty): a
// ".cur_freq_khz" series is at its floor when within 0.1 % of the matching ".min_freq_khz"
// (the policy's minimum), or, without one, of the lowest value it took (when it moved at all).
// The change point is throttling (throttle_onset_round) only with evidence at it: a CPU, GPU
// or NPU clock whose mean over the rounds from it on is at least kClockDropEvidence below its
// mean before it (or the CPU clock's own change point), or the hottest sensor risen by at least
// kHeatingEvidenceC from the first round's start to the change point. Without, a drop of decode
// throughput is drop_round and the verdict says so. load is left unset (name_machine_load).
// battery: the drain from the first ok round with one to the last (battery_drain_across).
AcrossRounds summarize_rounds(const std::vector<SustainedRound>& rounds,
                              const std::vector<TelemetrySeries>& freq_series);

// The verdict of a phase from its figures: "throttled at round k" (throttle_onset_round),
// "throughput dropped at round k (no clock or temperature evidence[; load])" (drop_round
// without evidence), "degraded[ (load)]" (decode more than 10 % slower last than first, no
// change point), "stable", or "no data" (no decode rate).
std::string verdict_text(const AcrossRounds& a);

// The machine's load as the run started (the document's system: loadavg_1m, cores_logical);
// either may be missing.
struct MachineLoad {
    std::optional<double> loadavg_1m;
    std::optional<int64_t> cores_logical;
};

// What loaded the machine while the phase ran: "background load SPEC" for a loaded phase, else
// from the run's other_load warning (core/sysinfo.cpp: a 1-minute load average above 0.25 per
// logical CPU as the run started) "1-minute load average X on N logical CPUs when the run
// started", the numbers from load when it has both, else the warning's text. nullopt when
// neither.
std::optional<std::string> machine_load(const SustainedPhase& phase, const MachineLoad& load,
                                        const Warnings& warnings);

// Sets every phase's across.load (machine_load) and rewrites its verdict (verdict_text).
void name_machine_load(SustainedResult& r, const MachineLoad& load, const Warnings& warnings);

// Prefill and decode of a loaded phase against its baseline: baseline median tok/s / loaded
// median tok/s with a bootstrap 95 % CI (ratio_of_medians), per stage that both phases
// measured (ok rounds only); stages without rounds on either side are left out.
std::vector<Slowdown> phase_slowdown(const SustainedPhase& baseline, const SustainedPhase& loaded);

}  // namespace sb
