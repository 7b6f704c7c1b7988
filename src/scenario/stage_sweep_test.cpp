#include "scenario/stage_sweep.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

using namespace sb;

TEST(ExpandMatrix, EveryCombinationIsOneTestGroupedByPlacement) {
    MatrixSpec m;
    m.models = {"a.gguf", "b.gguf"};
    m.devices = {"CPU", "BLAS"};
    m.n_prompt = {128, 512};
    m.n_threads = {1, 2};
    auto tests = expand_matrix(m);
    ASSERT_EQ(tests.size(), 16u);
    // Tests that share a model and devices are adjacent: at most one load per group.
    int switches = 0;
    for (size_t i = 1; i < tests.size(); ++i)
        switches += tests[i].model_path != tests[i - 1].model_path ||
                    tests[i].devices != tests[i - 1].devices;
    EXPECT_EQ(switches, 3);
    EXPECT_EQ(tests[0].test_name(), "pp128+tg128");
}

TEST(ExpandMatrix, UbatchNeverExceedsBatch) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.n_batch = {256};
    m.n_ubatch = {512};
    EXPECT_EQ(expand_matrix(m)[0].n_ubatch, 256);
}

TEST(ExpandMatrix, AdaptiveDefaultsToFiftyRepsAtMost) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.reps = 3;
    m.target_ci = 0.02;
    EXPECT_EQ(expand_matrix(m)[0].max_reps, 50);
    m.target_ci.reset();
    EXPECT_EQ(expand_matrix(m)[0].max_reps, 3);
}

TEST(ExpandMatrix, RejectsWhatMeasuresNothing) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.n_prompt = {0};
    EXPECT_THROW(expand_matrix(m), Error);
    m.n_prompt = {16};
    m.n_batch = {0};
    EXPECT_THROW(expand_matrix(m), Error);
    m.n_batch = {16};
    m.reps = 0;
    EXPECT_THROW(expand_matrix(m), Error);
    m.reps = 1;
    m.models.clear();
    EXPECT_THROW(expand_matrix(m), Error);
}

TEST(TestConfig, NamesLikeLlamaBench) {
    TestConfig c;
    c.n_prompt = 512;
    c.n_gen = 0;
    EXPECT_EQ(c.test_name(), "pp512");
    c.n_gen = 128;
    c.n_depth = 1024;
    EXPECT_EQ(c.test_name(), "pp512+tg128 @ d1024");
}

TEST(PrefillFlops, DenseTermExcludesTheEmbeddingLookupAndAddsAttention) {
    ModelShape s;
    s.n_layer = 2;
    s.n_embd = 4;
    s.n_vocab = 10;
    s.n_attn = 4;
    // 1000 params, 40 of them the embedding; 3 tokens at depth 0: pairs = 1 + 2 + 3 = 6.
    const double expect = 2.0 * 960 * 3 + 2.0 * 40 + 4.0 * 2 * 4 * 6;
    EXPECT_DOUBLE_EQ(prefill_flops(1000, s, 0, 3), expect);
    // At depth 5 every query sees 5 more keys.
    EXPECT_DOUBLE_EQ(prefill_flops(1000, s, 5, 3) - expect, 4.0 * 2 * 4 * 15);
}
