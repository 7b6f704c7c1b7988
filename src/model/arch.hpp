#pragma once
// The architectures the synthetic-model writer knows: a model's hyperparameters as one struct
// (ModelSpec, filled from a Hugging Face config.json by model/hf_config.hpp, for presets and
// for `synth --config` alike), and for each architecture the tensors llama.cpp's loader expects
// (names, shapes, what kind of values) and the GGUF keys it reads. Facts of the pinned
// llama.cpp: src/models/<arch>.cpp (load_arch_hparams, load_arch_tensors) and the converter's
// conversion/<family>.py. Nothing here knows a particular model; presets are data
// (share/stagebench/presets/*.json, model/presets.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb {

class GgufWriter;

// Llama 3 RoPE frequency scaling; llama.cpp reads it as the rope_freqs.weight tensor.
struct Llama3RopeScaling {
    float factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int64_t original_context = 8192;
};

// Phi-3's LongRoPE: per-frequency factors for short and long contexts (rope_factors_short and
// rope_factors_long tensors, n_rot/2 each) and the attention factor the converter derives.
struct LongRope {
    std::vector<float> short_factors;
    std::vector<float> long_factors;
    int64_t original_context = 0;
    float attn_factor = 1.0f;
};

// Linear or YaRN context scaling: GGUF keys only.
struct RopeScalingKeys {
    std::string type;  // "linear" | "yarn"
    float factor = 1.0f;
    std::optional<int64_t> original_context;  // yarn
};

// The kind of a layer's sequence mixer: attention, or LFM2's gated short convolution.
enum class LayerKind { attention, shortconv };

// How the query and key heads are normalised before RoPE.
enum class QkNorm {
    none,
    per_head,  // attn_q_norm / attn_k_norm of head_dim (Qwen 3, Gemma 3, LFM2)
    full,      // of the whole projection width (OLMoE: n_embd and n_head_kv * head_dim)
};

// One model's hyperparameters, in llama.cpp's terms. Counts are elements; 0 means "none" where
// a field says so.
struct ModelSpec {
    std::string arch;        // GGUF general.architecture: "llama", "qwen3", "gemma3", ...
    std::string model_type;  // the config.json model_type it was read from
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;  // of the attention layers
    int64_t head_dim = 0;   // key and value length per head
    int64_t n_rot = 0;      // rotary dimensions per head (head_dim unless partial)
    int64_t n_ff = 0;       // dense FFN width (GGUF feed_forward_length)
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rope_theta = 10000.0f;
    std::optional<float> rope_theta_swa;  // base of the sliding-window layers (Gemma 3)
    float rms_eps = 1e-5f;
    bool tied_embeddings = true;  // no output.weight: the output reuses token_embd.weight
    bool qkv_bias = false;        // attn_q/k/v.bias (Qwen 2)
    QkNorm qk_norm = QkNorm::none;
    bool post_norms = false;  // post_attention_norm and post_ffw_norm (Gemma 3)
    bool fused_qkv = false;   // one attn_qkv and ffn_up holding gate and up (Phi-3)
    std::optional<Llama3RopeScaling> llama3_rope;
    std::optional<LongRope> longrope;
    std::optional<RopeScalingKeys> rope_scaling;
    std::optional<int64_t> sliding_window;          // tokens; Gemma 3 (and Phi-3's, ignored)
    std::optional<int64_t> sliding_window_pattern;  // every n-th layer global (Gemma 3)
    // Per layer (n_layer entries) for hybrids (LFM2); empty: every layer attention.
    std::vector<LayerKind> layer_kinds;
    int64_t conv_l_cache = 0;  // LFM2 short convolution length
    // Mixture of experts (0: dense).
    int64_t n_expert = 0;
    int64_t n_expert_used = 0;
    int64_t n_ff_exp = 0;        // expert FFN width
    bool expert_ff_key = false;  // writes <arch>.expert_feed_forward_length (Qwen3-MoE)
    // Special token ids of the model's tokenizer (config.json), applied to a family vocabulary.
    std::optional<int64_t> bos_token_id, eos_token_id, pad_token_id;

    bool is_moe() const { return n_expert > 0; }
};

enum class TensorKind {
    matrix,      // 2D or 3D weight: random, quantizable (embedding, projections, experts)
    norm,        // 1D RMS-norm weight: ones
    bias,        // 1D bias: small random values
    rope_freqs,  // 1D Llama 3 RoPE frequency factors: computed
    rope_long,   // 1D LongRoPE long factors: the spec's
    rope_short,  // 1D LongRoPE short factors: the spec's
    conv,        // 2D short-convolution kernel: random, kept F32 (llama-quantize skips it)
    router,      // 2D expert gate (ffn_gate_inp): kept F32, built for the routing (routing.hpp)
};

struct TensorSpec {
    std::string name;         // GGUF tensor name, e.g. "blk.0.attn_q.weight"
    std::vector<int64_t> ne;  // ggml order: ne[0] is the input (row) dimension
    TensorKind kind = TensorKind::matrix;
    // A tensor that adds to the residual stream (attention output, FFN down): for a routed
    // mixture of experts its rows of the routing coordinates are zero (routing.hpp).
    bool writes_residual = false;

    int64_t n_elements() const;
    // The layer of a "blk.N." tensor; nullopt for the others.
    std::optional<int> layer() const;
};

// The architectures the writer supports (general.architecture names), sorted.
std::vector<std::string> supported_architectures();

// The layer kinds of a model scaled to n_layers: the spec's own when n_layers is its count,
// else sampled evenly from them (layer i takes the kind of layer i * n_layer / n_layers), so a
// two-layer LFM2 keeps one convolution and one attention layer.
std::vector<LayerKind> layer_kinds_for(const ModelSpec& spec, int64_t n_layers);

// The tensors of a model in the order llama.cpp's converter writes them. n_layers replaces the
// layer count when positive (0 keeps the spec's). Throws sb::Error(ErrorKind::usage) for a
// negative n_layers or an architecture outside supported_architectures().
std::vector<TensorSpec> arch_tensors(const ModelSpec& spec, int n_layers = 0);

// Weights: the sum over the tensors without the RoPE factor tensors (derived constants, not
// parameters), which is how published counts are computed.
uint64_t count_params(const std::vector<TensorSpec>& tensors);
uint64_t count_params(const ModelSpec& spec, int n_layers = 0);

// Writes the <arch>.* hyperparameter keys llama.cpp reads for this architecture (the context,
// widths, heads, RoPE, norms, experts, layer patterns), for n_layers layers.
void write_arch_keys(GgufWriter& w, const ModelSpec& spec, int n_layers);

// Llama 3 RoPE frequency factors for head_dim/2 frequencies, as convert_hf_to_gguf.py computes.
std::vector<float> llama3_rope_factors(const Llama3RopeScaling& scaling, float theta,
                                       int64_t head_dim);

}  // namespace sb
