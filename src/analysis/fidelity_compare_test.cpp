// `compare` of fidelity documents: each variant that ran is a test of its workload on its device
// set, its speed pass's repetitions the samples; its distances from the reference are compared
// exactly (computed, not sampled).
#include <gtest/gtest.h>

#include <string>

#include "analysis/compare.hpp"
#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

FidelityVariant fidelity_variant(const std::string& devices, double tg_k, double kl, double top1) {
    FidelityVariant v;
    v.model = "/models/tiny-q4_0.gguf";
    v.model_name = "tiny-q4_0.gguf";
    v.devices = devices;
    v.type_k = v.type_v = KvType::f16;
    v.prefill_tps_reps = {1000, 1010, 990};
    v.decode_tps_reps = {100 * tg_k, 101 * tg_k, 99 * tg_k};
    v.prefill_tps = 1000;
    v.decode_tps = 100 * tg_k;
    v.prefill = {1, kl, kl, kl, top1, 1, 0.1, 0.01};
    v.decode = {8, kl, 2 * kl, 3 * kl, top1, 1, 0.1, 0.01};
    return v;
}

json fidelity_doc(const std::string& host, std::vector<FidelityVariant> variants,
                  const std::string& reference = "tiny-q4_0.gguf on CPU (f16/f16)") {
    ResultDocument d;
    d.command = "fidelity";
    d.system = {{"hostname", host}};
    FidelitySection s;
    s.reference = reference;
    s.n_prompt = 32;
    s.n_gen = 8;
    s.top_k = 10;
    s.reps = 3;
    s.variants = std::move(variants);
    d.fidelity = s;
    return to_json(d);
}

std::vector<CompareInput> fidelity_inputs(const json& a, const json& b) {
    return {{"A", "a.json", from_json<ResultDocument>(a, "a.json")},
            {"B", "b.json", from_json<ResultDocument>(b, "b.json")}};
}

const CompareRow& fidelity_row(const CompareResult& r, const std::string& test,
                               const std::string& stage, const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.test == test && x.stage == stage && x.metric == metric)
            return x;
    static CompareRow none;
    ADD_FAILURE() << "no row " << test << " " << stage << " " << metric;
    return none;
}

TEST(FidelityCompare, VariantsMeetByDeviceSetWithSpeedAndDistanceSideBySide) {
    FidelityVariant cpu = fidelity_variant("CPU", 1, 0, 1);
    cpu.reference = true;
    const json a = fidelity_doc("a", {cpu, fidelity_variant("BLAS", 1, 2e-7, 1)});
    // B: BLAS 1.5x faster in decode, and farther from its CPU (another build's kernels).
    const json b = fidelity_doc("b", {cpu, fidelity_variant("BLAS", 1.5, 4e-7, 0.875)});
    const CompareResult r = compare_documents(fidelity_inputs(a, b));
    ASSERT_TRUE(r.unmatched.empty());
    // Per variant: prefill t/s, decode t/s, then prefill KL and top-1, decode KL mean, p99, top-1.
    ASSERT_EQ(r.rows.size(), 14u);
    const std::string blas = "fidelity pp32+tg8 [devices=BLAS]";
    const CompareRow& speed = fidelity_row(r, blas, "decode", "tokens_per_s");
    EXPECT_EQ(speed.sides[1].n, 3u);
    EXPECT_DOUBLE_EQ(*speed.ratios[0].median, 1.5);
    EXPECT_EQ(speed.ratios[0].verdict, "faster");
    const CompareRow& kl = fidelity_row(r, blas, "decode", "kl_mean");
    EXPECT_EQ(kl.sides[0].median, 2e-7);
    EXPECT_EQ(kl.sides[1].median, 4e-7);
    EXPECT_DOUBLE_EQ(*kl.ratios[0].median, 2.0);
    EXPECT_FALSE(kl.ratios[0].ci_low);  // a computed distance, not a sample: no interval
    EXPECT_EQ(kl.ratios[0].verdict, "farther");
    EXPECT_FALSE(kl.higher_is_better);
    const CompareRow& top1 = fidelity_row(r, blas, "decode", "top1_agreement");
    EXPECT_EQ(top1.ratios[0].verdict, "agrees less");
    // The reference against itself on both: a KL of 0 both times is "the same", with no ratio.
    const CompareRow& ref = fidelity_row(r, "fidelity pp32+tg8 [devices=CPU]", "decode", "kl_mean");
    EXPECT_EQ(ref.ratios[0].verdict, "the same");
    EXPECT_FALSE(ref.ratios[0].median);
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0],
              "tests are also matched by devices (it varies among tests of one workload)");
}

TEST(FidelityCompare, DistancesToDifferentReferencesAreNoted) {
    const json a = fidelity_doc("a", {fidelity_variant("BLAS", 1, 2e-7, 1)});
    const json b =
        fidelity_doc("b", {fidelity_variant("BLAS", 1, 2e-7, 1)}, "tiny-f16.gguf on CPU (f16/f16)");
    const CompareResult r = compare_documents(fidelity_inputs(a, b));
    EXPECT_EQ(fidelity_row(r, "fidelity pp32+tg8", "decode", "kl_mean").ratios[0].verdict,
              "the same");
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_EQ(r.notes[0],
              "fidelity pp32+tg8: the distances are each to its own document's reference (A to "
              "tiny-q4_0.gguf on CPU (f16/f16), B to tiny-f16.gguf on CPU (f16/f16))");
}

// A run's test of the same workload meets a fidelity variant on speed; distances need both.
TEST(FidelityCompare, AgainstARunOnlySpeedIsCompared) {
    ResultDocument run;
    run.command = "run";
    TestResult t;
    t.config.model_path = "/models/tiny-q4_0.gguf";
    t.config.n_prompt = 32;
    t.config.n_gen = 8;
    t.config.devices = DeviceSet("BLAS");
    t.decode.emplace();
    t.decode->tokens_per_s = {200, 202, 198};
    run.tests = {t};
    CompareOptions o;
    o.match = {"model", "n_prompt", "n_gen", "devices"};
    const CompareResult r = compare_documents(
        fidelity_inputs(to_json(run), fidelity_doc("b", {fidelity_variant("BLAS", 1, 2e-7, 1)})),
        o);
    // Prefill (the run has none: no data) and decode; no distance rows.
    ASSERT_EQ(r.rows.size(), 2u);
    EXPECT_EQ(r.rows[0].ratios[0].verdict, "no data");
    EXPECT_EQ(r.rows[1].metric, "tokens_per_s");
    EXPECT_DOUBLE_EQ(*r.rows[1].ratios[0].median, 0.5);
}

TEST(FidelityCompare, ADocumentWhoseVariantsAllFailedIsRefusedInOneLine) {
    FidelityVariant failed = fidelity_variant("RPC0", 1, 0, 1);
    failed.error = "no RPC server";
    try {
        compare_documents(fidelity_inputs(fidelity_doc("a", {fidelity_variant("CPU", 1, 0, 1)}),
                                          fidelity_doc("b", {failed})));
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_STREQ(e.what(),
                     "B (b.json): the `fidelity` document has no variant that ran (1 failed); "
                     "there is nothing to compare");
    }
}

}  // namespace
}  // namespace sb
