#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/stats_json.hpp"

namespace sb {
namespace {

// 20-second samples in ns with sub-microsecond jitter: the case where an integer or one-pass
// variance overflows or cancels (llama.cpp issues 22300, 24951).
std::vector<double> twenty_second_samples(std::size_t n) {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> jitter(0.0, 250.0);
    std::vector<double> v(n);
    for (auto& x : v) {
        x = std::round(20e9 + jitter(rng));
    }
    return v;
}

TEST(Stats, TwentySecondSamplesMatchLongDoubleReference) {
    const auto v = twenty_second_samples(1000);
    long double sum = 0;
    for (double x : v) {
        sum += x;
    }
    const long double mean = sum / v.size();
    long double sq = 0;
    for (double x : v) {
        sq += (x - mean) * (x - mean);
    }
    const long double sd = std::sqrt(sq / (v.size() - 1));

    const Summary s = summarize(v);
    ASSERT_EQ(s.n, 1000u);
    ASSERT_TRUE(s.mean && s.stddev && s.cv && s.ci95_lo && s.ci95_hi && s.ci95_half_rel);
    EXPECT_NEAR(*s.mean, static_cast<double>(mean), 1e-3);  // ns, on a 2e10 value
    EXPECT_NEAR(*s.stddev, static_cast<double>(sd), 1e-6 * static_cast<double>(sd));
    EXPECT_GT(*s.stddev, 200.0);
    EXPECT_LT(*s.stddev, 300.0);
    EXPECT_NEAR(*s.cv, static_cast<double>(sd / mean), 1e-15);
    // The mean's bootstrap interval is about as wide as Student's t at n = 1000 (the normal
    // approximation holds there): within 15 % of its width.
    const double half = t_quantile_975(999) * static_cast<double>(sd) / std::sqrt(1000.0);
    EXPECT_NEAR(*s.ci95_hi - *s.ci95_lo, 2 * half, 0.15 * 2 * half);
    EXPECT_LT(*s.ci95_lo, *s.mean);
    EXPECT_GT(*s.ci95_hi, *s.mean);
}

TEST(Stats, TheMeansIntervalNeverLeavesTheSamplesRange) {
    // Two spread positive samples: Student's t gives mean +- 12.7 sd / sqrt(2), far below 0
    // (a TTFT of 45 ms got [-116.8, 355.1]); the bootstrap stays within [min, max].
    const std::vector<double> ttft_ms{20.0, 70.0};
    const Summary s = summarize(ttft_ms);
    ASSERT_TRUE(s.ci95_lo && s.ci95_hi && s.mean);
    EXPECT_EQ(*s.mean, 45.0);
    const double t_half = t_quantile_975(1) * *s.stddev / std::sqrt(2.0);
    EXPECT_LT(*s.mean - t_half, 0.0);  // what the interval used to be
    EXPECT_GE(*s.ci95_lo, 20.0);
    EXPECT_LE(*s.ci95_hi, 70.0);
    EXPECT_LE(*s.ci95_lo, *s.mean);
    EXPECT_GE(*s.ci95_hi, *s.mean);
    EXPECT_DOUBLE_EQ(*s.ci95_half_rel, (*s.ci95_hi - *s.ci95_lo) / 2 / 45.0);

    // A stalled repetition among five: the interval is wide but positive, and seeded.
    const std::vector<double> tps{3100, 3150, 92, 3120, 3080};
    const Summary a = summarize(tps), b = summarize(tps);
    ASSERT_TRUE(a.ci95_lo && a.ci95_hi);
    EXPECT_GE(*a.ci95_lo, 92.0);
    EXPECT_LE(*a.ci95_hi, 3150.0);
    EXPECT_LT(*a.ci95_lo, *a.mean);
    EXPECT_EQ(a.ci95_lo, b.ci95_lo);
    EXPECT_EQ(a.ci95_hi, b.ci95_hi);
}

TEST(Stats, EmptyHasNoStatistics) {
    const Summary s = summarize({});
    EXPECT_EQ(s.n, 0u);
    EXPECT_FALSE(s.mean || s.stddev || s.cv || s.min || s.median || s.p90 || s.p99 || s.max);
    EXPECT_FALSE(s.ci95_lo || s.ci95_hi || s.ci95_half_rel);
    EXPECT_TRUE(s.outliers.empty());
    EXPECT_FALSE(percentile({}, 0.5));
}

TEST(Stats, SingleSample) {
    const std::vector<double> v{42.0};
    const Summary s = summarize(v);
    EXPECT_EQ(s.n, 1u);
    EXPECT_EQ(s.mean, 42.0);
    EXPECT_EQ(s.min, 42.0);
    EXPECT_EQ(s.max, 42.0);
    EXPECT_EQ(s.median, 42.0);
    EXPECT_EQ(s.p90, 42.0);
    EXPECT_EQ(s.p99, 42.0);
    EXPECT_FALSE(s.stddev);
    EXPECT_FALSE(s.cv);
    EXPECT_FALSE(s.ci95_lo || s.ci95_hi || s.ci95_half_rel);
}

TEST(Stats, ConstantSamples) {
    const std::vector<double> v(50, 2e10);
    const Summary s = summarize(v);
    EXPECT_EQ(s.mean, 2e10);
    EXPECT_EQ(s.stddev, 0.0);
    EXPECT_EQ(s.cv, 0.0);
    EXPECT_EQ(s.ci95_lo, 2e10);
    EXPECT_EQ(s.ci95_hi, 2e10);
    EXPECT_EQ(s.ci95_half_rel, 0.0);
    EXPECT_TRUE(s.outliers.empty());
}

TEST(Stats, ZeroMeanHasNoCv) {
    const std::vector<double> v{-1.0, 1.0};
    const Summary s = summarize(v);
    EXPECT_EQ(s.mean, 0.0);
    ASSERT_TRUE(s.stddev);
    EXPECT_NEAR(*s.stddev, std::sqrt(2.0), 1e-15);
    EXPECT_FALSE(s.cv);
    EXPECT_FALSE(s.ci95_half_rel);
    EXPECT_TRUE(s.ci95_lo && s.ci95_hi);
}

TEST(Stats, KnownPercentiles) {
    // 1..101 in scrambled order: the q-percentile is 1 + 100q exactly.
    std::vector<double> v;
    for (int i = 101; i >= 1; i -= 2) {
        v.push_back(i);
    }
    for (int i = 2; i <= 100; i += 2) {
        v.push_back(i);
    }
    EXPECT_DOUBLE_EQ(*percentile(v, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(*percentile(v, 0.5), 51.0);
    EXPECT_DOUBLE_EQ(*percentile(v, 0.9), 91.0);
    EXPECT_DOUBLE_EQ(*percentile(v, 0.99), 100.0);
    EXPECT_DOUBLE_EQ(*percentile(v, 1.0), 101.0);
    const Summary s = summarize(v);
    EXPECT_DOUBLE_EQ(*s.median, 51.0);
    EXPECT_DOUBLE_EQ(*s.p90, 91.0);
    EXPECT_DOUBLE_EQ(*s.p99, 100.0);
    EXPECT_DOUBLE_EQ(*s.mean, 51.0);

    // Interpolation between ranks: {10, 20, 30, 40}.
    const std::vector<double> w{40, 10, 30, 20};
    EXPECT_DOUBLE_EQ(*percentile(w, 0.5), 25.0);
    EXPECT_DOUBLE_EQ(*percentile(w, 0.9), 37.0);
    EXPECT_DOUBLE_EQ(*percentile(w, 0.25), 17.5);
    EXPECT_DOUBLE_EQ(*summarize(w).median, 25.0);
}

TEST(Stats, MedianIsTheMiddleOrTheMidpointOfTheTwoMiddleOnes) {
    EXPECT_FALSE(median(std::vector<double>{}));
    EXPECT_FALSE(median_ns(std::vector<int64_t>{}));
    EXPECT_EQ(*median(std::vector<double>{7}), 7.0);
    EXPECT_EQ(*median(std::vector<double>{5, 1, 3}), 3.0);
    EXPECT_EQ(*median(std::vector<double>{40, 10, 30, 20}), 25.0);
    EXPECT_EQ(*median(std::vector<double>{2, 1}), 1.5);
    EXPECT_EQ(*median(std::vector<double>{-3, 1}), -1.0);
    // Integers: the half of an odd sum is kept, and 20-second durations in ns stay exact.
    EXPECT_EQ(*median_ns(std::vector<int64_t>{2, 1}), 1.5);
    EXPECT_EQ(*median_ns(std::vector<int64_t>{20'000'000'001, 3, 20'000'000'000, 19'999'999'999}),
              19'999'999'999.5);
    EXPECT_EQ(*median_ns(std::vector<int64_t>{20'000'000'003, 20'000'000'000}), 20'000'000'001.5);
    const std::vector<double> bad{1, std::nan(""), 3};
    EXPECT_THROW(median(bad), Error);
    const std::vector<double> inf{1, INFINITY};
    EXPECT_THROW(median(inf), Error);
}

TEST(Stats, MedianEqualsThePercentileAtOneHalfBitForBit) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(-1e6, 1e9);
    for (std::size_t n = 1; n <= 40; ++n) {
        std::vector<double> v(n);
        for (auto& x : v)
            x = u(rng);
        const std::vector<double> before = v;
        EXPECT_EQ(*median(v), *percentile(v, 0.5)) << n;
        EXPECT_EQ(v, before) << "the samples are not reordered";
    }
}

TEST(Stats, PercentileRejectsBadQuantileAndNonFinite) {
    const std::vector<double> v{1, 2, 3};
    EXPECT_THROW(percentile(v, 1.5), Error);
    EXPECT_THROW(percentile(v, -0.1), Error);
    EXPECT_THROW(percentile(v, std::nan("")), Error);
    const std::vector<double> bad{1, std::nan(""), 3};
    EXPECT_THROW(summarize(bad), Error);
}

TEST(Stats, KnownTQuantiles) {
    EXPECT_NEAR(t_quantile_975(1), 12.706, 5e-4);
    EXPECT_NEAR(t_quantile_975(2), 4.303, 5e-4);
    EXPECT_NEAR(t_quantile_975(5), 2.571, 5e-4);
    EXPECT_NEAR(t_quantile_975(10), 2.228, 5e-4);
    EXPECT_NEAR(t_quantile_975(20), 2.086, 5e-4);
    EXPECT_NEAR(t_quantile_975(30), 2.042, 5e-4);
    EXPECT_NEAR(t_quantile_975(31), 2.0395, 5e-4);
    EXPECT_NEAR(t_quantile_975(40), 2.021, 5e-4);
    EXPECT_NEAR(t_quantile_975(60), 2.000, 5e-4);
    EXPECT_NEAR(t_quantile_975(120), 1.980, 5e-4);
    EXPECT_NEAR(t_quantile_975(1000), 1.962, 5e-4);
    EXPECT_NEAR(t_quantile_975(1000000), 1.95996, 1e-4);
    EXPECT_THROW(t_quantile_975(0), Error);
    for (std::size_t df = 1; df < 200; ++df) {
        EXPECT_GT(t_quantile_975(df), t_quantile_975(df + 1)) << df;
    }
}

TEST(Stats, MadFlagsInjectedOutlierOnly) {
    std::mt19937_64 rng(3);
    std::normal_distribution<double> d(100.0, 1.0);
    std::vector<double> v(200);
    for (auto& x : v) {
        x = d(rng);
    }
    EXPECT_TRUE(mad_outliers(v).empty());
    EXPECT_TRUE(summarize(v).outliers.empty());
    v[57] = 150.0;
    EXPECT_EQ(mad_outliers(v), std::vector<std::size_t>{57});
    EXPECT_EQ(summarize(v).outliers, std::vector<std::size_t>{57});
}

TEST(Stats, MadIsSilentWhenMadIsZero) {
    const std::vector<double> v{5, 5, 5, 5, 5, 9};
    EXPECT_TRUE(mad_outliers(v).empty());
    EXPECT_TRUE(mad_outliers({}).empty());
}

TEST(Stalls, FlagsOnlyTheSlowSpikeOneSided) {
    // median 10, MAD 1 (scale 1 / 0.6745): 100 is a stall (z = 60.7), the fast 1 is not (a
    // stall only slows down), 12 is not (z = 1.35).
    const std::vector<double> v = {10, 11, 9, 10, 12, 10, 11, 100, 9, 10, 1};
    const Stalls s = detect_stalls(v);
    EXPECT_EQ(s.n, 11u);
    EXPECT_EQ(s.k, 3.5);
    EXPECT_EQ(s.indices, (std::vector<std::size_t>{7}));
    EXPECT_EQ(s.count(), 1u);
    EXPECT_DOUBLE_EQ(s.time, 100);
    EXPECT_DOUBLE_EQ(s.excess, 90);
    EXPECT_EQ(s.median, 10);
    ASSERT_TRUE(s.threshold);
    EXPECT_NEAR(*s.threshold, 10 + 3.5 / 0.6745, 1e-12);
    // The two-sided outlier rule flags the fast sample too.
    EXPECT_EQ(mad_outliers(v), (std::vector<std::size_t>{7, 10}));
    // A larger k lets the spike pass.
    EXPECT_EQ(detect_stalls(v, 100).count(), 0u);
}

TEST(Stalls, SeveralStallsAddUp) {
    // Decode latencies in ns: 7.8 ms typical, two stalls of 130 and 180 ms.
    std::vector<double> v(40, 7.8e6);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] += static_cast<double>(i % 5) * 1e4;  // MAD > 0
    v[3] = 130e6;
    v[31] = 180e6;
    const Stalls s = detect_stalls(v);
    EXPECT_EQ(s.indices, (std::vector<std::size_t>{3, 31}));
    EXPECT_DOUBLE_EQ(s.time, 310e6);
    ASSERT_TRUE(s.median);
    EXPECT_DOUBLE_EQ(s.excess, 310e6 - 2 * *s.median);
}

TEST(Stalls, MadOfZeroFallsBackToTheMeanAbsoluteDeviation) {
    // All equal but one spike: MAD = 0, MeanAD = 90 / 5 = 18, z = 90 / (1.253314 * 18) = 3.99.
    const Stalls five = detect_stalls(std::vector<double>{10, 10, 100, 10, 10});
    EXPECT_EQ(five.indices, (std::vector<std::size_t>{2}));
    EXPECT_DOUBLE_EQ(five.excess, 90);
    ASSERT_TRUE(five.threshold);
    EXPECT_NEAR(*five.threshold, 10 + 3.5 * 1.253314 * 18, 1e-9);
    // Four samples: z = 4 / 1.253314 = 3.19, not above 3.5.
    const Stalls four = detect_stalls(std::vector<double>{10, 10, 10, 100});
    EXPECT_EQ(four.count(), 0u);
    EXPECT_TRUE(four.threshold);
    // Two spikes over eight equal samples: MeanAD = 9, z = 3.55 and 4.43.
    EXPECT_EQ(detect_stalls(std::vector<double>{10, 10, 10, 10, 10, 10, 10, 10, 50, 60}).indices,
              (std::vector<std::size_t>{8, 9}));
    // All equal: no scale, nothing can be a stall.
    const Stalls same = detect_stalls(std::vector<double>{7, 7, 7, 7, 7});
    EXPECT_EQ(same.count(), 0u);
    EXPECT_FALSE(same.threshold);
    EXPECT_EQ(same.median, 7);
}

TEST(Stalls, TinySamples) {
    const Stalls none = detect_stalls({});
    EXPECT_EQ(none.n, 0u);
    EXPECT_FALSE(none.median);
    EXPECT_FALSE(none.threshold);
    const Stalls one = detect_stalls(std::vector<double>{5});
    EXPECT_EQ(one.count(), 0u);
    EXPECT_EQ(one.median, 5);
    // Two samples: z is at most 0.6745.
    EXPECT_EQ(detect_stalls(std::vector<double>{1, 1000}).count(), 0u);
    EXPECT_EQ(detect_stalls(std::vector<double>{10, 10, 100}).count(), 0u);
}

TEST(Stalls, RejectsBadInput) {
    EXPECT_THROW(detect_stalls(std::vector<double>{1, NAN}), Error);
    EXPECT_THROW(detect_stalls(std::vector<double>{1, 2}, 0), Error);
}

TEST(MedianCi, MedianOfThePooledSamples) {
    EXPECT_FALSE(median_ci({}).median);
    const MedianCi one = median_ci(std::vector<double>{3, 1, 2});
    EXPECT_EQ(one.median, 2);
    ASSERT_TRUE(one.ci95_lo && one.ci95_hi);
    EXPECT_LE(*one.ci95_lo, 2);
    EXPECT_GE(*one.ci95_hi, 2);
    const std::vector<double> v = {1, 2, 3, 4};
    const std::vector<std::size_t> groups = {2, 2};
    EXPECT_EQ(median_ci(v, groups).median, 2.5);
    // One group: no interval.
    const std::vector<std::size_t> whole = {4};
    const MedianCi single = median_ci(v, whole);
    EXPECT_EQ(single.median, 2.5);
    EXPECT_FALSE(single.ci95_lo || single.ci95_hi);
    // Group sizes must cover the samples exactly.
    const std::vector<std::size_t> wrong = {2, 1};
    EXPECT_THROW(median_ci(v, wrong), Error);
    EXPECT_THROW(median_ci(v, {}, 0), Error);
}

TEST(MedianCi, ResamplingRepetitionsSeesASlowRepetition) {
    // Five repetitions of 100 tokens: four at ~10 ms, one at ~20 ms. Token by token the median
    // looks certain; by repetition, resamples with three slow repetitions move it.
    std::mt19937_64 rng(3);
    std::normal_distribution<double> jitter(0.0, 0.1);
    std::vector<double> v;
    for (int rep = 0; rep < 5; ++rep)
        for (int i = 0; i < 100; ++i)
            v.push_back((rep == 2 ? 20.0 : 10.0) + jitter(rng));
    const std::vector<std::size_t> reps(5, 100);
    const MedianCi by_rep = median_ci(v, reps);
    const MedianCi by_token = median_ci(v);
    ASSERT_TRUE(by_rep.median && by_rep.ci95_hi && by_token.ci95_hi && by_token.ci95_lo);
    EXPECT_LT(*by_rep.median, 10.5);
    EXPECT_LT(*by_token.ci95_hi - *by_token.ci95_lo, 0.2);
    EXPECT_GT(*by_rep.ci95_hi, 15);
    // Seeded: the same interval every time.
    const MedianCi again = median_ci(v, reps);
    EXPECT_EQ(again.ci95_lo, by_rep.ci95_lo);
    EXPECT_EQ(again.ci95_hi, by_rep.ci95_hi);
}

TEST(Stats, RatioOfIdenticalDistributionsIsNoDifference) {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> d(1000.0, 20.0);
    std::vector<double> a(60), b(60);
    for (auto& x : a) {
        x = d(rng);
    }
    for (auto& x : b) {
        x = d(rng);
    }
    const RatioCi r = ratio_of_medians(a, b);
    EXPECT_NEAR(r.ratio, 1.0, 0.03);
    EXPECT_LE(r.lo, r.ratio);
    EXPECT_GE(r.hi, r.ratio);
    EXPECT_TRUE(r.no_difference);

    const RatioCi same = ratio_of_medians(a, a);
    EXPECT_DOUBLE_EQ(same.ratio, 1.0);
    EXPECT_TRUE(same.no_difference);
}

TEST(Stats, RatioOfDoubledSamplesIsTwo) {
    std::mt19937_64 rng(13);
    std::normal_distribution<double> d(1000.0, 20.0);
    std::vector<double> a(40), b(40);
    for (std::size_t i = 0; i < b.size(); ++i) {
        b[i] = d(rng);
        a[i] = 2 * d(rng);
    }
    const RatioCi r = ratio_of_medians(a, b, 2000, 42);
    EXPECT_NEAR(r.ratio, 2.0, 0.05);
    EXPECT_GT(r.lo, 1.9);
    EXPECT_LT(r.hi, 2.1);
    EXPECT_FALSE(r.no_difference);
}

TEST(Stats, RatioIsReproducibleAndValidatesInput) {
    const std::vector<double> a{3, 1, 4, 1, 5, 9, 2, 6};
    const std::vector<double> b{2, 7, 1, 8, 2, 8, 1, 8};
    const RatioCi r1 = ratio_of_medians(a, b, 500, 9);
    const RatioCi r2 = ratio_of_medians(a, b, 500, 9);
    EXPECT_EQ(r1.lo, r2.lo);
    EXPECT_EQ(r1.hi, r2.hi);
    EXPECT_THROW(ratio_of_medians({}, b), Error);
    EXPECT_THROW(ratio_of_medians(a, {}), Error);
    EXPECT_THROW(ratio_of_medians(a, b, 0), Error);
    const std::vector<double> zeros{0, 0, 0};
    EXPECT_THROW(ratio_of_medians(a, zeros), Error);
}

TEST(Stats, SummaryJsonUsesNullForUndefined) {
    const std::vector<double> one{7.0};
    const nlohmann::json j = to_json(summarize(one));
    EXPECT_EQ(j["n"], 1);
    EXPECT_EQ(j["mean"], 7.0);
    EXPECT_TRUE(j["stddev"].is_null());
    EXPECT_TRUE(j["cv"].is_null());
    EXPECT_TRUE(j["ci95_lo"].is_null());
    EXPECT_TRUE(j["ci95_half_rel"].is_null());
    EXPECT_TRUE(j["outliers"].is_array());
    for (const char* key : {"n", "mean", "stddev", "cv", "min", "median", "p90", "p99", "max",
                            "ci95_lo", "ci95_hi", "ci95_half_rel", "outliers"}) {
        EXPECT_TRUE(j.contains(key)) << key;
    }
    const nlohmann::json implicit = summarize(one);
    EXPECT_EQ(implicit, j);
}

}  // namespace
}  // namespace sb
