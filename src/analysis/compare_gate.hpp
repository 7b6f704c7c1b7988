#pragma once
// Regression gates of `stagebench compare BASE NEW --fail-if-slower 5% --fail-if-energy 5%`:
// decided on the 95% CI of each ratio compare computed (NEW over BASE, analysis/compare.hpp),
// never on a single difference, so noise never fails a gate.
//
// The one definition. A gate of threshold t (5% = 0.05) looks at every row of its metrics and
// every other side's ratio to the baseline, with its CI [lo, hi]:
//   - a time or an energy per token (lower is better): the check fails when lo > 1 + t;
//   - a rate (higher is better): the check fails when hi < 1 / (1 + t);
// i.e. when the whole interval says NEW is worse than BASE by more than t. It passes when the
// whole interval is within the threshold (hi <= 1 + t; for a rate lo >= 1 / (1 + t)), and is
// "inconclusive" (a pass) when the interval straddles the threshold. A ratio without an
// interval (too few samples, one value per side, no data) is "no interval" (a pass: nothing to
// decide on).
//   fail-if-slower: rows whose metric is a rate (tokens_per_s; a serve point's
//                   output_tokens_per_s, request_per_s, goodput_per_s) or a time (ttft_ms, a
//                   serve point's median_ms and p99_ms, an ops document's op and call times);
//   fail-if-energy: rows of j_per_token (the whole-system meter's gross energy per token).
// A gate fails when one of its checks fails; with no row of its metrics it is "not checked".
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/doc/json_in.hpp"

namespace sb {

struct CompareResult;

// A gate asked on the command line: its flag's name without dashes and its threshold.
struct GateSpec {
    std::string gate;      // "fail-if-slower" | "fail-if-energy"
    double threshold = 0;  // a fraction: 5% = 0.05; above 0
    bool operator==(const GateSpec&) const = default;
};

// "5%", "2.5%" or "200%" -> 0.05, 0.025, 2: a decimal percentage above 0 (digits and at most
// one '.') with its '%'. Throws sb::Error(usage) "--FLAG: expected a percentage above 0% (e.g.
// 5%), found 'TEXT'" for anything else ("-3%", "abc", "5", "1e3%").
double parse_gate_threshold(const std::string& flag, const std::string& text);

// One check: one other side's ratio on one row.
struct GateCheck {
    std::string label;  // the ratio's label, "B/A"
    std::string test, stage, metric;
    bool higher_is_better = true;
    std::optional<double> ratio, ci_low, ci_high;  // the row's ratio (NEW/BASE) and its CI
    std::string verdict;  // "failed" | "passed" | "inconclusive" | "no interval"
    bool operator==(const GateCheck&) const = default;
};

// A gate and its checks, in the order of the rows.
struct CompareGate {
    std::string gate;
    double threshold = 0;
    std::string verdict;  // "failed" | "passed" | "not checked"
    std::vector<GateCheck> checks;
    bool operator==(const CompareGate&) const = default;
};

// The verdict of one ratio's CI against threshold t (see the top of this file):
// "failed", "passed", "inconclusive", or "no interval" when either bound is missing.
std::string gate_verdict(bool higher_is_better, std::optional<double> ci_low,
                         std::optional<double> ci_high, double threshold);

// Whether a gate looks at a row of this metric.
bool gate_applies(const std::string& gate, const std::string& metric);

// The gates over r's rows (r.gates is not read): one CompareGate per spec, in order.
std::vector<CompareGate> evaluate_gates(const CompareResult& r, const std::vector<GateSpec>& specs);

// Whether any gate failed.
bool any_gate_failed(const std::vector<CompareGate>& gates);

// "+5%" style text of a threshold: "5%", "2.5%".
std::string threshold_text(double threshold);

// {"gate", "threshold", "verdict", "checks": [{"label", "test", "stage", "metric",
// "higher_is_better", "ratio", "ci_low", "ci_high", "verdict"}]}; and its inverse.
nlohmann::json to_json(const CompareGate& g);
void read(const JsonIn& in, GateCheck& c);
void read(const JsonIn& in, CompareGate& g);

}  // namespace sb
