#pragma once
// Statistics the integration tests take of a document's raw samples.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace sbtest {

// The median of a JSON array of numbers (the mean of the middle two for an even count).
inline double median_of(const nlohmann::json& v) {
    std::vector<double> x = v.get<std::vector<double>>();
    std::sort(x.begin(), x.end());
    return x.size() % 2 ? x[x.size() / 2] : (x[x.size() / 2 - 1] + x[x.size() / 2]) / 2;
}

}  // namespace sbtest
