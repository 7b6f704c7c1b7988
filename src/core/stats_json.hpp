#pragma once
// JSON form of Summary (implemented in stats.cpp). Undefined statistics are null.
#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/stats.hpp"

namespace sb {

// {"n", "mean", "stddev", "cv", "min", "median", "p90", "p99", "max", "ci95_lo", "ci95_hi",
//  "ci95_half_rel", "outliers"}: values in the samples' unit, cv and ci95_half_rel fractions,
// outliers the sample indices.
nlohmann::json to_json(const Summary& s);

// The inverse of to_json (core/doc/json_in.hpp rules).
void read(const JsonIn& in, Summary& s);

// Lets nlohmann convert Summary implicitly: json j = summary;
inline void to_json(nlohmann::json& j, const Summary& s) {
    j = to_json(s);
}

}  // namespace sb
