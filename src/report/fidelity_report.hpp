#pragma once
// The markdown of a fidelity section (`stagebench fidelity`, core/doc/fidelity_section.hpp):
// one row per variant, speed beside its distance from the reference, the frontier marked.
#include <ostream>

#include "core/doc/fidelity_section.hpp"

namespace sb {

void write_fidelity_markdown(std::ostream& out, const FidelitySection& r);

}  // namespace sb
