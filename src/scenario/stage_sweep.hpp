#pragma once
// The stage sweep behind `stagebench run`: for every point of a test matrix, prefill and
// decode measured separately on one engine by the one repetition loop (repetition.hpp), with
// warmup, repetitions (fixed or adaptive) and raw samples kept. A failing test is recorded with
// its error and the sweep goes on.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine.hpp"
#include "scenario/repetition.hpp"

namespace sb {

// Comma lists from the command line, typed; every combination is one test (llama-bench's
// matrix). Each workload field (core/workload.hpp) is an axis, with the lengths beside them.
struct MatrixSpec {
    std::vector<std::string> models;
    std::vector<DeviceSet> devices{"CPU"};
    std::vector<int> n_prompt{512}, n_gen{128}, n_depth{0}, n_threads{0}, n_batch{2048},
        n_ubatch{512}, n_gpu_layers{99};
    std::vector<FlashAttn> flash_attn{FlashAttn::automatic};
    std::vector<KvType> type_k{KvType::f16}, type_v{KvType::f16};
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

// A "stalls" warning when stalls (slow repetitions or stalled decode tokens) added at least
// kStallWarnFraction of their stage's time: how many, the time they added, and that the robust
// figure is unaffected. nullopt otherwise (the document counts every stall regardless).
inline constexpr double kStallWarnFraction = 0.01;
std::optional<Warning> stall_warning(const TestResult& r);

// Runs one test: a RepetitionRunner (scenario/repetition.hpp) driven until no repetition
// remains. Never throws for a failure of the test itself: that is recorded in the result's
// status and error.
TestResult run_test(Engine& engine, const TestConfig& config, const SweepHooks& hooks,
                    std::optional<double> membw_gbps, Clock clock = now_ns);

}  // namespace sb
