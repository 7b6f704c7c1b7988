#pragma once
// `stagebench run` and `stagebench demo` end to end: validate inputs, describe the machine,
// run the sweep, stream rows to a reporter and keep the result document on disk as each test
// completes. Returns the exit code of exit_code_for() (0 all tests ok, 1 some failed or
// interrupted, 2 some failed on bad input: a model that cannot be used fails its own tests
// while the other models run); throws sb::Error for bad input found before anything was
// measured (every model unusable included).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "scenario/http_run.hpp"
#include "scenario/run_context.hpp"
#include "scenario/run_fidelity.hpp"
#include "scenario/stage_sweep.hpp"

namespace sb {

struct RunOptions {
    MatrixSpec matrix;
    std::vector<std::string> rpc_servers;    // host:port
    OutputFormat format = OutputFormat::md;  // md | csv | json | jsonl (stdout)
    std::optional<std::string> out_path;     // the result document (JSON)
    std::string membw = "auto";              // auto | off | a number in GB/s
    bool progress = true;                    // progress lines on the error stream
    // Telemetry: auto (on where sources exist), on, off; sensors under sysfs_root.
    std::string telemetry = "auto";
    std::string sysfs_root = "/sys";
    double telemetry_hz = 10;
    double idle_s = 2;  // idle baseline before the first test (0: none)
    // Engines: in-process llama.cpp and/or a server over HTTP (see scenario/http_run.hpp).
    HttpRunOptions http;
    // --fidelity: each in-process test's logits against a reference (scenario/run_fidelity.hpp).
    RunFidelityOptions fidelity;
};

// Fills the parts of a result document that describe the tool, llama.cpp and the machine.
ResultDocument new_document(const std::string& command, const std::vector<std::string>& argv);

// Runs the sweep into doc through a RunContext (scenario/run_context.hpp): listener (may be
// null) hears of every test as it completes, progress goes to err; nothing is printed to stdout.
int run_benchmark(const RunOptions& opts, ResultDocument& doc, RunListener* listener,
                  std::ostream& err);

}  // namespace sb
