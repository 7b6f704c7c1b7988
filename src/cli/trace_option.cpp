#include "cli/trace_option.hpp"

#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "trace/chrome_trace.hpp"

namespace sb::cli {

void add_trace_option(CLI::App* cmd, TraceArgs& a) {
    cmd->add_option("--trace", a.path,
                    "also write the timeline as a Chrome/Perfetto trace (JSON) to this file");
}

void check_trace_path(const TraceArgs& a) {
    if (!a.path)
        return;
    check_output_path(*a.path, "the trace file (--trace)");
}

void write_trace_if_asked(const TraceArgs& a, const ResultDocument& doc, std::ostream& err) {
    if (!a.path)
        return;
    write_chrome_trace(doc, *a.path);
    err << "stagebench: trace written to " << *a.path << " (open it in ui.perfetto.dev)\n";
}

}  // namespace sb::cli
