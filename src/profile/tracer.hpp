#pragma once
// The per-operator profiler of `stagebench ops`: runs the real prefill and decode graphs of a
// model through llama.cpp in-process and measures, for every node, where it ran and its call
// and op times; measures the same stages uninstrumented for reconciliation.
//
// Method.
//  * Call time: llama.cpp's eval callback (llama_context_params::cb_eval, the
//    ggml_backend_sched eval callback) answers "yes" for every node, so the scheduler computes
//    the graph node by node: for each node it dispatches that node alone to its backend,
//    synchronises, and calls back. The time from the "ask" callback to the "done" callback is
//    the node's call time: dispatch + transport + synchronisation + compute. Median over
//    traced repetitions.
//  * Backend of a node: the scheduler's own assignment, read from its GGML_SCHED_DEBUG=2 dump
//    (llama.cpp exposes no scheduler handle; a node's buffer cannot tell BLAS from CPU); the
//    buffer's device when the dump is missing. Split boundaries, inputs copied between
//    backends, and the time those copies take (the gap before a split's first node) come from
//    the same dump and callbacks.
//  * Op time: op_replay.hpp: each distinct node (same op, parameters, layouts, types, buffer
//    types, backend) replayed many times back to back in one graph on its backend.
//  * Reconciliation: the stage run on a context without the callback (as `stagebench run`
//    times it), several repetitions, median.
// Fallback: ops that ran on a backend other than the requested device(s) are replayed on the
// requested one too, when it supports them, for the penalty.
//
// Throws sb::Error(input) for an unusable model or device; never calls exit.
#include <functional>
#include <string>
#include <vector>

#include "profile/ops_profile.hpp"

namespace sb {

struct OpsOptions {
    std::string model_path;
    // One device set, as `run --device` spells one test: {"CPU"}, {"BLAS"}, {"RPC0"},
    // {"BLAS", "RPC0"}. The host CPU is always present.
    std::vector<std::string> devices{"CPU"};
    int n_prompt = 512;
    int n_depth = 0;
    bool prefill = true;
    bool decode = true;
    int n_threads = 0;  // 0 = sb::default_thread_count()
    int n_batch = 2048;
    int n_ubatch = 512;
    int n_gpu_layers = 99;
    std::string flash_attn = "auto";
    std::string type_k = "f16";
    std::string type_v = "f16";
    int replay_copies = 16;  // --replay N
    int traced_reps = 3;     // node-by-node repetitions (call times are their medians)
    int plain_reps = 5;      // uninstrumented repetitions (prefill; decode times more tokens)
    size_t top_n = 10;
    // `stagebench decompose`: also measure each backend's no-work dispatch and the activation
    // conversion of the accelerator's mat-muls, and fill StageProfile::decomposition.
    bool decompose = false;
    uint64_t seed = 1;
};

using ProgressFn = std::function<void(const std::string&)>;

OpsProfile profile_ops(const OpsOptions& opts, const ProgressFn& progress);

}  // namespace sb
