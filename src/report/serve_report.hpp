#pragma once
// Markdown for `stagebench serve`: a row per point (throughput, latency percentiles, goodput
// with SLOs, the client's CPU), then the document's warnings. Formats only.
#include <ostream>

#include "core/doc/serve_section.hpp"
#include "core/warning.hpp"

namespace sb {

void write_serve_markdown(const ServeSection& s, const Warnings& warnings, std::ostream& out);

}  // namespace sb
