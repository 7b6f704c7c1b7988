#include "analysis/change_point.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace sb {

std::optional<ChangePoint> detect_change_point(std::span<const double> x, double min_relative,
                                               double t_threshold, std::size_t min_segment) {
    const std::size_t n = x.size();
    if (min_segment < 1 || n < 2 * min_segment)
        return std::nullopt;
    // Prefix sums of x and x^2 (shifted by the first value for numerical stability) give every
    // split's squared error in O(1).
    const double shift = x[0];
    std::vector<double> s(n + 1, 0.0), q(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        const double v = x[i] - shift;
        s[i + 1] = s[i] + v;
        q[i + 1] = q[i] + v * v;
    }
    auto sse = [&](std::size_t a, std::size_t b) {  // [a, b)
        const double m = static_cast<double>(b - a);
        const double sum = s[b] - s[a];
        return std::max(0.0, (q[b] - q[a]) - sum * sum / m);
    };
    std::size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (std::size_t k = min_segment; k + min_segment <= n; ++k) {
        const double cost = sse(0, k) + sse(k, n);
        if (cost < best_cost) {
            best_cost = cost;
            best = k;
        }
    }
    ChangePoint cp;
    cp.index = best;
    const double n1 = static_cast<double>(best), n2 = static_cast<double>(n - best);
    cp.before_mean = (s[best] - s[0]) / n1 + shift;
    cp.after_mean = (s[n] - s[best]) / n2 + shift;
    if (cp.before_mean == 0)
        return std::nullopt;
    cp.relative_change = cp.after_mean / cp.before_mean - 1.0;
    const double dof = static_cast<double>(n) - 2.0;
    const double pooled_var = dof > 0 ? best_cost / dof : 0.0;
    const double se = std::sqrt(pooled_var * (1.0 / n1 + 1.0 / n2));
    const double diff = std::fabs(cp.after_mean - cp.before_mean);
    cp.t_statistic = se > 0 ? diff / se : (diff > 0 ? std::numeric_limits<double>::infinity() : 0);
    if (cp.t_statistic < t_threshold || std::fabs(cp.relative_change) < min_relative)
        return std::nullopt;
    return cp;
}

}  // namespace sb
