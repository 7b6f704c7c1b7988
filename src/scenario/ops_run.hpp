#pragma once
// `stagebench ops` and `stagebench decompose` as a run: the run context's setup (the model
// described, RPC servers added, device names checked, warnings, the document saved), then the
// profiler (profile/tracer.hpp) and the profile in the document (doc.ops). Prints nothing but
// progress on the error stream: the caller shows the document (report/ops_report.hpp
// print_ops_document, which checks the format).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "profile/tracer.hpp"

namespace sb {

struct OpsCommandOptions {
    OpsOptions ops;
    std::vector<std::string> rpc_servers;    // host:port
    OutputFormat format = OutputFormat::md;  // md | csv | json (stdout)
    std::optional<std::string> out_path;     // the result document (JSON)
    bool progress = true;                    // progress lines on the error stream
    bool brief = false;  // md: only reconciliation, decomposition and by-op tables
};

// Returns the exit code (0); throws sb::Error for bad input found before anything was
// measured (an unknown model, device or server among them). A stop inside llama.cpp
// mid-profile records nothing (the profile is one measurement) and says which device set
// went away.
int run_ops(const OpsCommandOptions& o, ResultDocument& doc, std::ostream& err);

}  // namespace sb
