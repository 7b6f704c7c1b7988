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
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/hybrid_compare.hpp"
#include "core/result.hpp"
#include "scenario/repetition.hpp"
#include "scenario/run_fidelity.hpp"
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
    OutputFormat format = OutputFormat::md;      // md | json (stdout)
    std::optional<std::string> out_path;         // the result document, rewritten after every point
    bool progress = true;
    TelemetryChoice telemetry{"auto", "/sys", 10, 0};
    // --fidelity: each mode's logits against a reference after its point (the hybrid's decode
    // after the state transfer), scenario/run_fidelity.hpp.
    RunFidelityOptions fidelity;
};

// Validates the options (sb::Error usage/input before anything is measured), runs every point
// and fills doc. Returns exit_code_for() of its tests: 0 when every test succeeded, 1 when some
// failed or the run was interrupted, 2 when one failed on bad input (what was measured is kept
// in doc and, with out_path, on disk). Prints nothing but progress and warnings on err: the
// caller shows the document (report/reporter.hpp print_document).
int run_hybrid(const HybridOptions& opts, ResultDocument& doc, std::ostream& err);

// One mode of a point and the runner that measures its test (scenario/repetition.hpp).
struct HybridMode {
    const char* name;  // kHybridMode, kPrefillAloneMode or kDecodeAloneMode
    std::unique_ptr<RepetitionRunner> runner;
};

// The modes of the point (n_prompt p, n_gen n) on engines a (o.prefill_device) and b
// (o.decode_device), both loaded by the caller for every point: the hybrid (prefill on a, the
// state moved to b, decode on b), then, with o.baselines, a alone and b alone. hooks_for(i)
// gives mode i's hooks (its own stage markers); each test is named as a mode of the point
// (devices "A>B", "A", "B"). The runners poll no interrupt themselves: run_interleaved does.
std::vector<HybridMode> make_hybrid_modes(Engine& a, Engine& b, const HybridOptions& o, int p,
                                          int n, const std::function<SweepHooks(size_t)>& hooks_for,
                                          const Clock& clock = now_ns);

// Measures a point's modes interleaved: every mode's warm-up (in mode order), then repetition k
// of every mode, the order rotated by k (mode (i + k) % modes), so that drift (heat, other
// load) favours no mode. interrupted is polled once before each round, so every mode ends with
// the same repetitions; when one mode fails, every mode of the point fails with its error and
// nothing more runs. progress (optional) gets "pp512+tg128: warmup" and "...: repetition k/N".
// Returns whether the point was interrupted.
bool run_interleaved(std::vector<HybridMode>& modes, const std::function<bool()>& interrupted,
                     const std::function<void(const std::string&)>& progress);

// The point's entry of doc.hybrid->points, as JSON, from its modes' runners, without "tests" (the
// caller's indices): n_prompt, n_gen, the transfer of every repetition (start, duration, save,
// restore, bytes, their summaries, bytes_per_token and gbps from the last repetition's bytes
// and the median duration), the end-to-end samples of every mode that measured some, and the
// comparison (compare_modes).
nlohmann::json hybrid_point_json(int p, int n, const std::vector<HybridMode>& modes);

}  // namespace sb
