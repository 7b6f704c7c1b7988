#pragma once
// Descriptive statistics over raw samples, computed in double with numerically stable
// methods (two-pass mean/variance). Statistics that are undefined for the sample (stddev of
// n = 1, CV of a zero mean, a CI of n < 2) are std::nullopt, never zero. Samples must be
// finite: a NaN or infinity throws sb::Error (runtime), as does a q outside [0, 1] (usage).
// JSON conversion of Summary lives in core/stats_json.hpp.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sb {

// The resamples and seed of the mean's interval in Summary (the robust figures' median_ci uses
// the same): the same samples give the same interval on every platform.
inline constexpr std::size_t kSummaryResamples = 1000;
inline constexpr std::uint64_t kSummarySeed = 42;

struct Summary {
    std::size_t n = 0;
    std::optional<double> mean, stddev, cv, min, median, p90, p99, max;
    // 95% CI of the mean: the seeded percentile bootstrap (kSummaryResamples resamples of the
    // samples, seed kSummarySeed), so it lies within [min, max] and a time or a rate never has
    // a negative bound. Null with fewer than 2 samples. (Documents written before this was a
    // bootstrap hold Student-t intervals, which can go below 0.) This is the mean's interval:
    // a printed median takes median_ci's.
    std::optional<double> ci95_lo, ci95_hi;
    std::optional<double> ci95_half_rel;  // (ci95_hi - ci95_lo) / 2 / |mean|
    std::vector<std::size_t> outliers;    // indices with |modified z| > 3.5 (kept, not dropped)
};

// Summary of the samples (any unit; the result has the same unit, cv is a fraction).
Summary summarize(std::span<const double> samples);

// Summary of integer samples (e.g. durations in ns), converted to double first.
Summary summarize_ns(std::span<const int64_t> samples);

// Linear-interpolated percentile (q in [0,1]) of samples; nullopt when empty.
std::optional<double> percentile(std::span<const double> samples, double q);

// The median of samples, the one every part of stagebench uses: the middle sample of an odd
// count, the midpoint of the two middle ones (lower + (upper - lower) / 2) of an even count,
// the same value as percentile(samples, 0.5), found by selection. nullopt when empty. Throws
// sb::Error(runtime) for a non-finite sample.
std::optional<double> median(std::span<const double> samples);

// The median of integer samples (e.g. durations in ns), converted to double first: exact, and
// equal to (a + b) / 2 of the two middle ones, for magnitudes below 2^52.
std::optional<double> median_ns(std::span<const int64_t> samples);

// Two-sided 97.5% quantile of Student's t with df degrees of freedom (df >= 1).
double t_quantile_975(std::size_t df);

// Indices of outliers by the MAD-based modified z-score (|z| > threshold). When MAD is 0, no
// sample is an outlier.
std::vector<std::size_t> mad_outliers(std::span<const double> samples, double threshold = 3.5);

// Stalls: samples far slower than the sample's typical one. The rule is one-sided (a stall only
// ever slows a stage down) and robust: sample i is a stall when its modified z-score
//   z_i = 0.6745 * (x_i - median) / MAD   (MAD = median of |x - median|)
// exceeds k (3.5, Iglewicz & Hoaglin). When MAD is 0 (more than half the samples equal), the
// mean absolute deviation stands in for it: z_i = (x_i - median) / (1.253314 * MeanAD); when
// that is 0 too, every sample equals the median and none is a stall. With n <= 2 nothing can
// be one (z <= 0.6745), and after a MAD of 0 a single spike needs n >= 5 (its z is n / 1.2533).
// Stalls are counted, never dropped.
inline constexpr double kStallModifiedZ = 3.5;

struct Stalls {
    double k = kStallModifiedZ;        // the bound the modified z-score had to exceed
    std::size_t n = 0;                 // samples examined
    std::vector<std::size_t> indices;  // the stalls, in sample order
    double time = 0;                   // sum of the stalled samples (the samples' unit)
    double excess = 0;                 // sum of (x - median) over the stalls: what they added
    std::optional<double> median;      // of all samples; nullopt when n == 0
    std::optional<double> threshold;   // samples above it are stalls; nullopt: none can be
    std::size_t count() const { return indices.size(); }
};

// Stalls among the samples by the rule above (k: the modified z-score bound). Throws
// sb::Error(runtime) for a non-finite sample, sb::Error(usage) for k <= 0.
Stalls detect_stalls(std::span<const double> samples, double k = kStallModifiedZ);

struct MedianCi {
    std::optional<double> median;            // of the pooled samples; nullopt when empty
    std::optional<double> ci95_lo, ci95_hi;  // nullopt with fewer than 2 groups
};

// Median of the pooled samples with a seeded percentile-bootstrap 95% CI that resamples whole
// groups (e.g. repetitions: the token latencies of one repetition share its conditions, so
// resampling tokens one by one would hide slow repetitions). group_sizes splits the samples,
// in order, into consecutive groups; empty: every sample is a group of its own. The same seed
// gives the same interval on every platform. Throws sb::Error(usage) when the group sizes do
// not add up to the sample count or resamples is 0, sb::Error(runtime) for a non-finite sample.
MedianCi median_ci(std::span<const double> samples, std::span<const std::size_t> group_sizes = {},
                   std::size_t resamples = 1000, std::uint64_t seed = 42);

struct RatioCi {
    double ratio = 0;            // median(a) / median(b)
    double lo = 0, hi = 0;       // bootstrap 95% percentile interval
    bool no_difference = false;  // the interval contains 1
};

// Ratio of medians with a seeded bootstrap 95% CI; the same seed gives the same interval on
// every platform. Both samples must be non-empty and resamples >= 1 (else sb::Error, usage);
// a zero median of b throws sb::Error (input).
RatioCi ratio_of_medians(std::span<const double> a, std::span<const double> b,
                         std::size_t resamples = 2000, std::uint64_t seed = 42);

}  // namespace sb
