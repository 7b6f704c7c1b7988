#pragma once
// The comparison of `stagebench hybrid`'s modes (pure functions over measured samples): per
// point, the hybrid's speedup over each device set alone with its bootstrap CI and a verdict;
// over a sweep, the lengths from which the hybrid keeps winning. The JSON shapes are those of
// extra["hybrid"] (scenario/hybrid.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.hpp"

namespace sb {

// Mode names used as keys in extra["hybrid"].
inline constexpr const char* kHybridMode = "hybrid";
inline constexpr const char* kPrefillAloneMode = "prefill_alone";  // A for both stages
inline constexpr const char* kDecodeAloneMode = "decode_alone";    // B for both stages

// The comparisons of one point from its end-to-end samples (nanoseconds per repetition):
// speedup of the hybrid over each mode alone (alone / hybrid, ratio of medians with a bootstrap
// 95% CI) and a verdict ("hybrid faster", "hybrid slower", "no difference"). Modes without
// samples are left out.
nlohmann::json compare_modes(const std::vector<int64_t>& hybrid_e2e,
                             const std::vector<int64_t>& prefill_alone_e2e,
                             const std::vector<int64_t>& decode_alone_e2e);

// Crossover lengths over a sweep: for every n_gen, the smallest n_prompt from which on the
// hybrid wins against both modes alone at every longer prompt of the sweep (and likewise for
// every n_prompt over n_gen). points: extra["hybrid"]["points"].
nlohmann::json crossovers(const nlohmann::json& points);

// "hybrid faster" (ratio > 1), "hybrid slower" or "no difference" (the CI contains 1) for a
// speedup alone / hybrid.
std::string hybrid_verdict(const RatioCi& speedup);

}  // namespace sb
