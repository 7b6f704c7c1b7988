// `stagebench synth` end to end on the models people run on edge devices: presets written at
// two layers, read back by an independent GGUF parser (the npm package @huggingface/gguf under
// node, tests/integration/gguf_read.mjs) and compared with the published config.json values
// the preset files carry, run by `stagebench run` and by llama.cpp's own llama-bench as a peer,
// and profiled by `stagebench ops` (SSM_CONV for LFM2, MUL_MAT_ID for the mixtures of experts,
// the sliding window for Gemma 3); `synth --config` with a Qwen3 config.json against the
// preset; every other preset loads and runs (OLMoE profiled too); bad config.json input.
//
// Cost: about 3 minutes of CPU for the file, 13 to 15 minutes of wall time on the shared 2-core
// VM under a load average of 12 to 16 (writing and reading some 6 GB of models). The 30B MoE at
// q4_0 (two embeddings of 0.3 billion parameters, its output's Q6_K slow to encode: 3.5 minutes)
// and the loop over the other ten presets (one layer each, at q8_0, which encodes in a fraction
// of Q6_K's time; OLMoE profiled: 7.7 minutes) take most of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

json preset_file(const std::string& name) {
    return json::parse(
        read_file(std::string(SB_SOURCE_DIR) + "/share/stagebench/presets/" + name + ".json"));
}

// The GGUF as @huggingface/gguf reads it: {metadata, tensors, tokens}. Skips the test when
// node is missing (scripts/setup-deps.sh installs it).
json read_with_hf(const std::string& model, const std::string& tokens = "") {
    const std::string node = on_path("node").empty() ? on_path("nodejs") : on_path("node");
    if (node.empty())
        return json();
    const std::string assets = SB_REPORT_ASSETS_DIR;
    EXPECT_TRUE(fs::exists(assets + "/node_modules/@huggingface/gguf/package.json"))
        << "the GGUF reader is missing: run scripts/report-assets.sh";
    std::vector<std::string> argv{
        node, std::string(SB_SOURCE_DIR) + "/tests/integration/gguf_read.mjs", assets, model};
    if (!tokens.empty())
        argv.insert(argv.end(), {"--tokens", tokens});
    const Proc p = run(argv, 300);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return p.exit_code == 0 ? json::parse(p.out) : json();
}

const json* tensor(const json& hf, const std::string& name) {
    for (const auto& t : hf["tensors"])
        if (t["name"] == name)
            return &t;
    ADD_FAILURE() << "no tensor " << name;
    return nullptr;
}

std::string synth(const TempDir& t, const std::vector<std::string>& args, const std::string& name) {
    const std::string out = t.file(name);
    std::vector<std::string> a{"synth"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"-o", out});
    const Proc p = run_sb(a, 900);
    EXPECT_EQ(p.exit_code, 0) << p.err << p.out;
    return out;
}

// `stagebench run` and llama.cpp's llama-bench (started as the README tells a user) on the file.
void runs_everywhere(const std::string& model, const std::string& arch) {
    const Proc r = run_sb({"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t", "2",
                           "--membw", "off", "-o", "json", "-q"},
                          600);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json doc = json::parse(r.out);
    ASSERT_EQ(doc["tests"].size(), 1u);  // pp8+tg2
    for (const auto& t : doc["tests"])
        EXPECT_EQ(t["status"], "ok") << t.dump();
    EXPECT_EQ(doc["models"][0]["arch"], arch);
    EXPECT_EQ(doc["models"][0]["synthetic"], true);
    const Proc b = run({peer("llama-bench"), "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t",
                        "2", "-o", "json"},
                       600);
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const json bench = json::parse(b.out);
    ASSERT_EQ(bench.size(), 2u) << b.out;
    for (const auto& row : bench)
        EXPECT_GT(row["avg_ts"].get<double>(), 0) << row.dump();
}

// The ops of a traced prefill and decode (`stagebench ops`), as a JSON document.
json ops_of(const std::string& model, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a{"ops",    "-m", model,          "-p", "16",       "-t", "2",
                               "--reps", "1",  "--plain-reps", "1",  "--replay", "0",  "-o",
                               "json",   "-q"};
    a.insert(a.end(), extra.begin(), extra.end());
    const Proc p = run_sb(a, 900);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return p.exit_code == 0 ? json::parse(p.out) : json();
}

std::set<std::string> op_names(const json& ops_doc) {
    std::set<std::string> ops;
    for (const auto& s : ops_doc["ops"]["stages"])
        for (const auto& r : s["ops"])
            ops.insert(r["op"].get<std::string>());
    return ops;
}

void expect_meta(const json& hf, const std::string& key, const json& want) {
    ASSERT_TRUE(hf["metadata"].contains(key)) << key;
    EXPECT_EQ(hf["metadata"][key], want) << key;
}

}  // namespace

TEST(SynthModels, Qwen3ReadsBackAsPublishedRunsAndMatchesItsConfigJson) {
    TempDir t;
    const std::string model = synth(t, {"--preset", "qwen3-0.6b", "--layers", "2"}, "q.gguf");
    const json c = preset_file("qwen3-0.6b")["config"];
    const json hf = read_with_hf(model, "151643,151644,151645,151646,151667,151668,151669");
    if (hf.is_null())
        GTEST_SKIP() << "node is not installed";
    expect_meta(hf, "general.architecture", "qwen3");
    expect_meta(hf, "qwen3.embedding_length", c["hidden_size"]);
    expect_meta(hf, "qwen3.attention.head_count", c["num_attention_heads"]);
    expect_meta(hf, "qwen3.attention.head_count_kv", c["num_key_value_heads"]);
    expect_meta(hf, "qwen3.attention.key_length", c["head_dim"]);
    expect_meta(hf, "qwen3.feed_forward_length", c["intermediate_size"]);
    expect_meta(hf, "qwen3.context_length", c["max_position_embeddings"]);
    expect_meta(hf, "qwen3.vocab_size", c["vocab_size"]);
    expect_meta(hf, "qwen3.block_count", 2);
    EXPECT_EQ(hf["metadata"]["tokenizer.ggml.tokens"]["length"], c["vocab_size"]);
    EXPECT_EQ((*tensor(hf, "token_embd.weight"))["shape"], json::array({1024, 151936}));
    EXPECT_EQ((*tensor(hf, "token_embd.weight"))["type"], "q6_k");  // tied: the output
    EXPECT_EQ((*tensor(hf, "blk.1.attn_q.weight"))["type"], "q4_0");
    EXPECT_EQ((*tensor(hf, "blk.1.attn_k_norm.weight"))["shape"], json::array({128}));
    // The model's own special tokens over the family vocabulary.
    const json& tok = hf["tokens"];
    EXPECT_EQ(tok["151645"]["text"], "<|im_end|>");
    EXPECT_EQ(tok["151645"]["type"], 3);
    EXPECT_EQ(tok["151646"]["text"], "<|object_ref_start|>");
    EXPECT_EQ(tok["151667"]["text"], "<think>");
    EXPECT_EQ(tok["151667"]["type"], 4);
    EXPECT_EQ(tok["151668"]["text"], "</think>");
    EXPECT_EQ(tok["151669"]["text"], "[PAD151669]");  // beyond Qwen3's tokens: the family's
    expect_meta(hf, "tokenizer.ggml.eos_token_id", 151645);
    expect_meta(hf, "tokenizer.ggml.padding_token_id", 151643);
    expect_meta(hf, "tokenizer.ggml.add_bos_token", false);
    expect_meta(hf, "tokenizer.ggml.pre", "qwen2");

    // synth --config on the model's config.json: the same hyperparameters and tensors (at
    // q8_0, which encodes in a fraction of Q6_K's time: the types are not compared).
    const std::string cfg = t.file("config.json");
    std::ofstream(cfg) << c.dump(2);
    const std::string from_config =
        synth(t, {"--config", cfg, "--layers", "2", "--quant", "q8_0"}, "c.gguf");
    const json hc = read_with_hf(from_config);
    int compared = 0;
    for (const auto& [k, v] : hf["metadata"].items()) {
        if (k.rfind("qwen3.", 0) != 0)
            continue;
        EXPECT_EQ(hc["metadata"][k], v) << k;
        ++compared;
    }
    EXPECT_GE(compared, 10);
    ASSERT_EQ(hc["tensors"].size(), hf["tensors"].size());
    for (std::size_t i = 0; i < hf["tensors"].size(); ++i) {
        EXPECT_EQ(hc["tensors"][i]["name"], hf["tensors"][i]["name"]);
        EXPECT_EQ(hc["tensors"][i]["shape"], hf["tensors"][i]["shape"]);
    }
    EXPECT_EQ(hc["metadata"]["tokenizer.ggml.eos_token_id"], 151645);  // config.json's id
    EXPECT_EQ(hc["metadata"]["stagebench.config"], "config.json");

    runs_everywhere(model, "qwen3");
}

TEST(SynthModels, Gemma3HasItsShapesAndTheSlidingWindow) {
    TempDir t;
    const std::string model = synth(t, {"--preset", "gemma-3-1b", "--layers", "2"}, "g.gguf");
    const json c = preset_file("gemma-3-1b")["config"];
    const json hf = read_with_hf(model);
    if (hf.is_null())
        GTEST_SKIP() << "node is not installed";
    expect_meta(hf, "general.architecture", "gemma3");
    expect_meta(hf, "gemma3.embedding_length", c["hidden_size"]);
    expect_meta(hf, "gemma3.attention.head_count", c["num_attention_heads"]);
    expect_meta(hf, "gemma3.attention.head_count_kv", c["num_key_value_heads"]);
    expect_meta(hf, "gemma3.attention.key_length", c["head_dim"]);
    expect_meta(hf, "gemma3.feed_forward_length", c["intermediate_size"]);
    expect_meta(hf, "gemma3.attention.sliding_window", c["sliding_window"]);
    expect_meta(hf, "gemma3.rope.freq_base_swa", 10000.0);
    // Two layers keep a local and a global one.
    expect_meta(hf, "gemma3.attention.sliding_window_pattern", 2);
    EXPECT_EQ(hf["metadata"]["tokenizer.ggml.tokens"]["length"], c["vocab_size"]);
    EXPECT_EQ((*tensor(hf, "token_embd.weight"))["shape"], json::array({1152, 262144}));
    // 1152 is no multiple of 256: llama-quantize's Q6_K falls back to Q8_0.
    EXPECT_EQ((*tensor(hf, "token_embd.weight"))["type"], "q8_0");
    EXPECT_EQ((*tensor(hf, "blk.0.post_ffw_norm.weight"))["shape"], json::array({1152}));
    runs_everywhere(model, "gemma3");

    // The profile at a depth beyond the 512-token window: an attention per layer, each with
    // its own mask input (llama.cpp names both attn_inp_kq_mask and, with its default
    // full-size SWA cache, both read every cell; which cells the local layer's mask hides is
    // checked in synth_graph_test.cpp).
    const json ops = ops_of(model, {"-d", "1024", "--stage", "decode"});
    int attention = 0;
    for (const auto& s : ops["ops"]["stages"])
        for (const auto& r : s["ops"])
            if (r["op"] == "FLASH_ATTN_EXT" || r["op"] == "SOFT_MAX") {
                ++attention;
                bool mask = false;
                for (const auto& src : r["srcs"])
                    mask = mask || src["name"] == "attn_inp_kq_mask";
                EXPECT_TRUE(mask) << r.dump();
            }
    EXPECT_EQ(attention, 2);
}

TEST(SynthModels, Lfm2HasItsShapesAndShortConvolutions) {
    TempDir t;
    const std::string model = synth(t, {"--preset", "lfm2-1.2b", "--layers", "2"}, "l.gguf");
    const json c = preset_file("lfm2-1.2b")["config"];
    const json hf = read_with_hf(model);
    if (hf.is_null())
        GTEST_SKIP() << "node is not installed";
    expect_meta(hf, "general.architecture", "lfm2");
    expect_meta(hf, "lfm2.embedding_length", c["hidden_size"]);
    expect_meta(hf, "lfm2.attention.head_count", c["num_attention_heads"]);
    // One convolution layer (no KV heads) and one attention layer.
    expect_meta(hf, "lfm2.attention.head_count_kv", json::array({0, c["num_key_value_heads"]}));
    expect_meta(hf, "lfm2.feed_forward_length", 8192);  // block_ff_dim 12288, auto-adjusted
    expect_meta(hf, "lfm2.shortconv.l_cache", c["conv_L_cache"]);
    expect_meta(hf, "lfm2.vocab_size", c["vocab_size"]);
    EXPECT_EQ(hf["metadata"]["tokenizer.ggml.tokens"]["length"], c["vocab_size"]);
    EXPECT_EQ((*tensor(hf, "blk.0.shortconv.conv.weight"))["shape"], json::array({3, 2048}));
    EXPECT_EQ((*tensor(hf, "blk.0.shortconv.conv.weight"))["type"], "f32");
    EXPECT_EQ((*tensor(hf, "blk.1.attn_k.weight"))["shape"], json::array({2048, 512}));
    runs_everywhere(model, "lfm2");
    const auto ops = op_names(ops_of(model));
    EXPECT_TRUE(ops.count("SSM_CONV")) << json(ops).dump();
}

TEST(SynthModels, Qwen3MoeHasItsExpertsAndRoutesThem) {
    TempDir t;
    const std::string model = synth(t, {"--preset", "qwen3-30b-a3b", "--layers", "2"}, "m.gguf");
    const json c = preset_file("qwen3-30b-a3b")["config"];
    const json hf = read_with_hf(model);
    if (hf.is_null())
        GTEST_SKIP() << "node is not installed";
    expect_meta(hf, "general.architecture", "qwen3moe");
    expect_meta(hf, "qwen3moe.embedding_length", c["hidden_size"]);
    expect_meta(hf, "qwen3moe.attention.head_count", c["num_attention_heads"]);
    expect_meta(hf, "qwen3moe.attention.head_count_kv", c["num_key_value_heads"]);
    expect_meta(hf, "qwen3moe.expert_count", c["num_experts"]);
    expect_meta(hf, "qwen3moe.expert_used_count", c["num_experts_per_tok"]);
    expect_meta(hf, "qwen3moe.expert_feed_forward_length", c["moe_intermediate_size"]);
    expect_meta(hf, "qwen3moe.vocab_size", c["vocab_size"]);
    expect_meta(hf, "stagebench.routing", "skewed");
    EXPECT_EQ((*tensor(hf, "blk.1.ffn_down_exps.weight"))["shape"], json::array({768, 2048, 128}));
    EXPECT_EQ((*tensor(hf, "blk.1.ffn_gate_inp.weight"))["type"], "f32");
    EXPECT_EQ((*tensor(hf, "output.weight"))["type"], "q6_k");
    runs_everywhere(model, "qwen3moe");
    const json ops = ops_of(model);
    EXPECT_TRUE(op_names(ops).count("MUL_MAT_ID")) << json(op_names(ops)).dump();
    // The routing is recorded in the result document.
    EXPECT_EQ(ops["models"][0]["synthetic_routing"], "skewed");
}

TEST(SynthModels, EveryOtherPresetLoadsAndRuns) {
    // One layer each: every other preset (tiny runs in every other test) read back by the
    // independent parser and run by the real loader, llama-bench included; `ops` on OLMoE.
    for (const std::string name :
         {"olmoe-1b-7b", "phi-4-mini", "smollm3-3b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b",
          "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen2.5-1.5b"}) {
        SCOPED_TRACE(name);
        TempDir t;
        // q8_0: Q6_K's encoder would take minutes for these vocabularies on a small machine.
        const std::string model =
            synth(t, {"--preset", name, "--layers", "1", "--quant", "q8_0"}, name + ".gguf");
        const json c = preset_file(name)["config"];
        const json arch = c["model_type"];
        // Read back by the independent parser: the published widths, heads, FFN or expert
        // sizes, context and vocabulary.
        const json hf = read_with_hf(model);
        if (!hf.is_null()) {
            const std::string a = hf["metadata"]["general.architecture"];
            EXPECT_EQ(a, arch);
            expect_meta(hf, a + ".embedding_length", c["hidden_size"]);
            expect_meta(hf, a + ".attention.head_count", c["num_attention_heads"]);
            expect_meta(hf, a + ".attention.head_count_kv", c["num_key_value_heads"]);
            expect_meta(hf, a + ".feed_forward_length", c["intermediate_size"]);
            expect_meta(hf, a + ".context_length", c["max_position_embeddings"]);
            expect_meta(hf, a + ".block_count", 1);
            EXPECT_EQ(hf["metadata"]["tokenizer.ggml.tokens"]["length"], c["vocab_size"]);
            if (c.contains("num_experts")) {
                expect_meta(hf, a + ".expert_count", c["num_experts"]);
                expect_meta(hf, a + ".expert_used_count", c["num_experts_per_tok"]);
            }
            if (c.contains("head_dim"))
                expect_meta(hf, a + ".attention.key_length", c["head_dim"]);
        }
        const Proc b = run({peer("llama-bench"), "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t",
                            "2", "-o", "json"},
                           600);
        EXPECT_EQ(b.exit_code, 0) << b.err;
        const Proc r = run_sb({"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "-t", "2",
                               "--membw", "off", "-o", "json", "-q"},
                              600);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const json doc = json::parse(r.out);
        EXPECT_EQ(doc["models"][0]["arch"], arch);
        for (const auto& test : doc["tests"])
            EXPECT_EQ(test["status"], "ok") << test.dump();
        // The other mixture of experts (OLMoE) profiles its experts too.
        if (c.contains("num_experts")) {
            const json ops = ops_of(model);
            EXPECT_TRUE(op_names(ops).count("MUL_MAT_ID")) << json(op_names(ops)).dump();
            EXPECT_EQ(ops["models"][0]["synthetic_routing"], "skewed");
        }
    }
}

TEST(SynthModels, ListShowsThePresetsAndReadsTheDirectory) {
    const Proc p = run_sb({"synth", "--list"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    for (const char* name : {"gemma-3-1b", "lfm2-1.2b", "phi-4-mini", "smollm3-3b", "qwen3-0.6b",
                             "qwen3-1.7b", "qwen3-30b-a3b", "olmoe-1b-7b", "llama-3.2-1b", "tiny"})
        EXPECT_NE(p.out.find(std::string("\n") + name + " "), std::string::npos) << name;
    EXPECT_NE(p.out.find("15 presets: 15 read from"), std::string::npos) << p.out;
    // A preset file of one's own, beside the others.
    TempDir t;
    json mine = preset_file("tiny");
    mine["name"] = "tiny-two";
    mine["config"]["num_hidden_layers"] = 2;
    std::ofstream(t.file("tiny-two.json")) << mine.dump(2);
    const std::string env = "STAGEBENCH_PRESET_DIR=" + t.path.string();
    const Proc l = run({"/usr/bin/env", env, stagebench_bin(), "synth", "--list"});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    EXPECT_NE(l.out.find("\ntiny-two "), std::string::npos) << l.out;
    EXPECT_NE(l.out.find("16 presets: 1 read from " + t.path.string()), std::string::npos) << l.out;
    const Proc w = run({"/usr/bin/env", env, stagebench_bin(), "synth", "--preset", "tiny-two",
                        "-o", t.file("two.gguf")});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    EXPECT_NE(w.out.find("2 layers"), std::string::npos) << w.out;
}

TEST(SynthModels, BadConfigJsonIsOneLineAndLeavesNoFile) {
    TempDir t;
    auto expect_refused = [&](const std::string& text, const std::string& needle) {
        const std::string cfg = t.file("config.json");
        std::ofstream(cfg) << text;
        const std::string out = t.file("m.gguf");
        const Proc p = run_sb({"synth", "--config", cfg, "-o", out});
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
        EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
        EXPECT_TRUE(p.out.empty()) << p.out;
        // Nothing at -o, and no temporary beside it.
        for (const auto& e : fs::directory_iterator(t.path))
            EXPECT_EQ(e.path().filename(), "config.json") << e.path();
    };
    json q = preset_file("qwen3-0.6b")["config"];
    expect_refused("{\"model_type\": \"qwen3\", \"hidden_size\": 1024,,}", "not JSON");
    expect_refused("", "not JSON");
    json missing = q;
    missing.erase("hidden_size");
    expect_refused(missing.dump(), "no hidden_size");
    json heads = q;
    heads.erase("head_dim");
    heads["num_attention_heads"] = 12;
    expect_refused(heads.dump(), "num_attention_heads 12 does not divide hidden_size 1024");
    json kv = q;
    kv["num_key_value_heads"] = 5;
    expect_refused(kv.dump(), "num_key_value_heads 5");
    json type = q;
    type["model_type"] = "mamba2";
    expect_refused(type.dump(), "model_type 'mamba2' is not one synth supports (supported: ");
    json lfm = preset_file("lfm2-1.2b")["config"];
    lfm["layer_types"].erase(0);
    expect_refused(lfm.dump(), "layer_types has 15 entries");
    // A dense model asked for routing; both a preset and a config.
    std::ofstream(t.file("config.json")) << q.dump();
    Proc r = run_sb({"synth", "--config", t.file("config.json"), "--routing", "uniform", "-o",
                     t.file("m.gguf")});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--routing applies to mixtures of experts"), std::string::npos) << r.err;
    r = run_sb(
        {"synth", "--config", t.file("config.json"), "--preset", "tiny", "-o", t.file("m.gguf")});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(fs::exists(t.file("m.gguf")));
}
