#pragma once
// Markdown for `stagebench hybrid`: per (prompt, generation) point a row per mode (hybrid,
// prefill device alone, decode device alone) with stage throughputs, the state transfer, TTFT
// and end-to-end time; the comparisons with their CIs as sentences; the crossover lengths and
// the memory cost. Formats doc.tests and doc.hybrid (core/doc/hybrid_section.hpp); computes
// nothing.
#include <ostream>

#include "core/result.hpp"

namespace sb {

void write_hybrid_markdown(const ResultDocument& doc, std::ostream& out);

}  // namespace sb
