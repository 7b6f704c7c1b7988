#pragma once
// `stagebench hybrid`: stage-aware execution measured end to end. The prompt is prefilled by an
// engine on one device set (A), the sequence state (KV cache) is moved with the engine's state
// API to an engine on another device set (B), and B decodes. In the same invocation, and
// interleaved with it repetition by repetition, the same workload runs on A alone and on B
// alone, so the three are compared side by side with bootstrap CIs, over a sweep of prompt and
// generation lengths.
//
// The document gets three tests per (n_prompt, n_gen) point: devices "A" and "B" (alone) and
// "A>B" (hybrid: its Placement, prefill on A, decode on B; TTFT = prefill + transfer + first
// token), and a section doc.hybrid (core/doc/hybrid_section.hpp) with the transfer of every
// repetition (time split into save on A and restore on B, bytes), the end-to-end time of every
// repetition of each mode, the comparisons and the crossover lengths, and the memory cost of
// holding the model for both device sets.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/hybrid_compare.hpp"
#include "core/result.hpp"
#include "core/workload.hpp"
#include "scenario/repetition.hpp"
#include "scenario/run_context.hpp"
#include "scenario/run_fidelity.hpp"
#include "scenario/telemetry_setup.hpp"

namespace sb {

struct HybridOptions {
    // What every mode shares: the model, threads, batch sizes, offload, flash attention and
    // KV cache types. Its devices are not read: the placement sets each mode's.
    Workload workload;
    Placement placement{"CPU", ""};  // prefill on placement.prefill, decode on placement.decode
    std::vector<int> n_prompt{512}, n_gen{128};  // every combination is one point
    int reps = 5;                                // repetitions of every mode at every point
    bool warmup = true;
    uint64_t seed = 1;
    bool baselines = true;                   // also A alone and B alone (interleaved)
    std::vector<std::string> rpc_servers;    // host:port
    OutputFormat format = OutputFormat::md;  // md | json (stdout)
    std::optional<std::string> out_path;     // the result document, rewritten after every point
    bool progress = true;
    TelemetryChoice telemetry{TelemetryMode::automatic, "/sys", 10, 0, {}};
    // --fidelity: each mode's logits against a reference after its point (the hybrid's decode
    // after the state transfer), scenario/run_fidelity.hpp.
    RunFidelityOptions fidelity;
};

// Validates the options (sb::Error usage/input before anything is measured), runs every point
// through a RunContext (each mode's test begun and ended there; the last word records a
// point's modes with what they measured) and returns the document with the outcome of its
// tests (what was measured is kept in the document and, with out_path, on disk). Its two
// engines come from env.engines. Prints nothing but progress and warnings on env.err: the
// caller shows the document (report/reporter.hpp print_document).
RunResult run_hybrid(const HybridOptions& opts, RunEnv env);

// A mode's test at point (n_prompt p, n_gen n): the shared workload on the mode's devices.
TestConfig hybrid_test_config(const HybridOptions& o, const DeviceSet& devices, int p, int n);

// One mode of a point and the runner that measures its test (scenario/repetition.hpp).
struct HybridMode {
    const char* name;  // kHybridMode, kPrefillAloneMode or kDecodeAloneMode
    std::unique_ptr<RepetitionRunner> runner;
};

// The modes of the point (n_prompt p, n_gen n) on engines a (o.placement.prefill) and b
// (o.placement.decode), both loaded by the caller for every point: the hybrid (prefill on a,
// the state moved to b, decode on b), then, with o.baselines, a alone and b alone. hooks_for(i,
// config) gives mode i's hooks (its own stage markers) for its test, named as a mode of the
// point (devices "A>B", "A", "B"). The runners poll no interrupt themselves: run_interleaved
// does.
using HooksFor = std::function<SweepHooks(size_t mode, const TestConfig& config)>;
std::vector<HybridMode> make_hybrid_modes(Engine& a, Engine& b, const HybridOptions& o, int p,
                                          int n, const HooksFor& hooks_for,
                                          const Clock& clock = now_ns);

// Measures a point's modes interleaved: every mode's warm-up (in mode order), then repetition k
// of every mode, the order rotated by k (mode (i + k) % modes), so that drift (heat, other
// load) favours no mode. interrupted is polled once before each round, so every mode ends with
// the same repetitions; when one mode fails, every mode of the point fails with its error and
// nothing more runs. progress (optional) gets "pp512+tg128: warmup" and "...: repetition k/N".
// Returns whether the point was interrupted.
bool run_interleaved(std::vector<HybridMode>& modes, const std::function<bool()>& interrupted,
                     const std::function<void(const std::string&)>& progress);

// The point's entry of the hybrid section from its modes' runners, without its tests (the
// caller's indices): n_prompt, n_gen, the transfer of every repetition (start, duration, save,
// restore, bytes, their summaries, bytes_per_token and gbps from the last repetition's bytes
// and the median duration), the end-to-end samples of every mode that measured some, and the
// comparison (compare_modes).
HybridPoint hybrid_point(int p, int n, const std::vector<HybridMode>& modes);

}  // namespace sb
