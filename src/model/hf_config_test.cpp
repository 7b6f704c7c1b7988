#include "model/hf_config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "model/presets.hpp"

namespace sb {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Qwen/Qwen3-0.6B's config.json as published, every key.
const char* kQwen3Config = R"({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})";

std::string error_of(const json& j) {
    try {
        spec_from_hf_config(j, "config.json");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_EQ(msg.rfind("config.json: ", 0), 0u) << msg;
        return msg;
    }
    ADD_FAILURE() << "no error for " << j.dump();
    return "";
}

void expect_same(const ModelSpec& a, const ModelSpec& b) {
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.n_embd, b.n_embd);
    EXPECT_EQ(a.n_layer, b.n_layer);
    EXPECT_EQ(a.n_head, b.n_head);
    EXPECT_EQ(a.n_head_kv, b.n_head_kv);
    EXPECT_EQ(a.head_dim, b.head_dim);
    EXPECT_EQ(a.n_rot, b.n_rot);
    EXPECT_EQ(a.n_ff, b.n_ff);
    EXPECT_EQ(a.n_vocab, b.n_vocab);
    EXPECT_EQ(a.n_ctx_train, b.n_ctx_train);
    EXPECT_EQ(a.rope_theta, b.rope_theta);
    EXPECT_EQ(a.rms_eps, b.rms_eps);
    EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
    EXPECT_EQ(a.qk_norm, b.qk_norm);
    EXPECT_EQ(a.n_expert, b.n_expert);
}

TEST(HfConfig, AQwen3ConfigIsThePreset) {
    const ModelSpec s = spec_from_hf_config(json::parse(kQwen3Config), "config.json");
    expect_same(s, find_preset("qwen3-0.6b").spec);
    EXPECT_EQ(s.arch, "qwen3");
    EXPECT_EQ(s.qk_norm, QkNorm::per_head);
    EXPECT_EQ(s.bos_token_id, 151643);
    EXPECT_EQ(s.eos_token_id, 151645);
    EXPECT_FALSE(s.pad_token_id);
    EXPECT_EQ(count_params(s), 596'049'920u);
}

TEST(HfConfig, EveryPresetsConfigReadsAlikeFromAFile) {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_hf_config_test";
    fs::create_directories(dir);
    for (const auto& p : presets()) {
        const fs::path f = dir / (p.name + ".json");
        std::ofstream(f) << p.config.dump(2);
        SCOPED_TRACE(p.name);
        expect_same(read_hf_config(f.string()), p.spec);
    }
}

TEST(HfConfig, UnsupportedModelTypeNamesTheSupportedOnes) {
    const std::string msg = error_of({{"model_type", "mamba"}, {"hidden_size", 8}});
    EXPECT_NE(msg.find("'mamba'"), std::string::npos) << msg;
    for (const auto& t : supported_model_types())
        EXPECT_NE(msg.find(t), std::string::npos) << t;
    EXPECT_NE(error_of({{"hidden_size", 8}}).find("no model_type"), std::string::npos);
    EXPECT_NE(error_of(json::array()).find("expected a JSON object"), std::string::npos);
}

TEST(HfConfig, MissingAndMistypedFieldsAreNamed) {
    const json base = json::parse(kQwen3Config);
    for (const char* field : {"hidden_size", "num_hidden_layers", "num_attention_heads",
                              "intermediate_size", "vocab_size", "max_position_embeddings"}) {
        json j = base;
        j.erase(field);
        const std::string msg = error_of(j);
        EXPECT_NE(msg.find(std::string("no ") + field), std::string::npos) << msg;
    }
    json j = base;
    j["hidden_size"] = "1024";
    EXPECT_NE(error_of(j).find("hidden_size is \"1024\", expected a positive integer"),
              std::string::npos);
    j = base;
    j["num_hidden_layers"] = 0;
    EXPECT_NE(error_of(j).find("num_hidden_layers is 0"), std::string::npos);
    j = base;
    j["rms_norm_eps"] = -1;
    EXPECT_NE(error_of(j).find("rms_norm_eps"), std::string::npos);
    j = base;
    j["tie_word_embeddings"] = "yes";
    EXPECT_NE(error_of(j).find("tie_word_embeddings"), std::string::npos);
    j = base;
    j["num_experts"] = 8;  // ignored by a dense qwen3, as by transformers
    EXPECT_NO_THROW(spec_from_hf_config(j, "config.json"));
    json moe = base;
    moe["model_type"] = "qwen3_moe";
    EXPECT_NE(error_of(moe).find("no num_experts"), std::string::npos);
    moe["num_experts"] = 8;
    moe["num_experts_per_tok"] = 2;
    EXPECT_NE(error_of(moe).find("no moe_intermediate_size"), std::string::npos);
}

TEST(HfConfig, InconsistentShapesAreNamed) {
    json j = json::parse(kQwen3Config);
    j.erase("head_dim");
    j["num_attention_heads"] = 15;  // does not divide 1024
    EXPECT_NE(error_of(j).find("num_attention_heads 15 does not divide hidden_size 1024"),
              std::string::npos);
    j = json::parse(kQwen3Config);
    j["num_key_value_heads"] = 3;
    EXPECT_NE(error_of(j).find("num_key_value_heads 3 does not divide num_attention_heads 16"),
              std::string::npos);
    j = json::parse(kQwen3Config);
    j["head_dim"] = 65;
    EXPECT_NE(error_of(j).find("head_dim 65 is odd"), std::string::npos);
    json q2 = json::parse(kQwen3Config);
    q2["model_type"] = "qwen2";  // its loader wants heads x head_dim == width
    EXPECT_NE(error_of(q2).find("is not hidden_size 1024"), std::string::npos);

    json lfm = find_preset("lfm2-1.2b").config;
    lfm["layer_types"].erase(0);
    EXPECT_NE(error_of(lfm).find("layer_types has 15 entries, but num_hidden_layers is 16"),
              std::string::npos);
    json phi = find_preset("phi-4-mini").config;
    phi["rope_scaling"]["long_factor"].erase(0);
    EXPECT_NE(error_of(phi).find("rope_scaling.long_factor has 47 values, expected 48"),
              std::string::npos);
    json moe = find_preset("qwen3-30b-a3b").config;
    moe["num_experts_per_tok"] = 200;
    EXPECT_NE(error_of(moe).find("num_experts_per_tok 200 is more than the 128 experts"),
              std::string::npos);
    json smol = find_preset("smollm3-3b").config;
    smol["no_rope_layer_interval"] = 3;
    EXPECT_NE(error_of(smol).find("no_rope_layer_interval"), std::string::npos);
    json rope = json::parse(kQwen3Config);
    rope["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
    EXPECT_NE(error_of(rope).find("rope_scaling type 'dynamic'"), std::string::npos);
}

TEST(HfConfig, ArchitectureSpecifics) {
    // LFM2's first release: block_ff_dim and full_attn_idxs only.
    json lfm = find_preset("lfm2-1.2b").config;
    lfm.erase("layer_types");
    lfm.erase("intermediate_size");
    const ModelSpec l = spec_from_hf_config(lfm, "config.json");
    EXPECT_EQ(l.n_ff, 8192);
    EXPECT_EQ(l.layer_kinds, find_preset("lfm2-1.2b").spec.layer_kinds);
    EXPECT_EQ(l.conv_l_cache, 3);
    EXPECT_EQ(l.head_dim, 64);
    // A multimodal Gemma 3 keeps its text settings in text_config; the converter's defaults
    // fill what it leaves out.
    const json mm = {{"model_type", "gemma3"},
                     {"text_config",
                      {{"hidden_size", 2560},
                       {"intermediate_size", 10240},
                       {"num_hidden_layers", 34},
                       {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                       {"sliding_window", 1024}}}};
    const ModelSpec g = spec_from_hf_config(mm, "config.json");
    EXPECT_EQ(g.arch, "gemma3");
    EXPECT_EQ(g.n_head, 8);
    EXPECT_EQ(g.n_head_kv, 4);
    EXPECT_EQ(g.head_dim, 256);
    EXPECT_EQ(g.n_vocab, 262208);
    EXPECT_EQ(g.n_ctx_train, 131072);
    EXPECT_EQ(g.sliding_window, 1024);
    EXPECT_EQ(g.sliding_window_pattern, 6);
    ASSERT_TRUE(g.rope_scaling);
    EXPECT_EQ(g.rope_scaling->type, "linear");
    EXPECT_EQ(g.rope_scaling->factor, 8.0f);
    // layer_types instead of a pattern number.
    json g1 = find_preset("gemma-3-1b").config;
    g1.erase("sliding_window_pattern");
    g1["layer_types"] = json::array();
    for (int i = 0; i < 26; ++i)
        g1["layer_types"].push_back((i + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
    EXPECT_EQ(spec_from_hf_config(g1, "config.json").sliding_window_pattern, 6);
    g1["layer_types"][1] = "full_attention";
    EXPECT_NE(error_of(g1).find("layer_types"), std::string::npos);
    // Llama 3 scaling only for llama; YaRN as keys.
    json ll = find_preset("llama-3.2-1b").config;
    EXPECT_TRUE(spec_from_hf_config(ll, "config.json").llama3_rope);
    json q = json::parse(kQwen3Config);
    q["rope_scaling"] = ll["rope_scaling"];
    EXPECT_NE(error_of(q).find("llama3"), std::string::npos);
    q["rope_scaling"] = {
        {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    const ModelSpec y = spec_from_hf_config(q, "config.json");
    ASSERT_TRUE(y.rope_scaling);
    EXPECT_EQ(y.rope_scaling->type, "yarn");
    EXPECT_EQ(y.rope_scaling->original_context, 32768);
}

// The GGUF keeps epsilons, RoPE bases and factors as float32: 1e308 became inf there, 1e-300
// became 0 (a division by zero in every rotation).
TEST(HfConfig, NumbersAFloat32CannotHoldAreRefused) {
    const json q = json::parse(kQwen3Config);
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, double>>{{"rope_theta", 1e308},
                                                     {"rope_theta", 3.5e38},
                                                     {"rms_norm_eps", 1e308},
                                                     {"rms_norm_eps", 1e-300}}) {
        json j = q;
        j[key] = value;
        const std::string msg = error_of(j);
        EXPECT_NE(msg.find(key + " is "), std::string::npos) << msg;
        EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
    }
    json j = q;
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1e308}};
    EXPECT_NE(error_of(j).find("rope_scaling.factor is 1e+308"), std::string::npos);
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 1e-45}};
    EXPECT_NE(error_of(j).find("rope_scaling.factor"), std::string::npos);
    json ll = find_preset("llama-3.2-1b").config;
    ll["rope_scaling"]["high_freq_factor"] = 1e39;
    EXPECT_NE(error_of(ll).find("rope_scaling.high_freq_factor"), std::string::npos);
    // Equal ones divide by zero in the factors (transformers refuses them too).
    ll["rope_scaling"]["high_freq_factor"] = ll["rope_scaling"]["low_freq_factor"];
    EXPECT_NE(error_of(ll).find("high_freq_factor"), std::string::npos);
    json g = find_preset("gemma-3-1b").config;
    g["rope_local_base_freq"] = 1e300;
    EXPECT_NE(error_of(g).find("rope_local_base_freq"), std::string::npos);
    json phi = find_preset("phi-4-mini").config;
    phi["rope_scaling"]["long_factor"][3] = 1e200;
    EXPECT_NE(error_of(phi).find("rope_scaling.long_factor"), std::string::npos);
    phi = find_preset("phi-4-mini").config;
    phi["original_max_position_embeddings"] = 1;  // log(1) divided the attention factor: inf
    phi["rope_scaling"].erase("original_max_position_embeddings");
    EXPECT_NE(error_of(phi).find("original_max_position_embeddings is 1"), std::string::npos);
    // The largest and smallest a float32 holds are read.
    j = q;
    j["rope_theta"] = 3e38;
    j["rms_norm_eps"] = 1.2e-38;
    EXPECT_EQ(spec_from_hf_config(j, "config.json").rope_theta, 3e38f);
}

// j with key's value replaced by raw JSON text, as a file would hold it.
std::string config_with(json j, const std::string& key, const std::string& raw) {
    j[key] = "@@";
    std::string text = j.dump();
    text.replace(text.find("\"@@\""), 4, raw);
    return text;
}

// Each width and count has a ceiling a few times the largest published model's: hidden_size
// 2^31 grew past 2 GB of memory in a second, vocab_size 2^31 ended in std::bad_alloc.
TEST(HfConfig, EveryDimensionIsBounded) {
    const json q = json::parse(kQwen3Config);
    for (const auto& [key, limit] :
         std::vector<std::pair<std::string, int64_t>>{{"hidden_size", 65536},
                                                      {"intermediate_size", 1 << 20},
                                                      {"vocab_size", 1 << 21},
                                                      {"num_attention_heads", 1024},
                                                      {"num_key_value_heads", 1024},
                                                      {"head_dim", 4096},
                                                      {"max_position_embeddings", 2147483647}}) {
        json j = q;
        j[key] = limit + 1;
        std::string msg = error_of(j);
        EXPECT_NE(msg.find(key + " is " + std::to_string(limit + 1) +
                           ", more than synth writes (at most " + std::to_string(limit) + ")"),
                  std::string::npos)
            << msg;
        j[key] = int64_t{1} << 31;
        msg = error_of(j);
        EXPECT_NE(msg.find("at most " + std::to_string(limit)), std::string::npos) << msg;
        j[key] = uint64_t{1} << 63;  // beyond int64: not read as a negative number
        msg = error_of(j);
        EXPECT_NE(msg.find("at most " + std::to_string(limit)), std::string::npos) << msg;
        // 0 as the parser reads it (unsigned): head_dim 0 divided by zero (SIGFPE).
        msg = error_of(json::parse(config_with(j, key, "0")));
        EXPECT_NE(msg.find(key + " is 0, expected a positive integer"), std::string::npos) << msg;
    }
    json moe = find_preset("qwen3-30b-a3b").config;
    moe["moe_intermediate_size"] = (1 << 20) + 1;
    EXPECT_NE(error_of(moe).find("moe_intermediate_size"), std::string::npos);
    json lfm = find_preset("lfm2-1.2b").config;
    lfm["conv_L_cache"] = 1025;
    EXPECT_NE(error_of(lfm).find("conv_L_cache is 1025"), std::string::npos);
    // A width computed from the config is bounded too (it was cast from a double of 1e300).
    lfm = find_preset("lfm2-1.2b").config;
    lfm["block_ffn_dim_multiplier"] = 1e300;
    EXPECT_NE(error_of(lfm).find("more than synth writes"), std::string::npos);
    lfm["block_ffn_dim_multiplier"] = 1e-300;
    EXPECT_NE(error_of(lfm).find("feed-forward width comes to 0"), std::string::npos);
    lfm.erase("block_ffn_dim_multiplier");
    lfm["block_ff_dim"] = 1;
    lfm.erase("intermediate_size");
    EXPECT_NE(error_of(lfm).find("feed-forward width comes to 0"), std::string::npos);
    // The largest accepted ones are read.
    json j = q;
    j["vocab_size"] = 1 << 21;
    j["intermediate_size"] = 1 << 20;
    EXPECT_EQ(spec_from_hf_config(j, "config.json").n_vocab, 1 << 21);
}

// An LFM2 without attention layers, or without convolution layers, is what llama.cpp cannot
// load (GGML_ASSERT(buffer) on its empty cache).
TEST(HfConfig, AnLfm2NeedsBothKindsOfLayer) {
    json lfm = find_preset("lfm2-1.2b").config;
    lfm["layer_types"] = json::array();
    for (int i = 0; i < 16; ++i)
        lfm["layer_types"].push_back("conv");
    EXPECT_NE(error_of(lfm).find("layer_types names no full_attention layer"), std::string::npos);
    for (auto& t : lfm["layer_types"])
        t = "full_attention";
    EXPECT_NE(error_of(lfm).find("layer_types names no conv layer"), std::string::npos);
    lfm.erase("layer_types");
    lfm["full_attn_idxs"] = json::array();
    EXPECT_NE(error_of(lfm).find("full_attn_idxs names no layer"), std::string::npos);
}

TEST(HfConfig, FilesThatAreNotJsonAreOneLine) {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_hf_config_files";
    fs::create_directories(dir);
    const fs::path bad = dir / "config.json";
    std::ofstream(bad) << "{\"model_type\": \"qwen3\",\n \"hidden_size\": 1024,,}";
    try {
        read_hf_config(bad.string());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.rfind(bad.string() + ": not JSON (", 0), 0u) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    try {
        read_hf_config((dir / "missing.json").string());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("cannot read config.json"), std::string::npos)
            << e.what();
    }
}

// The message of read_hf_config(path), which must fail with one input error line.
std::string file_error(const std::string& path) {
    try {
        read_hf_config(path);
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        const std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        EXPECT_NE(msg.find(path), std::string::npos) << msg;
        return msg;
    }
    ADD_FAILURE() << "no error for " << path;
    return "";
}

// Copying, comparing and destroying a parsed value recurse once per level: 100,000 levels
// overflowed the stack. The bound is the documents' (core/document.hpp).
TEST(HfConfig, NestingDeeperThan64IsRefusedBeforeParsing) {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_hf_config_deep";
    fs::create_directories(dir);
    const fs::path deep = dir / "config.json";
    std::ofstream(deep) << R"({"model_type": "llama", "x": )" << std::string(100000, '[')
                        << std::string(100000, ']') << "}";
    EXPECT_NE(file_error(deep.string()).find("nests arrays and objects more than 64 deep"),
              std::string::npos);
    // 64 levels are read (and the config refused for what it lacks).
    std::ofstream(deep) << R"({"model_type": "llama", "x": )" << std::string(63, '[')
                        << std::string(63, ']') << "}";
    EXPECT_NE(file_error(deep.string()).find("no hidden_size"), std::string::npos);
}

// A number JSON's grammar allows but no double holds: the file and the key, not nlohmann's text.
TEST(HfConfig, ANumberBeyondADoubleNamesTheFileAndTheKey) {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_hf_config_overflow";
    fs::create_directories(dir);
    const fs::path f = dir / "config.json";
    for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
             {R"({"model_type": "qwen3", "rope_theta": 1e999})", "rope_theta"},
             {R"({"rope_scaling": {"type": "linear", "factor": -1e999}})", "rope_scaling.factor"},
             {R"({"layer_types": ["conv", 2e400]})", "layer_types[1]"},
             {R"([1, {"a": [0, 0, 9e9999]}])", "[1].a[2]"}}) {
        std::ofstream(f) << text;
        const std::string msg = file_error(f.string());
        EXPECT_NE(msg.find(key + " is "), std::string::npos) << msg;
        EXPECT_NE(msg.find("beyond any double"), std::string::npos) << msg;
        EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
    }
}

TEST(HfConfig, ADirectoryIsNotAConfig) {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_hf_config_dir";
    fs::create_directories(dir);
    EXPECT_NE(file_error(dir.string()).find("it is a directory"), std::string::npos);
}

}  // namespace
}  // namespace sb
