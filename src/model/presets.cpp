#include "model/presets.hpp"

#include <cmath>
#include <numbers>

#include "core/error.hpp"

namespace sb {

namespace {

// Hyperparameters from each model's config.json on Hugging Face; published counts from the
// model cards / safetensors metadata.
std::vector<Preset> make_presets() {
    std::vector<Preset> v;
    const Llama3RopeScaling llama32_rope{32.0f, 1.0f, 4.0f, 8192};
    const Llama3RopeScaling llama31_rope{8.0f, 1.0f, 4.0f, 8192};
    {
        Preset p;
        p.name = "llama-3.2-1b";
        p.arch = "llama";
        p.description = "Llama 3.2 1B (meta-llama/Llama-3.2-1B)";
        p.n_embd = 2048;
        p.n_layer = 16;
        p.n_head = 32;
        p.n_head_kv = 8;
        p.head_dim = 64;
        p.n_ff = 8192;
        p.n_vocab = 128256;
        p.n_ctx_train = 131072;
        p.rope_theta = 500000.0f;
        p.rms_eps = 1e-5f;
        p.tied_embeddings = true;
        p.rope_scaling = llama32_rope;
        p.published_params = 1'235'814'400;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "llama-3.2-3b";
        p.arch = "llama";
        p.description = "Llama 3.2 3B (meta-llama/Llama-3.2-3B)";
        p.n_embd = 3072;
        p.n_layer = 28;
        p.n_head = 24;
        p.n_head_kv = 8;
        p.head_dim = 128;
        p.n_ff = 8192;
        p.n_vocab = 128256;
        p.n_ctx_train = 131072;
        p.rope_theta = 500000.0f;
        p.rms_eps = 1e-5f;
        p.tied_embeddings = true;
        p.rope_scaling = llama32_rope;
        p.published_params = 3'212'749'824;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "llama-3.1-8b";
        p.arch = "llama";
        p.description = "Llama 3.1 8B (meta-llama/Llama-3.1-8B)";
        p.n_embd = 4096;
        p.n_layer = 32;
        p.n_head = 32;
        p.n_head_kv = 8;
        p.head_dim = 128;
        p.n_ff = 14336;
        p.n_vocab = 128256;
        p.n_ctx_train = 131072;
        p.rope_theta = 500000.0f;
        p.rms_eps = 1e-5f;
        p.tied_embeddings = false;
        p.rope_scaling = llama31_rope;
        p.published_params = 8'030'261'248;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "qwen3-4b";
        p.arch = "qwen3";
        p.description = "Qwen3 4B (Qwen/Qwen3-4B)";
        p.n_embd = 2560;
        p.n_layer = 36;
        p.n_head = 32;
        p.n_head_kv = 8;
        p.head_dim = 128;
        p.n_ff = 9728;
        p.n_vocab = 151936;
        p.n_ctx_train = 40960;
        p.rope_theta = 1000000.0f;
        p.rms_eps = 1e-6f;
        p.tied_embeddings = true;
        p.qk_norm = true;
        p.published_params = 4'022'468'096;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "qwen3-8b";
        p.arch = "qwen3";
        p.description = "Qwen3 8B (Qwen/Qwen3-8B)";
        p.n_embd = 4096;
        p.n_layer = 36;
        p.n_head = 32;
        p.n_head_kv = 8;
        p.head_dim = 128;
        p.n_ff = 12288;
        p.n_vocab = 151936;
        p.n_ctx_train = 40960;
        p.rope_theta = 1000000.0f;
        p.rms_eps = 1e-6f;
        p.tied_embeddings = false;
        p.qk_norm = true;
        p.published_params = 8'190'735'360;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "qwen2.5-1.5b";
        p.arch = "qwen2";
        p.description = "Qwen2.5 1.5B (Qwen/Qwen2.5-1.5B)";
        p.n_embd = 1536;
        p.n_layer = 28;
        p.n_head = 12;
        p.n_head_kv = 2;
        p.head_dim = 128;
        p.n_ff = 8960;
        p.n_vocab = 151936;
        p.n_ctx_train = 32768;
        p.rope_theta = 1000000.0f;
        p.rms_eps = 1e-6f;
        p.tied_embeddings = true;
        p.qkv_bias = true;
        p.published_params = 1'543'714'304;
        v.push_back(p);
    }
    {
        Preset p;
        p.name = "tiny";
        p.arch = "llama";
        p.description = "tiny Llama-shaped model for tests (4.2M parameters)";
        p.n_embd = 256;
        p.n_layer = 4;
        p.n_head = 8;
        p.n_head_kv = 4;
        p.head_dim = 32;
        p.n_ff = 768;
        p.n_vocab = 4096;
        p.n_ctx_train = 2048;
        p.rope_theta = 10000.0f;
        p.rms_eps = 1e-5f;
        p.tied_embeddings = true;
        v.push_back(p);
    }
    // The families' tokenizers, of the same sizes as the models' (128256 and 151936 tokens).
    for (auto& p : v) {
        if (p.name.rfind("llama-3", 0) == 0)
            p.vocab = "llama-bpe";
        else if (p.name.rfind("qwen", 0) == 0)
            p.vocab = "qwen2";
    }
    return v;
}

std::string layer_name(int64_t il, const char* what) {
    return "blk." + std::to_string(il) + "." + what;
}

}  // namespace

int64_t TensorSpec::n_elements() const {
    int64_t n = 1;
    for (int64_t d : ne)
        n *= d;
    return n;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = make_presets();
    return kPresets;
}

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const auto& p : presets())
        names.push_back(p.name);
    return names;
}

const Preset& find_preset(std::string_view name) {
    for (const auto& p : presets()) {
        if (p.name == name)
            return p;
    }
    std::string valid;
    for (const auto& n : preset_names())
        valid += (valid.empty() ? "" : ", ") + n;
    throw usage_error("unknown preset '" + std::string(name) + "' (valid: " + valid + ")");
}

std::vector<TensorSpec> preset_tensors(const Preset& p, int n_layers_override) {
    if (n_layers_override < 0) {
        throw usage_error("layer count must be positive, got " + std::to_string(n_layers_override));
    }
    const int64_t n_layer = n_layers_override > 0 ? n_layers_override : p.n_layer;
    const int64_t n_q = p.n_head * p.head_dim;
    const int64_t n_kv = p.n_head_kv * p.head_dim;

    std::vector<TensorSpec> t;
    if (p.rope_scaling)
        t.push_back({"rope_freqs.weight", {p.head_dim / 2}, TensorKind::rope_freqs});
    t.push_back({"token_embd.weight", {p.n_embd, p.n_vocab}, TensorKind::matrix});
    for (int64_t il = 0; il < n_layer; ++il) {
        t.push_back({layer_name(il, "attn_norm.weight"), {p.n_embd}, TensorKind::norm});
        t.push_back({layer_name(il, "attn_q.weight"), {p.n_embd, n_q}, TensorKind::matrix});
        if (p.qkv_bias)
            t.push_back({layer_name(il, "attn_q.bias"), {n_q}, TensorKind::bias});
        t.push_back({layer_name(il, "attn_k.weight"), {p.n_embd, n_kv}, TensorKind::matrix});
        if (p.qkv_bias)
            t.push_back({layer_name(il, "attn_k.bias"), {n_kv}, TensorKind::bias});
        t.push_back({layer_name(il, "attn_v.weight"), {p.n_embd, n_kv}, TensorKind::matrix});
        if (p.qkv_bias)
            t.push_back({layer_name(il, "attn_v.bias"), {n_kv}, TensorKind::bias});
        t.push_back({layer_name(il, "attn_output.weight"), {n_q, p.n_embd}, TensorKind::matrix});
        if (p.qk_norm) {
            t.push_back({layer_name(il, "attn_q_norm.weight"), {p.head_dim}, TensorKind::norm});
            t.push_back({layer_name(il, "attn_k_norm.weight"), {p.head_dim}, TensorKind::norm});
        }
        t.push_back({layer_name(il, "ffn_norm.weight"), {p.n_embd}, TensorKind::norm});
        t.push_back({layer_name(il, "ffn_gate.weight"), {p.n_embd, p.n_ff}, TensorKind::matrix});
        t.push_back({layer_name(il, "ffn_up.weight"), {p.n_embd, p.n_ff}, TensorKind::matrix});
        t.push_back({layer_name(il, "ffn_down.weight"), {p.n_ff, p.n_embd}, TensorKind::matrix});
    }
    t.push_back({"output_norm.weight", {p.n_embd}, TensorKind::norm});
    if (!p.tied_embeddings) {
        t.push_back({"output.weight", {p.n_embd, p.n_vocab}, TensorKind::matrix});
    }
    return t;
}

uint64_t count_params(const std::vector<TensorSpec>& tensors) {
    uint64_t n = 0;
    for (const auto& t : tensors) {
        if (t.kind != TensorKind::rope_freqs)
            n += static_cast<uint64_t>(t.n_elements());
    }
    return n;
}

uint64_t count_params(const Preset& preset, int n_layers_override) {
    return count_params(preset_tensors(preset, n_layers_override));
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
