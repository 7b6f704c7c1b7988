#include "core/stats.hpp"
#include "core/stats_bootstrap.hpp"
#include "core/stats_difference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

namespace {

// Neumaier-compensated sum: with values near 2e10 ns and thousands of samples, a plain sum
// loses the low digits that the variance pass depends on.
class CompensatedSum {
  public:
    void add(double x) {
        const double t = sum_ + x;
        if (std::abs(sum_) >= std::abs(x)) {
            c_ += (sum_ - t) + x;
        } else {
            c_ += (x - t) + sum_;
        }
        sum_ = t;
    }
    double value() const { return sum_ + c_; }

  private:
    double sum_ = 0, c_ = 0;
};

void check_finite(std::span<const double> samples, const char* what) {
    for (double x : samples) {
        if (!std::isfinite(x)) {
            throw runtime_error(std::string(what) + ": sample is not finite");
        }
    }
}

// Linear interpolation between closest ranks (Hyndman & Fan type 7) on sorted data.
double percentile_sorted(std::span<const double> sorted, double q) {
    const double h = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    if (lo + 1 >= sorted.size()) {
        return sorted.back();
    }
    const double frac = h - static_cast<double>(lo);
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

// Median of a scratch buffer, reordering it.
double median_inplace(std::vector<double>& v) {
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1) {
        return upper;
    }
    const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return lower + (upper - lower) / 2;
}

// Unbiased index in [0, n) by rejection: std::uniform_int_distribution differs between
// standard libraries, and a seeded bootstrap must give the same interval everywhere.
std::size_t bounded(std::mt19937_64& rng, std::size_t n) {
    const std::uint64_t range = n;
    const std::uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
    std::uint64_t x;
    do {
        x = rng();
    } while (x >= limit);
    return static_cast<std::size_t>(x % range);
}

double mean_of(std::span<const double> v) {
    CompensatedSum s;
    for (double x : v)
        s.add(x);
    return s.value() / static_cast<double>(v.size());
}

// The 2.5th and 97.5th percentiles of the means of `resamples` resamples (each sample drawn
// with replacement), at least 2 samples.
std::pair<double, double> bootstrap_mean_interval(std::span<const double> samples,
                                                  std::size_t resamples, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<double> means;
    means.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        CompensatedSum sum;
        for (std::size_t i = 0; i < samples.size(); ++i)
            sum.add(samples[bounded(rng, samples.size())]);
        means.push_back(sum.value() / static_cast<double>(samples.size()));
    }
    std::sort(means.begin(), means.end());
    // Every resampled mean lies in [min, max]; rounding of the sum must not step outside.
    const auto [mn, mx] = std::minmax_element(samples.begin(), samples.end());
    return {std::clamp(percentile_sorted(means, 0.025), *mn, *mx),
            std::clamp(percentile_sorted(means, 0.975), *mn, *mx)};
}

}  // namespace

std::optional<double> percentile(std::span<const double> samples, double q) {
    if (!(q >= 0.0 && q <= 1.0)) {
        throw usage_error("percentile: q must be in [0, 1], got " + std::to_string(q));
    }
    if (samples.empty()) {
        return std::nullopt;
    }
    check_finite(samples, "percentile");
    std::vector<double> sorted(samples.begin(), samples.end());
    std::sort(sorted.begin(), sorted.end());
    return percentile_sorted(sorted, q);
}

std::optional<double> median(std::span<const double> samples) {
    if (samples.empty()) {
        return std::nullopt;
    }
    check_finite(samples, "median");
    std::vector<double> scratch(samples.begin(), samples.end());
    return median_inplace(scratch);
}

std::optional<double> median_ns(std::span<const int64_t> samples) {
    if (samples.empty()) {
        return std::nullopt;
    }
    std::vector<double> scratch(samples.begin(), samples.end());
    return median_inplace(scratch);
}

double t_quantile_975(std::size_t df) {
    if (df == 0) {
        throw usage_error("t_quantile_975: df must be >= 1");
    }
    static constexpr std::array<double, 30> kTable = {
        12.7062047, 4.3026527, 3.1824463, 2.7764451, 2.5705818, 2.4469119, 2.3646243, 2.3060041,
        2.2621572,  2.2281389, 2.2009852, 2.1788128, 2.1603687, 2.1447867, 2.1314495, 2.1199053,
        2.1098156,  2.1009220, 2.0930241, 2.0859634, 2.0796138, 2.0738731, 2.0686576, 2.0638986,
        2.0595386,  2.0555294, 2.0518307, 2.0484071, 2.0452296, 2.0422725};
    if (df <= kTable.size()) {
        return kTable[df - 1];
    }
    // Cornish-Fisher expansion of t around the normal quantile (Abramowitz & Stegun 26.7.5);
    // the error is below 1e-6 for df > 30.
    const double z = 1.959963984540054;
    const double v = static_cast<double>(df);
    const double z2 = z * z;
    const double g1 = (z2 + 1) * z / 4;
    const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
    const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
    const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
    return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
}

std::vector<std::size_t> mad_outliers(std::span<const double> samples, double threshold) {
    std::vector<std::size_t> out;
    if (samples.empty()) {
        return out;
    }
    check_finite(samples, "mad_outliers");
    std::vector<double> scratch(samples.begin(), samples.end());
    const double med = median_inplace(scratch);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        scratch[i] = std::abs(samples[i] - med);
    }
    const double mad = median_inplace(scratch);
    if (mad == 0) {
        return out;
    }
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const double z = 0.6745 * (samples[i] - med) / mad;
        if (std::abs(z) > threshold) {
            out.push_back(i);
        }
    }
    return out;
}

Summary summarize(std::span<const double> samples) {
    Summary s;
    s.n = samples.size();
    if (samples.empty()) {
        return s;
    }
    check_finite(samples, "summarize");

    std::vector<double> sorted(samples.begin(), samples.end());
    std::sort(sorted.begin(), sorted.end());
    s.min = sorted.front();
    s.max = sorted.back();
    s.median = percentile_sorted(sorted, 0.5);
    s.p90 = percentile_sorted(sorted, 0.90);
    s.p99 = percentile_sorted(sorted, 0.99);

    // Two passes, both compensated; the first is shifted by a sample so that the sum holds
    // the small deviations rather than n times a large value.
    const double shift = samples[0];
    CompensatedSum dev;
    for (double x : samples) {
        dev.add(x - shift);
    }
    const double n = static_cast<double>(samples.size());
    double mean = shift + dev.value() / n;
    mean = std::clamp(mean, sorted.front(), sorted.back());
    s.mean = mean;
    s.outliers = mad_outliers(samples);
    if (samples.size() < 2) {
        return s;
    }

    CompensatedSum sq;
    for (double x : samples) {
        const double d = x - mean;
        sq.add(d * d);
    }
    const double stddev = std::sqrt(sq.value() / (n - 1));
    s.stddev = stddev;
    if (mean != 0) {
        s.cv = stddev / std::abs(mean);
    }
    // The mean's interval by the seeded percentile bootstrap the medians use: it stays within
    // the samples' range, so a time or a rate never gets a negative bound (Student's t around
    // the mean of a few spread repetitions does: a TTFT of 45 ms got [-116.8, 355.1]).
    const auto [lo, hi] = bootstrap_mean_interval(samples, kSummaryResamples, kSummarySeed);
    s.ci95_lo = lo;
    s.ci95_hi = hi;
    if (mean != 0) {
        s.ci95_half_rel = (hi - lo) / 2 / std::abs(mean);
    }
    return s;
}

Stalls detect_stalls(std::span<const double> samples, double k) {
    if (!(k > 0))
        throw usage_error("detect_stalls: k must be > 0");
    Stalls s;
    s.k = k;
    s.n = samples.size();
    if (samples.empty())
        return s;
    check_finite(samples, "detect_stalls");
    std::vector<double> scratch(samples.begin(), samples.end());
    const double med = median_inplace(scratch);
    s.median = med;
    CompensatedSum abs_dev;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        scratch[i] = std::abs(samples[i] - med);
        abs_dev.add(scratch[i]);
    }
    const double mad = median_inplace(scratch);
    // The deviation that z = 1 stands for.
    double scale = mad / 0.6745;
    if (mad == 0)
        scale = 1.253314 * abs_dev.value() / static_cast<double>(samples.size());
    if (!(scale > 0))
        return s;
    s.threshold = med + k * scale;
    CompensatedSum time, excess;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if ((samples[i] - med) / scale > k) {
            s.indices.push_back(i);
            time.add(samples[i]);
            excess.add(samples[i] - med);
        }
    }
    s.time = time.value();
    s.excess = excess.value();
    return s;
}

MedianCi median_ci(std::span<const double> samples, std::span<const std::size_t> group_sizes,
                   std::size_t resamples, std::uint64_t seed) {
    if (resamples == 0)
        throw usage_error("median_ci: resamples must be >= 1");
    std::vector<std::size_t> starts, sizes;
    if (group_sizes.empty()) {
        for (std::size_t i = 0; i < samples.size(); ++i) {
            starts.push_back(i);
            sizes.push_back(1);
        }
    } else {
        std::size_t at = 0;
        for (std::size_t g : group_sizes) {
            if (g == 0)
                continue;  // a repetition without samples adds nothing
            starts.push_back(at);
            sizes.push_back(g);
            at += g;
        }
        if (at != samples.size())
            throw usage_error("median_ci: group sizes add up to " + std::to_string(at) + ", not " +
                              std::to_string(samples.size()) + " samples");
    }
    MedianCi r;
    if (samples.empty())
        return r;
    check_finite(samples, "median_ci");
    std::vector<double> pool(samples.begin(), samples.end());
    r.median = median_inplace(pool);
    const std::size_t groups = starts.size();
    if (groups < 2)
        return r;

    std::mt19937_64 rng(seed);
    std::vector<double> medians;
    medians.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        pool.clear();
        for (std::size_t g = 0; g < groups; ++g) {
            const std::size_t pick = bounded(rng, groups);
            pool.insert(pool.end(), samples.begin() + static_cast<std::ptrdiff_t>(starts[pick]),
                        samples.begin() + static_cast<std::ptrdiff_t>(starts[pick] + sizes[pick]));
        }
        medians.push_back(median_inplace(pool));
    }
    std::sort(medians.begin(), medians.end());
    r.ci95_lo = percentile_sorted(medians, 0.025);
    r.ci95_hi = percentile_sorted(medians, 0.975);
    return r;
}

namespace {

// A ratio of a statistic of a to the same of b (stat(v) may reorder v) with its seeded
// percentile-bootstrap 95% CI: each resample draws a, then b, with replacement; a resample whose
// baseline statistic is 0 has no ratio and is left out of the interval.
template <class Stat>
RatioCi bootstrap_ratio(std::span<const double> a, std::span<const double> b, std::size_t resamples,
                        std::uint64_t seed, const std::string& who, const std::string& stat_name,
                        Stat stat) {
    if (a.empty() || b.empty())
        throw usage_error(who + ": both samples must be non-empty");
    if (resamples == 0)
        throw usage_error(who + ": resamples must be >= 1");
    check_finite(a, who.c_str());
    check_finite(b, who.c_str());
    std::vector<double> ra(a.begin(), a.end());
    std::vector<double> rb(b.begin(), b.end());
    const double stat_b = stat(rb);
    if (stat_b == 0)
        throw input_error(who + ": the " + stat_name + " of the baseline is 0");
    RatioCi r;
    r.ratio = stat(ra) / stat_b;
    std::mt19937_64 rng(seed);
    std::vector<double> ratios;
    ratios.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        for (auto& x : ra)
            x = a[bounded(rng, a.size())];
        for (auto& x : rb)
            x = b[bounded(rng, b.size())];
        const double sb = stat(rb);
        if (sb != 0)
            ratios.push_back(stat(ra) / sb);
    }
    if (ratios.empty()) {
        r.lo = r.hi = r.ratio;
    } else {
        std::sort(ratios.begin(), ratios.end());
        r.lo = percentile_sorted(ratios, 0.025);
        r.hi = percentile_sorted(ratios, 0.975);
    }
    r.no_difference = r.lo <= 1.0 && 1.0 <= r.hi;
    return r;
}

}  // namespace

RatioCi ratio_of_medians(std::span<const double> a, std::span<const double> b,
                         std::size_t resamples, std::uint64_t seed) {
    return bootstrap_ratio(a, b, resamples, seed, "ratio_of_medians", "median",
                           [](std::vector<double>& v) { return median_inplace(v); });
}

DifferenceCi difference_of_medians(std::span<const double> a, std::span<const double> b,
                                   std::size_t resamples, std::uint64_t seed) {
    if (a.empty() || b.empty())
        throw usage_error("difference_of_medians: both samples must be non-empty");
    if (resamples == 0)
        throw usage_error("difference_of_medians: resamples must be >= 1");
    check_finite(a, "difference_of_medians");
    check_finite(b, "difference_of_medians");
    std::vector<double> ra(a.begin(), a.end());
    std::vector<double> rb(b.begin(), b.end());
    DifferenceCi r;
    r.difference = median_inplace(ra) - median_inplace(rb);
    std::mt19937_64 rng(seed);
    std::vector<double> diffs;
    diffs.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        for (auto& x : ra)
            x = a[bounded(rng, a.size())];
        for (auto& x : rb)
            x = b[bounded(rng, b.size())];
        diffs.push_back(median_inplace(ra) - median_inplace(rb));
    }
    std::sort(diffs.begin(), diffs.end());
    r.lo = percentile_sorted(diffs, 0.025);
    r.hi = percentile_sorted(diffs, 0.975);
    r.no_difference = r.lo <= 0.0 && 0.0 <= r.hi;
    return r;
}

namespace {

// Start and size of each group (group_sizes empty: every sample its own group).
void split_groups(std::size_t n, std::span<const std::size_t> group_sizes, const char* who,
                  std::vector<std::size_t>& starts, std::vector<std::size_t>& sizes) {
    if (group_sizes.empty()) {
        for (std::size_t i = 0; i < n; ++i) {
            starts.push_back(i);
            sizes.push_back(1);
        }
        return;
    }
    std::size_t at = 0;
    for (std::size_t g : group_sizes) {
        if (g == 0)
            continue;
        starts.push_back(at);
        sizes.push_back(g);
        at += g;
    }
    if (at != n)
        throw usage_error(std::string(who) + ": group sizes add up to " + std::to_string(at) +
                          ", not " + std::to_string(n) + " samples");
}

}  // namespace

BootstrapCis bootstrap_cis(std::span<const double> samples,
                           std::span<const std::size_t> group_sizes, std::span<const double> qs,
                           std::size_t resamples, std::uint64_t seed) {
    if (resamples == 0)
        throw usage_error("bootstrap_cis: resamples must be >= 1");
    for (double q : qs)
        if (!(q >= 0.0 && q <= 1.0))
            throw usage_error("bootstrap_cis: q must be in [0, 1], got " + std::to_string(q));
    std::vector<std::size_t> starts, sizes;
    split_groups(samples.size(), group_sizes, "bootstrap_cis", starts, sizes);
    BootstrapCis r;
    r.quantile.resize(qs.size());
    const std::size_t groups = starts.size();
    if (groups < 2)
        return r;
    check_finite(samples, "bootstrap_cis");
    std::mt19937_64 rng(seed);
    std::vector<double> pool, means;
    std::vector<std::vector<double>> quantiles(qs.size());
    means.reserve(resamples);
    for (auto& v : quantiles)
        v.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        pool.clear();
        for (std::size_t g = 0; g < groups; ++g) {
            const std::size_t pick = bounded(rng, groups);
            pool.insert(pool.end(), samples.begin() + static_cast<std::ptrdiff_t>(starts[pick]),
                        samples.begin() + static_cast<std::ptrdiff_t>(starts[pick] + sizes[pick]));
        }
        means.push_back(mean_of(pool));
        // percentile_sorted's value by selection: O(n) a quantile instead of a sort (a point's
        // ITLs may be hundreds of thousands of gaps).
        for (std::size_t i = 0; i < qs.size(); ++i) {
            const double h = qs[i] * static_cast<double>(pool.size() - 1);
            const auto lo = static_cast<std::size_t>(std::floor(h));
            const auto at = pool.begin() + static_cast<std::ptrdiff_t>(lo);
            std::nth_element(pool.begin(), at, pool.end());
            double v = *at;
            if (lo + 1 < pool.size())
                v += (h - static_cast<double>(lo)) * (*std::min_element(at + 1, pool.end()) - v);
            quantiles[i].push_back(v);
        }
    }
    auto interval = [](std::vector<double>& v) {
        std::sort(v.begin(), v.end());
        return Ci95{percentile_sorted(v, 0.025), percentile_sorted(v, 0.975)};
    };
    r.mean = interval(means);
    for (std::size_t i = 0; i < qs.size(); ++i)
        r.quantile[i] = interval(quantiles[i]);
    return r;
}

RatioCi ratio_of_means(std::span<const double> a, std::span<const double> b, std::size_t resamples,
                       std::uint64_t seed) {
    return bootstrap_ratio(a, b, resamples, seed, "ratio_of_means", "mean",
                           [](const std::vector<double>& v) { return mean_of(v); });
}

namespace {

// Checks that den pairs with num and that every sample is finite; returns how many samples s
// holds.
std::size_t check_pairing(const Strata& s, const char* who) {
    if (!s.den.empty() && s.den.size() != s.num.size())
        throw usage_error(std::string(who) + ": den has " + std::to_string(s.den.size()) +
                          " strata, num " + std::to_string(s.num.size()));
    std::size_t n = 0;
    for (std::size_t k = 0; k < s.num.size(); ++k) {
        if (!s.den.empty() && s.den[k].size() != s.num[k].size())
            throw usage_error(std::string(who) + ": stratum " + std::to_string(k) + " pairs " +
                              std::to_string(s.num[k].size()) + " nums with " +
                              std::to_string(s.den[k].size()) + " dens");
        check_finite(s.num[k], who);
        if (!s.den.empty())
            check_finite(s.den[k], who);
        n += s.num[k].size();
    }
    return n;
}

void check_strata(const Strata& s, const char* who) {
    if (check_pairing(s, who) == 0)
        throw usage_error(std::string(who) + ": both sides must have samples");
}

// The total of s with the records picked[k] of every stratum k (all of them: picked empty).
std::optional<double> total_of(const Strata& s, const std::vector<std::vector<std::size_t>>* pick) {
    CompensatedSum num, den;
    for (std::size_t k = 0; k < s.num.size(); ++k) {
        const std::size_t n = s.num[k].size();
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t at = pick ? (*pick)[k][i] : i;
            num.add(s.num[k][at]);
            if (!s.den.empty())
                den.add(s.den[k][at]);
        }
    }
    if (s.den.empty())
        return num.value();
    if (den.value() == 0)
        return std::nullopt;
    return num.value() / den.value();
}

void draw(std::mt19937_64& rng, const Strata& s, std::vector<std::vector<std::size_t>>& pick) {
    pick.resize(s.num.size());
    for (std::size_t k = 0; k < s.num.size(); ++k) {
        const std::size_t n = s.num[k].size();
        pick[k].resize(n);
        for (std::size_t i = 0; i < n; ++i)
            pick[k][i] = bounded(rng, n);
    }
}

}  // namespace

std::optional<double> strata_total(const Strata& s) {
    if (check_pairing(s, "strata_total") == 0)
        return std::nullopt;
    return total_of(s, nullptr);
}

RatioCi ratio_of_totals(const Strata& a, const Strata& b, std::size_t resamples,
                        std::uint64_t seed) {
    if (resamples == 0)
        throw usage_error("ratio_of_totals: resamples must be >= 1");
    check_strata(a, "ratio_of_totals");
    check_strata(b, "ratio_of_totals");
    const std::optional<double> ta = total_of(a, nullptr), tb = total_of(b, nullptr);
    if (!tb || *tb == 0)
        throw input_error("ratio_of_totals: the total of the baseline is 0");
    if (!ta)
        throw input_error("ratio_of_totals: the total of a side is undefined (its den sums to 0)");
    RatioCi r;
    r.ratio = *ta / *tb;
    std::mt19937_64 rng(seed);
    std::vector<std::vector<std::size_t>> pa, pb;
    std::vector<double> ratios;
    ratios.reserve(resamples);
    for (std::size_t k = 0; k < resamples; ++k) {
        draw(rng, a, pa);
        draw(rng, b, pb);
        const auto xa = total_of(a, &pa), xb = total_of(b, &pb);
        if (xa && xb && *xb != 0)
            ratios.push_back(*xa / *xb);
    }
    if (ratios.empty()) {
        r.lo = r.hi = r.ratio;
    } else {
        std::sort(ratios.begin(), ratios.end());
        r.lo = percentile_sorted(ratios, 0.025);
        r.hi = percentile_sorted(ratios, 0.975);
    }
    r.no_difference = r.lo <= 1.0 && 1.0 <= r.hi;
    return r;
}

nlohmann::json to_json(const Summary& s) {
    return nlohmann::json{
        {"n", s.n},
        {"mean", opt(s.mean)},
        {"stddev", opt(s.stddev)},
        {"cv", opt(s.cv)},
        {"min", opt(s.min)},
        {"median", opt(s.median)},
        {"p90", opt(s.p90)},
        {"p99", opt(s.p99)},
        {"max", opt(s.max)},
        {"ci95_lo", opt(s.ci95_lo)},
        {"ci95_hi", opt(s.ci95_hi)},
        {"ci95_half_rel", opt(s.ci95_half_rel)},
        {"outliers", s.outliers},
    };
}

void read(const JsonIn& in, Summary& s) {
    ObjectIn{in}("n", s.n)("mean", s.mean)("stddev", s.stddev)("cv", s.cv)("min", s.min)(
        "median", s.median)("p90", s.p90)("p99", s.p99)("max", s.max)("ci95_lo", s.ci95_lo)(
        "ci95_hi", s.ci95_hi)("ci95_half_rel", s.ci95_half_rel)("outliers", s.outliers);
}

Summary summarize_ns(std::span<const int64_t> samples) {
    const std::vector<double> v(samples.begin(), samples.end());
    return summarize(std::span<const double>(v));
}

}  // namespace sb
