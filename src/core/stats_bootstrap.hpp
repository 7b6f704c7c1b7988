#pragma once
// Bootstrap confidence intervals beside core/stats.hpp's (median_ci, ratio_of_medians), for
// statistics of latencies: the mean and any quantile at once, and a ratio of means. They are
// implemented in core/stats.cpp with the same seeded, platform-independent resampling.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/stats.hpp"

namespace sb {

struct Ci95 {
    double lo = 0, hi = 0;
};

struct BootstrapCis {
    std::optional<Ci95> mean;                   // nullopt with fewer than 2 groups
    std::vector<std::optional<Ci95>> quantile;  // one per q asked for, same rule
};

// Seeded percentile-bootstrap 95% CIs of the mean and of the quantiles qs (each in [0, 1], the
// linear interpolation of `percentile`) of the samples, resampling whole groups as median_ci
// does (group_sizes empty: every sample its own group). One set of resamples serves every
// statistic. The interval is the 2.5th and 97.5th percentile of the resampled statistic; the
// same seed gives the same intervals on every platform. Throws sb::Error(usage) for group sizes
// that do not add up, resamples 0 or a q outside [0, 1]; sb::Error(runtime) for a non-finite
// sample.
BootstrapCis bootstrap_cis(std::span<const double> samples,
                           std::span<const std::size_t> group_sizes, std::span<const double> qs,
                           std::size_t resamples = 1000, std::uint64_t seed = 42);

// Ratio of means, mean(a) / mean(b), with a seeded bootstrap 95% CI (each sample resampled on
// its own), as ratio_of_medians. Both samples must be non-empty and resamples >= 1 (else
// sb::Error, usage); a zero mean of b throws sb::Error (input).
RatioCi ratio_of_means(std::span<const double> a, std::span<const double> b,
                       std::size_t resamples = 2000, std::uint64_t seed = 42);

// Samples in strata (e.g. the op records of one shape): stratum k holds num[k][i], and, when
// den is not empty, den[k][i] paired with it (den.size() == num.size(), each den[k] as long as
// num[k]).
struct Strata {
    std::vector<std::vector<double>> num, den;
};

// A side's total over its strata: the sum of every num, or with den the sum of every num over
// the sum of every den (a ratio of totals, such as summed call time over summed op time). Null
// when it is undefined: no sample at all, or the sum of den is 0. Throws sb::Error(usage) when
// den does not pair with num, sb::Error(runtime) for a non-finite sample.
std::optional<double> strata_total(const Strata& s);

// The ratio of totals, strata_total(a) / strata_total(b), with a seeded stratified percentile
// bootstrap 95% CI: each resample draws, within every stratum of each side, as many records as
// it holds (a num with its den), so the mix of strata stays as measured and only the spread
// within a stratum widens the interval. Resamples whose baseline total is 0 are left out. The
// same seed gives the same interval on every platform. Throws sb::Error(usage) when a side has
// no sample, den does not pair with num, or resamples is 0; sb::Error(input) when b's total is
// 0 or undefined; sb::Error(runtime) for a non-finite sample.
RatioCi ratio_of_totals(const Strata& a, const Strata& b, std::size_t resamples = 2000,
                        std::uint64_t seed = 42);

}  // namespace sb
