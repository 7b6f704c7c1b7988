#pragma once
// Text forms of a pipeline-modes experiment (doc.modes, core/doc/modes_section.hpp): Markdown
// (per stage: mode, stage time with its 95% CI, part, part time with its CI, share of the last
// mode; then every run in the order it ran) and CSV (one row per run and stage, through the
// field table of report/fields.hpp). Formats only; every number comes from the section.
// Missing values print as "-" (Markdown) or an empty cell (CSV).
#include <ostream>

#include "core/doc/modes_section.hpp"
#include "core/enums.hpp"
#include "core/result.hpp"
#include "report/fields.hpp"

namespace sb {

void write_modes_markdown(const ModesSection& s, std::ostream& out);

// One stage of one run of a mode; pointers into the section, which outlives the row.
struct ModeRunRow {
    const Mode* mode = nullptr;
    const ModeRun* run = nullptr;
    const std::string* stage = nullptr;
};

// mode, round, sequence, stage, ns (the stage's time, whole ns; empty when the run has none),
// exit_code, error.
const FieldTable<ModeRunRow>& mode_run_fields();

// Header then one row per run and stage (mode_run_fields()).
void write_modes_csv(const ModesSection& s, std::ostream& out);

// json: the document; csv: write_modes_csv; md: write_modes_markdown and the document's
// warnings. Nothing but the JSON when doc.modes is absent. Throws sb::Error(usage) for another
// format.
void print_modes_document(const ResultDocument& doc, OutputFormat format, std::ostream& out);

}  // namespace sb
