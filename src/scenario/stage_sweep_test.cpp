#include "scenario/stage_sweep.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"

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

namespace {

// A prefill stage of n repetitions of `tokens` tokens taking the given durations.
StageResult prefill_of(int tokens, const std::vector<int64_t>& durations_ns) {
    StageResult s;
    s.n_tokens = tokens;
    for (int64_t d : durations_ns) {
        s.duration_ns.push_back(d);
        s.tokens_per_s.push_back(tokens * 1e9 / d);
    }
    return s;
}

// A decode stage of `reps` repetitions of n tokens, each ~1 ms (with a little jitter); the
// token at index stall_at (if any) takes stall_ns instead.
DecodeResult decode_of(int reps, int n, std::optional<size_t> stall_at, int64_t stall_ns) {
    DecodeResult d;
    d.n_tokens = n;
    for (int r = 0; r < reps; ++r) {
        int64_t total = 0;
        for (int i = 0; i < n; ++i) {
            const size_t idx = d.token_latency_ns.size();
            const int64_t lat =
                stall_at && idx == *stall_at ? stall_ns : 1'000'000 + (i % 7) * 5'000;
            d.token_latency_ns.push_back(lat);
            total += lat;
        }
        d.duration_ns.push_back(total);
        d.token_latency_counts.push_back(n);
        d.tokens_per_s.push_back(n * 1e9 / total);
    }
    return d;
}

}  // namespace

TEST(RobustRate, PrefillIsTokensOverTheMedianRepetitionAndCountsTheSlowOne) {
    StageResult s = prefill_of(512, {100'000'000, 101'000'000, 99'000'000, 100'000'000, 300'000'000,
                                     100'000'000, 100'000'000});
    finish_stage(s);
    ASSERT_TRUE(s.robust.tokens_per_s);
    EXPECT_DOUBLE_EQ(*s.robust.tokens_per_s, 512 / 0.1);
    ASSERT_TRUE(s.robust.ci95_lo && s.robust.ci95_hi && s.robust.ci95_half_rel);
    EXPECT_LE(*s.robust.ci95_lo, *s.robust.tokens_per_s);
    EXPECT_GE(*s.robust.ci95_hi, *s.robust.tokens_per_s);
    EXPECT_EQ(s.stalls.indices, (std::vector<size_t>{4}));
    EXPECT_DOUBLE_EQ(s.stalls.excess, 200'000'000);
    // The mean is pulled down by the slow repetition; the robust figure is not.
    EXPECT_LT(*s.throughput.mean, 0.95 * *s.robust.tokens_per_s);
}

TEST(RobustRate, DecodeIsTheMedianInterTokenLatencyGroupedByRepetition) {
    DecodeResult d = decode_of(5, 64, 130, 150'000'000);  // a 150 ms stall in repetition 3
    finish_decode(d);
    EXPECT_EQ(d.token_stalls.indices, (std::vector<size_t>{130}));
    EXPECT_EQ(d.token_stalls.n, 320u);
    ASSERT_TRUE(d.token_stalls.median);
    EXPECT_DOUBLE_EQ(d.token_stalls.excess, 150'000'000 - *d.token_stalls.median);
    EXPECT_EQ(d.itl.n, 320u);
    ASSERT_TRUE(d.robust.tokens_per_s && d.robust.ci95_half_rel);
    EXPECT_DOUBLE_EQ(*d.robust.tokens_per_s, 1e9 / *d.itl.median);
    EXPECT_LT(*d.robust.ci95_half_rel, 0.01);
    EXPECT_LT(*d.throughput.mean, 0.9 * *d.robust.tokens_per_s);
    // Without counts, repetitions of n_tokens are assumed.
    DecodeResult e = decode_of(5, 64, 130, 150'000'000);
    e.token_latency_counts.clear();
    finish_decode(e);
    EXPECT_EQ(e.robust.ci95_lo, d.robust.ci95_lo);
    EXPECT_EQ(e.robust.ci95_hi, d.robust.ci95_hi);
}

TEST(TargetCi, HoldsTheRobustFigureNotTheMean) {
    // Twenty prefill repetitions, one stalled: the mean's CI is wide, the median's narrow.
    std::vector<int64_t> dur(20, 100'000'000);
    for (size_t i = 0; i < dur.size(); ++i)
        dur[i] += static_cast<int64_t>(i % 4) * 200'000;
    dur[7] = 400'000'000;
    TestResult r;
    r.prefill = prefill_of(512, dur);
    r.decode = decode_of(5, 64, 70, 200'000'000);
    const Summary mean = summarize(r.prefill->tokens_per_s);
    ASSERT_TRUE(mean.ci95_half_rel);
    EXPECT_GT(*mean.ci95_half_rel, 0.05);
    EXPECT_TRUE(target_ci_reached(r, 0.02));
    EXPECT_FALSE(target_ci_reached(r, 0.0001));

    TestConfig c;
    c.reps = 3;
    c.max_reps = 50;
    c.target_ci = 0.02;
    EXPECT_TRUE(repetition_done(r, c, 19));
    EXPECT_EQ(r.stopped_by, StopReason::target_ci);
}

TEST(StallWarning, SaysHowManyAndHowMuchAndThatTheRobustFigureHolds) {
    TestResult r;
    r.config.n_prompt = 512;
    r.config.n_gen = 64;
    r.prefill = prefill_of(512, {100'000'000, 101'000'000, 99'000'000, 100'000'000, 300'000'000});
    r.decode = decode_of(5, 64, 130, 150'000'000);
    finish_stage(*r.prefill);
    finish_decode(*r.decode);
    const auto w = stall_warning(r);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->code, "stalls");
    EXPECT_NE(w->message.find("pp512+tg64 on CPU"), std::string::npos) << w->message;
    EXPECT_NE(w->message.find("1 of 5 prefill repetitions slow, 200.0 ms added"), std::string::npos)
        << w->message;
    EXPECT_NE(w->message.find("1 of 320 decode tokens stalled"), std::string::npos) << w->message;
    EXPECT_NE(w->message.find("robust"), std::string::npos) << w->message;
    EXPECT_FALSE(w->hint.empty());

    TestResult quiet;
    quiet.prefill = prefill_of(512, {100'000'000, 101'000'000, 99'000'000});
    quiet.decode = decode_of(3, 16, std::nullopt, 0);
    finish_stage(*quiet.prefill);
    finish_decode(*quiet.decode);
    EXPECT_FALSE(stall_warning(quiet));

    // A stall that added under 1 % of its stage is counted, not warned about.
    TestResult small;
    small.decode = decode_of(5, 200, 10, 5'000'000);  // 4 ms over 1 s of decode
    finish_decode(*small.decode);
    EXPECT_EQ(small.decode->token_stalls.count(), 1u);
    EXPECT_FALSE(stall_warning(small));
}

TEST(ExpandMatrix, ThreadsZeroBecomesTheDefaultCount) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.n_threads = {0, 3};
    const auto tests = expand_matrix(m);
    ASSERT_EQ(tests.size(), 2u);
    EXPECT_EQ(tests[0].n_threads, default_thread_count());
    EXPECT_GT(tests[0].n_threads, 0);
    EXPECT_EQ(tests[1].n_threads, 3);
}
