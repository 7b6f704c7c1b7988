// bootstrap_cis and ratio_of_means: intervals that follow from the samples exactly, the seed's
// contract (the same seed, the same interval on every platform), and the property that the
// interval holds the point estimate.
#include <gtest/gtest.h>

#include <random>

#include "core/error.hpp"
#include "core/stats_bootstrap.hpp"

namespace sb {
namespace {

const std::vector<double> kQs = {0.5, 0.9, 0.99};

// Two samples 0 and 10: a resample is {0,0}, {0,10} or {10,10} with chances 1/4, 1/2, 1/4, so
// with 1000 resamples far more than 2.5 % of the means (and medians) are 0 and far more are 10.
TEST(StatsBootstrap, TwoSamplesSpanTheirRange) {
    const std::vector<double> v = {0, 10};
    const BootstrapCis c = bootstrap_cis(v, {}, kQs);
    ASSERT_TRUE(c.mean);
    EXPECT_EQ(c.mean->lo, 0.0);
    EXPECT_EQ(c.mean->hi, 10.0);
    ASSERT_EQ(c.quantile.size(), 3u);
    EXPECT_EQ(c.quantile[0]->lo, 0.0);
    EXPECT_EQ(c.quantile[0]->hi, 10.0);
}

TEST(StatsBootstrap, EqualSamplesGiveAPointInterval) {
    const std::vector<double> v = {3, 3, 3, 3};
    const BootstrapCis c = bootstrap_cis(v, {}, kQs, 200, 7);
    EXPECT_EQ(c.mean->lo, 3.0);
    EXPECT_EQ(c.mean->hi, 3.0);
    for (const auto& q : c.quantile) {
        EXPECT_EQ(q->lo, 3.0);
        EXPECT_EQ(q->hi, 3.0);
    }
}

// Groups are resampled whole: {1,1,1} and {9}. Two draws of the same group (chance 1/4 each)
// give means of exactly 1 and 9, so the interval is [1, 9]. One sample a group, four 9s in a
// row have a chance of 1/256 < 2.5 %, so the upper end stays below 9.
TEST(StatsBootstrap, WholeGroupsAreResampled) {
    const std::vector<double> v = {1, 1, 1, 9};
    const std::vector<std::size_t> groups = {3, 1};
    const BootstrapCis g = bootstrap_cis(v, groups, kQs);
    EXPECT_EQ(g.mean->lo, 1.0);
    EXPECT_EQ(g.mean->hi, 9.0);
    const BootstrapCis each = bootstrap_cis(v, {}, kQs);
    EXPECT_EQ(each.mean->lo, 1.0);
    EXPECT_LT(each.mean->hi, 9.0);
}

// The contract of the seed: these numbers are what the seeded generator (mt19937_64, whose
// sequence the standard fixes, and an unbiased index of our own) gives on every platform.
TEST(StatsBootstrap, AFixedSeedGivesAFixedInterval) {
    const std::vector<double> v = {12, 15, 11, 30, 14, 13, 18, 16, 12, 25};
    const BootstrapCis a = bootstrap_cis(v, {}, kQs, 1000, 42);
    const BootstrapCis b = bootstrap_cis(v, {}, kQs, 1000, 42);
    EXPECT_EQ(a.mean->lo, b.mean->lo);
    EXPECT_EQ(a.mean->hi, b.mean->hi);
    for (std::size_t i = 0; i < kQs.size(); ++i) {
        EXPECT_EQ(a.quantile[i]->lo, b.quantile[i]->lo);
        EXPECT_EQ(a.quantile[i]->hi, b.quantile[i]->hi);
    }
    // Mean 16.6, median 14.5.
    EXPECT_DOUBLE_EQ(a.mean->lo, 13.3);
    EXPECT_DOUBLE_EQ(a.mean->hi, 20.4);
    EXPECT_DOUBLE_EQ(a.quantile[0]->lo, 12.0);
    EXPECT_DOUBLE_EQ(a.quantile[0]->hi, 20.0);
    const BootstrapCis other = bootstrap_cis(v, {}, kQs, 1000, 43);
    EXPECT_TRUE(other.mean->lo != a.mean->lo || other.mean->hi != a.mean->hi);
}

// Property: over many random samples, every interval holds its point estimate.
TEST(StatsBootstrap, TheIntervalHoldsThePointEstimate) {
    std::mt19937_64 rng(5);
    std::lognormal_distribution<double> lat(3.0, 0.6);
    for (int trial = 0; trial < 200; ++trial) {
        const std::size_t n = 2 + static_cast<std::size_t>(rng() % 60);
        std::vector<double> v(n);
        double sum = 0;
        for (auto& x : v)
            sum += (x = lat(rng));
        const BootstrapCis c = bootstrap_cis(v, {}, kQs, 500, static_cast<uint64_t>(trial));
        const double mean = sum / static_cast<double>(n);
        EXPECT_LE(c.mean->lo, mean) << trial;
        EXPECT_GE(c.mean->hi, mean) << trial;
        for (std::size_t i = 0; i < kQs.size(); ++i) {
            const double q = *percentile(v, kQs[i]);
            EXPECT_LE(c.quantile[i]->lo, q) << trial << " q" << kQs[i] << " n" << n;
            EXPECT_GE(c.quantile[i]->hi, q) << trial << " q" << kQs[i] << " n" << n;
        }
    }
}

TEST(StatsBootstrap, TooFewGroupsAndBadArguments) {
    const std::vector<double> one = {5};
    const BootstrapCis c = bootstrap_cis(one, {}, kQs);
    EXPECT_FALSE(c.mean);
    ASSERT_EQ(c.quantile.size(), 3u);
    EXPECT_FALSE(c.quantile[0]);
    const std::vector<double> v = {1, 2, 3};
    const std::vector<std::size_t> whole = {3};
    EXPECT_FALSE(bootstrap_cis(v, whole, kQs).mean);  // one group
    const std::vector<std::size_t> bad = {2, 2};
    EXPECT_THROW(bootstrap_cis(v, bad, kQs), Error);
    const std::vector<double> q2 = {1.5};
    EXPECT_THROW(bootstrap_cis(v, {}, q2), Error);
    EXPECT_THROW(bootstrap_cis(v, {}, kQs, 0), Error);
    const std::vector<double> nan = {1, NAN};
    EXPECT_THROW(bootstrap_cis(nan, {}, kQs), Error);
}

TEST(StatsBootstrap, RatioOfMeans) {
    const std::vector<double> a = {6, 6, 6}, b = {2, 2};
    const RatioCi r = ratio_of_means(a, b);
    EXPECT_EQ(r.ratio, 3.0);
    EXPECT_EQ(r.lo, 3.0);
    EXPECT_EQ(r.hi, 3.0);
    EXPECT_FALSE(r.no_difference);
    // {1, 3} against {2}: resampled means 1, 2, 3 (chances 1/4, 1/2, 1/4): [0.5, 1.5] holds 1.
    const std::vector<double> c = {1, 3}, d = {2};
    const RatioCi s = ratio_of_means(c, d);
    EXPECT_EQ(s.ratio, 1.0);
    EXPECT_EQ(s.lo, 0.5);
    EXPECT_EQ(s.hi, 1.5);
    EXPECT_TRUE(s.no_difference);
    const std::vector<double> zero = {0, 0}, empty;
    EXPECT_THROW(ratio_of_means(a, zero), Error);
    EXPECT_THROW(ratio_of_means(a, empty), Error);
    EXPECT_THROW(ratio_of_means(a, b, 0), Error);
}

TEST(StatsBootstrap, RatioOfTotalsOverStrata) {
    // Two shapes of one op: 3 records of ~100 and 2 of ~1000 on the baseline; the other side
    // 1.5x each. The ratio of totals is 1.5 exactly and the interval holds it.
    Strata base{{{100, 110, 90}, {1000, 1010}}, {}};
    Strata other{{{150, 165, 135}, {1500, 1515}}, {}};
    EXPECT_DOUBLE_EQ(*strata_total(base), 2310.0);
    const RatioCi r = ratio_of_totals(other, base, 2000, 9);
    EXPECT_DOUBLE_EQ(r.ratio, 1.5);
    EXPECT_LE(r.lo, 1.5);
    EXPECT_GE(r.hi, 1.5);
    EXPECT_FALSE(r.no_difference);
    // Stratified: a resample keeps 3 small and 2 large records on each side, so the interval is
    // narrow (the totals never swap a large record for a small one).
    EXPECT_GT(r.lo, 1.4);
    EXPECT_LT(r.hi, 1.6);
    const RatioCi again = ratio_of_totals(other, base, 2000, 9);
    EXPECT_EQ(again.lo, r.lo);
    EXPECT_EQ(again.hi, r.hi);
    // Equal records within every stratum: a point interval.
    Strata flat{{{100, 100}, {1000}}, {}}, flat2{{{200, 200}, {2000}}, {}};
    const RatioCi p = ratio_of_totals(flat2, flat, 500, 1);
    EXPECT_DOUBLE_EQ(p.lo, 2.0);
    EXPECT_DOUBLE_EQ(p.hi, 2.0);
}

TEST(StatsBootstrap, RatioOfTotalRatios) {
    // Summed call time over summed op time per side (the dispatch tax of an op type).
    Strata a{{{30, 30}, {300}}, {{10, 10}, {100}}};  // 360 / 120 = 3
    Strata b{{{20, 20}, {240}}, {{10, 10}, {100}}};  // 280 / 120
    EXPECT_DOUBLE_EQ(*strata_total(a), 3.0);
    const RatioCi r = ratio_of_totals(a, b, 300, 3);
    EXPECT_DOUBLE_EQ(r.ratio, 3.0 / (280.0 / 120.0));
    EXPECT_DOUBLE_EQ(r.lo, r.ratio);  // equal records within each stratum
    Strata zero{{{1}}, {{0}}};
    EXPECT_FALSE(strata_total(zero));
    // No sample at all: the total is undefined (null), not 0, and not an error.
    EXPECT_FALSE(strata_total(Strata{}));
    EXPECT_FALSE(strata_total(Strata{{{}, {}}, {}}));
    EXPECT_FALSE(strata_total(Strata{{{}}, {{}}}));
    EXPECT_THROW(strata_total(Strata{{{1, 2}}, {{1}}}), Error);  // unpaired
    EXPECT_THROW(ratio_of_totals(a, zero, 10, 1), Error);
    EXPECT_THROW(ratio_of_totals(Strata{{{1, 2}}, {{1}}}, b, 10, 1), Error);  // unpaired
    EXPECT_THROW(ratio_of_totals(Strata{}, b, 10, 1), Error);                 // no sample
    EXPECT_THROW(ratio_of_totals(a, b, 0, 1), Error);
}

}  // namespace
}  // namespace sb
