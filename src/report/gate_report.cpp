#include "report/gate_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/fields.hpp"

namespace sb {

double gate_limit(const GateCheck& c, double threshold) {
    return c.higher_is_better ? 1 / (1 + threshold) : 1 + threshold;
}

std::string gate_summary(const CompareGate& g) {
    const auto count = [&](const char* v) {
        return std::count_if(g.checks.begin(), g.checks.end(),
                             [v](const GateCheck& c) { return c.verdict == v; });
    };
    std::string s = g.gate + " " + threshold_text(g.threshold) + ": " + g.verdict;
    if (g.checks.empty())
        return s + " (no ratio of its metrics in the comparison)";
    s += fmt::format(" ({} of {} checks with the 95% CI wholly beyond the threshold",
                     count("failed"), g.checks.size());
    if (const auto n = count("inconclusive"))
        s += fmt::format("; {} inconclusive", n);
    if (const auto n = count("no interval"))
        s += fmt::format("; {} without an interval", n);
    return s + ")";
}

std::string gate_check_text(const GateCheck& c, double threshold) {
    const double limit = gate_limit(c, threshold);
    const std::string ci =
        c.ci_low && c.ci_high ? fmt::format("[{:.3f}, {:.3f}]", *c.ci_low, *c.ci_high) : "";
    if (c.verdict == "failed")
        return fmt::format("failed: {}'s 95% CI {} lies wholly {} {:.3f}", c.label, ci,
                           c.higher_is_better ? "below" : "above", limit);
    if (c.verdict == "inconclusive")
        return fmt::format("inconclusive: the 95% CI {} straddles {:.3f}", ci, limit);
    if (c.verdict == "passed")
        return fmt::format("passed: the 95% CI {} lies at or {} {:.3f}", ci,
                           c.higher_is_better ? "above" : "below", limit);
    return "no interval: not decided";
}

void write_gates_markdown(std::ostream& out, const std::vector<CompareGate>& gates) {
    if (gates.empty())
        return;
    out << "\n## Gates\n\n";
    for (const auto& g : gates)
        out << "- " << gate_summary(g) << "\n";
    const bool any = std::any_of(gates.begin(), gates.end(),
                                 [](const CompareGate& g) { return !g.checks.empty(); });
    if (!any)
        return;
    out << "\n| gate | test | stage | metric | sides | ratio | verdict |\n"
        << "| --- | --- | --- | --- | --- | ---: | --- |\n";
    for (const auto& g : gates)
        for (const auto& c : g.checks)
            out << "| " << g.gate << " " << threshold_text(g.threshold) << " | "
                << markdown_cell(c.test) << " | " << c.stage << " | " << c.metric << " | "
                << c.label << " | " << (c.ratio ? fmt::format("{:.3f}", *c.ratio) : "-") << " | "
                << gate_check_text(c, g.threshold) << " |\n";
}

}  // namespace sb
