#pragma once
// The stage sweep behind `stagebench run`: for every point of a test matrix, prefill and
// decode measured separately on one engine, with warmup, repetitions (fixed or adaptive) and
// raw samples kept. A failing test is recorded with its error and the sweep goes on.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine.hpp"

namespace sb {

// Comma lists from the command line; every combination is one test (llama-bench's matrix).
struct MatrixSpec {
    std::vector<std::string> models;
    std::vector<std::string> devices{"CPU"};
    std::vector<int> n_prompt{512}, n_gen{128}, n_depth{0}, n_threads{0}, n_batch{2048},
        n_ubatch{512}, n_gpu_layers{99};
    std::vector<std::string> flash_attn{"auto"}, type_k{"f16"}, type_v{"f16"};
    int reps = 5;
    std::optional<double> target_ci;
    int max_reps = 0;  // 0 = reps (or 50 with target_ci)
    bool warmup = true;
    uint64_t seed = 1;
};

// Expands the matrix, ordered so that tests sharing a model placement are adjacent (one load
// each); a thread count of 0 becomes default_thread_count(), so every config names the threads
// it runs with. Throws sb::Error(usage) for invalid values (p and n both 0, negative sizes...).
std::vector<TestConfig> expand_matrix(const MatrixSpec& spec);

struct SweepHooks {
    // Called after every test, before the next starts (write results, print a row).
    std::function<void(const TestResult&)> on_test_done;
    // Progress lines for humans (stderr): events of their own, e.g. a server being started.
    std::function<void(const std::string&)> progress;
    // A repetition begins: its number (1-based) and the most there can be (max_reps). Called
    // outside the timed regions.
    std::function<void(int, int)> repetition;
    // Stage markers for telemetry: (stage name, begin?, tokens of the stage on the end mark),
    // called just outside the timed region at each boundary.
    std::function<void(const std::string&, bool, std::optional<int64_t>)> stage_marker;
    // What the test is about to do ("loading the model", "warmup", "filling the KV cache",
    // "prefill", "decode"), called outside the timed regions; the string is a literal.
    std::function<void(const char*)> activity;
};

// Approximate FLOPs of a prefill of n_prompt tokens at KV depth n_depth: dense matrix
// multiplications (the embedding lookup excluded, one output row) plus attention.
double prefill_flops(uint64_t n_params, const ModelShape& shape, int n_depth, int n_prompt);

// n tokens drawn uniformly from [0, n_vocab) by a generator seeded with seed: the inputs of
// every timed stage, made before its clock starts.
std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint64_t seed);

// How an engine loads a test: its model, devices ('+'-split), offload and context settings, a
// context of n_depth + n_prompt + n_gen tokens and a little room.
LoadSpec load_spec_for(const TestConfig& c);

// Fills a stage's summaries from its raw samples: duration, throughput, the slow repetitions
// (stalls) and the robust rate from the median repetition.
void finish_stage(StageResult& s);
// finish_stage, then the inter-token latency summary, the stalled tokens and the robust rate
// from the median inter-token latency (token_latency_counts groups the tokens by repetition;
// empty: n_tokens per repetition).
void finish_decode(DecodeResult& d);

// The robust rates of StageResult::robust from the raw samples so far.
RobustRate stage_robust_rate(const StageResult& s);
RobustRate decode_robust_rate(const DecodeResult& d);

// Whether every measured stage's robust tokens/s has a 95 % CI half-width within target
// (relative to the rate): the median-based figure, which stalls do not move.
bool target_ci_reached(const TestResult& r, double target);

// A "stalls" warning when stalls (slow repetitions or stalled decode tokens) added at least
// kStallWarnFraction of their stage's time: how many, the time they added, and that the robust
// figure is unaffected. nullopt otherwise (the document counts every stall regardless).
inline constexpr double kStallWarnFraction = 0.01;
std::optional<Warning> stall_warning(const TestResult& r);

// Records that repetition rep (0-based) finished and says whether the test is done: the
// minimum repetitions reached without --target-ci, the CI target met, or max_reps reached
// (r.stopped_by says which).
bool repetition_done(TestResult& r, const TestConfig& c, int rep);

// Runs one test. Never throws for a failure of the test itself: that is recorded in the
// result's status and error.
TestResult run_test(Engine& engine, const TestConfig& config, const SweepHooks& hooks,
                    std::optional<double> membw_gbps);

}  // namespace sb
