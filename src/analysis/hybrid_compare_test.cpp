// The comparison of hybrid modes on chosen samples.
#include "analysis/hybrid_compare.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(HybridCompare, SpeedupAndVerdicts) {
    // Hybrid 100 ms, prefill device alone 150 ms, decode device alone ~100 ms.
    std::vector<int64_t> h{100'000'000, 101'000'000, 99'000'000, 100'500'000, 99'500'000};
    std::vector<int64_t> a{150'000'000, 151'000'000, 149'000'000, 150'500'000, 149'500'000};
    std::vector<int64_t> b{99'800'000, 100'600'000, 99'200'000, 101'000'000, 99'000'000};
    const auto c = compare_modes(h, a, b);
    ASSERT_EQ(c.size(), 2u);
    const HybridSpeedup& pa = c.at(kPrefillAloneMode);
    EXPECT_NEAR(*pa.speedup, 1.5, 0.01);
    EXPECT_EQ(pa.verdict, "hybrid faster");
    EXPECT_LT(*pa.ci95_lo, 1.5);
    EXPECT_GT(*pa.ci95_hi, 1.5);
    // The interval is the seeded bootstrap of the ratio of medians: the same every time.
    const RatioCi want = ratio_of_medians(std::vector<double>(a.begin(), a.end()),
                                          std::vector<double>(h.begin(), h.end()));
    EXPECT_EQ(*pa.speedup, want.ratio);
    EXPECT_EQ(*pa.ci95_lo, want.lo);
    EXPECT_EQ(*pa.ci95_hi, want.hi);
    EXPECT_EQ(c.at(kDecodeAloneMode).verdict, "no difference");
    // Slower when the alone mode is faster; modes without samples are left out.
    const auto s = compare_modes(a, h, {});
    EXPECT_EQ(s.at(kPrefillAloneMode).verdict, "hybrid slower");
    EXPECT_FALSE(s.count(kDecodeAloneMode));
    EXPECT_TRUE(compare_modes({}, a, b).empty());
}

HybridPoint hybrid_point(int p, int n, bool wins) {
    const std::string v = wins ? "hybrid faster" : "hybrid slower";
    HybridPoint pt;
    pt.n_prompt = p;
    pt.n_gen = n;
    pt.comparison[kPrefillAloneMode].verdict = v;
    pt.comparison[kDecodeAloneMode].verdict = v;
    return pt;
}

TEST(HybridCrossover, FromWhichLengthOnTheHybridKeepsWinning) {
    HybridPoint alone_only = hybrid_point(4096, 16, true);  // no comparison with decode alone
    alone_only.comparison.erase(kDecodeAloneMode);
    const HybridCrossover c =
        crossovers({hybrid_point(64, 16, false), hybrid_point(256, 16, true),
                    hybrid_point(1024, 16, true), hybrid_point(64, 64, false),
                    hybrid_point(256, 64, true), hybrid_point(1024, 64, false), alone_only});
    ASSERT_EQ(c.by_n_gen.size(), 2u);
    EXPECT_EQ(c.by_n_gen[0].n_gen, 16);
    EXPECT_EQ(c.by_n_gen[0].hybrid_wins_from_n_prompt, 256);
    // Losing again at the longest prompt: no length from which it keeps winning.
    EXPECT_EQ(c.by_n_gen[1].hybrid_wins_from_n_prompt, std::nullopt);
    ASSERT_EQ(c.by_n_prompt.size(), 3u);
    EXPECT_EQ(c.by_n_prompt[1].n_prompt, 256);
    EXPECT_EQ(c.by_n_prompt[1].hybrid_wins_from_n_gen, 16);
    EXPECT_EQ(c.by_n_prompt[0].hybrid_wins_from_n_gen, std::nullopt);
    EXPECT_TRUE(crossovers({}).by_n_gen.empty());
}

TEST(HybridCompare, VerdictFollowsTheIntervalNotTheRatioAlone) {
    EXPECT_EQ(hybrid_verdict(RatioCi{1.2, 1.1, 1.3, false}), "hybrid faster");
    EXPECT_EQ(hybrid_verdict(RatioCi{0.8, 0.7, 0.9, false}), "hybrid slower");
    EXPECT_EQ(hybrid_verdict(RatioCi{1.2, 0.9, 1.5, true}), "no difference");
}

}  // namespace
}  // namespace sb
