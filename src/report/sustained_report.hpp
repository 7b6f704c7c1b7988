#pragma once
// Markdown for `stagebench sustained`: a row per round, the across-round statistics and the
// verdict of each phase, and the slowdown under background load. Formats only.
#include <ostream>

#include "core/sustained_result.hpp"
#include "core/warning.hpp"

namespace sb {

void write_sustained_markdown(const SustainedResult& r, const Warnings& warnings,
                              std::ostream& out);

}  // namespace sb
