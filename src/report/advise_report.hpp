#pragma once
// Markdown for `stagebench advise`: the advice's sentences, then its tables (candidates per
// stage, predicted assignments, predictions against measured hybrids, fallback and dispatch
// overhead). Formats the JSON of advise() (analysis/advise.hpp); computes nothing.
#include <nlohmann/json.hpp>
#include <ostream>

namespace sb {

void write_advice_markdown(const nlohmann::json& advice, std::ostream& out);

}  // namespace sb
