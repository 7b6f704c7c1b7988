#include "scenario/stage_sweep.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "scenario/test_util.hpp"

using namespace sb;
using namespace sb::test;

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
    m.n_gen = {0};
    EXPECT_THROW(expand_matrix(m), Error);
    m.n_prompt = {-1};
    m.n_gen = {8};
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

TEST(ExpandMatrix, PromptZeroIsDecodeAloneAndAPointOfNeitherIsLeftOut) {
    // llama-bench's -p 0,32 -n 0,8 makes pp32 and tg8; the cross product here adds pp32+tg8
    // and leaves out the point with neither.
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.n_prompt = {0, 32};
    m.n_gen = {0, 8};
    m.n_depth = {64};
    std::vector<std::string> names;
    for (const auto& t : expand_matrix(m))
        names.push_back(t.test_name());
    EXPECT_EQ(names, (std::vector<std::string>{"tg8 @ d64", "pp32 @ d64", "pp32+tg8 @ d64"}));
}

TEST(TestConfig, NamesLikeLlamaBench) {
    TestConfig c;
    c.n_prompt = 512;
    c.n_gen = 0;
    EXPECT_EQ(c.test_name(), "pp512");
    c.n_gen = 128;
    c.n_depth = 1024;
    EXPECT_EQ(c.test_name(), "pp512+tg128 @ d1024");
    c.n_prompt = 0;
    EXPECT_EQ(c.test_name(), "tg128 @ d1024");
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
