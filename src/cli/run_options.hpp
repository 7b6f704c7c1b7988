#pragma once
// Command-line options shared by `run` and `demo` (the test matrix and output choices).
#include <CLI/CLI.hpp>
#include <memory>

#include "scenario/run_command.hpp"

namespace sb::cli {

struct RunArgs {
    RunOptions run;
    std::string target_ci;  // "2%" or "0.02"
    bool no_warmup = false;
    bool quiet = false;
};

// Adds the matrix options (-p, -n, -d, -t, -b, --ubatch-size, --device, ...) to cmd.
void add_matrix_options(CLI::App* cmd, RunArgs& a);
// Adds -o, --out, --membw, --rpc, -q.
void add_output_options(CLI::App* cmd, RunArgs& a);
// Adds --engine, --url, --api, --timeout (engines behind HTTP).
void add_engine_options(CLI::App* cmd, RunArgs& a);
// Applies the derived options (target CI, warmup, progress) and checks the matrix
// (check_matrix). Throws sb::Error(usage).
void finish_run_args(RunArgs& a);
// Checks the values of a test matrix against each other, before anything is read or measured:
// no empty comma list, every test's context within kMaxTokens (flag_checks.hpp), --max-reps
// not below -r, the token latencies a test keeps within kMaxTokenSamples. Throws
// sb::Error(usage) naming the flags.
void check_matrix(const MatrixSpec& m);

}  // namespace sb::cli
