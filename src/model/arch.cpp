#include "model/arch.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.hpp"
#include "model/gguf.hpp"

namespace sb {

namespace {

// How each architecture lays out its tensors (src/models/<arch>.cpp of the pinned tree).
enum class Layout {
    dense,   // llama, qwen2, qwen3, smollm3: separate q/k/v, gate/up/down
    gemma3,  // dense + post-attention and post-FFN norms
    phi3,    // fused attn_qkv and ffn_up (gate and up), LongRoPE factor tensors
    lfm2,    // attention or short-convolution layers; the output norm is token_embd_norm
    moe,     // qwen3moe, olmoe: a router and 3D expert tensors in every layer
};

std::optional<Layout> layout_of(const std::string& arch) {
    if (arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "smollm3")
        return Layout::dense;
    if (arch == "gemma3")
        return Layout::gemma3;
    if (arch == "phi3")
        return Layout::phi3;
    if (arch == "lfm2")
        return Layout::lfm2;
    if (arch == "qwen3moe" || arch == "olmoe")
        return Layout::moe;
    return std::nullopt;
}

std::string blk(int64_t il, const char* what) {
    return "blk." + std::to_string(il) + "." + what;
}

uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

int64_t TensorSpec::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne)
        n *= d;
    return n;
}

std::optional<int> TensorSpec::layer() const {
    if (name.rfind("blk.", 0) != 0)
        return std::nullopt;
    const auto dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4)
        return std::nullopt;
    int il = 0;
    for (std::size_t i = 4; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9')
            return std::nullopt;
        il = il * 10 + (name[i] - '0');
    }
    return il;
}

std::vector<std::string> supported_architectures() {
    return {"gemma3", "lfm2", "llama", "olmoe", "phi3", "qwen2", "qwen3", "qwen3moe", "smollm3"};
}

std::vector<LayerKind> layer_kinds_for(const ModelSpec& s, int64_t n_layers) {
    if (s.layer_kinds.empty())
        return std::vector<LayerKind>(static_cast<std::size_t>(n_layers), LayerKind::attention);
    if (n_layers == static_cast<int64_t>(s.layer_kinds.size()))
        return s.layer_kinds;
    std::vector<LayerKind> kinds;
    const auto n = static_cast<int64_t>(s.layer_kinds.size());
    for (int64_t i = 0; i < n_layers; ++i)
        kinds.push_back(s.layer_kinds[static_cast<std::size_t>(i * n / n_layers)]);
    return kinds;
}

std::vector<TensorSpec> arch_tensors(const ModelSpec& s, int n_layers_override) {
    if (n_layers_override < 0) {
        throw usage_error("layer count must be positive, got " + std::to_string(n_layers_override));
    }
    const auto layout = layout_of(s.arch);
    if (!layout) {
        std::string known;
        for (const auto& a : supported_architectures())
            known += (known.empty() ? "" : ", ") + a;
        throw usage_error("architecture '" + s.arch + "' is not one the writer supports (" + known +
                          ")");
    }
    const int64_t n_layer = n_layers_override > 0 ? n_layers_override : s.n_layer;
    const int64_t n_q = s.n_head * s.head_dim;
    const int64_t n_kv = s.n_head_kv * s.head_dim;
    const auto kinds = layer_kinds_for(s, n_layer);

    std::vector<TensorSpec> t;
    auto add = [&](std::string name, std::vector<int64_t> ne, TensorKind kind = TensorKind::matrix,
                   bool residual = false) {
        t.push_back({std::move(name), std::move(ne), kind, residual});
    };
    if (s.llama3_rope)
        add("rope_freqs.weight", {s.n_rot / 2}, TensorKind::rope_freqs);
    if (s.longrope) {
        add("rope_factors_long.weight", {s.n_rot / 2}, TensorKind::rope_long);
        add("rope_factors_short.weight", {s.n_rot / 2}, TensorKind::rope_short);
    }
    add("token_embd.weight", {s.n_embd, s.n_vocab});
    for (int64_t il = 0; il < n_layer; ++il) {
        const bool conv = kinds[static_cast<std::size_t>(il)] == LayerKind::shortconv;
        add(blk(il, "attn_norm.weight"), {s.n_embd}, TensorKind::norm);
        if (conv) {
            add(blk(il, "shortconv.conv.weight"), {s.conv_l_cache, s.n_embd}, TensorKind::conv);
            add(blk(il, "shortconv.in_proj.weight"), {s.n_embd, 3 * s.n_embd});
            add(blk(il, "shortconv.out_proj.weight"), {s.n_embd, s.n_embd}, TensorKind::matrix,
                true);
        } else if (s.fused_qkv) {
            add(blk(il, "attn_qkv.weight"), {s.n_embd, n_q + 2 * n_kv});
            add(blk(il, "attn_output.weight"), {n_q, s.n_embd}, TensorKind::matrix, true);
        } else {
            add(blk(il, "attn_q.weight"), {s.n_embd, n_q});
            if (s.qkv_bias)
                add(blk(il, "attn_q.bias"), {n_q}, TensorKind::bias);
            add(blk(il, "attn_k.weight"), {s.n_embd, n_kv});
            if (s.qkv_bias)
                add(blk(il, "attn_k.bias"), {n_kv}, TensorKind::bias);
            add(blk(il, "attn_v.weight"), {s.n_embd, n_kv});
            if (s.qkv_bias)
                add(blk(il, "attn_v.bias"), {n_kv}, TensorKind::bias);
            add(blk(il, "attn_output.weight"), {n_q, s.n_embd}, TensorKind::matrix, true);
            if (s.qk_norm == QkNorm::per_head) {
                add(blk(il, "attn_q_norm.weight"), {s.head_dim}, TensorKind::norm);
                add(blk(il, "attn_k_norm.weight"), {s.head_dim}, TensorKind::norm);
            } else if (s.qk_norm == QkNorm::full) {
                // olmoe.cpp sizes both by n_embd (its KV heads equal its heads).
                add(blk(il, "attn_q_norm.weight"), {n_q}, TensorKind::norm);
                add(blk(il, "attn_k_norm.weight"), {n_q}, TensorKind::norm);
            }
        }
        if (s.post_norms)
            add(blk(il, "post_attention_norm.weight"), {s.n_embd}, TensorKind::norm);
        add(blk(il, "ffn_norm.weight"), {s.n_embd}, TensorKind::norm);
        if (s.is_moe()) {
            add(blk(il, "ffn_gate_inp.weight"), {s.n_embd, s.n_expert}, TensorKind::router);
            add(blk(il, "ffn_gate_exps.weight"), {s.n_embd, s.n_ff_exp, s.n_expert});
            add(blk(il, "ffn_down_exps.weight"), {s.n_ff_exp, s.n_embd, s.n_expert},
                TensorKind::matrix, true);
            add(blk(il, "ffn_up_exps.weight"), {s.n_embd, s.n_ff_exp, s.n_expert});
        } else if (s.fused_qkv) {
            add(blk(il, "ffn_up.weight"), {s.n_embd, 2 * s.n_ff});
            add(blk(il, "ffn_down.weight"), {s.n_ff, s.n_embd}, TensorKind::matrix, true);
        } else {
            add(blk(il, "ffn_gate.weight"), {s.n_embd, s.n_ff});
            add(blk(il, "ffn_up.weight"), {s.n_embd, s.n_ff});
            add(blk(il, "ffn_down.weight"), {s.n_ff, s.n_embd}, TensorKind::matrix, true);
        }
        if (s.post_norms)
            add(blk(il, "post_ffw_norm.weight"), {s.n_embd}, TensorKind::norm);
    }
    // LFM2's final norm is stored under token_embd_norm (llama-arch.cpp: "fix for wrong tensor
    // name").
    add(*layout == Layout::lfm2 ? "token_embd_norm.weight" : "output_norm.weight", {s.n_embd},
        TensorKind::norm);
    if (!s.tied_embeddings)
        add("output.weight", {s.n_embd, s.n_vocab});
    return t;
}

uint64_t count_params(const std::vector<TensorSpec>& tensors) {
    uint64_t n = 0;
    for (const auto& t : tensors) {
        if (t.kind != TensorKind::rope_freqs && t.kind != TensorKind::rope_long &&
            t.kind != TensorKind::rope_short)
            n += static_cast<uint64_t>(t.n_elements());
    }
    return n;
}

uint64_t count_params(const ModelSpec& spec, int n_layers) {
    return count_params(arch_tensors(spec, n_layers));
}

void write_arch_keys(GgufWriter& w, const ModelSpec& s, int n_layers) {
    const std::string a = s.arch + ".";
    const auto layout = layout_of(s.arch);
    w.set_u32(a + "vocab_size", u32(s.n_vocab));
    w.set_u32(a + "context_length", u32(s.n_ctx_train));
    w.set_u32(a + "embedding_length", u32(s.n_embd));
    w.set_u32(a + "block_count", u32(n_layers));
    w.set_u32(a + "feed_forward_length", u32(s.is_moe() && !s.expert_ff_key ? s.n_ff_exp : s.n_ff));
    w.set_u32(a + "attention.head_count", u32(s.n_head));
    if (layout == Layout::lfm2) {
        // Per layer: the convolution layers have no KV heads (that is how llama.cpp tells them
        // apart, lfm2.cpp's is_recr).
        std::vector<uint32_t> kv;
        for (const auto k : layer_kinds_for(s, n_layers))
            kv.push_back(k == LayerKind::shortconv ? 0u : u32(s.n_head_kv));
        w.set_array(a + "attention.head_count_kv", std::move(kv));
        w.set_u32(a + "shortconv.l_cache", u32(s.conv_l_cache));
    } else {
        w.set_u32(a + "attention.head_count_kv", u32(s.n_head_kv));
    }
    // The key length where it is not n_embd / n_head (the converter writes head_dim when the
    // config has one; the loader derives it otherwise).
    if (s.head_dim * s.n_head != s.n_embd || layout == Layout::dense || layout == Layout::moe ||
        layout == Layout::gemma3) {
        w.set_u32(a + "attention.key_length", u32(s.head_dim));
        w.set_u32(a + "attention.value_length", u32(s.head_dim));
    }
    if (layout != Layout::lfm2 && layout != Layout::gemma3)
        w.set_u32(a + "rope.dimension_count", u32(s.n_rot));
    w.set_f32(a + "rope.freq_base", s.rope_theta);
    if (s.rope_theta_swa)
        w.set_f32(a + "rope.freq_base_swa", *s.rope_theta_swa);
    w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    if (s.rope_scaling) {
        w.set_string(a + "rope.scaling.type", s.rope_scaling->type);
        w.set_f32(a + "rope.scaling.factor", s.rope_scaling->factor);
        if (s.rope_scaling->original_context)
            w.set_u32(a + "rope.scaling.original_context_length",
                      u32(*s.rope_scaling->original_context));
    }
    if (s.longrope) {
        w.set_string(a + "rope.scaling.type", "longrope");
        w.set_u32(a + "rope.scaling.original_context_length", u32(s.longrope->original_context));
        w.set_f32(a + "rope.scaling.attn_factor", s.longrope->attn_factor);
    }
    if (s.sliding_window)
        w.set_u32(a + "attention.sliding_window", u32(*s.sliding_window));
    if (s.sliding_window_pattern) {
        // Scaled below its period, a model keeps one global layer, its last (as a scaled LFM2
        // keeps both kinds of layer): two Gemma 3 layers are one local and one global.
        const int64_t period = *s.sliding_window_pattern;
        w.set_u32(a + "attention.sliding_window_pattern",
                  u32(n_layers >= 2 && n_layers < period ? n_layers : period));
    }
    if (s.is_moe()) {
        w.set_u32(a + "expert_count", u32(s.n_expert));
        w.set_u32(a + "expert_used_count", u32(s.n_expert_used));
        if (s.expert_ff_key)
            w.set_u32(a + "expert_feed_forward_length", u32(s.n_ff_exp));
    }
}

std::vector<float> llama3_rope_factors(const Llama3RopeScaling& s, float theta, int64_t head_dim) {
    const double low_freq_wavelen = static_cast<double>(s.original_context) / s.low_freq_factor;
    const double high_freq_wavelen = static_cast<double>(s.original_context) / s.high_freq_factor;
    std::vector<float> factors;
    for (int64_t i = 0; i < head_dim; i += 2) {
        // The converter computes the frequencies in float32; keep that rounding.
        const float freq = 1.0f / std::pow(theta, static_cast<float>(i) / head_dim);
        const double wavelen = 2 * std::numbers::pi / freq;
        if (wavelen < high_freq_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_freq_wavelen) {
            factors.push_back(s.factor);
        } else {
            const double smooth = (s.original_context / wavelen - s.low_freq_factor) /
                                  (s.high_freq_factor - s.low_freq_factor);
            factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
        }
    }
    return factors;
}

}  // namespace sb
