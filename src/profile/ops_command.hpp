#pragma once
// `stagebench ops` and `stagebench import hexagon-profile` end to end: check the inputs, run
// the profiler (or parse the log), put the profile in the result document
// (doc.ops), print it (md tables, csv rows, or the json document) and write the document
// with --out. Return the exit code (0); throw sb::Error for bad input found before anything
// was measured.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profile/tracer.hpp"

namespace sb {

struct OpsCommandOptions {
    OpsOptions ops;
    std::vector<std::string> rpc_servers;  // host:port
    std::string format = "md";             // md | csv | json (stdout)
    std::optional<std::string> out_path;   // the result document (JSON)
    bool progress = true;                  // progress lines on the error stream
    bool brief = false;  // md: only reconciliation, decomposition and by-op tables
};

int run_ops_command(const OpsCommandOptions& o, ResultDocument& doc, std::ostream& out,
                    std::ostream& err);

struct ImportOptions {
    std::string log_path;
    std::string format = "md";  // md | csv | json
    std::optional<std::string> out_path;
    size_t top_n = 10;
};

// Parses a GGML_HEXAGON_PROFILE log into per-op records and aggregates (one stage, "log").
// Unparsed lines are counted and reported (stderr and the document), never fatal; a file that
// cannot be read or holds no profile-op record at all is bad input.
int run_import_hexagon(const ImportOptions& o, ResultDocument& doc, std::ostream& out,
                       std::ostream& err);

}  // namespace sb
