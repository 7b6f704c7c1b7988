#pragma once
// The across-rounds analysis of `stagebench sustained` (pure functions over the rounds a run
// recorded; tests feed them fixture rounds): per phase, the throughput and energy summaries,
// the throttling onset (the first round of a lower level of decode throughput or CPU clock),
// the steady state after it, the time the clocks spent at their floor and a verdict; and the
// slowdown of a loaded phase against its baseline.
#include <vector>

#include "core/doc/telemetry_section.hpp"
#include "core/sustained_result.hpp"

namespace sb {

// Across-round statistics of a phase's rounds (only rounds with status ok count). freq_series
// are the sampled frequency series of the phase for time-at-floor (may be empty): a
// ".cur_freq_khz" series is at its floor when within 0.1 % of the matching ".min_freq_khz"
// (the policy's minimum), or, without one, of the lowest value it took (when it moved at all).
AcrossRounds summarize_rounds(const std::vector<SustainedRound>& rounds,
                              const std::vector<TelemetrySeries>& freq_series);

// Prefill and decode of a loaded phase against its baseline: baseline median tok/s / loaded
// median tok/s with a bootstrap 95 % CI (ratio_of_medians), per stage that both phases
// measured (ok rounds only); stages without rounds on either side are left out.
std::vector<Slowdown> phase_slowdown(const SustainedPhase& baseline, const SustainedPhase& loaded);

}  // namespace sb
