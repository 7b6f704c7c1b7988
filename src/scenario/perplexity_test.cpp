#include "scenario/perplexity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace sb {
namespace {

TEST(Perplexity, WindowsAreLlamaPerplexitys) {
    const PerplexityPlan p = plan_perplexity(300, 64);
    EXPECT_EQ(p.n_chunks, 4);  // 300 / 64, the remainder dropped
    EXPECT_EQ(p.first, 32);
    EXPECT_EQ(p.scored_per_chunk(), 31);  // positions 32..62 predict tokens 33..63
    EXPECT_EQ(p.scored(), 124);
    EXPECT_EQ(plan_perplexity(300, 64, 2).n_chunks, 2);
    EXPECT_EQ(plan_perplexity(300, 64, 9).n_chunks, 4);
    EXPECT_EQ(plan_perplexity(128, 64).n_chunks, 2);  // exactly two windows: enough
    const PerplexityPlan odd = plan_perplexity(20, 5);
    EXPECT_EQ(odd.first, 2);
    EXPECT_EQ(odd.scored_per_chunk(), 2);
}

TEST(Perplexity, ATextShorterThanTwoWindowsIsAUsageError) {
    try {
        plan_perplexity(127, 64);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(),
                     "the text tokenizes to 127 tokens: perplexity with --ctx 64 needs at least "
                     "128 (a longer text or a smaller --ctx)");
    }
    EXPECT_THROW(plan_perplexity(1000, 3), Error);
}

TEST(Perplexity, EachWindowStartsWithTheBos) {
    std::vector<int32_t> t(20);
    std::iota(t.begin(), t.end(), 100);
    const PerplexityPlan p = plan_perplexity(t.size(), 8);
    EXPECT_EQ(window_tokens(t, p, 1, 1),
              (std::vector<int32_t>{1, 109, 110, 111, 112, 113, 114, 115}));
    EXPECT_EQ(window_tokens(t, p, 0, std::nullopt),
              (std::vector<int32_t>{100, 101, 102, 103, 104, 105, 106, 107}));
}

TEST(Perplexity, NllAndPerplexity) {
    // Uniform logits over 8 tokens: NLL log 8 whatever the token, PPL 8.
    const std::vector<float> uniform(8, 3.5f);
    EXPECT_NEAR(token_nll(uniform, 5), std::log(8.0), 1e-12);
    // Two tokens, logits 0 and log 3: p = 1/4 and 3/4.
    const std::vector<float> two{0.0f, static_cast<float>(std::log(3.0))};
    EXPECT_NEAR(token_nll(two, 0), std::log(4.0), 1e-6);
    EXPECT_NEAR(token_nll(two, 1), std::log(4.0 / 3.0), 1e-6);
    // Large logits do not overflow.
    EXPECT_NEAR(token_nll(std::vector<float>{1000.0f, 1000.0f}, 1), std::log(2.0), 1e-12);

    PerplexitySum s;
    EXPECT_EQ(s.ppl(), 0.0);
    s.add(std::log(8.0));
    EXPECT_EQ(s.ppl_error(), 0.0);
    s.add(std::log(2.0));
    EXPECT_NEAR(s.ppl(), 4.0, 1e-12);  // exp(mean(log 8, log 2)) = sqrt(16)
    // llama-perplexity's error: PPL x sqrt(var / (n - 1)), var = mean(v^2) - mean^2.
    const double mean = (std::log(8.0) + std::log(2.0)) / 2;
    const double var =
        (std::log(8.0) * std::log(8.0) + std::log(2.0) * std::log(2.0)) / 2 - mean * mean;
    EXPECT_NEAR(s.ppl_error(), 4.0 * std::sqrt(var / 1), 1e-12);
}

}  // namespace
}  // namespace sb
