#include "analysis/compare_gate.hpp"

#include <gtest/gtest.h>

#include "analysis/compare.hpp"
#include "core/error.hpp"

namespace sb {
namespace {

// A gate_row of one other side "B/A" with a scripted ratio and CI.
CompareRow gate_row(const std::string& stage, const std::string& metric, bool higher_is_better,
                    std::optional<double> ratio, std::optional<double> lo,
                    std::optional<double> hi) {
    CompareRow r;
    r.test = "pp32+tg8";
    r.stage = stage;
    r.metric = metric;
    r.higher_is_better = higher_is_better;
    r.sides.resize(2);
    r.sides[0].label = "A";
    r.sides[1].label = "B";
    r.ratios = {CompareRatio{"B/A", ratio, lo, hi, "scripted"}};
    return r;
}

TEST(GateThreshold, ParsesPercentages) {
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-slower", "5%"), 0.05);
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-slower", "2.5%"), 0.025);
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-slower", "100%"), 1.0);
    // Beyond 100 %: "more than 3x the time" is a gate a noisy device may want.
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-slower", "200%"), 2.0);
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-slower", "100.01%"), 1.0001);
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-energy", ".5%"), 0.005);
    EXPECT_DOUBLE_EQ(parse_gate_threshold("fail-if-energy", "0.1%"), 0.001);
}

TEST(GateThreshold, BadValuesAreUsageErrorsNamingTheFlag) {
    for (const std::string bad : {"-3%", "abc", "+5%", "5", "%", "", "0%", "0.0%", "0x5%", "nan%",
                                  "inf%", "5 %", "5%%", "1e3%", "1.2.3%", ".%"}) {
        try {
            parse_gate_threshold("fail-if-slower", bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
            EXPECT_EQ(
                std::string(e.what()),
                "--fail-if-slower: expected a percentage above 0% (e.g. 5%), found '" + bad + "'");
        }
    }
}

TEST(GateVerdict, TimeRatioAgainstOnePlusThreshold) {
    // ttft_ms: lower is better, the limit is 1.05.
    EXPECT_EQ(gate_verdict(false, 1.06, 1.20, 0.05), "failed");        // wholly above
    EXPECT_EQ(gate_verdict(false, 1.00, 1.10, 0.05), "inconclusive");  // straddles
    EXPECT_EQ(gate_verdict(false, 0.90, 1.04, 0.05), "passed");        // wholly within
    EXPECT_EQ(gate_verdict(false, 0.50, 0.80, 0.05), "passed");        // faster
    // The limit itself: a bound at exactly 1.05 is not beyond it.
    EXPECT_EQ(gate_verdict(false, 1.05, 1.30, 0.05), "inconclusive");
    EXPECT_EQ(gate_verdict(false, 1.00, 1.05, 0.05), "passed");
}

TEST(GateVerdict, RateRatioAgainstTheInverse) {
    // tokens_per_s: higher is better, the limit is 1/1.05 = 0.95238...
    EXPECT_EQ(gate_verdict(true, 0.80, 0.95, 0.05), "failed");        // hi below 0.9524
    EXPECT_EQ(gate_verdict(true, 0.90, 0.96, 0.05), "inconclusive");  // straddles
    EXPECT_EQ(gate_verdict(true, 0.953, 1.02, 0.05), "passed");       // lo above 0.9524
    EXPECT_EQ(gate_verdict(true, 1.10, 1.30, 0.05), "passed");        // faster
    // 0.9524 is above 1/1.05 by 0.00002: within.
    EXPECT_EQ(gate_verdict(true, 0.9524, 0.99, 0.05), "passed");
    EXPECT_EQ(gate_verdict(true, 0.90, 0.9523, 0.05), "failed");
}

TEST(GateVerdict, NoIntervalIsNotDecided) {
    EXPECT_EQ(gate_verdict(true, std::nullopt, std::nullopt, 0.05), "no interval");
    EXPECT_EQ(gate_verdict(false, 1.5, std::nullopt, 0.05), "no interval");
}

TEST(GateApplies, SlowerOnRatesAndTimesEnergyOnJoulesPerToken) {
    for (const char* m : {"tokens_per_s", "ttft_ms", "median_ms", "p99_ms", "output_tokens_per_s",
                          "request_per_s", "op_us", "call_total_us"})
        EXPECT_TRUE(gate_applies("fail-if-slower", m)) << m;
    for (const char* m : {"j_per_token", "net_j_per_token", "mean_power_mw", "call_per_op",
                          "call_per_op_total", "kl_mean", "top1_agreement"})
        EXPECT_FALSE(gate_applies("fail-if-slower", m)) << m;
    EXPECT_TRUE(gate_applies("fail-if-energy", "j_per_token"));
    for (const char* m : {"net_j_per_token", "mean_power_mw", "tokens_per_s"})
        EXPECT_FALSE(gate_applies("fail-if-energy", m)) << m;
}

CompareResult scripted() {
    CompareResult r;
    r.rows = {gate_row("prefill", "tokens_per_s", true, 0.62, 0.60, 0.64),  // slower: fails
              gate_row("decode", "tokens_per_s", true, 0.97, 0.93, 1.01),   // straddles
              gate_row("ttft", "ttft_ms", false, 1.01, 0.99, 1.03),         // within
              gate_row("decode", "j_per_token", false, 1.02, 0.98, 1.07),   // straddles
              gate_row("decode", "mean_power_mw", false, 2.0, 1.9, 2.1),    // no gate's
              gate_row("prefill", "j_per_token", false, 1.5, std::nullopt, std::nullopt)};  // no CI
    return r;
}

TEST(EvaluateGates, ChecksEveryRatioOfItsMetricsInRowOrder) {
    const auto gates =
        evaluate_gates(scripted(), {{"fail-if-slower", 0.05}, {"fail-if-energy", 0.05}});
    ASSERT_EQ(gates.size(), 2u);
    const CompareGate& slower = gates[0];
    EXPECT_EQ(slower.gate, "fail-if-slower");
    EXPECT_EQ(slower.verdict, "failed");
    ASSERT_EQ(slower.checks.size(), 3u);
    EXPECT_EQ(slower.checks[0], (GateCheck{"B/A", "pp32+tg8", "prefill", "tokens_per_s", true, 0.62,
                                           0.60, 0.64, "failed"}));
    EXPECT_EQ(slower.checks[1].verdict, "inconclusive");
    EXPECT_EQ(slower.checks[2].stage, "ttft");
    EXPECT_EQ(slower.checks[2].verdict, "passed");
    const CompareGate& energy = gates[1];
    EXPECT_EQ(energy.verdict, "passed");  // inconclusive and no interval never fail
    ASSERT_EQ(energy.checks.size(), 2u);
    EXPECT_EQ(energy.checks[0].verdict, "inconclusive");
    EXPECT_EQ(energy.checks[1].verdict, "no interval");
    EXPECT_TRUE(any_gate_failed(gates));
}

TEST(EvaluateGates, AWiderThresholdPassesWhatANarrowOneFails) {
    // prefill 0.60..0.64: beyond 1/1.05 and 1/1.5 (0.667), within 1/2 (0.5).
    const auto at = [](double t) {
        return evaluate_gates(scripted(), {{"fail-if-slower", t}})[0].checks[0].verdict;
    };
    EXPECT_EQ(at(0.05), "failed");
    EXPECT_EQ(at(0.5), "failed");
    EXPECT_EQ(at(0.6), "inconclusive");  // 1/1.6 = 0.625 inside [0.60, 0.64]
    EXPECT_EQ(at(1.0), "passed");
}

TEST(EvaluateGates, AGateWithoutRowsIsNotChecked) {
    CompareResult r;
    r.rows = {gate_row("prefill", "tokens_per_s", true, 0.5, 0.4, 0.6)};
    const auto gates = evaluate_gates(r, {{"fail-if-energy", 0.05}});
    ASSERT_EQ(gates.size(), 1u);
    EXPECT_EQ(gates[0].verdict, "not checked");
    EXPECT_TRUE(gates[0].checks.empty());
    EXPECT_FALSE(any_gate_failed(gates));
}

TEST(EvaluateGates, InTheCompareDocumentAndReadBack) {
    CompareResult r = scripted();
    r.gates = evaluate_gates(r, {{"fail-if-slower", 0.05}});
    const nlohmann::json j = to_json(r);
    ASSERT_TRUE(j.contains("gates"));
    EXPECT_EQ(j["gates"][0]["gate"], "fail-if-slower");
    EXPECT_EQ(j["gates"][0]["threshold"], 0.05);
    EXPECT_EQ(j["gates"][0]["verdict"], "failed");
    EXPECT_EQ(j["gates"][0]["checks"][0]["ci_high"], 0.64);
    CompareResult back;
    read(JsonIn(j, "'c.json'"), back);
    EXPECT_EQ(back, r);
    // Without gates the document is as before: no member.
    EXPECT_FALSE(to_json(scripted()).contains("gates"));
}

}  // namespace
}  // namespace sb
