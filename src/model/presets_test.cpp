#include "model/presets.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.hpp"

namespace sb {
namespace {

const TensorSpec* find(const std::vector<TensorSpec>& ts, const std::string& name) {
    for (const auto& t : ts) {
        if (t.name == name)
            return &t;
    }
    return nullptr;
}

TEST(Presets, CountsMatchPublishedWithinOnePercent) {
    int checked = 0;
    for (const Preset& p : presets()) {
        if (!p.published_params)
            continue;
        const double got = static_cast<double>(count_params(p));
        const double want = static_cast<double>(*p.published_params);
        EXPECT_LE(std::abs(got - want) / want, 0.01) << p.name << ": " << got << " vs " << want;
        ++checked;
    }
    EXPECT_EQ(checked, 6);
}

TEST(Presets, CountsAreExactForTheShapesWeCopy) {
    // The presets copy config.json exactly, so the counts match the publishers' to the unit.
    EXPECT_EQ(count_params(find_preset("llama-3.2-1b")), 1'235'814'400u);
    EXPECT_EQ(count_params(find_preset("llama-3.2-3b")), 3'212'749'824u);
    EXPECT_EQ(count_params(find_preset("llama-3.1-8b")), 8'030'261'248u);
    EXPECT_EQ(count_params(find_preset("qwen3-4b")), 4'022'468'096u);
    EXPECT_EQ(count_params(find_preset("qwen3-8b")), 8'190'735'360u);
    EXPECT_EQ(count_params(find_preset("qwen2.5-1.5b")), 1'543'714'304u);
}

TEST(Presets, LayerOverrideScalesTheCount) {
    for (const Preset& p : presets()) {
        const uint64_t full = count_params(p);
        const uint64_t one = count_params(p, 1);
        const uint64_t two = count_params(p, 2);
        const uint64_t per_layer = two - one;
        EXPECT_EQ(full, one + per_layer * static_cast<uint64_t>(p.n_layer - 1)) << p.name;
        EXPECT_EQ(count_params(p, 0), full);
        EXPECT_EQ(count_params(p, static_cast<int>(p.n_layer) + 3), full + 3 * per_layer);
    }
    EXPECT_THROW(preset_tensors(find_preset("tiny"), -1), Error);
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

TEST(Presets, NamesAreUnique) {
    const auto names = preset_names();
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    EXPECT_EQ(names.size(), 7u);
}

TEST(Presets, LlamaTensorShapes) {
    const Preset& p = find_preset("llama-3.2-1b");
    const auto ts = preset_tensors(p);
    ASSERT_NE(find(ts, "token_embd.weight"), nullptr);
    EXPECT_EQ(find(ts, "token_embd.weight")->ne, (std::vector<int64_t>{2048, 128256}));
    EXPECT_EQ(find(ts, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{2048, 2048}));
    EXPECT_EQ(find(ts, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(ts, "blk.0.attn_v.weight")->ne, (std::vector<int64_t>{2048, 512}));
    EXPECT_EQ(find(ts, "blk.15.attn_output.weight")->ne, (std::vector<int64_t>{2048, 2048}));
    EXPECT_EQ(find(ts, "blk.15.ffn_gate.weight")->ne, (std::vector<int64_t>{2048, 8192}));
    EXPECT_EQ(find(ts, "blk.15.ffn_down.weight")->ne, (std::vector<int64_t>{8192, 2048}));
    EXPECT_EQ(find(ts, "blk.15.ffn_norm.weight")->kind, TensorKind::norm);
    EXPECT_EQ(find(ts, "blk.16.attn_norm.weight"), nullptr);
    EXPECT_EQ(find(ts, "output.weight"), nullptr);  // tied
    EXPECT_EQ(find(ts, "blk.0.attn_q.bias"), nullptr);
    EXPECT_EQ(find(ts, "blk.0.attn_q_norm.weight"), nullptr);
    ASSERT_NE(find(ts, "rope_freqs.weight"), nullptr);
    EXPECT_EQ(find(ts, "rope_freqs.weight")->ne, (std::vector<int64_t>{32}));
    EXPECT_EQ(find(ts, "rope_freqs.weight")->kind, TensorKind::rope_freqs);
    EXPECT_EQ(ts.size(), 2u + 16u * 9u + 1u);

    const auto big = preset_tensors(find_preset("llama-3.1-8b"));
    ASSERT_NE(find(big, "output.weight"), nullptr);
    EXPECT_EQ(find(big, "output.weight")->ne, (std::vector<int64_t>{4096, 128256}));
    EXPECT_EQ(find(big, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{4096, 1024}));
    EXPECT_EQ(find(big, "rope_freqs.weight")->ne, (std::vector<int64_t>{64}));

    const auto three = preset_tensors(find_preset("llama-3.2-3b"));
    EXPECT_EQ(find(three, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{3072, 3072}));
    EXPECT_EQ(find(three, "blk.27.attn_output.weight")->ne, (std::vector<int64_t>{3072, 3072}));
}

TEST(Presets, QwenTensorShapes) {
    const auto q3 = preset_tensors(find_preset("qwen3-4b"));
    // Qwen3 4B: 32 heads of 128 = 4096 query width, wider than n_embd.
    EXPECT_EQ(find(q3, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{2560, 4096}));
    EXPECT_EQ(find(q3, "blk.0.attn_output.weight")->ne, (std::vector<int64_t>{4096, 2560}));
    EXPECT_EQ(find(q3, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{2560, 1024}));
    EXPECT_EQ(find(q3, "blk.0.attn_q_norm.weight")->ne, (std::vector<int64_t>{128}));
    EXPECT_EQ(find(q3, "blk.35.attn_k_norm.weight")->ne, (std::vector<int64_t>{128}));
    EXPECT_EQ(find(q3, "rope_freqs.weight"), nullptr);
    EXPECT_EQ(find(q3, "output.weight"), nullptr);
    EXPECT_NE(find(preset_tensors(find_preset("qwen3-8b")), "output.weight"), nullptr);

    const auto q2 = preset_tensors(find_preset("qwen2.5-1.5b"));
    EXPECT_EQ(find(q2, "blk.0.attn_q.weight")->ne, (std::vector<int64_t>{1536, 1536}));
    EXPECT_EQ(find(q2, "blk.0.attn_k.weight")->ne, (std::vector<int64_t>{1536, 256}));
    EXPECT_EQ(find(q2, "blk.0.attn_q.bias")->ne, (std::vector<int64_t>{1536}));
    EXPECT_EQ(find(q2, "blk.0.attn_k.bias")->ne, (std::vector<int64_t>{256}));
    EXPECT_EQ(find(q2, "blk.0.attn_v.bias")->kind, TensorKind::bias);
    EXPECT_EQ(find(q2, "blk.0.ffn_down.weight")->ne, (std::vector<int64_t>{8960, 1536}));
    EXPECT_EQ(find(q2, "blk.0.attn_q_norm.weight"), nullptr);
}

TEST(Presets, TinyIsTiny) {
    const Preset& p = find_preset("tiny");
    EXPECT_EQ(p.arch, "llama");
    EXPECT_LT(count_params(p), 5'000'000u);
    EXPECT_FALSE(p.published_params);
    EXPECT_EQ(p.n_head * p.head_dim, p.n_embd);
}

TEST(Presets, HeadDimensionsAreConsistent) {
    for (const Preset& p : presets()) {
        EXPECT_EQ(p.n_head % p.n_head_kv, 0) << p.name;
        EXPECT_EQ(p.head_dim % 2, 0) << p.name;
        if (p.arch != "qwen3") {
            EXPECT_EQ(p.n_head * p.head_dim, p.n_embd) << p.name;
        }
    }
}

TEST(Presets, Llama3RopeFactors) {
    // Llama 3.1 8B's rope_freqs.weight: 1 for high frequencies, 8 for low, smooth between.
    const Preset& p = find_preset("llama-3.1-8b");
    const auto f = llama3_rope_factors(*p.rope_scaling, p.rope_theta, p.head_dim);
    ASSERT_EQ(f.size(), 64u);
    EXPECT_EQ(f.front(), 1.0f);
    EXPECT_EQ(f.back(), 8.0f);
    for (std::size_t i = 1; i < f.size(); ++i)
        EXPECT_GE(f[i], f[i - 1]);
    int between = 0;
    for (float x : f)
        between += (x > 1.0f && x < 8.0f) ? 1 : 0;
    EXPECT_GT(between, 0);

    const Preset& small = find_preset("llama-3.2-1b");
    const auto g = llama3_rope_factors(*small.rope_scaling, small.rope_theta, small.head_dim);
    ASSERT_EQ(g.size(), 32u);
    EXPECT_EQ(g.back(), 32.0f);
}

}  // namespace
}  // namespace sb
