#include "model/hf_config.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace sb {

namespace {

using nlohmann::json;

// The largest value read for a width or count: a few times the largest published model's
// (Llama 3.1 405B: hidden 16384, feed-forward 53248, 128 heads; Gemma 3: 262,208 tokens), so
// that a slip (2^31) is one line instead of gigabytes of memory or a full disk. Other counts
// (context lengths, windows) at most what the GGUF's 32-bit keys and llama.cpp hold. Layers and
// experts have llama.cpp's own limits (512, 1024), checked with their own words below.
int64_t max_count(const std::string& key) {
    static const std::pair<const char*, int64_t> kMax[] = {
        {"hidden_size", 65536},
        {"intermediate_size", 1 << 20},
        {"block_ff_dim", 1 << 20},
        {"moe_intermediate_size", 1 << 20},
        {"block_multiple_of", 1 << 20},
        {"vocab_size", 1 << 21},
        {"num_attention_heads", 1024},
        {"num_key_value_heads", 1024},
        {"head_dim", 4096},
        {"conv_L_cache", 1024},
    };
    for (const auto& [k, max] : kMax)
        if (key == k)
            return max;
    return std::numeric_limits<int32_t>::max();
}

// At most 40 characters of text, for messages.
std::string shown_text(const std::string& s) {
    return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

// The key path of the value a SAX parse stopped at ("rope_scaling.factor", "layer_types[3]")
// and its text, for the one parse error that names no place a user would look for.
class KeyPath final : public json::json_sax_t {
  public:
    std::string path, token;

    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t&) override { return value(); }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override {
        frames_.push_back({false, "", 0});
        return true;
    }
    bool key(string_t& k) override {
        frames_.back().key = k;
        return true;
    }
    bool end_object() override { return end(); }
    bool start_array(std::size_t) override {
        frames_.push_back({true, "", 0});
        return true;
    }
    bool end_array() override { return end(); }
    bool parse_error(std::size_t, const std::string& last_token,
                     const nlohmann::detail::exception&) override {
        token = last_token;
        for (const auto& f : frames_) {
            if (f.array) {
                path += '[';
                path += std::to_string(f.index);
                path += ']';
            } else {
                if (!path.empty())
                    path += '.';
                path += f.key;
            }
        }
        return false;
    }

  private:
    struct Frame {
        bool array;
        std::string key;
        std::size_t index;
    };
    bool value() {
        if (!frames_.empty() && frames_.back().array)
            ++frames_.back().index;
        return true;
    }
    bool end() {
        frames_.pop_back();
        return value();  // the finished array or object was a value of its parent
    }
    std::vector<Frame> frames_;
};

// The fields of one config object, read with one-line errors that name the field.
class Fields {
  public:
    Fields(const json& j, std::string origin, std::string model_type)
        : j_(j), origin_(std::move(origin)), type_(std::move(model_type)) {}

    bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

    [[noreturn]] void fail(const std::string& what) const {
        throw input_error(origin_ + ": " + what);
    }

    std::string shown(const char* key) const { return shown_text(j_.at(key).dump()); }

    // A positive integer (counts and widths).
    int64_t count(const char* key) const {
        if (!has(key))
            fail("no " + std::string(key) + " (a " + type_ + " model needs it)");
        return count_value(key, j_.at(key));
    }
    int64_t count(const char* key, int64_t fallback) const {
        return has(key) ? count_value(key, j_.at(key)) : fallback;
    }
    int64_t count_value(const std::string& key, const json& v) const {
        // A JSON parser reads 0 and every other non-negative integer as unsigned.
        if (!v.is_number_integer() ||
            (v.is_number_unsigned() ? v.get<uint64_t>() == 0 : v.get<int64_t>() <= 0))
            fail(key + " is " + shown_text(v.dump()) + ", expected a positive integer");
        const int64_t max = max_count(key);
        if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(max)
                                   : v.get<int64_t>() > max)
            fail(key + " is " + v.dump() + ", " + more_than(max));
        return v.get<int64_t>();
    }
    static std::string more_than(int64_t max) {
        return "more than synth writes (at most " + std::to_string(max) + ")";
    }

    // A positive finite number (epsilons, RoPE bases, factors).
    double number(const char* key, double fallback) const {
        if (!has(key))
            return fallback;
        return number_value(key, j_.at(key));
    }
    double number_value(const std::string& key, const json& v) const {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
            fail(key + " is " + shown_text(v.dump()) + ", expected a positive number");
        return v.get<double>();
    }

    // A positive number that a float32 holds, for what the GGUF keeps as float32 (epsilons,
    // RoPE bases and factors): beyond FLT_MAX it became inf there, below FLT_MIN 0 or a
    // denormal.
    float number32(const char* key, double fallback) const {
        return has(key) ? number32_value(key, j_.at(key)) : static_cast<float>(fallback);
    }
    float number32_value(const std::string& key, const json& v) const {
        const double d = number_value(key, v);
        if (d < FLT_MIN || d > FLT_MAX)
            fail(key + " is " + shown_text(v.dump()) +
                 ", beyond a float32 (the GGUF keeps it as one: 1.2e-38 to 3.4e+38)");
        return static_cast<float>(d);
    }

    bool flag(const char* key, bool fallback) const {
        if (!has(key))
            return fallback;
        if (!j_.at(key).is_boolean())
            fail(std::string(key) + " is " + shown(key) + ", expected true or false");
        return j_.at(key).get<bool>();
    }

    // A token id: an integer, or a list of them (the first counts, as the converter's).
    std::optional<int64_t> token(const char* key) const {
        if (!has(key))
            return std::nullopt;
        const json& v = j_.at(key);
        const json& first = v.is_array() && !v.empty() ? v.front() : v;
        if (!first.is_number_integer() || first.get<int64_t>() < 0)
            fail(std::string(key) + " is " + shown(key) + ", expected a token id");
        return first.get<int64_t>();
    }

    const json& at(const char* key) const { return j_.at(key); }
    const std::string& type() const { return type_; }

  private:
    const json& j_;
    std::string origin_;
    std::string type_;
};

struct TypeInfo {
    const char* model_type;
    const char* arch;
    bool tie_default;  // the transformers config class's tie_word_embeddings default
    double eps_default;
    double theta_default;
};

// transformers' config classes: LlamaConfig, Qwen2Config, ... (their __init__ defaults).
constexpr TypeInfo kTypes[] = {
    {"gemma3", "gemma3", true, 1e-6, 1e6},       {"gemma3_text", "gemma3", true, 1e-6, 1e6},
    {"lfm2", "lfm2", true, 1e-5, 1e6},           {"llama", "llama", false, 1e-6, 1e4},
    {"olmoe", "olmoe", false, 1e-5, 1e4},        {"phi3", "phi3", false, 1e-5, 1e4},
    {"qwen2", "qwen2", false, 1e-6, 1e4},        {"qwen3", "qwen3", false, 1e-6, 1e4},
    {"qwen3_moe", "qwen3moe", false, 1e-6, 1e4}, {"smollm3", "smollm3", true, 1e-6, 2e6},
};

// The RoPE parameters as the converter gathers them: rope_parameters (newer transformers),
// else rope_scaling, with rope_theta beside them.
struct Rope {
    json params = json::object();
    std::string type;  // rope_type or type; "" when none
};

Rope rope_of(const Fields& f, const json& cfg) {
    Rope r;
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        if (!f.has(key))
            continue;
        if (!cfg.at(key).is_object())
            f.fail(std::string(key) + " is " + f.shown(key) + ", expected an object or null");
        r.params = cfg.at(key);
        break;
    }
    // Per-attention-type parameters (full_attention / sliding_attention): the global ones.
    if (r.params.contains("full_attention") && r.params.at("full_attention").is_object())
        r.params = r.params.at("full_attention");
    for (const char* key : {"rope_type", "type"})
        if (r.params.contains(key) && r.params.at(key).is_string()) {
            r.type = r.params.at(key).get<std::string>();
            break;
        }
    return r;
}

float rope_theta(const Fields& f, const Rope& r, double fallback) {
    if (r.params.contains("rope_theta"))
        return f.number32_value("rope_parameters.rope_theta", r.params.at("rope_theta"));
    return f.number32("rope_theta", fallback);
}

std::vector<float> factor_list(const Fields& f, const Rope& r, const char* key, int64_t want) {
    const std::string name = std::string("rope_scaling.") + key;
    if (!r.params.contains(key) || !r.params.at(key).is_array())
        f.fail("no " + name + " (longrope needs it)");
    const json& a = r.params.at(key);
    if (static_cast<int64_t>(a.size()) != want)
        f.fail(name + " has " + std::to_string(a.size()) + " values, expected " +
               std::to_string(want) + " (the rotary dimensions / 2)");
    std::vector<float> v;
    for (const auto& x : a)
        v.push_back(f.number32_value(name, x));
    return v;
}

// Linear, YaRN and Llama 3 scaling as the converter writes them (base.py, llama.py).
void apply_rope_scaling(ModelSpec& s, const Fields& f, const Rope& r) {
    if (r.type.empty() || r.type == "default")
        return;
    auto factor = [&] {
        if (!r.params.contains("factor"))
            f.fail("no rope_scaling.factor (" + r.type + " scaling needs it)");
        return f.number32_value("rope_scaling.factor", r.params.at("factor"));
    };
    if (r.type == "linear") {
        s.rope_scaling = RopeScalingKeys{"linear", factor(), std::nullopt};
    } else if (r.type == "yarn") {
        RopeScalingKeys k{"yarn", factor(), std::nullopt};
        if (r.params.contains("original_max_position_embeddings"))
            k.original_context = f.count_value("rope_scaling.original_max_position_embeddings",
                                               r.params.at("original_max_position_embeddings"));
        s.rope_scaling = k;
    } else if (r.type == "llama3") {
        if (s.arch != "llama")
            f.fail("rope_scaling.rope_type llama3 is read only by the llama architecture");
        Llama3RopeScaling l;
        l.factor = factor();
        l.low_freq_factor = f.number32_value("rope_scaling.low_freq_factor",
                                             r.params.value("low_freq_factor", json(1.0)));
        l.high_freq_factor = f.number32_value("rope_scaling.high_freq_factor",
                                              r.params.value("high_freq_factor", json(4.0)));
        // The factors between the two wavelengths divide by their difference.
        if (!(l.high_freq_factor > l.low_freq_factor))
            f.fail("rope_scaling.high_freq_factor " + std::to_string(l.high_freq_factor) +
                   " is not above low_freq_factor " + std::to_string(l.low_freq_factor));
        l.original_context =
            f.count_value("rope_scaling.original_max_position_embeddings",
                          r.params.value("original_max_position_embeddings", json(8192)));
        s.llama3_rope = l;
    } else if ((r.type == "longrope" || r.type == "su") && s.arch == "phi3") {
        // Handled by the Phi-3 reader.
    } else {
        f.fail("rope_scaling type '" + r.type + "' is not supported for " + f.type() +
               " (linear, yarn" + (s.arch == "llama" ? ", llama3" : "") +
               (s.arch == "phi3" ? ", longrope" : "") + ")");
    }
}

void check_heads(ModelSpec& s, const Fields& f, bool head_dim_given) {
    if (!head_dim_given && s.n_embd % s.n_head != 0)
        f.fail("num_attention_heads " + std::to_string(s.n_head) + " does not divide hidden_size " +
               std::to_string(s.n_embd));
    if (s.n_head % s.n_head_kv != 0)
        f.fail("num_key_value_heads " + std::to_string(s.n_head_kv) +
               " does not divide num_attention_heads " + std::to_string(s.n_head));
    if (s.head_dim % 2 != 0)
        f.fail("head_dim " + std::to_string(s.head_dim) + " is odd; RoPE rotates pairs");
}

void need_square_attention(const ModelSpec& s, const Fields& f) {
    // These loaders size the attention output n_embd x n_embd.
    if (s.n_head * s.head_dim != s.n_embd)
        f.fail("num_attention_heads " + std::to_string(s.n_head) + " x head_dim " +
               std::to_string(s.head_dim) + " is not hidden_size " + std::to_string(s.n_embd) +
               ", which llama.cpp's " + s.arch + " requires");
}

// LFM2's layer pattern: layer_types, or the first release's full_attn_idxs.
void lfm2_layers(ModelSpec& s, const Fields& f, const json& cfg) {
    if (f.has("layer_types")) {
        const json& lt = cfg.at("layer_types");
        if (!lt.is_array())
            f.fail("layer_types is " + f.shown("layer_types") + ", expected a list");
        if (static_cast<int64_t>(lt.size()) != s.n_layer)
            f.fail("layer_types has " + std::to_string(lt.size()) +
                   " entries, but num_hidden_layers is " + std::to_string(s.n_layer));
        for (const auto& t : lt) {
            if (t == "conv")
                s.layer_kinds.push_back(LayerKind::shortconv);
            else if (t == "full_attention")
                s.layer_kinds.push_back(LayerKind::attention);
            else
                f.fail("layer_types holds " + t.dump() + ", expected conv or full_attention");
        }
    } else if (f.has("full_attn_idxs")) {
        const json& idx = cfg.at("full_attn_idxs");
        if (!idx.is_array())
            f.fail("full_attn_idxs is " + f.shown("full_attn_idxs") + ", expected a list");
        s.layer_kinds.assign(static_cast<std::size_t>(s.n_layer), LayerKind::shortconv);
        for (const auto& i : idx) {
            if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= s.n_layer)
                f.fail("full_attn_idxs holds " + i.dump() + ", not a layer of the " +
                       std::to_string(s.n_layer));
            s.layer_kinds[static_cast<std::size_t>(i.get<int64_t>())] = LayerKind::attention;
        }
    } else {
        f.fail("no layer_types (nor full_attn_idxs): an lfm2 model needs its layer pattern");
    }
    // Without one kind llama.cpp's cache for it is empty, which it asserts on as it loads.
    const bool listed = f.has("layer_types");
    const std::string needs =
        ": llama.cpp's lfm2 needs at least one attention and one convolution layer";
    if (std::find(s.layer_kinds.begin(), s.layer_kinds.end(), LayerKind::attention) ==
        s.layer_kinds.end())
        f.fail((listed ? "layer_types names no full_attention layer"
                       : "full_attn_idxs names no layer") +
               needs);
    if (std::find(s.layer_kinds.begin(), s.layer_kinds.end(), LayerKind::shortconv) ==
        s.layer_kinds.end())
        f.fail((listed ? "layer_types names no conv layer" : "full_attn_idxs names every layer") +
               needs);
}

}  // namespace

std::vector<std::string> supported_model_types() {
    std::vector<std::string> v;
    for (const auto& t : kTypes)
        v.emplace_back(t.model_type);
    return v;
}

ModelSpec spec_from_hf_config(const json& in, const std::string& origin) {
    if (!in.is_object())
        throw input_error(origin + ": expected a JSON object, found " +
                          std::string(in.type_name()));
    std::string supported;
    for (const auto& t : supported_model_types())
        supported += (supported.empty() ? "" : ", ") + t;
    if (!in.contains("model_type") || !in.at("model_type").is_string())
        throw input_error(origin + ": no model_type (supported: " + supported + ")");
    const std::string model_type = in.at("model_type").get<std::string>();
    const TypeInfo* info = nullptr;
    for (const auto& t : kTypes)
        if (model_type == t.model_type)
            info = &t;
    if (!info)
        throw input_error(origin + ": model_type '" + model_type +
                          "' is not one synth supports (supported: " + supported + ")");

    // A multimodal Gemma 3 keeps the language model's settings in text_config (the converter
    // moves them to the top level).
    json cfg = in;
    if (model_type == "gemma3") {
        if (!in.contains("text_config") || !in.at("text_config").is_object())
            throw input_error(origin +
                              ": no text_config (a gemma3 model keeps its text model's "
                              "settings there)");
        for (const auto& [k, v] : in.at("text_config").items())
            cfg[k] = v;
    }
    const Fields f(cfg, origin, model_type);
    const bool gemma = info->arch == std::string("gemma3");

    ModelSpec s;
    s.arch = info->arch;
    s.model_type = model_type;
    s.n_embd = f.count("hidden_size");
    s.n_layer = f.count("num_hidden_layers");
    // Gemma 3's converter has defaults for what its text configs leave out (gemma.py).
    s.n_head = gemma ? f.count("num_attention_heads", 8) : f.count("num_attention_heads");
    s.n_head_kv = f.count("num_key_value_heads", gemma ? 4 : s.n_head);
    const bool head_dim_given = f.has("head_dim");
    const int64_t head_default = gemma ? 256
                                 : (s.arch == "qwen3" || s.arch == "qwen3moe")
                                     ? 128  // Qwen3Config's default
                                     : (s.n_embd / s.n_head);
    s.head_dim = f.count("head_dim", head_default);
    s.n_rot = s.head_dim;
    s.n_vocab = gemma ? f.count("vocab_size", 262208) : f.count("vocab_size");
    s.n_ctx_train =
        gemma ? f.count("max_position_embeddings", 131072) : f.count("max_position_embeddings");
    s.rms_eps = f.number32(s.arch == "lfm2" ? "norm_eps" : "rms_norm_eps", info->eps_default);
    s.tied_embeddings = f.flag("tie_word_embeddings", f.flag("tie_embedding", info->tie_default));
    s.bos_token_id = f.token("bos_token_id");
    s.eos_token_id = f.token("eos_token_id");
    s.pad_token_id = f.token("pad_token_id");
    check_heads(s, f, head_dim_given);

    const Rope rope = rope_of(f, cfg);
    s.rope_theta = rope_theta(f, rope, info->theta_default);
    if (f.flag("attention_bias", false) && s.arch != "qwen2")
        f.fail("attention_bias true is not supported for " + model_type);
    if (f.flag("mlp_bias", false))
        f.fail("mlp_bias true is not supported");

    if (s.arch == "lfm2") {
        // conversion/lfm2.py: the block's width is two thirds of block_ff_dim, scaled and
        // rounded up to block_multiple_of, when block_auto_adjust_ff_dim says so.
        int64_t ff = f.has("block_ff_dim") ? f.count("block_ff_dim") : f.count("intermediate_size");
        if (f.flag("block_auto_adjust_ff_dim", true)) {
            ff = 2 * ff / 3;
            if (f.has("block_ffn_dim_multiplier")) {
                const double scaled =
                    f.number("block_ffn_dim_multiplier", 1.0) * static_cast<double>(ff);
                if (scaled > static_cast<double>(max_count("intermediate_size")))
                    f.fail("block_ffn_dim_multiplier " + f.shown("block_ffn_dim_multiplier") +
                           " makes the feed-forward width " + std::to_string(scaled) + ", " +
                           Fields::more_than(max_count("intermediate_size")));
                ff = static_cast<int64_t>(scaled);
            }
            const int64_t multiple = f.count("block_multiple_of", 256);
            ff = multiple * ((ff + multiple - 1) / multiple);
            if (ff < 1)
                f.fail(
                    "the feed-forward width comes to 0 (2/3 of block_ff_dim, times "
                    "block_ffn_dim_multiplier)");
            if (ff > max_count("intermediate_size"))
                f.fail("block_ff_dim rounded up to block_multiple_of is " + std::to_string(ff) +
                       ", " + Fields::more_than(max_count("intermediate_size")));
        }
        s.n_ff = ff;
        s.conv_l_cache = f.count("conv_L_cache");
        if (s.conv_l_cache < 2)
            f.fail("conv_L_cache is 1; the short convolution needs at least 2");
        s.qk_norm = QkNorm::per_head;
        need_square_attention(s, f);
        lfm2_layers(s, f, cfg);
    } else if (s.arch == "olmoe") {
        s.n_ff = s.n_ff_exp = f.count("intermediate_size");
        s.n_expert = f.count("num_experts");
        s.n_expert_used = f.count("num_experts_per_tok");
        s.qk_norm = QkNorm::full;
        need_square_attention(s, f);
        if (s.n_head_kv != s.n_head)
            f.fail("num_key_value_heads " + std::to_string(s.n_head_kv) +
                   " is not num_attention_heads " + std::to_string(s.n_head) +
                   ": llama.cpp's olmoe sizes the key norm by the full width");
    } else {
        s.n_ff = f.count("intermediate_size");
    }

    if (s.arch == "qwen2") {
        s.qkv_bias = true;
        need_square_attention(s, f);
    } else if (s.arch == "qwen3") {
        s.qk_norm = QkNorm::per_head;
    } else if (s.arch == "qwen3moe") {
        s.qk_norm = QkNorm::per_head;
        s.n_expert = f.count("num_experts");
        s.n_expert_used = f.count("num_experts_per_tok");
        s.n_ff_exp = f.count("moe_intermediate_size");
        s.expert_ff_key = true;
        if (f.count("decoder_sparse_step", 1) != 1)
            f.fail("decoder_sparse_step is " + f.shown("decoder_sparse_step") +
                   ": llama.cpp's qwen3moe has experts in every layer");
        if (f.has("mlp_only_layers") &&
            (!cfg.at("mlp_only_layers").is_array() || !cfg.at("mlp_only_layers").empty()))
            f.fail("mlp_only_layers is " + f.shown("mlp_only_layers") +
                   ": llama.cpp's qwen3moe has experts in every layer");
    } else if (gemma) {
        s.qk_norm = QkNorm::per_head;
        s.post_norms = true;
        // The local layers' base: rope_local_base_freq, or the per-type rope_parameters.
        float swa_theta = f.number32("rope_local_base_freq", 10000.0);
        if (f.has("rope_parameters") && cfg.at("rope_parameters").contains("sliding_attention")) {
            const json& sl = cfg.at("rope_parameters").at("sliding_attention");
            if (sl.is_object() && sl.contains("rope_theta"))
                swa_theta = f.number32_value("rope_parameters.sliding_attention.rope_theta",
                                             sl.at("rope_theta"));
        }
        s.rope_theta_swa = swa_theta;
        // Every n-th layer global: sliding_window_pattern, or the period of layer_types.
        int64_t pattern = f.count("sliding_window_pattern", 6);
        if (f.has("layer_types")) {
            const json& lt = cfg.at("layer_types");
            if (!lt.is_array() || static_cast<int64_t>(lt.size()) != s.n_layer)
                f.fail("layer_types is not a list of num_hidden_layers (" +
                       std::to_string(s.n_layer) + ") entries");
            int64_t first_full = -1;
            for (std::size_t i = 0; i < lt.size(); ++i)
                if (lt[i] == "full_attention") {
                    first_full = static_cast<int64_t>(i);
                    break;
                }
            if (first_full >= 0) {
                pattern = first_full + 1;
                for (std::size_t i = 0; i < lt.size(); ++i) {
                    const bool full = (static_cast<int64_t>(i) + 1) % pattern == 0;
                    if (lt[i] != (full ? "full_attention" : "sliding_attention"))
                        f.fail("layer_types is not every " + std::to_string(pattern) +
                               "th layer global, the only pattern llama.cpp's gemma3 reads");
                }
            }
        }
        if (pattern != 1) {
            s.sliding_window = f.count("sliding_window", 4096);
            s.sliding_window_pattern = pattern;
        }
        if (f.has("final_logit_softcapping") || f.has("attn_logit_softcapping"))
            f.fail("logit soft-capping is not supported for gemma3");
    } else if (s.arch == "phi3") {
        s.fused_qkv = true;
        need_square_attention(s, f);
        const double rot_pct = rope.params.contains("partial_rotary_factor")
                                   ? f.number_value("rope_scaling.partial_rotary_factor",
                                                    rope.params.at("partial_rotary_factor"))
                                   : f.number("partial_rotary_factor", 1.0);
        if (rot_pct > 1.0)
            f.fail("partial_rotary_factor is " + std::to_string(rot_pct) + ", more than 1");
        // conversion/phi.py: int(rot_pct * n_embd) // n_head.
        s.n_rot = static_cast<int64_t>(rot_pct * static_cast<double>(s.n_embd)) / s.n_head;
        if (s.n_rot < 2 || s.n_rot % 2 != 0)
            f.fail("partial_rotary_factor gives " + std::to_string(s.n_rot) +
                   " rotary dimensions per head; RoPE needs an even number");
        if (f.has("sliding_window"))
            s.sliding_window = f.count("sliding_window");
        if (rope.type == "longrope" || rope.type == "su") {
            LongRope lr;
            const json orig = rope.params.contains("original_max_position_embeddings")
                                  ? rope.params.at("original_max_position_embeddings")
                                  : cfg.value("original_max_position_embeddings", json());
            if (orig.is_null())
                f.fail("no original_max_position_embeddings (longrope needs it)");
            lr.original_context = f.count_value("original_max_position_embeddings", orig);
            if (lr.original_context < 2)  // its logarithm divides the attention factor below
                f.fail("original_max_position_embeddings is 1; longrope needs at least 2");
            lr.long_factors = factor_list(f, rope, "long_factor", s.n_rot / 2);
            lr.short_factors = factor_list(f, rope, "short_factor", s.n_rot / 2);
            const double scale =
                static_cast<double>(s.n_ctx_train) / static_cast<double>(lr.original_context);
            lr.attn_factor =
                scale > 1.0 ? static_cast<float>(std::sqrt(
                                  1.0 + std::log(scale) /
                                            std::log(static_cast<double>(lr.original_context))))
                            : 1.0f;
            s.longrope = lr;
        }
    } else if (s.arch == "smollm3") {
        // llama.cpp's smollm3 leaves every fourth layer without RoPE, whatever the file says.
        if (f.count("no_rope_layer_interval", 4) != 4)
            f.fail("no_rope_layer_interval is " + f.shown("no_rope_layer_interval") +
                   ": llama.cpp's smollm3 always skips RoPE in every 4th layer");
        if (f.has("no_rope_layers")) {
            const json& nl = cfg.at("no_rope_layers");
            if (!nl.is_array() || static_cast<int64_t>(nl.size()) != s.n_layer)
                f.fail("no_rope_layers is not a list of num_hidden_layers (" +
                       std::to_string(s.n_layer) + ") entries");
            for (std::size_t i = 0; i < nl.size(); ++i)
                if (nl[i] != ((i + 1) % 4 != 0 ? 1 : 0))
                    f.fail(
                        "no_rope_layers is not RoPE in three of every four layers, the only "
                        "pattern llama.cpp's smollm3 runs");
        }
    }

    if (s.is_moe() && s.n_expert_used > s.n_expert)
        f.fail("num_experts_per_tok " + std::to_string(s.n_expert_used) + " is more than the " +
               std::to_string(s.n_expert) + " experts");
    if (s.is_moe() && s.n_expert > 1024)
        f.fail("num_experts " + std::to_string(s.n_expert) + " is more than llama.cpp's 1024");
    if (s.n_layer > 512)
        f.fail("num_hidden_layers " + std::to_string(s.n_layer) + " is more than llama.cpp's 512");
    if (s.arch != "phi3")
        apply_rope_scaling(s, f, rope);
    else if (!rope.type.empty() && rope.type != "longrope" && rope.type != "su" &&
             rope.type != "default")
        apply_rope_scaling(s, f, rope);
    if (s.llama3_rope && s.n_rot != s.head_dim)
        f.fail("llama3 RoPE scaling needs rotary dimensions equal to head_dim");
    return s;
}

json parse_config_text(const std::string& text, const std::string& origin) {
    // Before parsing: the parser is iterative, but copying and destroying a value recurse once
    // per level (100,000 levels overflow the stack).
    check_json_depth(text, origin, kMaxDocumentDepth, "a model's config");
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // nlohmann's message ends with the offending byte's position: one line already.
        std::string what = e.what();
        if (const auto p = what.find("] "); p != std::string::npos)
            what = what.substr(p + 2);
        throw input_error(origin + ": not JSON (" + what + ")");
    } catch (const json::exception&) {
        // 1e999 and the like: JSON's grammar, but no double holds them. Read again to find
        // where, which the parser's message does not say.
        KeyPath where;
        json::sax_parse(text, &where);
        throw input_error(origin + ": " + (where.path.empty() ? "a value" : where.path) + " is " +
                          shown_text(where.token) + ", a number beyond any double");
    }
}

ModelSpec read_hf_config(const std::string& path) {
    // A regular file only: a FIFO would block and /dev/zero never end (core/file_io.hpp).
    return spec_from_hf_config(parse_config_text(read_input_file(path, "config.json"), path), path);
}

}  // namespace sb
