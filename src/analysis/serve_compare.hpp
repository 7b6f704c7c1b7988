#pragma once
// `stagebench compare` of serve documents (core/doc/serve_section.hpp): two servers, two
// devices, two slot counts. Points meet by their mode and value ("concurrency 4", "rate 2");
// per matching point, rows in the shape of every compare (analysis/compare.hpp):
//   throughput  output_tokens_per_s, request_per_s (and goodput_per_s where every side had
//               SLOs): one value per point, so the ratio has no CI (verdict "no CI: one value");
//   ttft, tpot, e2e  median_ms: each side's per-request latencies (successful requests), the
//               ratio of medians with its seeded bootstrap 95% CI (sb::ratio_of_medians) and a
//               verdict "faster" / "slower" / "no difference";
//               p99_ms: the ratio of the points' p99 without a CI (a tail percentile of a few
//               requests; verdict "no CI: tail").
// "differs" lists the server, its slots, the model, the host and the CPU where the sides
// disagree. Points of one side that the baseline lacks (or the reverse) are unmatched; when no
// point matches at all, compare refuses with one line naming both sweeps.
#include <vector>

#include "analysis/compare.hpp"

namespace sb {

// Whether the input is a result document with a serve section (a `serve` document).
bool is_serve_input(const CompareInput& in);

// Compares serve documents (every input a serve document; the first is the baseline). Throws
// sb::Error(usage) for fewer than 2 inputs or repeated labels, sb::Error(input) naming the
// input for a document that is not a serve document or is of the wrong shape, and when no point
// of the baseline matches a point of another input.
CompareResult compare_serve_documents(const std::vector<CompareInput>& inputs,
                                      const CompareOptions& opts = {});

}  // namespace sb
