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

struct Summary {
    std::size_t n = 0;
    std::optional<double> mean, stddev, cv, min, median, p90, p99, max;
    std::optional<double> ci95_lo, ci95_hi;  // 95% CI of the mean (Student t)
    std::optional<double> ci95_half_rel;     // CI half-width / mean (for --target-ci)
    std::vector<std::size_t> outliers;       // indices with |modified z| > 3.5 (kept, not dropped)
};

// Summary of the samples (any unit; the result has the same unit, cv is a fraction).
Summary summarize(std::span<const double> samples);

// Summary of integer samples (e.g. durations in ns), converted to double first.
Summary summarize_ns(std::span<const int64_t> samples);

// Linear-interpolated percentile (q in [0,1]) of samples; nullopt when empty.
std::optional<double> percentile(std::span<const double> samples, double q);

// Two-sided 97.5% quantile of Student's t with df degrees of freedom (df >= 1).
double t_quantile_975(std::size_t df);

// Indices of outliers by the MAD-based modified z-score (|z| > threshold). When MAD is 0, no
// sample is an outlier.
std::vector<std::size_t> mad_outliers(std::span<const double> samples, double threshold = 3.5);

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
