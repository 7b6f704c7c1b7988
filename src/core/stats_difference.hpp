#pragma once
// A difference of medians with a bootstrap CI: the companion of ratio_of_medians
// (core/stats.hpp), defined beside it in core/stats.cpp with the same seeded resampling.
#include <cstdint>
#include <span>

namespace sb {

struct DifferenceCi {
    double difference = 0;       // median(a) - median(b)
    double lo = 0, hi = 0;       // bootstrap 95% percentile interval
    bool no_difference = false;  // the interval contains 0
};

// Difference of medians, median(a) - median(b), with a seeded bootstrap 95% CI that resamples
// a and b independently (as ratio_of_medians). The same seed gives the same interval on every
// platform. Both samples must be non-empty and resamples >= 1 (else sb::Error, usage); a
// non-finite sample throws sb::Error(runtime). With one sample each the interval is the
// difference itself.
DifferenceCi difference_of_medians(std::span<const double> a, std::span<const double> b,
                                   std::size_t resamples = 2000, std::uint64_t seed = 42);

}  // namespace sb
