#pragma once
// The fidelity of a `run --fidelity` or `hybrid --fidelity` document as `fidelity` sections
// (core/doc/fidelity_section.hpp), so that advise and the HTML report read both kinds alike:
// one section per workload (-p, -n) and reference, one variant per test that ran and whose
// capture succeeded (its model, devices and KV types; its speed the test's per-repetition
// tokens/s; its distances the test's), the test whose configuration is the reference's marked
// as the reference, the frontier marked as `fidelity` marks it.
#include <vector>

#include "core/result.hpp"

namespace sb {

std::vector<FidelitySection> fidelity_of_tests(const ResultDocument& doc);

}  // namespace sb
