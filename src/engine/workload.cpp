#include "engine/workload.hpp"

#include <random>

namespace sb {

LoadSpec load_spec(const Workload& w, int n_ctx) {
    LoadSpec ls;
    static_cast<Workload&>(ls) = w;
    ls.n_ctx = n_ctx;
    return ls;
}

std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
    std::vector<int32_t> t(static_cast<size_t>(n > 0 ? n : 0));
    for (auto& x : t)
        x = dist(rng);
    return t;
}

std::vector<int32_t> sequence_tokens(int n, int32_t n_vocab, uint64_t seed,
                                     std::optional<int32_t> bos) {
    std::vector<int32_t> t = random_tokens(n, n_vocab, seed);
    if (bos && !t.empty())
        t[0] = *bos;
    return t;
}

// Two odd multipliers, so that the prompt and the generated tokens of one repetition, and the
// inputs of neighbouring seeds, never share a generator seed in practice.
uint64_t prompt_seed(uint64_t seed, int rep) {
    return seed * 1000003 + static_cast<uint64_t>(static_cast<int64_t>(rep));
}

uint64_t gen_seed(uint64_t seed, int rep) {
    return seed * 7919 + static_cast<uint64_t>(static_cast<int64_t>(rep));
}

DecodeTiming time_decode(Engine& engine, std::span<const int32_t> tokens, const Clock& clock,
                         std::vector<int64_t>& latency_ns, const std::function<bool()>& stop) {
    DecodeTiming d;
    d.start_ns = clock();
    int64_t prev = d.start_ns;
    for (int32_t tok : tokens) {
        if (d.n_tokens > 0 && stop && stop())
            break;
        int64_t t = 0;
        try {
            t = engine.decode_step(tok);
        } catch (...) {
            // A step the engine gave up for the stop (llama.cpp's abort callback): the tokens
            // before it are the stage.
            if (d.n_tokens > 0 && stop && stop())
                break;
            throw;
        }
        latency_ns.push_back(t - prev);
        prev = t;
        ++d.n_tokens;
    }
    d.end_ns = prev;
    return d;
}

}  // namespace sb
