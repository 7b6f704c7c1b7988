// What llama.cpp itself does with synthetic models: which experts each token of a mixture of
// experts chose (`synth --routing`; the ffn_moe_topk nodes, read through llama.cpp's eval
// callback), which cached positions Gemma 3's local layer hides (its sliding-window mask), and
// which type llama-quantize's own code (llama_model_quantize, the pinned src/llama-quant.cpp)
// gives each tensor against the types `synth --quant` chose. The models are written by the real
// binary and run by the real llama.cpp in-process. The one place a test calls llama.cpp and
// reads ggml tensors: what llama.cpp computed is the claim.
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cli_harness.hpp"
#include "engine/llama_engine.hpp"
#include "model/gguf.hpp"
#include "model/hf_config.hpp"
#include "model/routing.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

constexpr int kExperts = 64;
constexpr int kUsed = 8;

// A small Qwen3-MoE: 64 experts, 8 per token, three layers. The last layer runs its experts
// only on the tokens whose logits are asked for (llama.cpp's inp_out_ids), so the statistics
// are taken on the first two.
constexpr int kLayers = 3;
constexpr int kRouted = 2;  // layers that route every token
json moe_config() {
    return {{"model_type", "qwen3_moe"},    {"hidden_size", 256},
            {"num_hidden_layers", kLayers}, {"num_attention_heads", 4},
            {"num_key_value_heads", 2},     {"head_dim", 64},
            {"intermediate_size", 512},     {"moe_intermediate_size", 64},
            {"num_experts", kExperts},      {"num_experts_per_tok", kUsed},
            {"vocab_size", 4096},           {"max_position_embeddings", 4096}};
}

// Every token's chosen experts, per layer, in the order the graph computed them.
struct Choices {
    std::map<int, std::vector<std::vector<int32_t>>> by_layer;  // layer -> token -> experts
};

bool capture(ggml_tensor* t, bool ask, void* user) {
    const std::string name = ggml_get_name(t);
    if (name.rfind("ffn_moe_topk-", 0) != 0)
        return !ask;  // not wanted; and never stop the graph
    if (ask)
        return true;
    // A view of the argsort's first k columns: read the sorted rows, keep the first k.
    const ggml_tensor* src = t->view_src ? t->view_src : t;
    std::vector<int32_t> all(static_cast<std::size_t>(ggml_nbytes(src) / sizeof(int32_t)));
    ggml_backend_tensor_get(const_cast<ggml_tensor*>(src), all.data(), 0, ggml_nbytes(src));
    const int64_t stride = static_cast<int64_t>(t->nb[1] / sizeof(int32_t));
    const int64_t offset = static_cast<int64_t>(t->view_offs / sizeof(int32_t));
    auto& rows = static_cast<Choices*>(user)->by_layer[std::stoi(name.substr(13))];
    for (int64_t r = 0; r < t->ne[1]; ++r) {
        const int32_t* row = all.data() + offset + r * stride;
        std::vector<int32_t> experts(row, row + t->ne[0]);
        std::sort(experts.begin(), experts.end());
        rows.push_back(std::move(experts));
    }
    return true;
}

struct Routed {
    Choices choices;
    sb::RoutingPlan plan;
};

// Writes the model with `routing`, prefills `tokens` and returns what llama.cpp chose.
Routed route(const TempDir& t, const std::string& routing, const std::vector<int32_t>& tokens) {
    const std::string cfg = t.file("config.json");
    std::ofstream(cfg) << moe_config().dump();
    const std::string model = t.file(routing + ".gguf");
    const Proc p = run_sb({"synth", "--config", cfg, "--routing", routing, "--seed", "5", "--vocab",
                           "synthetic", "-o", model});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    Routed r;
    r.plan = sb::plan_routing(sb::parse_routing(routing), sb::read_hf_config(cfg), kLayers, 5);
    sb::LlamaEngine e;
    sb::LoadSpec spec;
    spec.model_path = model;
    spec.n_ctx = 4096;
    spec.n_threads = 2;
    spec.eval_callback = capture;
    spec.eval_user_data = &r.choices;
    e.load(spec);
    e.prefill(tokens);
    return r;
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int32_t> d(3, 4095);
    std::vector<int32_t> v(static_cast<std::size_t>(n));
    for (auto& x : v)
        x = d(gen);
    return v;
}

// Share of tokens choosing each popularity rank of the plan, per layer.
std::vector<double> shares_by_rank(const Routed& r, int layer) {
    const auto& rows = r.choices.by_layer.at(layer);
    std::vector<double> by_expert(kExperts, 0.0);
    for (const auto& experts : rows)
        for (int32_t e : experts)
            by_expert[static_cast<std::size_t>(e)] += 1.0 / static_cast<double>(rows.size());
    std::vector<double> by_rank(kExperts);
    for (int rank = 0; rank < kExperts; ++rank)
        by_rank[static_cast<std::size_t>(rank)] =
            by_expert[static_cast<std::size_t>(r.plan.rank_to_expert[static_cast<std::size_t>(
                layer)][static_cast<std::size_t>(rank)])];
    return by_rank;
}

double sum(const std::vector<double>& v, std::size_t a, std::size_t b) {
    return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(a),
                           v.begin() + static_cast<std::ptrdiff_t>(b), 0.0);
}

}  // namespace

TEST(SynthRouting, SkewedRoutingFollowsTheStatedPopularityInLlamaCpp) {
    TempDir t;
    const Routed r = route(t, "skewed", random_tokens(2048, 11));
    for (int layer = 0; layer < kRouted; ++layer) {
        SCOPED_TRACE(layer);
        ASSERT_EQ(r.choices.by_layer.at(layer).size(), 2048u);
        const auto got = shares_by_rank(r, layer);
        const auto& want = r.plan.target_share;
        std::printf(
            "layer %d: the most popular expert chosen by %.3f of tokens (plan %.3f), "
            "the 8 most popular take %.3f of the choices (plan %.3f), the least "
            "popular chosen by %.3f (plan %.3f)\n",
            layer, got[0], want[0], sum(got, 0, 8) / kUsed, sum(want, 0, 8) / kUsed, got.back(),
            want.back());
        // The hot experts take the share the plan states; the popularity falls with rank.
        EXPECT_NEAR(sum(got, 0, 8), sum(want, 0, 8), 0.15 * sum(want, 0, 8));
        EXPECT_NEAR(got[0], want[0], 0.15);
        EXPECT_GT(sum(got, 0, 8) / 8, 2 * sum(got, 8, 32) / 24);
        EXPECT_GT(sum(got, 8, 32) / 24, 1.5 * sum(got, 32, 64) / 32);
    }
}

TEST(SynthRouting, UniformRoutingSpreadsTokensEvenly) {
    TempDir t;
    const Routed r = route(t, "uniform", random_tokens(2048, 12));
    for (int layer = 0; layer < kRouted; ++layer) {
        SCOPED_TRACE(layer);
        const auto got = shares_by_rank(r, layer);
        const double mean = static_cast<double>(kUsed) / kExperts;  // 0.125
        std::printf("layer %d: experts chosen by %.3f to %.3f of tokens (uniform %.3f)\n", layer,
                    *std::min_element(got.begin(), got.end()),
                    *std::max_element(got.begin(), got.end()), mean);
        // 2048 tokens: each expert's share has a standard deviation of about 0.0073.
        for (double s : got)
            EXPECT_NEAR(s, mean, 0.045);
        EXPECT_NEAR(sum(got, 0, 8), 8 * mean, 0.06);
    }
}

TEST(SynthRouting, ATokenChoosesTheSameExpertsWhateverItsContext) {
    TempDir t;
    std::vector<int32_t> tokens = random_tokens(600, 13);
    tokens[5] = tokens[300] = tokens[599] = 1234;
    const Routed r = route(t, "skewed", tokens);
    for (int layer = 0; layer < kRouted; ++layer) {
        const auto& rows = r.choices.by_layer.at(layer);
        ASSERT_EQ(rows.size(), tokens.size());
        EXPECT_EQ(rows[5], rows[300]) << layer;
        EXPECT_EQ(rows[5], rows[599]) << layer;
        int differ = 0;
        for (std::size_t i = 0; i + 1 < rows.size(); ++i)
            differ += rows[i] != rows[i + 1] ? 1 : 0;
        EXPECT_GT(differ, 500) << "different tokens choose differently";
    }
}

namespace {

// Per attention node (in graph order: one per layer), how many cells its mask hides.
struct Masks {
    bool on = false;
    std::vector<int64_t> hidden;
};

bool count_masked(ggml_tensor* t, bool ask, void* user) {
    auto* m = static_cast<Masks*>(user);
    const bool attention = t->op == GGML_OP_FLASH_ATTN_EXT || t->op == GGML_OP_SOFT_MAX;
    if (ask)
        return m->on && attention;
    if (!m->on || !attention)
        return true;
    const ggml_tensor* mask = t->op == GGML_OP_FLASH_ATTN_EXT ? t->src[3] : t->src[1];
    if (!mask)
        return true;
    // One decoded token: the mask's first row holds a value per cache cell, -inf where hidden.
    const auto n = static_cast<std::size_t>(mask->ne[0]);
    int64_t hidden = 0;
    if (mask->type == GGML_TYPE_F16) {
        std::vector<ggml_fp16_t> row(n);
        ggml_backend_tensor_get(const_cast<ggml_tensor*>(mask), row.data(), 0,
                                n * sizeof(ggml_fp16_t));
        for (auto v : row)
            hidden += std::isinf(ggml_fp16_to_fp32(v)) ? 1 : 0;
    } else {
        std::vector<float> row(n);
        ggml_backend_tensor_get(const_cast<ggml_tensor*>(mask), row.data(), 0, n * sizeof(float));
        for (float v : row)
            hidden += std::isinf(v) ? 1 : 0;
    }
    m->hidden.push_back(hidden);
    return true;
}

}  // namespace

TEST(SynthGraph, Gemma3sLocalLayerHidesAllButItsWindow) {
    TempDir t;
    const std::string model = t.file("g.gguf");
    // Two layers: one local (sliding window of 512), one global.
    const Proc p = run_sb(
        {"synth", "--preset", "gemma-3-1b", "--layers", "2", "--quant", "q8_0", "-o", model});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    Masks masks;
    sb::LlamaEngine e;
    sb::LoadSpec spec;
    spec.model_path = model;
    spec.n_ctx = 2048;
    spec.n_threads = 2;
    spec.eval_callback = count_masked;
    spec.eval_user_data = &masks;
    e.load(spec);
    const int depth = 1500;
    e.fill_to_depth(depth, 1);
    masks.on = true;
    e.decode_step(17);
    ASSERT_EQ(masks.hidden.size(), 2u);
    // The token at position 1500 sees the 512 positions up to it in the local layer and all
    // 1501 in the global one; each mask also hides the cells no token uses yet.
    const int64_t local = masks.hidden[0], global = masks.hidden[1];
    std::printf("cells hidden from the token at position %d: local layer %lld, global %lld\n",
                depth, static_cast<long long>(local), static_cast<long long>(global));
    EXPECT_EQ(local - global, depth + 1 - 512);
}

namespace {

std::map<std::string, std::string> tensor_types(const std::string& path) {
    std::map<std::string, std::string> types;
    for (const auto& t : sb::read_gguf(path).tensors)
        types[t.name] = std::string(sb::ggml_type_info(t.type)->name);
    return types;
}

}  // namespace

TEST(SynthQuant, TheMixIsTheOneLlamaQuantizeChooses) {
    // Eight layers (llama-quantize's use_more_bits picks some of them), widths on and off the
    // 256-element block, tied and untied outputs, eight experts (llama-quant.cpp has rules for
    // exactly eight), fused QKV, convolution layers.
    const json base = {{"num_hidden_layers", 8},         {"num_attention_heads", 4},
                       {"num_key_value_heads", 2},       {"head_dim", 64},
                       {"intermediate_size", 512},       {"vocab_size", 1024},
                       {"max_position_embeddings", 512}, {"hidden_size", 256}};
    auto with = [&](json extra) {
        json j = base;
        for (const auto& [k, v] : extra.items())
            j[k] = v;
        return j;
    };
    const std::vector<std::pair<std::string, json>> configs = {
        {"qwen3", with({{"model_type", "qwen3"}, {"tie_word_embeddings", true}})},
        {"qwen3moe", with({{"model_type", "qwen3_moe"},
                           {"num_experts", 8},
                           {"num_experts_per_tok", 2},
                           {"moe_intermediate_size", 256}})},
        {"gemma3", with({{"model_type", "gemma3_text"}, {"hidden_size", 1152}})},
        {"lfm2", with({{"model_type", "lfm2"},
                       {"head_dim", nullptr},
                       {"block_ff_dim", 768},
                       {"conv_L_cache", 3},
                       {"layer_types",
                        {"conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv",
                         "full_attention"}}})},
        {"phi3", with({{"model_type", "phi3"}, {"head_dim", nullptr}})},
    };
    const std::vector<std::pair<std::string, llama_ftype>> quants = {
        {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
        {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
        {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M},
        {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M},
        {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K}};
    llama_backend_init();
    TempDir t;
    int compared = 0;
    for (const auto& [name, config] : configs) {
        json c = config;
        for (auto it = c.begin(); it != c.end();)
            it = it->is_null() ? c.erase(it) : std::next(it);
        const std::string cfg = t.file(name + ".json");
        std::ofstream(cfg) << c.dump();
        // The converter's F16 file, as llama-quantize's input.
        const std::string f16 = t.file(name + "-f16.gguf");
        Proc p =
            run_sb({"synth", "--config", cfg, "--quant", "f16", "--vocab", "synthetic", "-o", f16});
        ASSERT_EQ(p.exit_code, 0) << p.err;
        for (const auto& [quant, ftype] : quants) {
            SCOPED_TRACE(name + " " + quant);
            const std::string ours = t.file(name + "-" + quant + ".gguf");
            p = run_sb(
                {"synth", "--config", cfg, "--quant", quant, "--vocab", "synthetic", "-o", ours});
            ASSERT_EQ(p.exit_code, 0) << p.err;
            const std::string theirs = t.file(name + "-" + quant + "-llama.gguf");
            llama_model_quantize_params qp = llama_model_quantize_default_params();
            qp.ftype = ftype;
            qp.nthread = 2;
            ASSERT_EQ(llama_model_quantize(f16.c_str(), theirs.c_str(), &qp), 0u);
            EXPECT_EQ(tensor_types(ours), tensor_types(theirs));
            EXPECT_EQ(sb::read_gguf(ours).get_u32("general.file_type"),
                      sb::read_gguf(theirs).get_u32("general.file_type"));
            ++compared;
        }
    }
    EXPECT_EQ(compared, 25);
}
