#include "scenario/traced_pass.hpp"

#include <gtest/gtest.h>

#include "engine/fake_engine.hpp"
#include "scenario/ops_test_rig.hpp"
#include "scenario/test_util.hpp"

using namespace sb;

TEST(TracedPass, OptionsTraceTheWorkloadWithoutReplays) {
    TestConfig spec;
    spec.model_path = "m.gguf";
    spec.devices = "BLAS+RPC0";
    spec.n_prompt = 64;
    spec.n_threads = 2;
    spec.n_batch = 16;
    spec.n_ubatch = 16;
    spec.type_k = KvType::q8_0;
    spec.flash_attn = FlashAttn::on;
    spec.seed = 9;
    const OpsOptions o = traced_pass_options(spec);
    // The test's workload, whole: the same model, devices, batches, threads and KV types.
    EXPECT_EQ(o.workload, static_cast<const Workload&>(spec));
    EXPECT_EQ(o.workload.devices.names(), (std::vector<std::string>{"BLAS", "RPC0"}));
    EXPECT_EQ(o.n_prompt, 64);
    EXPECT_EQ(o.n_depth, 0);
    EXPECT_TRUE(o.prefill && o.decode);
    EXPECT_EQ(o.replay_copies, 0);
    EXPECT_EQ(o.traced_reps, 3);
    EXPECT_EQ(o.plain_reps, 1);
    EXPECT_EQ(o.decode_tokens, kTracedPassDecodeSteps);
    EXPECT_FALSE(o.decompose);
    EXPECT_EQ(o.seed, 9u);
}

TEST(TracedPass, AFailedPassIsRecordedNotThrown) {
    FakeTimeline tl;
    FakeEngineFactory engines(tl);
    TestConfig spec;
    spec.model_path = "/nonexistent/model.gguf";
    spec.n_prompt = 0;  // refused before anything is loaded
    const TracedPass p =
        run_traced_pass(engines, spec, "traced pass after round 1", nullptr, tl.clock());
    EXPECT_EQ(p.status, "error");
    ASSERT_TRUE(p.error.has_value());
    EXPECT_TRUE(engines.rig_huge_pages().empty());  // no rig was made
    EXPECT_EQ(p.start_ns, p.end_ns);
    const auto j = to_json(p);
    EXPECT_EQ(j["label"], "traced pass after round 1");
    EXPECT_EQ(j["status"], "error");
    EXPECT_TRUE(j["stages"].empty());
}

// The pass runs on the op rig of the run's engine factory and on the run's clock: three traced
// repetitions (a prefill and a decode stage each), one plain prefill, no replay; its window is
// the calls' own on the fake timeline.
TEST(TracedPass, RunsOnTheFactorysRigOnTheRunsClock) {
    FakeTimeline tl;
    FakeEngineFactory engines(tl);
    test::ScriptedOpRigs rigs;
    rigs.install(engines, tl);
    TestConfig spec;
    spec.model_path = "m.gguf";
    spec.devices = "CPU";
    spec.n_prompt = 16;
    spec.n_threads = 2;
    spec.seed = 3;
    std::vector<std::string> said;
    const TracedPass p = run_traced_pass(
        engines, spec, "traced pass after round 2",
        [&](const std::string& m) { said.push_back(m); }, tl.clock());
    EXPECT_EQ(p.status, "ok") << p.error.value_or("");
    EXPECT_EQ(p.start_ns, 1'000'000'000);
    EXPECT_EQ(p.end_ns, tl.now_ns());
    EXPECT_EQ(engines.rig_huge_pages(), std::vector<bool>{true});
    ASSERT_EQ(rigs.made.size(), 1u);
    EXPECT_EQ(rigs.made[0].tracer->begins, 6);
    EXPECT_TRUE(rigs.made[0].replayer->replays.empty());
    ASSERT_EQ(p.profile.stages.size(), 2u);
    EXPECT_EQ(p.profile.stages[0].rec.traced_ns.size(), 3u);
    EXPECT_EQ(p.profile.stages[0].rec.plain_ns.size(), 1u);
    // The decode stage's traced samples: kTracedPassDecodeSteps in the first repetition (its
    // capturing step is not one), one more in each after (traced, untraced, ..., traced).
    EXPECT_EQ(p.profile.stages[1].rec.traced_ns.size(),
              static_cast<size_t>(3 * kTracedPassDecodeSteps + 2));
    for (const auto& op : p.profile.stages[0].ops)
        EXPECT_EQ(*op.op_method, op.no_compute ? "no compute (view of memory): zero op time"
                                               : "op replay skipped (--replay 0)");
    ASSERT_FALSE(said.empty());
    EXPECT_EQ(said.front(), "loading m.gguf");
}

// A rig the factory cannot make (a device llama.cpp refuses) is the pass's error, not thrown.
TEST(TracedPass, ARigThatCannotBeMadeIsThePasssError) {
    FakeTimeline tl;
    FakeEngineFactory engines(tl);
    engines.refuse = EngineKind::llama;
    test::ScriptedOpRigs rigs;
    rigs.install(engines, tl);
    TestConfig spec;
    spec.model_path = "m.gguf";
    spec.n_prompt = 16;
    const TracedPass p =
        run_traced_pass(engines, spec, "traced pass after round 1", nullptr, tl.clock());
    EXPECT_EQ(p.status, "error");
    EXPECT_EQ(p.error, "fake: no llama engine can be made");
    EXPECT_TRUE(rigs.made.empty());
}
