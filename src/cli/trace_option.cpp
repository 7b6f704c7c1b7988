#include "cli/trace_option.hpp"

#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "trace/chrome_trace.hpp"

namespace sb::cli {

void add_trace_option(CLI::App* cmd, TraceArgs& a) {
    cmd->add_option("--trace", a.path,
                    "also write the timeline as a Chrome/Perfetto trace (JSON) to this file");
}

void check_trace_path(const TraceArgs& a) {
    if (!a.path)
        return;
    const std::string probe = *a.path + ".tmp";
    {
        std::ofstream f(probe, std::ios::trunc);
        if (!f)
            throw input_error("cannot write the trace file '" + *a.path + "' (--trace)");
    }
    std::remove(probe.c_str());
}

void write_trace_if_asked(const TraceArgs& a, const ResultDocument& doc, std::ostream& err) {
    if (!a.path)
        return;
    write_chrome_trace(to_json(doc), *a.path);
    err << "stagebench: trace written to " << *a.path << " (open it in ui.perfetto.dev)\n";
}

}  // namespace sb::cli
