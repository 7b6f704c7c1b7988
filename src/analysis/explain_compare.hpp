#pragma once
// `stagebench compare` of explain documents (core/doc/explain_section.hpp): the same workload
// explained on two machines, two builds, two server configurations. Rows in the shape of every
// compare (analysis/compare.hpp), per stage (prefill, decode):
//   each level both sides measured (test "ops", "graph", "generation", "server", "served@N";
//   metric "median_ms"): each side's runs (one per round), the ratio of medians with its seeded
//   bootstrap 95 % CI and a verdict "faster" / "slower" / "no difference";
//   the gap (test "gap", metric "median_ms"): each side's per-round differences server - graph
//   (paired by round), compared the same way when both medians are above 0;
//   each part of the gap both sides have (test "part NAME", metric "share"): its share of the
//   gap, one value per side, so the ratio has no CI (verdict "no CI: one value").
// "differs" names the server, its --server-args, the model, the workload, the host and the CPU
// where the sides disagree.
#include <vector>

#include "analysis/compare.hpp"

namespace sb {

// Whether the input is a result document with an explain section.
bool is_explain_input(const CompareInput& in);

// Compares explain documents (every input one; the first is the baseline). Throws
// sb::Error(usage) for fewer than 2 inputs or repeated labels, sb::Error(input) naming the
// input for a document without an explain section or of the wrong shape.
CompareResult compare_explain_documents(const std::vector<CompareInput>& inputs,
                                        const CompareOptions& opts = {});

}  // namespace sb
