#include "analysis/change_point.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace sb;

TEST(ChangePoint, FlatOrNoisyFlatDataHasNone) {
    std::vector<double> flat(20, 40.0);
    EXPECT_FALSE(detect_change_point(flat));
    std::mt19937_64 rng(3);
    std::normal_distribution<double> noise(40.0, 0.8);  // CV 2 %
    std::vector<double> noisy(20);
    for (auto& v : noisy)
        v = noise(rng);
    EXPECT_FALSE(detect_change_point(noisy));
}

TEST(ChangePoint, FindsAStepAtTheKnownRound) {
    std::mt19937_64 rng(5);
    std::normal_distribution<double> noise(0.0, 0.5);
    std::vector<double> x;
    for (int i = 0; i < 20; ++i)
        x.push_back((i < 7 ? 40.0 : 23.0) + noise(rng));
    auto cp = detect_change_point(x);
    ASSERT_TRUE(cp);
    EXPECT_EQ(cp->index, 7u);
    EXPECT_NEAR(cp->relative_change, 23.0 / 40.0 - 1.0, 0.03);
}

TEST(ChangePoint, NoiselessStepIsInfinitelySignificant) {
    std::vector<double> x{10, 10, 10, 5, 5, 5};
    auto cp = detect_change_point(x);
    ASSERT_TRUE(cp);
    EXPECT_EQ(cp->index, 3u);
    EXPECT_TRUE(std::isinf(cp->t_statistic));
}

TEST(ChangePoint, SmallShiftsBelowTheRelativeFloorAreIgnored) {
    std::vector<double> x{100, 100, 100, 98, 98, 98};
    EXPECT_FALSE(detect_change_point(x, 0.05));
    EXPECT_TRUE(detect_change_point(x, 0.01));
}

TEST(ChangePoint, TooShortSeriesHaveNone) {
    std::vector<double> x{1, 2, 3};
    EXPECT_FALSE(detect_change_point(x));
}
