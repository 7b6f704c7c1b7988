#pragma once
// `stagebench decompose --mode` and `import hexagon-profile --mode`: the CLI side of the
// pipeline-modes experiment (scenario/mode_experiment.hpp). cmd_ops.cpp adds the options to
// `decompose` and hands over when --mode is given.
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "scenario/mode_experiment.hpp"
#include "scenario/ops_run.hpp"

namespace sb::cli {

struct DecomposeModeArgs {
    std::vector<std::string> modes;  // --mode as given
    int rounds = 5;                  // -r, --rounds
    int n_gen = 16;                  // -n, --n-gen: decode tokens per run
};

// Adds --mode, -r/--rounds and -n/--n-gen to `decompose`.
std::shared_ptr<DecomposeModeArgs> add_decompose_mode_options(CLI::App* cmd);

// The ops options decompose --mode passes on to every child.
struct ModeChildSettings {
    OpsCommandOptions o;  // model, devices, prompt, depth, threads, batches, cache types, seed, rpc
    std::string stage;    // prefill | decode | both
    bool quiet = false;
};

// A child stagebench's flags for the workload's engine settings, as the parent was given
// them: -b, --ubatch-size, --n-gpu-layers, --flash-attn, --cache-type-k and --cache-type-v (the
// runs of decompose --mode and ops' device-timer pass).
std::vector<std::string> workload_child_flags(const Workload& w);

// Runs decompose --mode (m.modes not empty) and prints the document: every run a fresh
// `stagebench run` of this binary with the mode's environment. Sets ctx.exit_code.
void run_decompose_modes(Context& ctx, const DecomposeModeArgs& m, const ModeChildSettings& c);

// The launcher run_decompose_modes uses: re-executes `self run ...` (one repetition after a
// warm-up, no telemetry, its document to a temporary file in dir) with the mode's environment
// and STAGEBENCH_RECORD_ENV naming every variable of record_names, and reads the stage times,
// the threads and system.backend_env from the child's document. A child that crashes, times
// out or writes no document is an error of that run.
ModeLauncher make_mode_launcher(const std::string& self, const ModeChildSettings& c, int n_gen,
                                const std::vector<std::string>& record_names,
                                const std::string& dir);

}  // namespace sb::cli
