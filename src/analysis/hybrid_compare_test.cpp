// The comparison of hybrid modes on chosen samples.
#include "analysis/hybrid_compare.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

using nlohmann::json;

TEST(HybridCompare, SpeedupAndVerdicts) {
    // Hybrid 100 ms, prefill device alone 150 ms, decode device alone ~100 ms.
    std::vector<int64_t> h{100'000'000, 101'000'000, 99'000'000, 100'500'000, 99'500'000};
    std::vector<int64_t> a{150'000'000, 151'000'000, 149'000'000, 150'500'000, 149'500'000};
    std::vector<int64_t> b{99'800'000, 100'600'000, 99'200'000, 101'000'000, 99'000'000};
    json c = compare_modes(h, a, b);
    EXPECT_NEAR(c[kPrefillAloneMode]["speedup"].get<double>(), 1.5, 0.01);
    EXPECT_EQ(c[kPrefillAloneMode]["verdict"], "hybrid faster");
    EXPECT_LT(c[kPrefillAloneMode]["ci95_lo"].get<double>(), 1.5);
    EXPECT_GT(c[kPrefillAloneMode]["ci95_hi"].get<double>(), 1.5);
    EXPECT_EQ(c[kDecodeAloneMode]["verdict"], "no difference");
    // Slower when the alone mode is faster; modes without samples are left out.
    json s = compare_modes(a, h, {});
    EXPECT_EQ(s[kPrefillAloneMode]["verdict"], "hybrid slower");
    EXPECT_FALSE(s.contains(kDecodeAloneMode));
    EXPECT_TRUE(compare_modes({}, a, b).empty());
}

json point(int p, int n, bool wins) {
    const std::string v = wins ? "hybrid faster" : "hybrid slower";
    return {{"n_prompt", p},
            {"n_gen", n},
            {"comparison",
             {{kPrefillAloneMode, {{"verdict", v}}}, {kDecodeAloneMode, {{"verdict", v}}}}}};
}

TEST(HybridCrossover, FromWhichLengthOnTheHybridKeepsWinning) {
    json pts = json::array({point(64, 16, false), point(256, 16, true), point(1024, 16, true),
                            point(64, 64, false), point(256, 64, true), point(1024, 64, false)});
    json c = crossovers(pts);
    ASSERT_EQ(c["by_n_gen"].size(), 2u);
    EXPECT_EQ(c["by_n_gen"][0]["n_gen"], 16);
    EXPECT_EQ(c["by_n_gen"][0]["hybrid_wins_from_n_prompt"], 256);
    // Losing again at the longest prompt: no length from which it keeps winning.
    EXPECT_TRUE(c["by_n_gen"][1]["hybrid_wins_from_n_prompt"].is_null());
    ASSERT_EQ(c["by_n_prompt"].size(), 3u);
    EXPECT_EQ(c["by_n_prompt"][1]["hybrid_wins_from_n_gen"], 16);
    EXPECT_TRUE(c["by_n_prompt"][0]["hybrid_wins_from_n_gen"].is_null());
}

TEST(HybridCompare, VerdictFollowsTheIntervalNotTheRatioAlone) {
    EXPECT_EQ(hybrid_verdict(RatioCi{1.2, 1.1, 1.3, false}), "hybrid faster");
    EXPECT_EQ(hybrid_verdict(RatioCi{0.8, 0.7, 0.9, false}), "hybrid slower");
    EXPECT_EQ(hybrid_verdict(RatioCi{1.2, 0.9, 1.5, true}), "no difference");
}

}  // namespace
}  // namespace sb
