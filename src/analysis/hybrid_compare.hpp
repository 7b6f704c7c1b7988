#pragma once
// The comparison of `stagebench hybrid`'s modes (pure functions over measured samples): per
// point, the hybrid's speedup over each device set alone with its bootstrap CI and a verdict;
// over a sweep, the lengths from which the hybrid keeps winning. The results are the hybrid
// section's types (core/doc/hybrid_section.hpp: HybridPoint::comparison, HybridCrossover).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/doc/hybrid_section.hpp"
#include "core/stats.hpp"

namespace sb {

// Mode names used as keys of HybridPoint::tests, ::e2e and ::comparison.
inline constexpr const char* kHybridMode = "hybrid";
inline constexpr const char* kPrefillAloneMode = "prefill_alone";  // A for both stages
inline constexpr const char* kDecodeAloneMode = "decode_alone";    // B for both stages

// The comparisons of one point from its end-to-end samples (nanoseconds per repetition), by
// the mode alone compared with: speedup of the hybrid over it (alone / hybrid, ratio of medians
// with a bootstrap 95% CI) and a verdict ("hybrid faster", "hybrid slower", "no difference").
// Modes without samples are left out; none without hybrid samples.
std::map<std::string, HybridSpeedup> compare_modes(const std::vector<int64_t>& hybrid_e2e,
                                                   const std::vector<int64_t>& prefill_alone_e2e,
                                                   const std::vector<int64_t>& decode_alone_e2e);

// Crossover lengths over a sweep: for every n_gen, the smallest n_prompt from which on the
// hybrid wins against both modes alone at every longer prompt of the sweep (and likewise for
// every n_prompt over n_gen). Points without both comparisons are left out.
HybridCrossover crossovers(const std::vector<HybridPoint>& points);

// "hybrid faster" (ratio > 1), "hybrid slower" or "no difference" (the CI contains 1) for a
// speedup alone / hybrid.
std::string hybrid_verdict(const RatioCi& speedup);

}  // namespace sb
