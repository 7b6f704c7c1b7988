#pragma once
// Text forms of a pipeline-modes experiment (doc.modes, core/doc/modes_section.hpp): Markdown
// (per stage: mode, stage time with its 95% CI, part, part time with its CI, share of the last
// mode; then every run in the order it ran) and CSV (one row per run and stage). Formats only;
// every number comes from the section. Missing values print as "-".
#include <ostream>

#include "core/doc/modes_section.hpp"
#include "core/enums.hpp"
#include "core/result.hpp"

namespace sb {

void write_modes_markdown(const ModesSection& s, std::ostream& out);

// Header then one row per run and stage: mode, round, sequence, stage, ns, exit_code, error.
void write_modes_csv(const ModesSection& s, std::ostream& out);

// json: the document; csv: write_modes_csv; md: write_modes_markdown and the document's
// warnings. Nothing but the JSON when doc.modes is absent. Throws sb::Error(usage) for another
// format.
void print_modes_document(const ResultDocument& doc, OutputFormat format, std::ostream& out);

}  // namespace sb
