#include "model/quant_mix.hpp"

#include <gtest/gtest.h>

#include <map>

#include "core/error.hpp"
#include "model/gguf.hpp"
#include "model/presets.hpp"

namespace sb {
namespace {

// name -> ggml type name, for a preset scaled to `layers` written as `quant`.
std::map<std::string, std::string> mix(const char* preset, const char* quant, int layers,
                                       bool pure = false) {
    const ModelSpec& spec = find_preset(preset).spec;
    const auto tensors = arch_tensors(spec, layers);
    QuantMixer m(parse_quant_scheme(quant), pure, spec, layers, tensors);
    std::map<std::string, std::string> types;
    for (const auto& t : tensors)
        types[t.name] = std::string(ggml_type_info(m.type_for(t))->name);
    return types;
}

TEST(QuantMix, Q4_0KeepsTheOutputAndATiedEmbeddingAtQ6_K) {
    // llama-quant.cpp: the output (or, tied, the embedding that is the output) at Q6_K.
    const auto tied = mix("qwen3-0.6b", "q4_0", 2);
    EXPECT_EQ(tied.at("token_embd.weight"), "q6_K");
    EXPECT_EQ(tied.at("blk.0.attn_v.weight"), "q4_0");
    EXPECT_EQ(tied.at("blk.1.ffn_down.weight"), "q4_0");
    EXPECT_EQ(tied.at("blk.1.attn_q_norm.weight"), "f32");
    EXPECT_EQ(tied.at("output_norm.weight"), "f32");
    const auto untied = mix("qwen3-8b", "q4_0", 2);
    EXPECT_EQ(untied.at("token_embd.weight"), "q4_0");
    EXPECT_EQ(untied.at("output.weight"), "q6_K");
    // Q8_0 keeps its output at Q8_0.
    EXPECT_EQ(mix("qwen3-8b", "q8_0", 1).at("output.weight"), "q8_0");
    EXPECT_EQ(mix("qwen3-0.6b", "q8_0", 1).at("token_embd.weight"), "q8_0");
}

TEST(QuantMix, PureIsUniformAsToday) {
    const auto pure = mix("qwen3-0.6b", "q4_0", 2, true);
    EXPECT_EQ(pure.at("token_embd.weight"), "q4_0");
    EXPECT_EQ(pure.at("blk.0.attn_v.weight"), "q4_0");
    EXPECT_EQ(pure.at("blk.0.attn_norm.weight"), "f32");
    const auto moe = mix("qwen3-30b-a3b", "q4_0", 1, true);
    EXPECT_EQ(moe.at("blk.0.ffn_gate_inp.weight"), "f32");  // the router is never quantized
    EXPECT_EQ(moe.at("output.weight"), "q4_0");
}

TEST(QuantMix, RowsOffTheBlockFallBackAsLlamaQuantizeDoes) {
    // Gemma 3 1B is 1152 wide: 1152 % 256 = 128, so Q6_K becomes Q8_0 for the tied embedding
    // and every Q4_K of Q4_K_M becomes Q5_0.
    EXPECT_EQ(mix("gemma-3-1b", "q4_0", 2).at("token_embd.weight"), "q8_0");
    const auto km = mix("gemma-3-1b", "q4_k_m", 2);
    EXPECT_EQ(km.at("token_embd.weight"), "q8_0");
    EXPECT_EQ(km.at("blk.0.attn_q.weight"), "q5_0");
    EXPECT_EQ(km.at("blk.0.ffn_gate.weight"), "q5_0");
    // 6912 % 256 == 0: no fallback; of two layers use_more_bits picks the last.
    EXPECT_EQ(km.at("blk.0.ffn_down.weight"), "q4_K");
    EXPECT_EQ(km.at("blk.1.ffn_down.weight"), "q6_K");
    EXPECT_EQ(mix("gemma-3-1b", "q4_k_m", 2, true).at("blk.0.attn_q.weight"), "q5_0");
    // The convolution kernels stay F32; its in_proj is quantized.
    const auto lfm = mix("lfm2-1.2b", "q4_0", 2);
    EXPECT_EQ(lfm.at("blk.0.shortconv.conv.weight"), "f32");
    EXPECT_EQ(lfm.at("blk.0.shortconv.in_proj.weight"), "q4_0");
}

TEST(QuantMix, Q4_K_MGivesSomeLayersMoreBits) {
    // use_more_bits(i, n): the first and last eighth and every third layer between.
    const auto m = mix("qwen3-0.6b", "q4_k_m", 28);
    for (int i = 0; i < 28; ++i) {
        const bool more = i < 3 || i >= 24 || (i - 3) % 3 == 2;
        const std::string want = more ? "q6_K" : "q4_K";
        EXPECT_EQ(m.at("blk." + std::to_string(i) + ".attn_v.weight"), want) << i;
        EXPECT_EQ(m.at("blk." + std::to_string(i) + ".ffn_down.weight"), want) << i;
        EXPECT_EQ(m.at("blk." + std::to_string(i) + ".attn_q.weight"), "q4_K") << i;
    }
    EXPECT_EQ(m.at("token_embd.weight"), "q6_K");
    // Experts: the layer comes from the name.
    const auto e = mix("olmoe-1b-7b", "q4_k_m", 16);
    EXPECT_EQ(e.at("blk.0.ffn_down_exps.weight"), "q6_K");
    EXPECT_EQ(e.at("blk.3.ffn_down_exps.weight"), "q4_K");
    EXPECT_EQ(e.at("blk.4.ffn_down_exps.weight"), "q6_K");
    EXPECT_EQ(e.at("blk.3.ffn_gate_exps.weight"), "q4_K");
    // Phi-3's fused QKV counts as attn_v.
    EXPECT_EQ(mix("phi-4-mini", "q4_k_m", 32).at("blk.0.attn_qkv.weight"), "q6_K");
    EXPECT_EQ(mix("phi-4-mini", "q6_k", 2).at("token_embd.weight"), "q6_K");
}

TEST(QuantMix, FloatFilesAndNames) {
    const auto f16 = mix("qwen3-30b-a3b", "f16", 1);
    EXPECT_EQ(f16.at("blk.0.ffn_up_exps.weight"), "f16");
    EXPECT_EQ(f16.at("blk.0.ffn_gate_inp.weight"), "f32");
    EXPECT_EQ(f16.at("output.weight"), "f16");
    EXPECT_EQ(mix("tiny", "F32", 1).at("token_embd.weight"), "f32");
    EXPECT_EQ(parse_quant_scheme("Q4_K_M").file_type, 15u);
    EXPECT_EQ(parse_quant_scheme("q4_0").file_type, 2u);
    try {
        parse_quant_scheme("q3_x");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(e.what()).find("q4_k_m"), std::string::npos);
    }
}

}  // namespace
}  // namespace sb
