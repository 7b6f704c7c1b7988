#pragma once
// `stagebench import hexagon-profile`: parse the log, put the profile in the result document
// (doc.ops) and write the document with --out. Returns the exit code (0); throws sb::Error for
// bad input. (`stagebench ops` is scenario/ops_run.hpp.)
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profile/tracer.hpp"

namespace sb {

struct ImportOptions {
    std::string log_path;
    OutputFormat format = OutputFormat::md;  // md | csv | json
    std::optional<std::string> out_path;
    size_t top_n = 10;
    // "TEXT=STAGE": a log line containing TEXT starts STAGE (split_stages, hexagon_import.hpp).
    std::vector<std::string> stage_of;
    bool one_stage = false;  // everything in one stage, "log" (no split)
};

// Parses a GGML_HEXAGON_PROFILE log (any upstream format, hexagon_import.hpp) into per-op
// records and aggregates per stage: prefill and decode as split_stages finds them (one stage
// "log" with one_stage, or when the log shows no mat-mul and no marker). A bad --stage-of value
// is bad input.
// Lines that do not parse are counted and reported (a line on err, notes in the document), never
// fatal. Lines refused for values that cannot be true (negative or absurd times, clocks) are kept
// out of every sum, reported the same way with a line on err naming the first, and recorded as
// the document warning "hexagon_implausible_lines"; the rest of the log is imported (exit 0). A
// file that cannot be read or holds no usable op record at all is bad input (sb::Error(input),
// one line naming the first bad line).
// Prints nothing else: the caller shows the document (report/ops_report.hpp
// print_ops_document).
int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& err);

}  // namespace sb
