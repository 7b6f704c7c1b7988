#include "report/gate_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sb {
namespace {

TEST(GateReport, TheGatesSectionSaysEachVerdictWithItsInterval) {
    CompareGate slower{"fail-if-slower", 0.05, "failed", {}};
    slower.checks = {
        {"B/A", "pp32+tg8", "prefill", "tokens_per_s", true, 0.62, 0.60, 0.64, "failed"},
        {"B/A", "pp32+tg8", "decode", "tokens_per_s", true, 0.97, 0.93, 1.01, "inconclusive"},
        {"B/A", "pp32+tg8", "ttft", "ttft_ms", false, 1.01, 0.99, 1.03, "passed"},
        {"B/A", "pp32+tg8", "decode", "tokens_per_s", true, 1.0, std::nullopt, std::nullopt,
         "no interval"}};
    const CompareGate energy{"fail-if-energy", 0.025, "not checked", {}};
    std::ostringstream out;
    write_gates_markdown(out, {slower, energy});
    EXPECT_EQ(out.str(), R"(
## Gates

- fail-if-slower 5%: failed (1 of 4 checks with the 95% CI wholly beyond the threshold; 1 inconclusive; 1 without an interval)
- fail-if-energy 2.5%: not checked (no ratio of its metrics in the comparison)

| gate | test | stage | metric | sides | ratio | verdict |
| --- | --- | --- | --- | --- | ---: | --- |
| fail-if-slower 5% | pp32+tg8 | prefill | tokens_per_s | B/A | 0.620 | failed: B/A's 95% CI [0.600, 0.640] lies wholly below 0.952 |
| fail-if-slower 5% | pp32+tg8 | decode | tokens_per_s | B/A | 0.970 | inconclusive: the 95% CI [0.930, 1.010] straddles 0.952 |
| fail-if-slower 5% | pp32+tg8 | ttft | ttft_ms | B/A | 1.010 | passed: the 95% CI [0.990, 1.030] lies at or below 1.050 |
| fail-if-slower 5% | pp32+tg8 | decode | tokens_per_s | B/A | 1.000 | no interval: not decided |
)");
    std::ostringstream none;
    write_gates_markdown(none, {});
    EXPECT_EQ(none.str(), "");
}

}  // namespace
}  // namespace sb
