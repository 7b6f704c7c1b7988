#pragma once
// Markdown for `stagebench serve`: a row per point (throughput, latency percentiles, goodput
// with SLOs, the client's CPU), then the document's warnings. Formats only.
#include <ostream>

#include "core/doc/serve_section.hpp"
#include "core/warning.hpp"

namespace sb {

void write_serve_markdown(const ServeSection& s, const Warnings& warnings, std::ostream& out);
// Under the table (write_serve_markdown calls it): the latency CIs, energy per request and per
// output token when measured, Ctrl-C's interrupted requests, and the saturation verdict.
void write_serve_measures_markdown(const ServeSection& s, std::ostream& out);
// Under the TTFT line (write_serve_markdown calls it): one line on the server's own timings of
// the requests (ServeRequest::server_claim), how many agree with the client's measurement and
// the first disagreement; nothing when the server reported none.
void write_server_claims_markdown(const ServeSection& s, std::ostream& out);

}  // namespace sb
