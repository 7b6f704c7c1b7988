#pragma once
// `stagebench demo`: the main job on an embedded default. Generates a scaled-down synthetic
// model, starts a loopback RPC server (`stagebench rpc-server`, this binary), and runs a short
// stage sweep on every available backend (CPU, CPU+BLAS, RPC), then a hybrid run (prefill on
// the CPU, decode on the RPC device) and the advice drawn from both. Writes <dir>/model.gguf,
// <dir>/result.json, <dir>/hybrid.json, <dir>/summary.md (also to `out`), <dir>/report.html
// (both documents) and <dir>/trace.json (the hybrid run's timeline, else the run's).
// A script of the commands a user would type (synth, rpc-server, run, hybrid, advise, report,
// trace), composed from what those commands call; it lives with the CLI because it drives
// measuring, analysis and reporting together.
#include <ostream>
#include <string>
#include <vector>

namespace sb {

struct DemoOptions {
    std::string dir = "stagebench-demo";
    std::string preset = "llama-3.2-1b";
    int layers = 2;
    std::string quant = "q4_0";
    int n_prompt = 128, n_gen = 32, reps = 3, threads = 0;
    bool rpc = true;  // start and measure a loopback RPC server
    bool progress = true;
    std::vector<std::string> argv;
};

// Returns the exit code (0 ok, 1 some test failed). Throws sb::Error for unusable options.
int run_demo(const DemoOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace sb
