// The advisor's sentences from fidelity sections, word for word, on scripted sections.
#include <gtest/gtest.h>

#include "analysis/advise.hpp"
#include "analysis/advise_steps.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::vector<double> times(const std::vector<double>& v, double k) {
    std::vector<double> out;
    for (double x : v)
        out.push_back(x * k);
    return out;
}

const std::vector<double> kPrefillTps = {100, 101, 99}, kDecodeTps = {20, 20.2, 19.8};

FidelityVariant variant(const std::string& devices, double pp_k, double tg_k, double kl,
                        double top1, int positions = 50) {
    FidelityVariant v;
    v.model = "/m/tiny.gguf";
    v.model_name = "tiny.gguf";
    v.devices = devices;
    v.type_k = v.type_v = KvType::f16;
    v.prefill_tps_reps = times(kPrefillTps, pp_k);
    v.decode_tps_reps = times(kDecodeTps, tg_k);
    v.prefill_tps = 100 * pp_k;
    v.decode_tps = 20 * tg_k;
    v.prefill = {1, kl, kl, kl, top1 < 1 ? 0.0 : 1.0, 1, kl > 0 ? 1e-3 : 0, 0};
    v.decode = {positions, kl, 2 * kl, 3 * kl, top1, 1, kl > 0 ? 1e-3 : 0, 0};
    return v;
}

FidelitySection fidelity_section() {
    FidelitySection s;
    s.reference = "tiny.gguf on CPU (f16/f16)";
    s.n_prompt = 32;
    s.n_gen = 50;
    FidelityVariant cpu = variant("CPU", 1, 1, 0, 1);
    cpu.reference = cpu.frontier = true;
    FidelityVariant blas = variant("BLAS", 1.6, 1, 3e-7, 1);
    FidelityVariant rpc = variant("RPC0", 1, 1.2, 4.1e-3, 0.98);
    rpc.frontier = true;
    FidelityVariant kv = variant("CPU", 0.5, 0.5, 0.0123, 1);
    kv.type_k = kv.type_v = KvType::q8_0;
    FidelityVariant failed = variant("RPC1", 1, 1, 0, 1);
    failed.error = "no RPC server";
    s.variants = {cpu, blas, rpc, kv, failed};
    return s;
}

TEST(AdviseFidelity, EachVariantAgainstTheReferenceThenTheFrontier) {
    EXPECT_EQ(fidelity_sentences(fidelity_section()),
              (std::vector<std::string>{
                  "BLAS is 1.6\u00d7 faster in prefill and its KL to CPU is 3e-7.",
                  "RPC0 is 1.2\u00d7 faster in decode but flips 2 % of top-1 tokens against CPU "
                  "(1 of 50 positions, KL 0.0041).",
                  "KV q8_0/q8_0 is 2\u00d7 slower in prefill and 2\u00d7 in decode; its KL to KV "
                  "f16/f16 is 0.012.",
                  "No other choice is both faster in decode and closer to tiny.gguf on CPU "
                  "(f16/f16) than CPU, RPC0 (the frontier)."}));
}

TEST(AdviseFidelity, TheSameLogitsAndTheSameSpeedAreSaidSo) {
    FidelitySection s = fidelity_section();
    s.variants = {s.variants[0], variant("CPU", 1, 1, 0, 1)};
    s.variants[1].frontier = true;
    EXPECT_EQ(fidelity_sentences(s)[0],
              "CPU is no faster or slower in either stage and computes exactly the same logits "
              "as CPU.");
}

// The quantization axis: the reference model is not among the variants, so no speed to set
// theirs against.
TEST(AdviseFidelity, WithoutAReferenceVariantOnlyTheDistanceIsSaid) {
    FidelitySection s;
    s.reference = "tiny-f16.gguf on CPU (f16/f16)";
    s.n_gen = 8;
    FidelityVariant q4 = variant("CPU", 1, 1, 0.0123, 0.875, 8);
    q4.model_name = "tiny-q4_0.gguf";
    s.variants = {q4};
    EXPECT_EQ(fidelity_sentences(s),
              (std::vector<std::string>{
                  "tiny-q4_0.gguf on CPU (f16/f16): KL to tiny-f16.gguf on CPU (f16/f16) 0.012, "
                  "top-1 agreement 87.5 % (the reference's speed was not measured)."}));
}

// advise() on a fidelity document alone: its sentences, and nothing to rank is no note.
TEST(AdviseFidelity, AFidelityDocumentIsSomethingToAdviseOn) {
    ResultDocument d;
    d.command = "fidelity";
    d.fidelity = fidelity_section();
    const Advice a = advise({{"f.json", d}}, AdviseOptions{});
    ASSERT_EQ(a.sentences.size(), 4u) << to_json(a).dump(1);
    EXPECT_EQ(a.sentences[0], "BLAS is 1.6\u00d7 faster in prefill and its KL to CPU is 3e-7.");
    EXPECT_TRUE(a.notes.empty()) << to_json(a)["notes"];
}

}  // namespace
}  // namespace sb
