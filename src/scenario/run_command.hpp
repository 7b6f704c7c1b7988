#pragma once
// `stagebench run` and `stagebench demo` end to end: validate inputs, describe the machine,
// run the sweep, stream rows to a reporter and keep the result document on disk as each test
// completes. Returns the document and the outcome (Outcome: ok, a test failed or the run was
// interrupted, or a test failed on bad input: a model that cannot be used fails its own tests
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
    // Telemetry: auto (on where sources exist), on, off; sensors under its sysfs root, an idle
    // baseline before the first test.
    TelemetryChoice telemetry{TelemetryMode::automatic, "/sys", 10, 2, {}};
    // Engines: in-process llama.cpp and/or a server over HTTP (see scenario/http_run.hpp).
    HttpRunOptions http;
    // --fidelity: each in-process test's logits against a reference (scenario/run_fidelity.hpp).
    RunFidelityOptions fidelity;
};

// Fills the parts of a result document that describe the tool, llama.cpp and the machine.
ResultDocument new_document(const std::string& command, const std::vector<std::string>& argv);

// Runs the sweep into env.doc through a RunContext (scenario/run_context.hpp): env.listener
// (may be null) hears of every test as it completes, progress goes to env.err, the engines
// come from env.engines; nothing is printed to stdout.
RunResult run_benchmark(const RunOptions& opts, RunEnv env);

}  // namespace sb
