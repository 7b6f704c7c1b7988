#pragma once
// `--trace FILE` for the commands that produce a result document (run, ops, decompose,
// sustained): the finished document converted to a Chrome Trace Event JSON trace
// (src/trace/chrome_trace.hpp), as `stagebench trace RESULT.json -o FILE` would.
#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "core/result.hpp"

namespace sb::cli {

struct TraceArgs {
    std::optional<std::string> path;
};

// Adds --trace FILE to cmd.
void add_trace_option(CLI::App* cmd, TraceArgs& a);
// Before the run: throws sb::Error(input) when the trace file cannot be written, so a long run
// does not end without its trace.
void check_trace_path(const TraceArgs& a);
// After the run: writes the trace when --trace was given and says so on err.
void write_trace_if_asked(const TraceArgs& a, const ResultDocument& doc, std::ostream& err);

}  // namespace sb::cli
