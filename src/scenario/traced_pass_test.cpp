#include "scenario/traced_pass.hpp"

#include <gtest/gtest.h>

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
    TestConfig spec;
    spec.model_path = "/nonexistent/model.gguf";
    spec.n_prompt = 0;  // refused before anything is loaded
    const TracedPass p = run_traced_pass(spec, "traced pass after round 1", nullptr);
    EXPECT_EQ(p.status, "error");
    ASSERT_TRUE(p.error.has_value());
    EXPECT_LE(p.start_ns, p.end_ns);
    const auto j = to_json(p);
    EXPECT_EQ(j["label"], "traced pass after round 1");
    EXPECT_EQ(j["status"], "error");
    EXPECT_TRUE(j["stages"].empty());
}
