#pragma once
// Markdown for `stagebench advise`: the advice's sentences, then its tables (candidates per
// stage, predicted assignments, predictions against measured hybrids, dispatch overhead above
// the budget), then its notes. Formats the Advice of advise() (analysis/advise.hpp); computes
// nothing.
#include <ostream>

#include "analysis/advise.hpp"

namespace sb {

void write_advice_markdown(const Advice& advice, std::ostream& out);

}  // namespace sb
