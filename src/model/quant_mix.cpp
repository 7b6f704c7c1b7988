#include "model/quant_mix.hpp"

#include <cctype>

#include "core/error.hpp"
#include "model/gguf.hpp"

namespace sb {

namespace {

// LLAMA_FTYPE values (llama.h).
constexpr uint32_t kFtypeF32 = 0, kFtypeF16 = 1, kFtypeQ4_0 = 2, kFtypeQ8_0 = 7, kFtypeQ4_K_M = 15,
                   kFtypeQ5_K_M = 17, kFtypeQ6_K = 18;

struct Entry {
    const char* name;
    uint32_t file_type;
    uint32_t base_type;
};

constexpr Entry kSchemes[] = {
    {"f32", kFtypeF32, ggml_type::kF32},        {"f16", kFtypeF16, ggml_type::kF16},
    {"q8_0", kFtypeQ8_0, ggml_type::kQ8_0},     {"q4_0", kFtypeQ4_0, ggml_type::kQ4_0},
    {"q4_k_m", kFtypeQ4_K_M, ggml_type::kQ4_K}, {"q5_k_m", kFtypeQ5_K_M, ggml_type::kQ5_K},
    {"q6_k", kFtypeQ6_K, ggml_type::kQ6_K},
};

enum class Category {
    token_embd,
    attn_q,
    attn_k,
    attn_v,
    attn_qkv,
    attn_output,
    ffn_up,
    ffn_gate,
    ffn_down,
    output,
    other
};

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

// tensor_get_category() of llama-quant.cpp: substrings of the name.
Category category_of(const std::string& name) {
    if (name == "output.weight")
        return Category::output;
    if (name == "token_embd.weight")
        return Category::token_embd;
    if (contains(name, "attn_qkv.weight"))
        return Category::attn_qkv;
    if (contains(name, "attn_v.weight"))
        return Category::attn_v;
    if (contains(name, "attn_k.weight"))
        return Category::attn_k;
    if (contains(name, "attn_q.weight"))
        return Category::attn_q;
    if (contains(name, "attn_output.weight"))
        return Category::attn_output;
    if (contains(name, "ffn_up"))
        return Category::ffn_up;
    if (contains(name, "ffn_gate"))
        return Category::ffn_gate;
    if (contains(name, "ffn_down"))
        return Category::ffn_down;
    return Category::other;
}

bool is_attn_v_like(Category c) {
    return c == Category::attn_v || c == Category::attn_qkv;
}

bool use_more_bits(int i_layer, int64_t n_layers) {
    const auto n = static_cast<int>(n_layers);
    return i_layer < n / 8 || i_layer >= 7 * n / 8 || (i_layer - n / 8) % 3 == 2;
}

int64_t block_of(uint32_t type) {
    return ggml_type_info(type)->block_size;
}

// tensor_type_fallback(): a type whose block does not divide the row falls back to one with
// 32-element blocks, else to F16.
uint32_t fallback(int64_t ncols, uint32_t type) {
    if (ncols % block_of(type) == 0)
        return type;
    uint32_t t = type;
    switch (type) {
        case ggml_type::kQ4_K:
            t = ggml_type::kQ5_0;
            break;
        case ggml_type::kQ5_K:
            t = ggml_type::kQ5_1;
            break;
        case ggml_type::kQ6_K:
            t = ggml_type::kQ8_0;
            break;
        default:
            break;  // a 32-element type already: F16 below
    }
    return ncols % block_of(t) == 0 ? t : ggml_type::kF16;
}

}  // namespace

std::vector<std::string> quant_names() {
    std::vector<std::string> v;
    for (const auto& e : kSchemes)
        v.emplace_back(e.name);
    return v;
}

QuantScheme parse_quant_scheme(const std::string& name) {
    std::string q = name;
    for (auto& c : q)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& e : kSchemes)
        if (q == e.name)
            return {q, e.file_type, e.base_type};
    std::string valid;
    for (const auto& n : quant_names())
        valid += (valid.empty() ? "" : ", ") + n;
    throw usage_error("unknown quant '" + name + "' (valid: " + valid + ")");
}

QuantMixer::QuantMixer(const QuantScheme& scheme, bool pure, const ModelSpec& spec,
                       int64_t n_layers, const std::vector<TensorSpec>& tensors)
    : scheme_(scheme), pure_(pure), spec_(spec), n_layers_(n_layers), tied_(true) {
    // init_quantize_state_counters(): attn_v-like tensors counted, ties judged by output.weight.
    for (const auto& t : tensors) {
        const Category c = category_of(t.name);
        if (is_attn_v_like(c))
            ++n_attention_wv_;
        if (c == Category::output)
            tied_ = false;
    }
}

uint32_t QuantMixer::type_for(const TensorSpec& t) {
    fell_back_ = false;
    // tensor_allows_quantization(): 2D and 3D weights, not norms, the router or the
    // convolution kernels; the rest keeps the converter's F32.
    const bool quantizable = t.ne.size() >= 2 && t.kind == TensorKind::matrix;
    if (!quantizable)
        return ggml_type::kF32;
    const uint32_t base = scheme_.base_type;
    if (base == ggml_type::kF32 || base == ggml_type::kF16)
        return base;

    const Category c = category_of(t.name);
    const int64_t nx = t.ne[0];
    const uint32_t f = scheme_.file_type;
    const bool eight_experts = spec_.n_expert == 8;
    uint32_t type = base;
    // Counters advance whether or not the mix applies (--pure skips only the choice).
    const int i_wv = is_attn_v_like(c) ? i_attention_wv_++ : 0;
    int i_layer = 0;
    if (c == Category::ffn_down) {
        // Expert tensors name their layer; dense ones are counted as met.
        i_layer = spec_.n_expert > 1 ? t.layer().value_or(0) : i_ffn_down_;
        ++i_ffn_down_;
    }
    if (!pure_) {
        if (c == Category::output || (tied_ && c == Category::token_embd)) {
            if (nx % block_of(type) != 0)
                type = ggml_type::kQ8_0;
            else if (type != ggml_type::kQ8_0)
                type = ggml_type::kQ6_K;
        } else if (c == Category::token_embd) {
            // No rule for these file types.
        } else if (is_attn_v_like(c)) {
            if ((f == kFtypeQ4_K_M || f == kFtypeQ5_K_M) && use_more_bits(i_wv, n_attention_wv_))
                type = ggml_type::kQ6_K;
            // llama.cpp's 70B type (80 layers of llama or qwen2): attn_v one step up.
            if (n_layers_ == 80 && (spec_.arch == "llama" || spec_.arch == "qwen2") &&
                type == ggml_type::kQ4_K)
                type = ggml_type::kQ5_K;
            if (eight_experts)
                type = ggml_type::kQ8_0;
        } else if (c == Category::attn_k) {
            if (eight_experts)
                type = ggml_type::kQ8_0;
        } else if (c == Category::ffn_down) {
            if ((f == kFtypeQ4_K_M || f == kFtypeQ5_K_M) && use_more_bits(i_layer, n_layers_))
                type = ggml_type::kQ6_K;
        } else if (c == Category::attn_output) {
            if (eight_experts && f == kFtypeQ4_K_M)
                type = ggml_type::kQ5_K;
        }
    }
    const uint32_t chosen = fallback(nx, type);
    fell_back_ = chosen != type;
    return chosen;
}

}  // namespace sb
