#pragma once
// Architecture presets: the exact hyperparameters of real models (Llama 3.x, Qwen 2.5, Qwen 3)
// plus a tiny one for tests, and the tensor list llama.cpp's loader expects for each, so a
// synthetic model has the shapes, and therefore the speed, of the real one.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// Llama 3 RoPE frequency scaling; llama.cpp reads it as the rope_freqs.weight tensor.
struct Llama3RopeScaling {
    float factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int64_t original_context = 8192;
};

struct Preset {
    std::string name;         // "llama-3.2-1b"
    std::string arch;         // general.architecture: "llama", "qwen2", "qwen3"
    std::string description;  // the model it copies, one line
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;  // key and value length per head
    int64_t n_ff = 0;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    bool tied_embeddings = true;  // no output.weight: the output reuses token_embd.weight
    bool qkv_bias = false;        // attn_q/k/v.bias (Qwen 2)
    bool qk_norm = false;         // attn_q_norm/attn_k_norm (Qwen 3)
    std::optional<Llama3RopeScaling> rope_scaling;
    // Parameter count the model's publisher states (without rope_freqs); none for `tiny`.
    std::optional<uint64_t> published_params;
    // The vocabulary of the model's family (synth --vocab NAME: the pinned llama.cpp tree's
    // models/ggml-vocab-NAME.gguf, of exactly n_vocab tokens); empty: the synthetic one.
    std::string vocab;
};

// All presets, in a stable order.
const std::vector<Preset>& presets();
std::vector<std::string> preset_names();
// The preset of that name; throws sb::Error(ErrorKind::usage) naming the valid ones.
const Preset& find_preset(std::string_view name);

enum class TensorKind {
    matrix,      // 2D weight (embedding, projections, output): random, quantizable
    norm,        // 1D RMS-norm weight: ones
    bias,        // 1D bias: small random values
    rope_freqs,  // 1D Llama 3 RoPE frequency factors: computed
};

struct TensorSpec {
    std::string name;         // GGUF tensor name, e.g. "blk.0.attn_q.weight"
    std::vector<int64_t> ne;  // ggml order: ne[0] is the input (row) dimension
    TensorKind kind = TensorKind::matrix;

    int64_t n_elements() const;
};

// The tensors of a preset in the order llama.cpp's converter writes them. n_layers_override
// replaces the layer count when positive (0 keeps the preset's); a negative value throws
// sb::Error(ErrorKind::usage).
std::vector<TensorSpec> preset_tensors(const Preset& preset, int n_layers_override = 0);

// Weights of a preset: the sum over preset_tensors() without rope_freqs, which is how
// published counts are computed.
uint64_t count_params(const Preset& preset, int n_layers_override = 0);
uint64_t count_params(const std::vector<TensorSpec>& tensors);

// Llama 3 RoPE frequency factors for head_dim/2 frequencies, as convert_hf_to_gguf.py computes.
std::vector<float> llama3_rope_factors(const Llama3RopeScaling& scaling, float theta,
                                       int64_t head_dim);

}  // namespace sb
