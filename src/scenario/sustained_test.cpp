#include "scenario/sustained.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

using namespace sb;

namespace {

std::vector<SustainedRound> rounds_with(const std::vector<double>& decode,
                                        const std::vector<double>& freq_khz = {}) {
    std::vector<SustainedRound> out;
    for (size_t i = 0; i < decode.size(); ++i) {
        SustainedRound r;
        r.round = static_cast<int>(i) + 1;
        r.decode_tps = decode[i];
        r.prefill_tps = 10 * decode[i];
        if (!freq_khz.empty())
            r.cpu_freq_mean_khz = freq_khz[i];
        out.push_back(r);
    }
    return out;
}

}  // namespace

TEST(SummarizeRounds, FlatDataIsStable) {
    auto a = summarize_rounds(
        rounds_with({40, 40.3, 39.8, 40.1, 40, 39.9}, {2e6, 2e6, 2e6, 2e6, 2e6, 2e6}), {});
    EXPECT_EQ(a.verdict, "stable");
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_NEAR(*a.decode_tps.mean, 40.0166, 1e-3);
    EXPECT_NEAR(*a.first_last_change, 39.9 / 40 - 1, 1e-12);
}

TEST(SummarizeRounds, ThroughputDropGivesTheOnsetRoundAndSteadyState) {
    auto a = summarize_rounds(rounds_with({40, 40.5, 39.5, 40, 30, 23, 23.2, 22.8, 23, 23.1}), {});
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throttled at round " + std::to_string(*a.throttle_onset_round));
    EXPECT_GE(*a.throttle_onset_round, 5);
    EXPECT_LE(*a.throttle_onset_round, 6);
    EXPECT_GT(*a.peak_to_steady, 1.5);
}

TEST(SummarizeRounds, FrequencyDropAloneIsDetected) {
    auto a = summarize_rounds(rounds_with({40, 40, 40, 40, 40, 40, 40, 40},
                                          {3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6}),
                              {});
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(*a.throttle_onset_round, 4);
    EXPECT_EQ(a.onset_basis, "frequency");
}

TEST(SummarizeRounds, TheEarlierOfThroughputAndFrequencyOnsetIsTheOnset) {
    // Throughput steps down after round 2, the clock only after round 5: throughput is first.
    auto a = summarize_rounds(rounds_with({3600, 3610, 2500, 2490, 2510, 2500, 2495, 2505},
                                          {3e6, 3e6, 3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6}),
                              {});
    ASSERT_TRUE(a.throttle_onset_round && a.freq_onset_round);
    EXPECT_EQ(*a.freq_onset_round, 6);
    EXPECT_EQ(*a.throttle_onset_round, 3);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throttled at round 3");
    // The clock steps down first and throughput follows two rounds later: frequency is first.
    a = summarize_rounds(rounds_with({40, 40, 40, 40, 40, 30, 30, 30},
                                     {3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6}),
                         {});
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(*a.throttle_onset_round, 4);
    EXPECT_EQ(a.onset_basis, "frequency");
}

TEST(SummarizeRounds, SlowDeclineWithoutAStepIsDegraded) {
    // Noisy enough that no single step is significant (the best split, after round 5, has
    // |t| = 1.99 < 4), but the last round is 17.5 % below the first: degraded, no onset.
    auto a = summarize_rounds(rounds_with({40, 36, 41, 35, 39, 34, 37, 33}), {});
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_FALSE(a.freq_onset_round);
    EXPECT_TRUE(a.onset_basis.empty());
    EXPECT_EQ(a.verdict, "degraded");
    EXPECT_DOUBLE_EQ(*a.first_last_change, 33.0 / 40 - 1);
    // Without an onset the steady state is every round.
    EXPECT_DOUBLE_EQ(*a.steady_decode_tps, 295.0 / 8);
    EXPECT_DOUBLE_EQ(*a.peak_to_steady, 41 / (295.0 / 8));
    // The same noise ending 7.5 % below the start is within the 10 % a run may drift: stable.
    auto b = summarize_rounds(rounds_with({40, 36, 41, 35, 39, 34, 37, 37}), {});
    EXPECT_FALSE(b.throttle_onset_round);
    EXPECT_EQ(b.verdict, "stable");
}

TEST(SummarizeRounds, TimeAtTheKernelReportedFloor) {
    Series cur, mn;
    cur.metric.name = "cpufreq.policy0.cur_freq_khz";
    mn.metric.name = "cpufreq.policy0.min_freq_khz";
    for (int i = 0; i <= 10; ++i) {
        cur.t_ns.push_back(i * 100'000'000LL);
        cur.values.push_back(i < 6 ? 2e6 : 3e5);
        mn.t_ns.push_back(i * 100'000'000LL);
        mn.values.push_back(3e5);
    }
    auto a = summarize_rounds(rounds_with({1, 1, 1, 1}), {cur, mn});
    ASSERT_EQ(a.time_at_floor.size(), 1u);
    EXPECT_NEAR(a.time_at_floor[0].seconds, 0.4, 1e-9);
    EXPECT_NEAR(a.time_at_floor[0].fraction, 0.4, 1e-9);
}

TEST(Cooldown, ParsesEveryPolicy) {
    EXPECT_EQ(parse_cooldown("0").kind, CooldownPolicy::Kind::none);
    auto f = parse_cooldown("10s");
    EXPECT_EQ(f.kind, CooldownPolicy::Kind::fixed);
    EXPECT_DOUBLE_EQ(f.seconds, 10);
    EXPECT_DOUBLE_EQ(parse_cooldown("250ms").seconds, 0.25);
    auto t = parse_cooldown("until-temp:45C");
    EXPECT_EQ(t.kind, CooldownPolicy::Kind::until_temp);
    EXPECT_DOUBLE_EQ(t.target_c, 45);
    for (const char* bad : {"soon", "-1s", "until-temp:", "until-temp:hot", "10x"})
        EXPECT_THROW(parse_cooldown(bad), Error) << bad;
}

TEST(TraceOpsRounds, ParsesNumbersAndLast) {
    EXPECT_TRUE(parse_trace_ops_rounds("", 20).empty());
    EXPECT_EQ(parse_trace_ops_rounds("1,20", 20), (std::set<int>{1, 20}));
    EXPECT_EQ(parse_trace_ops_rounds("1,last", 20), (std::set<int>{1, 20}));
    EXPECT_EQ(parse_trace_ops_rounds("last", 3), (std::set<int>{3}));
    EXPECT_EQ(parse_trace_ops_rounds("3,1,3", 3), (std::set<int>{1, 3}));
    for (const char* bad :
         {"0", "21", "1,,2", ",1", "1,", "x", "-1", "1.5", "first", " 1", "99999999999"})
        EXPECT_THROW(parse_trace_ops_rounds(bad, 20), Error) << bad;
    try {
        parse_trace_ops_rounds("1,25", 20);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(e.what()).find("1..20"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

TEST(TraceOpsRounds, ARoundCarriesItsTracedPassOnlyWhenChosen) {
    SustainedRound r;
    r.round = 2;
    const nlohmann::json plain = to_json(r);
    EXPECT_FALSE(plain.contains("ops"));
    r.ops.emplace().label = "traced pass after round 2";
    nlohmann::json traced = to_json(r);
    ASSERT_TRUE(traced.contains("ops"));
    EXPECT_EQ(traced["ops"]["label"], "traced pass after round 2");
    traced.erase("ops");
    EXPECT_EQ(traced, plain);
}
