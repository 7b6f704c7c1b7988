#pragma once
// `stagebench hybrid`: stage-aware execution measured end to end. The prompt is prefilled by an
// engine on one device set (A), the sequence state (KV cache) is moved with the engine's state
// API to an engine on another device set (B), and B decodes. In the same invocation, and
// interleaved with it repetition by repetition, the same workload runs on A alone and on B
// alone, so the three are compared side by side with bootstrap CIs, over a sweep of prompt and
// generation lengths.
//
// The document gets three tests per (n_prompt, n_gen) point: devices "A" and "B" (alone) and
// "A>B" (hybrid: prefill on A, decode on B, TTFT = prefill + transfer + first token), and a
// section doc.hybrid (core/doc/hybrid_section.hpp) with the transfer of every repetition (time
// split into save on A and restore on B, bytes), the end-to-end time of every repetition of each
// mode, the comparisons and the crossover lengths, and the memory cost of holding the model for
// both device sets.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "scenario/telemetry_setup.hpp"

namespace sb {

struct HybridOptions {
    // What every mode shares: model_path, n_threads, n_batch, n_ubatch, n_gpu_layers,
    // flash_attn, type_k, type_v, reps (every mode, every point), warmup and seed. Its devices,
    // n_prompt, n_gen and n_depth are not read: the modes and the sweep below set them.
    TestConfig base;
    std::string prefill_device = "CPU";  // device set of the prefill engine, e.g. "CPU", "BLAS"
    std::string decode_device;           // device set of the decode engine, e.g. "RPC0"
    std::vector<int> n_prompt{512}, n_gen{128};  // every combination is one point
    bool baselines = true;                       // also A alone and B alone (interleaved)
    std::vector<std::string> rpc_servers;        // host:port
    std::string format = "md";                   // md | json (stdout)
    std::optional<std::string> out_path;         // the result document, rewritten after every point
    bool progress = true;
    TelemetryChoice telemetry{"auto", "/sys", 10, 0};
};

// Mode names used as keys in doc.hybrid.
inline constexpr const char* kHybridMode = "hybrid";
inline constexpr const char* kPrefillAloneMode = "prefill_alone";  // A for both stages
inline constexpr const char* kDecodeAloneMode = "decode_alone";    // B for both stages

// Validates the options (sb::Error usage/input before anything is measured), runs every point
// and fills doc. Returns exit_code_for() of its tests: 0 when every test succeeded, 1 when some
// failed or the run was interrupted, 2 when one failed on bad input (what was measured is kept
// in doc and, with out_path, on disk).
int run_hybrid(const HybridOptions& opts, ResultDocument& doc, std::ostream& out,
               std::ostream& err);

// The comparisons of one point from its end-to-end samples (nanoseconds per repetition):
// speedup of the hybrid over each mode alone (alone / hybrid, ratio of medians with a bootstrap
// 95% CI) and a verdict ("hybrid faster", "hybrid slower", "no difference"). Modes without
// samples are left out.
nlohmann::json compare_modes(const std::vector<int64_t>& hybrid_e2e,
                             const std::vector<int64_t>& prefill_alone_e2e,
                             const std::vector<int64_t>& decode_alone_e2e);

// Crossover lengths over a sweep: for every n_gen, the smallest n_prompt from which on the
// hybrid wins against both modes alone at every longer prompt of the sweep (and likewise for
// every n_prompt over n_gen). points: the JSON of doc.hybrid->points.
nlohmann::json crossovers(const nlohmann::json& points);

}  // namespace sb
