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

// Parses a GGML_HEXAGON_PROFILE log into per-op records and aggregates per stage: prefill and
// decode as split_stages finds them (one stage "log" with one_stage, or when the log shows no
// mat-mul and no marker). A bad --stage-of value is bad input.
// Unparsed lines are counted and reported (stderr and the document), never fatal; a file that
// cannot be read or holds no profile-op record at all is bad input.
// Prints nothing but a line on err about unparsed lines: the caller shows the document
// (report/ops_report.hpp print_ops_document).
int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& err);

}  // namespace sb
