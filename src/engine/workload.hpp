#pragma once
// A workload on an Engine, defined once for every scenario and the profiler: the engine's load
// parameters of a workload (the one function that makes them), the random tokens each stage
// gets (made before its clock starts), the seeds of repetition rep's inputs, and the one
// function that times decode.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/engine.hpp"

namespace sb {

// The engine's load parameters of workload w (core/workload.hpp) with a context of n_ctx tokens
// (0: the engine's default) and no eval callback.
LoadSpec load_spec(const Workload& w, int n_ctx);

// n tokens drawn uniformly from [0, n_vocab) by a std::mt19937_64 seeded with seed (n <= 0:
// none). Deterministic for a given (n, n_vocab, seed); a longer draw starts with the shorter.
std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint64_t seed);

// random_tokens(n, n_vocab, seed) with the first one replaced by bos when given: a sequence
// that starts at position 0 starts as the model expects (pass nullopt for one that continues).
std::vector<int32_t> sequence_tokens(int n, int32_t n_vocab, uint64_t seed,
                                     std::optional<int32_t> bos);

// The seed of the prompt and of the generated tokens of repetition rep (0-based; -1 is the
// warm-up) of a test seeded with seed: every repetition gets other inputs, so no cache helps.
uint64_t prompt_seed(uint64_t seed, int rep);
uint64_t gen_seed(uint64_t seed, int rep);

// One decode stage: the tokens fed one at a time with decode_step().
struct DecodeTiming {
    int64_t start_ns = 0;  // clock() just before the first decode_step
    int64_t end_ns = 0;    // completion of the last token decoded (start_ns when none was)
    int64_t n_tokens = 0;  // tokens decoded: all of them unless stop() ended the loop early
};

// Times decode of tokens on engine: start from clock(), then each token's latency (its
// completion, as decode_step returns it, minus the previous completion or the start) appended
// to latency_ns, one per token decoded. Between the steps only stop (when given) runs: polled
// before every token but the first, true ends the loop there (Ctrl-C inside a decode of
// thousands of tokens), so at least one token is decoded when there is one; a step that throws
// while stop() is true (the engine gave it up for the stop) ends the loop the same way, after
// at least one token. latency_ns should have the capacity reserved (a reallocation would land
// inside the timed loop). Throws what decode_step throws otherwise; the latencies of the tokens
// before stay appended.
DecodeTiming time_decode(Engine& engine, std::span<const int32_t> tokens, const Clock& clock,
                         std::vector<int64_t>& latency_ns, const std::function<bool()>& stop = {});

}  // namespace sb
