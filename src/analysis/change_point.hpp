#pragma once
// Single change-point detection for per-round series (throughput, clock frequency): where a
// sustained run shifts from one level to another, e.g. the round a phone starts throttling.
#include <cstddef>
#include <optional>
#include <span>

namespace sb {

struct ChangePoint {
    std::size_t index = 0;       // first element of the new level (0-based)
    double before_mean = 0;      // mean of [0, index)
    double after_mean = 0;       // mean of [index, n)
    double relative_change = 0;  // after / before - 1 (negative: a drop)
    double t_statistic = 0;      // |difference| / its standard error (inf for noiseless data)
};

// The split that minimises the within-segment squared error (each segment at least
// min_segment long), reported only when it is significant: |t| >= t_threshold and the relative
// change is at least min_relative. Needs n >= 2 * min_segment; nullopt otherwise or when no
// significant change exists. Values must be finite.
std::optional<ChangePoint> detect_change_point(std::span<const double> x,
                                               double min_relative = 0.05, double t_threshold = 4.0,
                                               std::size_t min_segment = 2);

}  // namespace sb
