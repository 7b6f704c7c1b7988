#pragma once
// The Gates section of compare's Markdown (analysis/compare_gate.hpp); never computes.
// One line per gate (its verdict and how many checks failed or were inconclusive), then a
// table of every check: the ratio, its 95% CI, the limit the CI was held against (1 + t for a
// time or an energy per token, 1/(1 + t) for a rate) and the check's verdict.
#include <ostream>
#include <string>
#include <vector>

#include "analysis/compare_gate.hpp"

namespace sb {

// The limit a check's CI is held against: 1 + t, or 1 / (1 + t) for a rate.
double gate_limit(const GateCheck& c, double threshold);

// "fail-if-slower 5%: failed (1 of 4 checks: the 95% CI wholly beyond the threshold; 1
// inconclusive)".
std::string gate_summary(const CompareGate& g);

// "failed: B/A's 95% CI [0.598, 0.640] lies wholly below 0.952", "passed: the 95% CI [0.990,
// 1.020] lies at or above 0.952", "inconclusive: the 95% CI [0.940, 1.010] straddles 0.952",
// "no interval: not decided".
std::string gate_check_text(const GateCheck& c, double threshold);

// Nothing when gates is empty.
void write_gates_markdown(std::ostream& out, const std::vector<CompareGate>& gates);

}  // namespace sb
