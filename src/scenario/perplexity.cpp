#include "scenario/perplexity.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace sb {

PerplexityPlan plan_perplexity(int64_t n_tokens, int n_ctx, int max_chunks) {
    if (n_ctx < 4)
        throw usage_error("--ctx " + std::to_string(n_ctx) + ": at least 4 tokens per window");
    if (n_tokens < 2 * int64_t{n_ctx})
        throw usage_error("the text tokenizes to " + std::to_string(n_tokens) +
                          " tokens: perplexity with --ctx " + std::to_string(n_ctx) +
                          " needs at least " + std::to_string(2 * int64_t{n_ctx}) +
                          " (a longer text or a smaller --ctx)");
    PerplexityPlan p;
    p.n_ctx = n_ctx;
    const int64_t whole = n_tokens / n_ctx;
    p.n_chunks = static_cast<int>(max_chunks < 0 ? whole : std::min<int64_t>(max_chunks, whole));
    p.first = n_ctx / 2;
    return p;
}

std::vector<int32_t> window_tokens(std::span<const int32_t> tokens, const PerplexityPlan& plan,
                                   int chunk, std::optional<int32_t> bos) {
    const auto start = static_cast<size_t>(chunk) * static_cast<size_t>(plan.n_ctx);
    std::vector<int32_t> w(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                           tokens.begin() + static_cast<std::ptrdiff_t>(start + plan.n_ctx));
    if (bos)
        w[0] = *bos;
    return w;
}

double token_nll(std::span<const float> logits, int32_t token) {
    const double m = *std::max_element(logits.begin(), logits.end());
    double s = 0;
    for (float x : logits)
        s += std::exp(static_cast<double>(x) - m);
    return m + std::log(s) - logits[static_cast<size_t>(token)];
}

double PerplexitySum::ppl() const {
    return count > 0 ? std::exp(nll / static_cast<double>(count)) : 0.0;
}

double PerplexitySum::ppl_error() const {
    if (count < 2)
        return 0;
    const double mean = nll / static_cast<double>(count);
    const double var = nll2 / static_cast<double>(count) - mean * mean;
    return var > 0 ? ppl() * std::sqrt(var / static_cast<double>(count - 1)) : 0.0;
}

}  // namespace sb
