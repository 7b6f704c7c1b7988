// run_fidelity end to end on scripted engines: the distances from scripted logits, exactly,
// and the speed pass through the one repetition loop on the fake clock.
#include "scenario/fidelity.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/workload.hpp"
#include "scenario/fidelity_capture.hpp"
#include "scenario/logits.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

constexpr int32_t kVocab = 11;

// The logits a variant with a q8_0 K cache computes: the default ones with token 2 raised.
std::vector<float> q8_logits(std::span<const int32_t> ctx) {
    auto l = default_fake_logits(ctx, kVocab);
    l[2] += 1.5f;
    return l;
}

FidelityOptions two_kv_types() {
    FidelityOptions o;
    o.models = {test::tiny_gguf()};
    o.device_sets = {"CPU"};
    o.type_k = {KvType::f16, KvType::q8_0};
    o.n_prompt = 6;
    o.n_gen = 3;
    o.top_k = 3;
    o.reps = 3;
    o.base.n_threads = 2;
    o.progress = false;
    return o;
}

// Scripts every engine: the vocabulary, and the q8_0 logits for one loaded with a q8_0 K cache.
void script_kv_logits(test::RunRig& rig) {
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.vocab = kVocab;
        FakeEngine* self = &e;
        e.script().logits = [self](std::span<const int32_t> ctx) {
            return self->loaded_spec().type_k == KvType::q8_0 ? q8_logits(ctx)
                                                              : default_fake_logits(ctx, kVocab);
        };
    };
}

TEST(FidelityRun, TheDistancesAreThoseOfTheScriptedLogits) {
    clear_interrupt();
    test::RunRig rig;
    script_kv_logits(rig);
    const FidelityOptions o = two_kv_types();
    const RunResult r = run_fidelity(o, rig.env("fidelity"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_TRUE(r.doc.fidelity);
    const FidelitySection& f = *r.doc.fidelity;
    EXPECT_EQ(f.reference, "tiny.gguf on CPU (f16/f16)");
    // The teacher-forced tokens: BOS, then the seed's random tokens.
    const std::vector<int32_t> tokens = sequence_tokens(6 + 3, kVocab, o.seed, 1);
    EXPECT_EQ(f.tokens, tokens);
    ASSERT_EQ(f.variants.size(), 2u);
    // The reference's own variant is exactly the reference.
    const FidelityVariant& same = f.variants[0];
    EXPECT_TRUE(same.reference);
    EXPECT_EQ(same.type_k, KvType::f16);
    EXPECT_EQ(same.prefill.kl_mean, 0);
    EXPECT_EQ(same.decode.kl_mean, 0);
    EXPECT_EQ(same.decode.top1_agreement, 1);
    // The q8_0 variant: every position off by the same scripted change.
    const FidelityVariant& q8 = f.variants[1];
    EXPECT_FALSE(q8.reference);
    EXPECT_EQ(q8.type_k, KvType::q8_0);
    StageStats prefill(3), decode(3);
    const std::span<const int32_t> prompt(tokens.data(), 6);
    prefill.add(default_fake_logits(prompt, kVocab), q8_logits(prompt));
    for (size_t i = 0; i < 3; ++i) {
        const std::span<const int32_t> ctx(tokens.data(), 6 + i + 1);
        decode.add(default_fake_logits(ctx, kVocab), q8_logits(ctx));
    }
    const StageFidelity want_prefill = prefill.finish(), want_decode = decode.finish();
    ASSERT_GT(want_decode.kl_mean, 0);
    EXPECT_DOUBLE_EQ(q8.prefill.kl_mean, want_prefill.kl_mean);
    EXPECT_DOUBLE_EQ(q8.decode.kl_mean, want_decode.kl_mean);
    EXPECT_DOUBLE_EQ(q8.decode.kl_max, want_decode.kl_max);
    EXPECT_DOUBLE_EQ(q8.decode.top1_agreement, want_decode.top1_agreement);
    EXPECT_DOUBLE_EQ(q8.decode.topk_overlap, want_decode.topk_overlap);
    EXPECT_DOUBLE_EQ(q8.decode.max_abs, 1.5);
    EXPECT_EQ(q8.decode.positions, 3);
    // By hand: x is the reference with logit 2 raised by d = 1.5, so KL(p || q) =
    // log(sum e^x) - log(sum e^ref) - d p_2 at every position.
    double kl_sum = 0;
    for (size_t i = 0; i < 3; ++i) {
        const auto ref =
            default_fake_logits(std::span<const int32_t>(tokens.data(), 7 + i), kVocab);
        double z_ref = 0, z_x = 0;
        for (int32_t j = 0; j < kVocab; ++j) {
            z_ref += std::exp(static_cast<double>(ref[static_cast<size_t>(j)]));
            z_x += std::exp(static_cast<double>(ref[static_cast<size_t>(j)]) + (j == 2 ? 1.5 : 0));
        }
        kl_sum +=
            std::log(z_x) - std::log(z_ref) - 1.5 * std::exp(static_cast<double>(ref[2])) / z_ref;
    }
    EXPECT_NEAR(q8.decode.kl_mean, kl_sum / 3, 1e-12);
}

TEST(FidelityRun, TheSpeedPassIsTheRepetitionLoopOnTheFakeClock) {
    clear_interrupt();
    test::RunRig rig;
    script_kv_logits(rig);
    FidelityOptions o = two_kv_types();
    o.type_k = {KvType::f16};
    const RunResult r = run_fidelity(o, rig.env("fidelity"));
    ASSERT_EQ(r.doc.fidelity->variants.size(), 1u);
    const FidelityVariant& v = r.doc.fidelity->variants[0];
    // Prefill 100 us per token, decode 10 ms per token: exact rates, one per repetition.
    EXPECT_EQ(v.prefill_tps_reps, std::vector<double>(3, 10'000.0));
    EXPECT_EQ(v.decode_tps_reps, std::vector<double>(3, 100.0));
    EXPECT_DOUBLE_EQ(*v.prefill_tps, 10'000.0);
    EXPECT_DOUBLE_EQ(*v.decode_tps, 100.0);
    EXPECT_TRUE(v.frontier);
    // The variant's engine (the second one made): its captures, then a warm-up (a prefill and
    // one decode step) and three repetitions, each from a cleared cache.
    std::vector<std::string> ops;
    for (const auto& c : rig.tl.calls())
        if (c.engine == "llama1" && c.op != FakeOp::load)
            ops.push_back(fake_op_name(c.op));
    const std::vector<std::string> capture{"reset", "prefill", "decode_step", "decode_step",
                                           "decode_step"};
    std::vector<std::string> want = capture;
    const std::vector<std::string> rep{"fill_to_depth", "prefill", "decode_step", "decode_step",
                                       "decode_step"};
    want.insert(want.end(), {"fill_to_depth", "prefill", "decode_step"});  // the warm-up
    for (int i = 0; i < 3; ++i)
        want.insert(want.end(), rep.begin(), rep.end());
    EXPECT_EQ(ops, want);
}

TEST(FidelityRun, AVariantThatFailsIsRecordedAndTheOutcomeIsFailed) {
    clear_interrupt();
    test::TempDir dir;
    test::RunRig rig;
    script_kv_logits(rig);
    // The q8_0 variant's engine (the third made) fails to load: a runtime failure of its own.
    auto script = rig.engines.setup;
    rig.engines.setup = [script](FakeEngine& e, EngineKind k) {
        script(e, k);
        if (e.name() == "llama2")
            e.script().before = [](const FakeCall& c) {
                if (c.op == FakeOp::load)
                    throw runtime_error("out of device memory");
            };
    };
    FidelityOptions o = two_kv_types();
    o.out_path = dir.file("f.json");
    const RunResult r = run_fidelity(o, rig.env("fidelity"));
    ASSERT_EQ(r.doc.fidelity->variants.size(), 2u);
    EXPECT_FALSE(r.doc.fidelity->variants[0].error);
    EXPECT_EQ(r.doc.fidelity->variants[1].error, "out of device memory");
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_EQ(exit_code_of(r.outcome), 1);
    const ResultDocument back = load_result_document(*o.out_path);
    ASSERT_TRUE(back.fidelity);
    EXPECT_EQ(back.fidelity->variants.size(), 2u);
}

TEST(FidelityRun, AReferenceNotAmongTheDeviceSetsIsAUsageError) {
    test::RunRig rig;
    FidelityOptions o = two_kv_types();
    o.reference_devices = DeviceSet("BLAS");
    try {
        run_fidelity(o, rig.env("fidelity"));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_EQ(std::string(e.what()), "--reference BLAS is not one of --device (CPU)");
    }
    EXPECT_EQ(rig.engines.made(), 0);
}

}  // namespace
}  // namespace sb
