// How llama.cpp itself routes the tokens of a synthetic mixture of experts (`synth --routing`):
// the model is written by the real binary, loaded by the real llama.cpp in-process, and the
// experts each token chose are read from the graph (the ffn_moe_topk nodes, through llama.cpp's
// eval callback). The one place a test reads ggml tensors: what llama.cpp chose is the claim.
#include <ggml-backend.h>
#include <ggml.h>
#include <gtest/gtest.h>

#include <algorithm>
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
#include "model/hf_config.hpp"
#include "model/routing.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

constexpr int kExperts = 64;
constexpr int kUsed = 8;

// A small Qwen3-MoE: 64 experts, 8 per token, two layers.
json moe_config() {
    return {{"model_type", "qwen3_moe"}, {"hidden_size", 256},
            {"num_hidden_layers", 2},    {"num_attention_heads", 4},
            {"num_key_value_heads", 2},  {"head_dim", 64},
            {"intermediate_size", 512},  {"moe_intermediate_size", 64},
            {"num_experts", kExperts},   {"num_experts_per_tok", kUsed},
            {"vocab_size", 4096},        {"max_position_embeddings", 4096}};
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
    r.plan = sb::plan_routing(sb::parse_routing(routing), sb::read_hf_config(cfg), 2, 5);
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
    for (int layer = 0; layer < 2; ++layer) {
        SCOPED_TRACE(layer);
        ASSERT_EQ(r.choices.by_layer.at(layer).size(), 2048u);
        const auto got = shares_by_rank(r, layer);
        const auto& want = r.plan.target_share;
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
    for (int layer = 0; layer < 2; ++layer) {
        SCOPED_TRACE(layer);
        const auto got = shares_by_rank(r, layer);
        const double mean = static_cast<double>(kUsed) / kExperts;  // 0.125
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
    for (int layer = 0; layer < 2; ++layer) {
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
