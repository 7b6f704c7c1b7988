// check_llama_limits(): the model values llama.cpp aborts the process on are bad input before
// any engine sees the file. Explicit cases for each class, then a seeded generator of mutations
// whose every outcome must be a loadable-looking model or one sb::Error(input) line.
// (tests/integration/bad_model_test.cpp hands accepted mutations to the real llama.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "core/error.hpp"
#include "engine/ggml_quantizer.hpp"
#include "engine/tokenizer_check.hpp"
#include "fuzz_seed.hpp"
#include "model/gguf.hpp"
#include "model/gguf_mutations.hpp"
#include "model/inspect.hpp"
#include "model/synth.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;
using testing_gguf::Mutation;
using testing_gguf::set_kv;

fs::path test_dir() {
    const fs::path dir = fs::path(testing::TempDir()) /
                         ("sb_llama_limits_test." + std::to_string(::getpid())) /
                         testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string tiny(const fs::path& dir) {
    SynthOptions o;
    o.preset = "tiny";
    o.quant = "f32";
    o.layers = 2;
    o.out_path = (dir / "tiny.gguf").string();
    write_synthetic_model(o, GgmlQuantizer());
    return o.out_path;
}

// The message of inspect_model's error for m, or "" when it accepts the mutated file.
std::string refusal(const std::string& src, const fs::path& dir, const Mutation& m) {
    const std::string dst = (dir / "m.gguf").string();
    testing_gguf::write_mutated(src, dst, m);
    try {
        inspect_model(dst);
        return "";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input) << m.what << ": " << e.what();
        const std::string w = e.what();
        EXPECT_EQ(w.find('\n'), std::string::npos) << w;
        return w.empty() ? "?" : w;
    }
}

Mutation set(const std::string& key, GgufValue v, const std::string& what) {
    return {what, [key, v](auto& kv) { set_kv(kv, key, v); }, std::nullopt};
}

TEST(LlamaLimits, TheSyntheticModelPasses) {
    const auto dir = test_dir();
    const std::string src = tiny(dir);
    EXPECT_NO_THROW(inspect_model(src));
    EXPECT_EQ(refusal(src, dir, {"alignment 64", nullptr, 64}), "");
    EXPECT_EQ(refusal(src, dir, {"alignment 32", nullptr, 32}), "");
    EXPECT_EQ(refusal(src, dir, set("llama.attention.layer_norm_rms_epsilon", 0.0f, "eps 0")), "");
    EXPECT_EQ(refusal(src, dir, set("llama.rope.scaling.type", std::string("yarn"), "yarn")), "");
}

TEST(LlamaLimits, EachClassIsRefusedWithItsReason) {
    const auto dir = test_dir();
    const std::string src = tiny(dir);
    struct Case {
        Mutation m;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {{"alignment 1", nullptr, 1}, "not a multiple of 32"},
        {set("llama.block_count", uint32_t{0}, "block_count 0"), "llama.block_count is 0"},
        {set("llama.block_count", uint32_t{1000}, "block_count 1000"), "llama.block_count is 1000"},
        {set("llama.block_count", uint32_t{1}, "block_count 1"), "belongs to layer 1"},
        {set("llama.block_count", std::string("two"), "block_count string"),
         "llama.block_count is string"},
        {set("llama.attention.layer_norm_rms_epsilon", -1e-5f, "negative eps"),
         "layer_norm_rms_epsilon"},
        {set("llama.attention.layer_norm_rms_epsilon", std::nanf(""), "nan eps"),
         "layer_norm_rms_epsilon"},
        {set("llama.attention.layer_norm_epsilon", std::numeric_limits<float>::infinity(),
             "inf eps"),
         "layer_norm_epsilon"},
        {set("llama.rope.scaling.type", std::string("bogus"), "rope scaling"), "rope.scaling.type"},
        // Loaded without a word, but no position survives: refused.
        {set("llama.rope.freq_base", std::numeric_limits<float>::infinity(), "rope base inf"),
         "llama.rope.freq_base is inf, expected a finite number above 0"},
        {set("llama.rope.freq_base", std::nanf(""), "rope base nan"), "llama.rope.freq_base"},
        {set("llama.rope.freq_base", 0.0f, "rope base 0"), "llama.rope.freq_base is 0"},
        {set("llama.rope.freq_base", -10000.0f, "rope base negative"), "llama.rope.freq_base"},
        {set("llama.rope.scaling.factor", -2.0f, "rope scale negative"),
         "llama.rope.scaling.factor is -2"},
        {set("llama.rope.scaling.attn_factor", std::numeric_limits<double>::infinity(),
             "rope attn factor inf (f64)"),
         "llama.rope.scaling.attn_factor is inf"},
        {set("llama.expert_count", uint32_t{4}, "experts without used"), "expert_used_count"},
        {set("llama.expert_used_count", uint32_t{2}, "used without experts"), "expert_used_count"},
        {set("llama.nextn_predict_layers", uint32_t{3}, "nextn"), "nextn_predict_layers"},
        {set("tokenizer.ggml.model", std::string("bert"), "bert with byte tokens"), "byte token"},
        {{"duplicate token",
          [](auto& kv) {
              auto* e = testing_gguf::find_kv(kv, "tokenizer.ggml.tokens");
              auto& t = std::get<std::vector<std::string>>(std::get<GgufArray>(e->value));
              t[300] = t[301];
          },
          std::nullopt},
         "twice"},
        // llama.cpp reads tokens as C strings: a NUL inside one cuts it, here to token 300.
        {{"token cut by a NUL",
          [](auto& kv) {
              auto* e = testing_gguf::find_kv(kv, "tokenizer.ggml.tokens");
              auto& t = std::get<std::vector<std::string>>(std::get<GgufArray>(e->value));
              t[301] = t[300] + std::string(1, '\0') + "x";
          },
          std::nullopt},
         "twice"},
    };
    // Alignment 8 misaligns a tensor only where the metadata does not happen to end on a
    // multiple of 32: a padding key of 8, 16 or 24 more bytes makes sure one of the layouts does.
    bool misaligned = false;
    for (int pad = 0; pad < 4 && !misaligned; ++pad) {
        const Mutation m{"alignment 8, pad " + std::to_string(pad),
                         [pad](auto& kv) {
                             set_kv(kv, "stagebench.test_pad",
                                    std::string(static_cast<size_t>(8 * pad), 'x'));
                         },
                         8};
        const std::string dst = (dir / "pad.gguf").string();
        testing_gguf::write_mutated(src, dst, m);
        const GgufFile g = read_gguf(dst);
        if (g.data_offset % 32 == 0)
            continue;  // every tensor still lands on 32 (their sizes are multiples of 32)
        misaligned = true;
        const std::string why = refusal(src, dir, m);
        EXPECT_NE(why.find("not a multiple of 32"), std::string::npos) << m.what << ": " << why;
    }
    EXPECT_TRUE(misaligned) << "no padding misaligned the data with alignment 8";
    for (const auto& c : cases) {
        const std::string why = refusal(src, dir, c.m);
        EXPECT_NE(why.find(c.reason), std::string::npos) << c.m.what << " -> '" << why << "'";
        EXPECT_NE(why.find("llama.cpp cannot load this model"), std::string::npos) << why;
    }
}

// Absurd values llama.cpp works around: measured, with a warning that says what holds.
TEST(LlamaLimits, ValuesLlamaCppWorksAroundAreWarnings) {
    const auto dir = test_dir();
    const std::string src = tiny(dir);
    EXPECT_TRUE(inspect_model(src).warnings.empty());
    auto doubts = [&](const Mutation& m) {
        EXPECT_EQ(refusal(src, dir, m), "") << m.what;
        return inspect_model((dir / "m.gguf").string()).warnings;
    };
    const Warnings bos =
        doubts(set("tokenizer.ggml.bos_token_id", uint32_t{999999}, "bos beyond the vocabulary"));
    ASSERT_EQ(bos.size(), 1u);
    EXPECT_EQ(bos[0].code, "model_special_token_beyond_vocab");
    EXPECT_NE(bos[0].message.find("tokenizer.ggml.bos_token_id is 999999, beyond its"),
              std::string::npos)
        << bos[0].message;
    EXPECT_EQ(doubts(set("tokenizer.ggml.padding_token_id", uint32_t{300}, "pad inside")).size(),
              0u);
    const Warnings empty = doubts(
        {"every token empty",
         [](auto& kv) {
             auto* e = testing_gguf::find_kv(kv, "tokenizer.ggml.tokens");
             for (auto& t : std::get<std::vector<std::string>>(std::get<GgufArray>(e->value)))
                 t.clear();
         },
         std::nullopt});
    ASSERT_EQ(empty.size(), 1u);
    EXPECT_EQ(empty[0].code, "model_empty_vocabulary");
    // The entry of the document carries them, and model_warnings() passes them on.
    const nlohmann::json entry = to_json(inspect_model((dir / "m.gguf").string()));
    EXPECT_EQ(entry["warnings"][0]["code"], "model_empty_vocabulary");
    const Warnings all = model_warnings({entry});
    ASSERT_EQ(all.size(), 2u);  // synthetic, then the vocabulary
    EXPECT_EQ(all[1].code, "model_empty_vocabulary");
}

// Vocabularies llama.cpp loads but whose tokenizer asserts on every text (the process ends):
// check_llama_tokenizes names them (what explain and serve ask before tokenizing); a vocabulary
// of another type that tokenizes is accepted.
TEST(LlamaLimits, AVocabularyLlamaCppCannotTokenizeIsNamedBeforeItsTokenizerAborts) {
    const auto dir = test_dir();
    const std::string src = tiny(dir);
    EXPECT_NO_THROW(check_llama_tokenizes(src));
    const std::string dst = (dir / "m.gguf").string();
    auto fault = [&](const Mutation& m) -> std::string {
        testing_gguf::write_mutated(src, dst, m);
        EXPECT_EQ(refusal(src, dir, m), "") << m.what << ": the file itself is fine";
        try {
            check_llama_tokenizes(dst);
            return "";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
            return e.what();
        }
    };
    // T5's Unigram vocabulary has no default BOS: one that adds a BOS and names none.
    auto t5 = [](std::optional<bool> add_bos) {
        return Mutation{"t5",
                        [add_bos](auto& kv) {
                            set_kv(kv, "tokenizer.ggml.model", std::string("t5"));
                            std::erase_if(kv, [](const GgufKv& e) {
                                return e.key == "tokenizer.ggml.bos_token_id";
                            });
                            if (add_bos)
                                set_kv(kv, "tokenizer.ggml.add_bos_token", *add_bos);
                        },
                        std::nullopt};
    };
    const std::string no_bos = fault(t5(true));
    EXPECT_EQ(no_bos, "'" + dst +
                          "': its vocabulary adds a BOS token to every text "
                          "(tokenizer.ggml.add_bos_token) but has none "
                          "(tokenizer.ggml.bos_token_id): llama.cpp aborts tokenizing a text");
    EXPECT_EQ(fault(t5(false)), "") << "the same vocabulary without the BOS it lacks tokenizes";
    EXPECT_NE(fault(set("tokenizer.ggml.model", std::string("none"), "none"))
                  .find("it has no vocabulary (tokenizer.ggml.model is none)"),
              std::string::npos);
}

TEST(LlamaLimits, SeededMutationsAreAcceptedOrOneInputError) {
    const auto dir = test_dir();
    const std::string src = tiny(dir);
    const GgufFile g = read_gguf(src);
    sbtest::FuzzRun fuzz(4242);
    std::mt19937_64 rng(fuzz.seed());
    int refused = 0;
    for (int i = 0; i < 150; ++i) {
        const Mutation m = testing_gguf::random_mutation(rng, g);
        fuzz.next_case();
        std::string why;
        try {
            why = refusal(src, dir, m);
        } catch (const std::exception& e) {
            FAIL() << m.what << ": not an sb::Error: " << e.what();
        }
        refused += !why.empty();
    }
    // Many mutations are harmless (llama.cpp loads or refuses them itself); some are not.
    EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace sb
