// The fidelity section of a result document against its JSON: written, read back exactly,
// absent when not measured, unknown members kept, refusals one line naming the field.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

ResultDocument fidelity_document() {
    ResultDocument d;
    d.command = "fidelity";
    FidelitySection s;
    s.reference = "m-f16.gguf on CPU (f16/f16)";
    s.n_prompt = 4;
    s.n_gen = 2;
    s.top_k = 10;
    s.reps = 3;
    s.seed = uint64_t{1} << 63;
    s.tokens = {1, 5, 9, 2, 7, 3};
    s.method = "teacher-forced";
    FidelityVariant ref;
    ref.model = "/m/m-f16.gguf";
    ref.model_name = "m-f16.gguf";
    ref.devices = "CPU";
    ref.type_k = ref.type_v = KvType::f16;
    ref.reference = true;
    ref.frontier = true;
    ref.prefill_tps = 100.5;
    ref.decode_tps = 20.25;
    ref.prefill_tps_reps = {100.5, 99, 101};
    ref.decode_tps_reps = {20.25, 20, 21};
    ref.prefill = {1, 0, 0, 0, 1, 1, 0, 0};
    ref.decode = {2, 0, 0, 0, 1, 1, 0, 0};
    FidelityVariant q4 = ref;
    q4.model = "/m/m-q4_0.gguf";
    q4.model_name = "m-q4_0.gguf";
    q4.devices = "BLAS+CPU";
    q4.type_k = KvType::q8_0;
    q4.reference = false;
    q4.decode = {2, 0.01, 0.02, 0.03, 0.5, 0.85, 1.5, 0.25};
    FidelityVariant failed;
    failed.model_name = "m-q4_0.gguf";
    failed.devices = "RPC0";
    failed.type_k = failed.type_v = KvType::f16;
    failed.error = "no RPC server";
    s.variants = {ref, q4, failed};
    d.fidelity = s;
    return d;
}

TEST(FidelitySection, FromJsonIsTheInverseOfToJson) {
    const json j = to_json(fidelity_document());
    const ResultDocument back = from_json<ResultDocument>(j, "'f.json'");
    EXPECT_EQ(to_json(back), j);
    ASSERT_TRUE(back.fidelity);
    const FidelitySection& s = *back.fidelity;
    EXPECT_EQ(s.seed, uint64_t{1} << 63);
    EXPECT_EQ(s.tokens, (std::vector<int32_t>{1, 5, 9, 2, 7, 3}));
    ASSERT_EQ(s.variants.size(), 3u);
    EXPECT_EQ(s.variants[1].decode.topk_overlap, 0.85);
    EXPECT_EQ(s.variants[1].decode_tps, 20.25);
    EXPECT_EQ(variant_label(s.variants[1]), "m-q4_0.gguf on BLAS+CPU (q8_0/f16)");
    // A failed variant carries its error and no distances.
    EXPECT_EQ(s.variants[2].error, "no RPC server");
    EXPECT_FALSE(j["fidelity"]["variants"][2].contains("decode"));
    EXPECT_TRUE(j["fidelity"]["variants"][2]["decode_tokens_per_s"].is_null());
}

// --text and --prompt-logits: the text's windows, each variant's perplexity and its text and
// prompt stages, read back exactly.
TEST(FidelitySection, TextAndPromptStagesRoundTrip) {
    ResultDocument d = fidelity_document();
    FidelitySection& s = *d.fidelity;
    s.prompt_logits = true;
    FidelityText t;
    t.path = "wiki.test.raw";
    t.tokens = 3012;
    t.n_ctx = 128;
    t.chunks = 23;
    t.scored = 23 * 63;
    t.reference_perplexity = 33552.5182;
    t.reference_perplexity_error = 311.85788;
    t.method = "llama-perplexity's windows";
    s.text = t;
    s.variants[1].prompt = StageFidelity{4, 0.1, 0.2, 0.3, 0.75, 0.9, 1.25, 0.5};
    s.variants[1].text = StageFidelity{1449, 0.0036, 0.005, 0.0056, 0.499, 0.632, 2.5, 0.07};
    s.variants[1].perplexity = 33256.2736;
    s.variants[1].perplexity_error = 313.039;
    const json j = to_json(d);
    EXPECT_EQ(j["fidelity"]["text"]["reference_perplexity"]["value"], 33552.5182);
    EXPECT_EQ(j["fidelity"]["variants"][1]["perplexity"]["error"], 313.039);
    EXPECT_FALSE(j["fidelity"]["variants"][0].contains("perplexity"));
    const ResultDocument back = from_json<ResultDocument>(j, "'f.json'");
    EXPECT_EQ(to_json(back), j);
    ASSERT_TRUE(back.fidelity->text);
    EXPECT_EQ(back.fidelity->text->scored, 23 * 63);
    EXPECT_TRUE(back.fidelity->prompt_logits);
    EXPECT_EQ(back.fidelity->variants[1].text->positions, 1449);
    EXPECT_EQ(back.fidelity->variants[1].prompt->top1_agreement, 0.75);
    EXPECT_EQ(back.fidelity->variants[1].perplexity, 33256.2736);
    EXPECT_FALSE(back.fidelity->variants[0].perplexity);
}

TEST(FidelitySection, AbsentUnlessMeasured) {
    ResultDocument d;
    EXPECT_FALSE(to_json(d).contains("fidelity"));
    EXPECT_FALSE(from_json<ResultDocument>(to_json(d), "'f.json'").fidelity);
}

TEST(FidelitySection, UnknownMembersAreKept) {
    json j = to_json(fidelity_document());
    j["fidelity"]["variants"][1]["decode"]["kl_p999"] = 0.5;
    j["fidelity"]["perplexity_window"] = 512;
    const ResultDocument back = from_json<ResultDocument>(j, "'f.json'");
    EXPECT_EQ(back.unknown.size(), 2u);
    EXPECT_EQ(back.unknown.at("/fidelity/variants/1/decode/kl_p999"), 0.5);
    EXPECT_EQ(to_json(back), j);
}

TEST(FidelitySection, RefusalsNameTheField) {
    const json base = to_json(fidelity_document());
    auto refusal = [&](const std::function<void(json&)>& mutate) -> std::string {
        json j = base;
        mutate(j);
        try {
            from_json<ResultDocument>(j, "'f.json'");
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            return e.what();
        }
        return "accepted";
    };
    EXPECT_EQ(refusal([](json& j) { j["fidelity"]["variants"][1]["decode"]["kl_mean"] = "0"; }),
              "'f.json': fidelity.variants[1].decode.kl_mean: expected a number, found a string");
    EXPECT_EQ(refusal([](json& j) { j["fidelity"]["variants"] = json::object(); }),
              "'f.json': fidelity.variants: expected an array, found an object");
    EXPECT_EQ(refusal([](json& j) { j["fidelity"]["tokens"][0] = -1.5; }),
              "'f.json': fidelity.tokens[0]: expected an integer, found a number with a fraction");
    EXPECT_EQ(refusal([](json& j) { j["fidelity"]["variants"][0]["frontier"] = 1; }),
              "'f.json': fidelity.variants[0].frontier: expected a boolean, found an integer");
    // A KV cache type is one of the enum's spellings, refused as a test config's is.
    EXPECT_EQ(refusal([](json& j) { j["fidelity"]["variants"][1]["type_k"] = "q9"; }),
              "'f.json': fidelity.variants[1].type_k: expected one of " + enum_spellings<KvType>() +
                  ", found \"q9\"");
}

}  // namespace
}  // namespace sb
