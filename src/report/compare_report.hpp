#pragma once
// Formats a compare result (analysis/compare.hpp) for `stagebench compare`; never computes.
// md: the inputs, one table row per matched test and stage with each side's median and CV
// beside each other and each ratio with its 95% CI and verdict, then unmatched tests and notes.
// csv: one line per matched test, stage and non-baseline side. json: the compare document.
#include <ostream>
#include <string>

#include "analysis/compare.hpp"
#include "core/enums.hpp"

namespace sb {

void write_compare_markdown(std::ostream& out, const CompareResult& r);
void write_compare_csv(std::ostream& out, const CompareResult& r);

// md, csv or json. Throws sb::Error(usage) for another format.
void write_compare(std::ostream& out, const CompareResult& r, OutputFormat format);

}  // namespace sb
