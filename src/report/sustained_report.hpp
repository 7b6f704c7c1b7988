#pragma once
// Markdown for `stagebench sustained`: a row per round, the across-round statistics and the
// verdict of each phase, and the slowdown under background load; then (print_document) the
// memory table (memory_report.hpp) and the warnings. Formats only.
#include <ostream>

#include "core/sustained_result.hpp"
#include "core/warning.hpp"

namespace sb {

void write_sustained_markdown(const SustainedResult& r, std::ostream& out);
// A line per warning, with its hint: what ends the sustained Markdown.
void write_sustained_warnings(const Warnings& warnings, std::ostream& out);

}  // namespace sb
