#pragma once
// Text forms of an OpsProfile (core/doc/ops_section.hpp; `ops`, `decompose`, `import
// hexagon-profile`): Markdown tables (one section per stage) and CSV (one row per op, through
// the field table of report/fields.hpp). Formatting only; every number comes from the profile.
// Missing values print as "-" (Markdown) or an empty cell (CSV).
#include <ostream>

#include "core/enums.hpp"
#include "core/result.hpp"
#include "report/fields.hpp"

namespace sb {

// One op record of one stage; pointers into the profile, which outlives the row.
struct OpRow {
    const StageProfile* stage = nullptr;
    const OpRecord* op = nullptr;
};

// stage, graph, node, op, name, layer, backend, type, shape, no_compute, op_ns, call_ns,
// isolated_call_ns (times in ns with one decimal).
const FieldTable<OpRow>& op_fields();

// Per stage: reconciliation, decomposition (when measured), by op type (with the call/op
// column), by layer, by backend, top ops, splits and copies, fallback, notes. brief: only the
// reconciliation, the decomposition and the by-op table (`stagebench decompose`).
void write_ops_markdown(const OpsProfile& p, std::ostream& out, size_t top_n = 10,
                        bool brief = false);

// Header then one row per op of every stage (op_fields()).
void write_ops_csv(const OpsProfile& p, std::ostream& out);

// Throws sb::Error(usage) unless format is md, csv or json: what the ops commands print.
void check_ops_format(OutputFormat format);

// Prints a document of `ops`, `decompose` or `import` (doc.ops set) in format: json the
// document, csv the op rows, md the tables (write_ops_markdown) and the document's warnings.
// Throws sb::Error(usage) for another format (check_ops_format).
void print_ops_document(const ResultDocument& doc, OutputFormat format, std::ostream& out,
                        size_t top_n = 10, bool brief = false);

}  // namespace sb
