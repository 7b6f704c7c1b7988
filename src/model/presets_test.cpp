#include "model/presets.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

const TensorSpec* find(const std::vector<TensorSpec>& ts, const std::string& name) {
    for (const auto& t : ts) {
        if (t.name == name)
            return &t;
    }
    return nullptr;
}

fs::path presets_dir() {
    const fs::path dir = fs::path(testing::TempDir()) / "sb_presets_test" /
                         testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string slurp_path(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const Preset& P(const char* name) {
    return find_preset(name);
}

TEST(Presets, TheSetIsTheRepositorysFiles) {
    const auto names = preset_names();
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    const std::set<std::string> want = {
        "gemma-3-1b",    "lfm2-1.2b",  "llama-3.1-8b", "llama-3.2-1b", "llama-3.2-3b",
        "olmoe-1b-7b",   "phi-4-mini", "qwen2.5-1.5b", "qwen3-0.6b",   "qwen3-1.7b",
        "qwen3-30b-a3b", "qwen3-4b",   "qwen3-8b",     "smollm3-3b",   "tiny"};
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), want);
    // The test binary sits in build/bin: its presets are read from the repository's files
    // (bin/../share/stagebench/presets links there), not only the copies in the binary.
    for (const auto& p : presets())
        EXPECT_FALSE(p.file.empty()) << p.name;
}

TEST(Presets, TheCopiesInTheBinaryAreTheRepositorysFiles) {
    const fs::path dir = fs::path(SB_SOURCE_DIR) / "share" / "stagebench" / "presets";
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        n += e.path().extension() == ".json" ? 1 : 0;
    ASSERT_EQ(builtin_preset_files().size(), n);
    for (const auto& [file, text] : builtin_preset_files())
        EXPECT_EQ(std::string(text), slurp_path(dir / std::string(file))) << file;
    // Without a directory the binary still has every preset.
    const auto alone = load_presets("");
    EXPECT_EQ(alone.size(), n);
    for (const auto& p : alone)
        EXPECT_TRUE(p.file.empty()) << p.name;
}

TEST(Presets, CountsMatchThePublishedOnes) {
    int checked = 0;
    for (const Preset& p : presets()) {
        if (p.published_params.empty())
            continue;
        const uint64_t n = count_params(p.spec);
        EXPECT_TRUE(matches_published(p.published_params, n))
            << p.name << ": " << n << " vs the published " << p.published_params;
        EXPECT_FALSE(p.params_source.empty()) << p.name;
        ++checked;
    }
    EXPECT_EQ(checked, 14);
}

TEST(Presets, CountsAreExactWhereThePublisherStatesThem) {
    EXPECT_EQ(count_params(P("llama-3.2-1b").spec), 1'235'814'400u);
    EXPECT_EQ(count_params(P("llama-3.2-3b").spec), 3'212'749'824u);
    EXPECT_EQ(count_params(P("llama-3.1-8b").spec), 8'030'261'248u);
    EXPECT_EQ(count_params(P("qwen3-4b").spec), 4'022'468'096u);
    EXPECT_EQ(count_params(P("qwen3-8b").spec), 8'190'735'360u);
    EXPECT_EQ(count_params(P("qwen2.5-1.5b").spec), 1'543'714'304u);
    EXPECT_EQ(count_params(P("gemma-3-1b").spec), 999'885'952u);
    EXPECT_EQ(count_params(P("lfm2-1.2b").spec), 1'170'340'608u);
    EXPECT_EQ(count_params(P("phi-4-mini").spec), 3'836'021'760u);
    // Rounded statements: 0.6B, 1.7B, 3B, 30.5B, 6.9B.
    EXPECT_EQ(count_params(P("qwen3-0.6b").spec), 596'049'920u);
    EXPECT_EQ(count_params(P("qwen3-1.7b").spec), 1'720'574'976u);
    EXPECT_EQ(count_params(P("smollm3-3b").spec), 3'075'098'624u);
    EXPECT_EQ(count_params(P("qwen3-30b-a3b").spec), 30'532'122'624u);
    EXPECT_EQ(count_params(P("olmoe-1b-7b").spec), 6'919'161'856u);
}

TEST(Presets, PublishedFiguresAreReadAtTheirPrecision) {
    EXPECT_TRUE(matches_published("0.6B", 596'049'920));
    EXPECT_TRUE(matches_published("0.6B", 550'000'000));
    EXPECT_FALSE(matches_published("0.6B", 650'000'000));
    EXPECT_FALSE(matches_published("0.6B", 549'999'999));
    EXPECT_TRUE(matches_published("30.5B", 30'532'122'624));
    EXPECT_FALSE(matches_published("30.5B", 30'600'000'000));
    EXPECT_TRUE(matches_published("354M", 354'483'968));
    EXPECT_FALSE(matches_published("350M", 354'483'968));  // a name, not the count
    EXPECT_TRUE(matches_published("1235814400", 1'235'814'400));
    EXPECT_FALSE(matches_published("1235814400", 1'235'814'401));
    for (const char* bad : {"", "B", "0.6", "1.2.3B", ".6B", "6.B", "six", "0.6b"})
        EXPECT_FALSE(matches_published(bad, 600'000'000)) << bad;
}

TEST(Presets, HyperparametersAreThePublishedConfigs) {
    // Each preset's ModelSpec against its config.json's own numbers (config.json names).
    for (const Preset& p : presets()) {
        SCOPED_TRACE(p.name);
        const auto& c = p.config;
        const ModelSpec& s = p.spec;
        EXPECT_EQ(s.n_embd, c.at("hidden_size").get<int64_t>());
        EXPECT_EQ(s.n_layer, c.at("num_hidden_layers").get<int64_t>());
        EXPECT_EQ(s.n_head, c.at("num_attention_heads").get<int64_t>());
        EXPECT_EQ(s.n_head_kv, c.value("num_key_value_heads", s.n_head));
        EXPECT_EQ(s.n_vocab, c.at("vocab_size").get<int64_t>());
        EXPECT_EQ(s.n_ctx_train, c.at("max_position_embeddings").get<int64_t>());
        if (c.contains("head_dim")) {
            EXPECT_EQ(s.head_dim, c.at("head_dim").get<int64_t>());
        }
        if (c.contains("num_experts")) {
            EXPECT_EQ(s.n_expert, c.at("num_experts").get<int64_t>());
            EXPECT_EQ(s.n_expert_used, c.at("num_experts_per_tok").get<int64_t>());
        }
        EXPECT_FALSE(p.source.empty());
        EXPECT_FALSE(p.description.empty());
    }
    EXPECT_EQ(P("lfm2-1.2b").spec.n_ff, 8192);  // block_ff_dim 12288 auto-adjusted
    EXPECT_EQ(P("qwen3-30b-a3b").spec.n_ff_exp, 768);
    EXPECT_EQ(P("olmoe-1b-7b").spec.n_ff_exp, 1024);
    EXPECT_EQ(P("phi-4-mini").spec.n_rot, 96);
    EXPECT_EQ(P("gemma-3-1b").spec.sliding_window, 512);
    EXPECT_EQ(P("gemma-3-1b").spec.rope_theta_swa, 10000.0f);
}

TEST(Presets, LayerOverrideScalesTheCount) {
    for (const Preset& p : presets()) {
        if (!p.spec.layer_kinds.empty())
            continue;  // a hybrid scaled down samples its layer kinds
        const uint64_t full = count_params(p.spec);
        const uint64_t one = count_params(p.spec, 1);
        const uint64_t two = count_params(p.spec, 2);
        const uint64_t per_layer = two - one;
        EXPECT_EQ(full, one + per_layer * static_cast<uint64_t>(p.spec.n_layer - 1)) << p.name;
        EXPECT_EQ(count_params(p.spec, 0), full);
    }
    EXPECT_THROW(arch_tensors(P("tiny").spec, -1), Error);
}

TEST(Presets, UnknownNameListsValidOnes) {
    try {
        find_preset("llama-9");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        const std::string msg = e.what();
        EXPECT_NE(msg.find("llama-9"), std::string::npos);
        for (const auto& n : preset_names())
            EXPECT_NE(msg.find(n), std::string::npos) << n;
    }
}

TEST(Presets, LlamaTensorShapes) {
    const auto ts = arch_tensors(P("llama-3.2-1b").spec);
    EXPECT_EQ(find(ts, "token_embd.weight")->ne, (std::vector<int64_t>{2048, 128256}));
    EXPECT_EQ(find(ts, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{2048, 2048}));
    EXPECT_EQ(find(ts, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(ts, "blk.15.ffn_down.weight")->ne, (std::vector<int64_t>{8192, 2048}));
    EXPECT_EQ(find(ts, "blk.15.ffn_norm.weight")->kind, TensorKind::norm);
    EXPECT_EQ(find(ts, "blk.16.attn_norm.weight"), nullptr);
    EXPECT_EQ(find(ts, "output.weight"), nullptr);  // tied
    EXPECT_EQ(find(ts, "rope_freqs.weight")->ne, (std::vector<int64_t>{32}));
    EXPECT_EQ(ts.size(), 2u + 16u * 9u + 1u);
    const auto big = arch_tensors(P("llama-3.1-8b").spec);
    EXPECT_EQ(find(big, "output.weight")->ne, (std::vector<int64_t>{4096, 128256}));
    EXPECT_EQ(find(big, "rope_freqs.weight")->ne, (std::vector<int64_t>{64}));
}

TEST(Presets, QwenTensorShapes) {
    const auto q3 = arch_tensors(P("qwen3-4b").spec);
    EXPECT_EQ(find(q3, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{2560, 4096}));
    EXPECT_EQ(find(q3, "blk.0.attn_output.weight")->ne, (std::vector<int64_t>{4096, 2560}));
    EXPECT_EQ(find(q3, "blk.35.attn_k_norm.weight")->ne, (std::vector<int64_t>{128}));
    EXPECT_EQ(find(q3, "output.weight"), nullptr);
    const auto q06 = arch_tensors(P("qwen3-0.6b").spec);
    EXPECT_EQ(find(q06, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{1024, 2048}));
    EXPECT_EQ(find(q06, "blk.27.ffn_up.weight")->ne, (std::vector<int64_t>{1024, 3072}));
    const auto q2 = arch_tensors(P("qwen2.5-1.5b").spec);
    EXPECT_EQ(find(q2, "blk.0.attn_k.bias")->ne, (std::vector<int64_t>{256}));
    EXPECT_EQ(find(q2, "blk.0.attn_q_norm.weight"), nullptr);
}

TEST(Presets, MixtureOfExpertsTensorShapes) {
    const auto q = arch_tensors(P("qwen3-30b-a3b").spec, 2);
    EXPECT_EQ(find(q, "blk.1.ffn_gate_inp.weight")->ne, (std::vector<int64_t>{2048, 128}));
    EXPECT_EQ(find(q, "blk.1.ffn_gate_inp.weight")->kind, TensorKind::router);
    EXPECT_EQ(find(q, "blk.1.ffn_gate_exps.weight")->ne, (std::vector<int64_t>{2048, 768, 128}));
    EXPECT_EQ(find(q, "blk.1.ffn_down_exps.weight")->ne, (std::vector<int64_t>{768, 2048, 128}));
    EXPECT_TRUE(find(q, "blk.1.ffn_down_exps.weight")->writes_residual);
    EXPECT_TRUE(find(q, "blk.1.attn_output.weight")->writes_residual);
    EXPECT_EQ(find(q, "blk.1.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(q, "blk.0.ffn_gate.weight"), nullptr);
    EXPECT_NE(find(q, "output.weight"), nullptr);
    const auto o = arch_tensors(P("olmoe-1b-7b").spec, 1);
    EXPECT_EQ(find(o, "blk.0.attn_q_norm.weight")->ne, (std::vector<int64_t>{2048}));
    EXPECT_EQ(find(o, "blk.0.attn_k_norm.weight")->ne, (std::vector<int64_t>{2048}));
    EXPECT_EQ(find(o, "blk.0.ffn_up_exps.weight")->ne, (std::vector<int64_t>{2048, 1024, 64}));
}

TEST(Presets, GemmaLfmPhiAndSmolLmTensorShapes) {
    const auto g = arch_tensors(P("gemma-3-1b").spec, 2);
    EXPECT_EQ(find(g, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{1152, 1024}));
    EXPECT_EQ(find(g, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{1152, 256}));
    EXPECT_EQ(find(g, "blk.1.post_attention_norm.weight")->ne, (std::vector<int64_t>{1152}));
    EXPECT_EQ(find(g, "blk.1.post_ffw_norm.weight")->kind, TensorKind::norm);
    EXPECT_EQ(find(g, "blk.0.attn_q_norm.weight")->ne, (std::vector<int64_t>{256}));
    EXPECT_EQ(find(g, "token_embd.weight")->ne, (std::vector<int64_t>{1152, 262144}));

    const Preset& lfm = P("lfm2-1.2b");
    const auto l = arch_tensors(lfm.spec);
    EXPECT_EQ(find(l, "blk.0.shortconv.conv.weight")->ne, (std::vector<int64_t>{3, 2048}));
    EXPECT_EQ(find(l, "blk.0.shortconv.conv.weight")->kind, TensorKind::conv);
    EXPECT_EQ(find(l, "blk.0.shortconv.in_proj.weight")->ne, (std::vector<int64_t>{2048, 6144}));
    EXPECT_EQ(find(l, "blk.0.attn_q.weight"), nullptr);
    EXPECT_EQ(find(l, "blk.2.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(l, "blk.2.attn_q_norm.weight")->ne, (std::vector<int64_t>{64}));
    EXPECT_EQ(find(l, "blk.2.shortconv.conv.weight"), nullptr);
    EXPECT_NE(find(l, "token_embd_norm.weight"), nullptr);  // LFM2's output norm
    EXPECT_EQ(find(l, "output_norm.weight"), nullptr);
    // Two layers keep one of each kind: layers 0 (conv) and 8 (attention).
    const auto two = layer_kinds_for(lfm.spec, 2);
    EXPECT_EQ(two, (std::vector<LayerKind>{LayerKind::shortconv, LayerKind::attention}));
    EXPECT_EQ(layer_kinds_for(lfm.spec, 16), lfm.spec.layer_kinds);

    const auto p = arch_tensors(P("phi-4-mini").spec, 1);
    EXPECT_EQ(find(p, "blk.0.attn_qkv.weight")->ne, (std::vector<int64_t>{3072, 5120}));
    EXPECT_EQ(find(p, "blk.0.ffn_up.weight")->ne, (std::vector<int64_t>{3072, 16384}));
    EXPECT_EQ(find(p, "rope_factors_long.weight")->ne, (std::vector<int64_t>{48}));
    EXPECT_EQ(find(p, "rope_factors_short.weight")->kind, TensorKind::rope_short);
    EXPECT_EQ(find(p, "output.weight"), nullptr);
    const auto& lr = *P("phi-4-mini").spec.longrope;
    EXPECT_EQ(lr.long_factors.back(), 47.77f);
    EXPECT_EQ(lr.original_context, 4096);
    EXPECT_FLOAT_EQ(lr.attn_factor,
                    static_cast<float>(std::sqrt(1 + std::log(32.0) / std::log(4096.0))));

    const auto s = arch_tensors(P("smollm3-3b").spec, 4);
    EXPECT_EQ(find(s, "blk.3.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(s, "blk.3.ffn_gate.weight")->ne, (std::vector<int64_t>{2048, 11008}));
}

TEST(Presets, QwenPresetsCarryTheirTokenizersSpecialTokens) {
    for (const char* name : {"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-30b-a3b"}) {
        SCOPED_TRACE(name);
        const auto& t = P(name).tokenizer;
        ASSERT_TRUE(t);
        EXPECT_EQ(t->eos_token_id, 151645);  // <|im_end|>
        EXPECT_EQ(t->padding_token_id, 151643);
        EXPECT_EQ(t->add_bos_token, false);
        ASSERT_EQ(t->added_tokens.size(), 26u);
        EXPECT_EQ(t->added_tokens[24].content, "<think>");
        EXPECT_EQ(t->added_tokens[24].id, 151667);
        EXPECT_FALSE(t->added_tokens[24].special);
        EXPECT_TRUE(t->added_tokens[1].special);  // <|im_start|>
    }
    ASSERT_TRUE(P("qwen2.5-1.5b").tokenizer);
    EXPECT_EQ(P("qwen2.5-1.5b").tokenizer->added_tokens.size(), 22u);
    EXPECT_EQ(P("qwen2.5-1.5b").tokenizer->eos_token_id, 151643);
}

TEST(Presets, TinyIsTiny) {
    const Preset& p = P("tiny");
    EXPECT_EQ(p.spec.arch, "llama");
    EXPECT_LT(count_params(p.spec), 5'000'000u);
    EXPECT_TRUE(p.published_params.empty());
    EXPECT_EQ(p.spec.n_head * p.spec.head_dim, p.spec.n_embd);
}

TEST(Presets, Llama3RopeFactors) {
    const ModelSpec& s = P("llama-3.1-8b").spec;
    const auto f = llama3_rope_factors(*s.llama3_rope, s.rope_theta, s.head_dim);
    ASSERT_EQ(f.size(), 64u);
    EXPECT_EQ(f.front(), 1.0f);
    EXPECT_EQ(f.back(), 8.0f);
    for (std::size_t i = 1; i < f.size(); ++i)
        EXPECT_GE(f[i], f[i - 1]);
    const ModelSpec& small = P("llama-3.2-1b").spec;
    const auto g = llama3_rope_factors(*small.llama3_rope, small.rope_theta, small.head_dim);
    ASSERT_EQ(g.size(), 32u);
    EXPECT_EQ(g.back(), 32.0f);
}

// A preset file dropped in the directory is a preset; one of a built-in's name replaces it.
TEST(PresetFiles, AreReadAtRunTimeFromTheDirectory) {
    const fs::path dir = presets_dir();
    nlohmann::json j = P("qwen3-0.6b").config;
    j["num_hidden_layers"] = 3;
    const nlohmann::json mine = {{"name", "my-qwen"},
                                 {"description", "a Qwen3 of three layers"},
                                 {"source", "a test"},
                                 {"vocab", "qwen2"},
                                 {"config", j}};
    std::ofstream(dir / "my-qwen.json") << mine.dump(2);
    nlohmann::json tiny = nlohmann::json::parse(
        slurp_path(fs::path(SB_SOURCE_DIR) / "share/stagebench/presets/tiny.json"));
    tiny["config"]["num_hidden_layers"] = 2;
    std::ofstream(dir / "tiny.json") << tiny.dump(2);
    const auto all = load_presets(dir.string());
    const Preset* got = nullptr;
    const Preset* t = nullptr;
    for (const auto& p : all) {
        if (p.name == "my-qwen")
            got = &p;
        if (p.name == "tiny")
            t = &p;
    }
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->spec.n_layer, 3);
    EXPECT_EQ(got->spec.arch, "qwen3");
    EXPECT_EQ(got->file, (dir / "my-qwen.json").string());
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->spec.n_layer, 2);
    EXPECT_EQ(all.size(), builtin_preset_files().size() + 1);
}

TEST(PresetFiles, ABrokenFileIsOneLineNamingItAndTheField) {
    const fs::path dir = presets_dir();
    auto expect = [&](const std::string& text, const std::string& needle) {
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::ofstream(dir / "bad.json") << text;
        try {
            load_presets(dir.string());
            ADD_FAILURE() << "no error for " << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            const std::string msg = e.what();
            EXPECT_NE(msg.find((dir / "bad.json").string()), std::string::npos) << msg;
            EXPECT_NE(msg.find(needle), std::string::npos) << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        }
    };
    expect("{not json", "not JSON");
    expect(R"({"name": "other", "description": "d", "source": "s", "config": {}})", "'other'");
    expect(R"({"name": "bad", "source": "s", "config": {}})", "description");
    expect(R"({"name": "bad", "description": "d", "source": "s"})", "config");
    expect(R"({"name": "bad", "description": "d", "source": "s", "published_params": "lots",
               "config": {"model_type": "llama"}})",
           "published_params");
    expect(R"({"name": "bad", "description": "d", "source": "s",
               "config": {"model_type": "llama", "hidden_size": 256}})",
           "num_hidden_layers");
    nlohmann::json q = {
        {"name", "bad"}, {"description", "d"}, {"source", "s"}, {"config", P("qwen3-0.6b").config}};
    q["tokenizer"] = {{"added_tokens", {{{"id", 200000}, {"content", "<x>"}}}}};
    expect(q.dump(), "200000");
    q["tokenizer"] = {{"added_tokens", {{{"id", 2}, {"content", "<x>"}, {"special", "yes"}}}}};
    expect(q.dump(), "special");
    // Read as config.json is (model/hf_config.hpp): nesting bounded, numbers a double holds.
    expect(R"({"name": "bad", "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}",
           "more than 64 deep");
    expect(R"({"name": "bad", "config": {"rope_theta": 1e999}})", "config.rope_theta is 1e999");
}

// A FIFO in the preset directory is refused at once, never waited on.
TEST(PresetFiles, AFifoIsRefusedNotRead) {
    const fs::path dir = presets_dir();
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path fifo = dir / "fifo.json";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Before the fix the reader opened it and waited for a writer: this one opens it (if a
    // reader has) and closes it at once, so that the test ends either way.
    std::thread writer([&] {
        for (int i = 0; i < 100; ++i) {
            const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            if (fd >= 0) {
                ::close(fd);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    try {
        load_presets(dir.string());
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("it is a FIFO"), std::string::npos) << e.what();
    }
    writer.join();
}

}  // namespace
}  // namespace sb
