#include "analysis/compare_gate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/compare.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/parse.hpp"

namespace sb {

using json = nlohmann::json;

namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

double parse_gate_threshold(const std::string& flag, const std::string& text) {
    const auto bad = [&] {
        return usage_error("--" + flag + ": expected a percentage above 0% (e.g. 5%), found '" +
                           text + "'");
    };
    if (text.size() < 2 || text.back() != '%')
        throw bad();
    // Digits with at most one '.': no sign, no exponent ("1e3%" is not how a percentage is
    // written). No upper bound: 200% is "more than 3x the time", a gate for a noisy device.
    const std::string_view num = std::string_view(text).substr(0, text.size() - 1);
    if (std::count(num.begin(), num.end(), '.') > 1 ||
        !std::all_of(num.begin(), num.end(),
                     [](char c) { return c == '.' || (c >= '0' && c <= '9'); }))
        throw bad();
    const auto v = parse_decimal(num);
    if (!v || !(*v > 0))
        throw bad();
    return *v / 100;
}

std::string gate_verdict(bool higher_is_better, std::optional<double> ci_low,
                         std::optional<double> ci_high, double threshold) {
    if (!ci_low || !ci_high)
        return "no interval";
    const double limit = 1 + threshold;
    if (higher_is_better) {
        // A rate: NEW is slower by more than t when NEW/BASE < 1/(1+t), i.e. ratio*(1+t) < 1.
        if (*ci_high * limit < 1)
            return "failed";
        if (*ci_low * limit >= 1)
            return "passed";
        return "inconclusive";
    }
    if (*ci_low > limit)
        return "failed";
    if (*ci_high <= limit)
        return "passed";
    return "inconclusive";
}

bool gate_applies(const std::string& gate, const std::string& metric) {
    if (gate == "fail-if-energy")
        return metric == "j_per_token";
    if (gate != "fail-if-slower")
        return false;
    // Rates and times; call_per_op (a share of times) is neither.
    return has_suffix(metric, "_per_s") || has_suffix(metric, "_ms") || has_suffix(metric, "_us");
}

std::vector<CompareGate> evaluate_gates(const CompareResult& r,
                                        const std::vector<GateSpec>& specs) {
    std::vector<CompareGate> gates;
    for (const auto& spec : specs) {
        CompareGate g{spec.gate, spec.threshold, "not checked", {}};
        for (const auto& row : r.rows) {
            if (!gate_applies(spec.gate, row.metric))
                continue;
            for (const auto& q : row.ratios)
                g.checks.push_back(
                    {q.label, row.test, row.stage, row.metric, row.higher_is_better, q.median,
                     q.ci_low, q.ci_high,
                     gate_verdict(row.higher_is_better, q.ci_low, q.ci_high, spec.threshold)});
        }
        if (!g.checks.empty())
            g.verdict = std::any_of(g.checks.begin(), g.checks.end(),
                                    [](const GateCheck& c) { return c.verdict == "failed"; })
                            ? "failed"
                            : "passed";
        gates.push_back(std::move(g));
    }
    return gates;
}

bool any_gate_failed(const std::vector<CompareGate>& gates) {
    return std::any_of(gates.begin(), gates.end(),
                       [](const CompareGate& g) { return g.verdict == "failed"; });
}

std::string threshold_text(double threshold) {
    return fmt::format("{}%", threshold * 100);
}

json to_json(const CompareGate& g) {
    json checks = json::array();
    for (const auto& c : g.checks)
        checks.push_back({{"label", c.label},
                          {"test", c.test},
                          {"stage", c.stage},
                          {"metric", c.metric},
                          {"higher_is_better", c.higher_is_better},
                          {"ratio", opt(c.ratio)},
                          {"ci_low", opt(c.ci_low)},
                          {"ci_high", opt(c.ci_high)},
                          {"verdict", c.verdict}});
    return {
        {"gate", g.gate}, {"threshold", g.threshold}, {"verdict", g.verdict}, {"checks", checks}};
}

void read(const JsonIn& in, GateCheck& c) {
    ObjectIn{in}("label", c.label)("test", c.test)("stage", c.stage)("metric", c.metric)(
        "higher_is_better", c.higher_is_better)("ratio", c.ratio)("ci_low", c.ci_low)(
        "ci_high", c.ci_high)("verdict", c.verdict);
}

void read(const JsonIn& in, CompareGate& g) {
    ObjectIn{in}("gate", g.gate)("threshold", g.threshold)("verdict", g.verdict)("checks",
                                                                                 g.checks);
}

}  // namespace sb
