#pragma once
// Perplexity of a text with the windowing of llama.cpp's llama-perplexity (tools/perplexity at
// the pinned version), so that the figures compare with it: the text is tokenized once (with the
// BOS when the vocabulary adds one), cut into n_chunks = n_tokens / n_ctx windows of n_ctx tokens
// (the remainder is dropped), each window evaluated on a cleared cache with its first token
// replaced by the BOS (when the vocabulary adds one), and only the second half of every window
// scored: the logits at positions first = n_ctx / 2 .. n_ctx - 2 predict the tokens at first + 1
// .. n_ctx - 1, so every scored token has at least n_ctx / 2 tokens of context. PPL =
// exp(mean negative log-likelihood over every scored token). At least 2 x n_ctx tokens are
// needed, as llama-perplexity asks. Pure arithmetic: the logits come from the caller.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sb {

struct PerplexityPlan {
    int n_ctx = 0;
    int n_chunks = 0;  // windows evaluated
    int first = 0;     // the first scored position of a window: n_ctx / 2
    // Tokens scored per window: n_ctx - first - 1.
    int scored_per_chunk() const { return n_ctx - first - 1; }
    int64_t scored() const { return int64_t{n_chunks} * scored_per_chunk(); }
};

// Throws sb::Error(usage) for n_ctx < 4 and when the text has fewer than 2 x n_ctx tokens ("the
// text tokenizes to N tokens: perplexity with --ctx C needs at least 2C"). max_chunks < 0: every
// whole window; otherwise at most that many (llama-perplexity's --chunks).
PerplexityPlan plan_perplexity(int64_t n_tokens, int n_ctx, int max_chunks = -1);

// The tokens of window `chunk`, its first replaced by bos when given.
std::vector<int32_t> window_tokens(std::span<const int32_t> tokens, const PerplexityPlan& plan,
                                   int chunk, std::optional<int32_t> bos);

// -log softmax(logits)[token], in nats.
double token_nll(std::span<const float> logits, int32_t token);

// Sums of negative log-likelihoods: PPL and its standard error as llama-perplexity states them
// ("Final estimate: PPL = exp(mean) +/- PPL x sqrt(var / (count - 1))").
struct PerplexitySum {
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    void add(double v) {
        nll += v;
        nll2 += v * v;
        ++count;
    }
    double ppl() const;
    double ppl_error() const;  // 0 for fewer than 2 tokens
};

}  // namespace sb
