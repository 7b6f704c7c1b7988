// The across-rounds analysis of `stagebench sustained` on fixture rounds.
#include "analysis/sustained_summary.hpp"

#include <gtest/gtest.h>

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
    TelemetrySeries cur, mn;
    cur.metric = "cpufreq.policy0.cur_freq_khz";
    mn.metric = "cpufreq.policy0.min_freq_khz";
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

TEST(PhaseSlowdown, BaselineOverLoadedPerStageOfOkRounds) {
    SustainedPhase base, loaded;
    base.rounds = rounds_with({40, 40, 40, 40});
    loaded.rounds = rounds_with({20, 20, 20, 20});
    SustainedRound failed;
    failed.status = Status::failed;
    failed.decode_tps = 1;  // a failed round does not count
    loaded.rounds.push_back(failed);
    const auto s = phase_slowdown(base, loaded);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].stage, "prefill");
    EXPECT_DOUBLE_EQ(s[0].ratio, 2);
    EXPECT_EQ(s[1].stage, "decode");
    EXPECT_DOUBLE_EQ(s[1].ratio, 2);
    EXPECT_DOUBLE_EQ(s[1].ci_lo, 2);
    EXPECT_DOUBLE_EQ(s[1].ci_hi, 2);
    EXPECT_FALSE(s[1].no_difference);
    // A stage without rounds on one side is left out.
    for (auto& r : loaded.rounds)
        r.prefill_tps.reset();
    const auto d = phase_slowdown(base, loaded);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].stage, "decode");
    EXPECT_TRUE(phase_slowdown(base, SustainedPhase{}).empty());
}
