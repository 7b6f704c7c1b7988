#include "analysis/fidelity_of_tests.hpp"

#include <gtest/gtest.h>

#include "analysis/advise_steps.hpp"

using namespace sb;

namespace {

TestResult fidelity_test_of(const std::string& model, const std::string& devices, int p, int n,
                            std::vector<double> pp, std::vector<double> tg, double kl,
                            double top1) {
    TestResult t;
    t.config.model_path = "/m/" + model;
    t.config.devices = DeviceSet(devices);
    t.config.n_prompt = p;
    t.config.n_gen = n;
    t.prefill.emplace().tokens_per_s = std::move(pp);
    t.decode.emplace().tokens_per_s = std::move(tg);
    TestFidelity f;
    f.reference = "f16.gguf on CPU (f16/f16)";
    f.top_k = 10;
    f.prefill = StageFidelity{1, kl / 2, kl / 2, kl / 2, 1, 1, 0, 0};
    f.decode = StageFidelity{n, kl, kl, kl, top1, 1, 0, 0};
    t.fidelity = f;
    return t;
}

}  // namespace

TEST(FidelityOfTests, OneSectionPerWorkloadWithTheReferenceAndTheFrontier) {
    ResultDocument d;
    d.tests.push_back(
        fidelity_test_of("f16.gguf", "CPU", 32, 8, {100, 120, 110}, {10, 12, 11}, 0, 1));
    d.tests.push_back(
        fidelity_test_of("q4_0.gguf", "CPU", 32, 8, {200, 220, 210}, {20, 22, 21}, 2e-3, 0.5));
    d.tests.push_back(
        fidelity_test_of("f16.gguf", "BLAS", 32, 8, {90, 95, 80}, {9, 9, 9}, 3e-8, 1));
    d.tests.push_back(fidelity_test_of("f16.gguf", "CPU", 64, 8, {100}, {10}, 0, 1));
    // Neither a failed capture nor a test without fidelity is a variant.
    TestResult failed = fidelity_test_of("q8_0.gguf", "CPU", 32, 8, {1}, {1}, 0, 1);
    failed.fidelity->error = "the logit capture failed: x";
    d.tests.push_back(failed);
    TestResult plain = fidelity_test_of("q8_0.gguf", "CPU", 32, 8, {1}, {1}, 0, 1);
    plain.fidelity.reset();
    d.tests.push_back(plain);

    const auto s = fidelity_of_tests(d);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].n_prompt, 32);
    EXPECT_EQ(s[0].n_gen, 8);
    EXPECT_EQ(s[0].reference, "f16.gguf on CPU (f16/f16)");
    EXPECT_EQ(s[0].top_k, 10);
    EXPECT_EQ(s[0].reps, 3);
    ASSERT_EQ(s[0].variants.size(), 3u);
    const FidelityVariant& ref = s[0].variants[0];
    EXPECT_TRUE(ref.reference);
    EXPECT_EQ(ref.model_name, "f16.gguf");
    EXPECT_EQ(*ref.prefill_tps, 110);
    EXPECT_EQ(*ref.decode_tps, 11);
    EXPECT_EQ(ref.decode_tps_reps, (std::vector<double>{10, 12, 11}));
    // q4_0 is the fastest (on the frontier), the reference the closest (on it); BLAS is slower
    // than the reference and farther: off it.
    EXPECT_TRUE(ref.frontier);
    EXPECT_TRUE(s[0].variants[1].frontier);
    EXPECT_FALSE(s[0].variants[1].reference);
    EXPECT_EQ(s[0].variants[1].decode.kl_mean, 2e-3);
    EXPECT_FALSE(s[0].variants[2].frontier);
    EXPECT_EQ(s[0].variants[2].devices, "BLAS");
    EXPECT_EQ(s[1].n_prompt, 64);
    ASSERT_EQ(s[1].variants.size(), 1u);

    // advise reads them as it reads a fidelity document.
    const auto sentences = fidelity_sentences(s[0]);
    ASSERT_FALSE(sentences.empty());
    EXPECT_NE(sentences[0].find("q4_0.gguf"), std::string::npos) << sentences[0];
    EXPECT_NE(sentences[0].find("flips 50 % of top-1 tokens"), std::string::npos) << sentences[0];
}
