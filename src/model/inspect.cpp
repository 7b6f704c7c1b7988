#include "model/inspect.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"
#include "model/gguf.hpp"

namespace sb {

namespace {

std::optional<int64_t> as_i64(const std::optional<uint64_t>& v) {
    if (!v || *v > static_cast<uint64_t>(INT64_MAX))
        return std::nullopt;
    return static_cast<int64_t>(*v);
}

std::string shown(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 60; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    return s.size() > 60 ? out + "..." : out;
}

// The largest value of a count that is a scalar or, per layer, an array of integers; nullopt
// when absent or not integers.
std::optional<int64_t> max_count(const GgufFile& g, const std::string& key) {
    if (const auto v = g.get_i64(key))
        return v;
    const GgufArray* a = g.get_array(key);
    if (!a)
        return std::nullopt;
    std::optional<int64_t> m;
    std::visit(
        [&](const auto& xs) {
            using E = typename std::decay_t<decltype(xs)>::value_type;
            if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) {
                for (const auto x : xs)
                    if (!m || static_cast<int64_t>(x) > *m)
                        m = static_cast<int64_t>(x);
            }
        },
        *a);
    return m;
}

}  // namespace

void check_llama_limits(const GgufFile& g) {
    const std::string& path = g.path;
    auto bad = [&](const std::string& why) {
        return input_error(path + ": " + why + "; llama.cpp cannot load this model");
    };
    // llama.cpp maps the file and hands the CPU backend pointers into it, which must be
    // aligned to 32 bytes (ggml's TENSOR_ALIGNMENT).
    for (const auto& t : g.tensors)
        if ((g.data_offset + t.offset) % kGgmlTensorAlignment != 0)
            throw bad("tensor '" + shown(t.name) + "' starts at byte " +
                      std::to_string(g.data_offset + t.offset) + ", not a multiple of " +
                      std::to_string(kGgmlTensorAlignment) + " (general.alignment " +
                      std::to_string(g.alignment) + ")");

    const auto arch = g.architecture();
    if (!arch)
        return;
    const std::string a = *arch + ".";
    // Layers: 1 to LLAMA_MAX_LAYERS; a layer's tensors beyond the count are never used.
    if (const auto* v = g.find(a + "block_count")) {
        const auto n = g.get_i64(a + "block_count");
        if (!n || *n < 1 || *n > kLlamaMaxLayers)
            throw bad(a + "block_count is " +
                      (n ? std::to_string(*n) : std::string(gguf_type_name(gguf_type_of(*v)))) +
                      ", expected 1 to " + std::to_string(kLlamaMaxLayers));
        for (const auto& t : g.tensors) {
            if (t.name.rfind("blk.", 0) != 0)
                continue;
            const auto dot = t.name.find('.', 4);
            const std::string idx = t.name.substr(4, dot == std::string::npos ? 0 : dot - 4);
            if (!idx.empty() && idx.size() < 10 &&
                idx.find_first_not_of("0123456789") == std::string::npos && std::stoll(idx) >= *n)
                throw bad("tensor '" + shown(t.name) + "' belongs to layer " + idx + ", but " + a +
                          "block_count is " + std::to_string(*n));
        }
        if (const auto nextn = g.get_i64(a + "nextn_predict_layers"); nextn && *nextn > *n)
            throw bad(a + "nextn_predict_layers " + std::to_string(*nextn) + " is more than the " +
                      std::to_string(*n) + " layers");
    }
    // Experts: as llama.cpp asserts them.
    const int64_t experts = g.get_i64(a + "expert_count").value_or(0);
    const int64_t used = max_count(g, a + "expert_used_count").value_or(0);
    const int64_t groups = g.get_i64(a + "expert_group_count").value_or(0);
    const int64_t group_used = g.get_i64(a + "expert_group_used_count").value_or(0);
    if (experts < 0 || experts > kLlamaMaxExperts)
        throw bad(a + "expert_count " + std::to_string(experts) + " is outside 0 to " +
                  std::to_string(kLlamaMaxExperts));
    if (experts == 0 && (used != 0 || groups != 0))
        throw bad(a + "expert_used_count or expert_group_count is set without experts");
    if (experts > 0) {
        if (used < 1 || used > experts)
            throw bad(a + "expert_used_count " + std::to_string(used) + " is outside 1 to the " +
                      std::to_string(experts) + " experts");
        if (groups < 0 || groups >= experts)
            throw bad(a + "expert_group_count " + std::to_string(groups) + " is not below the " +
                      std::to_string(experts) + " experts");
        if (groups > 1 && (experts % groups != 0 || group_used < 1 || group_used >= groups))
            throw bad(a + "expert_group_count " + std::to_string(groups) +
                      " and expert_group_used_count " + std::to_string(group_used) +
                      " do not divide the " + std::to_string(experts) + " experts");
    }
    // Normalisation epsilons: ggml asserts eps >= 0 while computing (nan fails it too).
    for (const auto& kv : g.kv) {
        if (kv.key.rfind(a, 0) != 0 || kv.key.size() < 7 ||
            kv.key.compare(kv.key.size() - 7, 7, "epsilon") != 0)
            continue;
        const auto eps = g.get_f64(kv.key);
        if (eps && !(std::isfinite(*eps) && *eps >= 0))
            throw bad(kv.key + " is " + std::to_string(*eps) +
                      ", expected a finite number of at least 0");
    }
    // RoPE values: llama.cpp takes any float, and an infinite or nan one (or a base of 0 or
    // less, whose powers are infinite or nan) leaves every rotation angle 0, infinite or nan:
    // the model no longer sees positions and its logits mean nothing.
    for (const auto& kv : g.kv) {
        if (kv.key.rfind(a + "rope.", 0) != 0)
            continue;
        const GgufType type = gguf_type_of(kv.value);
        if (type != GgufType::float32 && type != GgufType::float64)
            continue;
        const double v = *g.get_f64(kv.key);
        const std::string name = kv.key.substr(a.size());
        const bool base = name == "rope.freq_base" || name == "rope.freq_base_swa";
        const bool scale = name == "rope.scaling.factor" || name == "rope.scale_linear";
        if (!std::isfinite(v) || (base && !(v > 0)) || (scale && v < 0))
            throw bad(kv.key + " is " + std::to_string(v) + ", expected a finite number" +
                      (base    ? " above 0"
                       : scale ? " of at least 0"
                               : ""));
    }
    // RoPE scaling: one of the names llama.cpp knows, else it asserts.
    if (g.find(a + "rope.scaling.type")) {
        const auto t = g.get_string(a + "rope.scaling.type");
        if (!t || (*t != "none" && *t != "linear" && *t != "yarn" && *t != "longrope"))
            throw bad(a + "rope.scaling.type is '" + shown(t.value_or("(not a string)")) +
                      "', expected none, linear, yarn or longrope");
    }
    if (auto why = vocabulary_fault(g))
        throw bad(*why);
}

std::optional<std::string> vocabulary_fault(const GgufFile& g) {
    const GgufArray* arr = g.get_array("tokenizer.ggml.tokens");
    const auto* tokens = arr ? std::get_if<std::vector<std::string>>(arr) : nullptr;
    const GgufArray* types_arr = g.get_array("tokenizer.ggml.token_type");
    const auto* types = types_arr ? std::get_if<std::vector<int32_t>>(types_arr) : nullptr;
    // llama.cpp reads each token as a C string: a NUL byte ends it there, so "a\0f" is its
    // "a" (and may meet another "a"), "\0x" its empty token.
    auto text = [&](std::size_t i) {
        std::string_view t = (*tokens)[i];
        return t.substr(0, t.find('\0'));
    };
    if (types) {
        const bool bert = g.get_string("tokenizer.ggml.model") == "bert";
        for (std::size_t i = 0; i < types->size(); ++i) {
            if ((*types)[i] != 6)
                continue;
            // A WordPiece vocabulary (BERT's) has no byte tokens: llama.cpp aborts rendering one.
            if (bert)
                return "token " + std::to_string(i) +
                       " is a byte token (tokenizer.ggml.token_type 6), which a BERT (WordPiece) "
                       "vocabulary cannot have";
            // The others read a byte token's byte from its text <0xXX> with substr(3, 2):
            // a text of 1 or 2 bytes throws std::out_of_range out of the loader. (An empty one
            // is renamed [EMPTY_<id>] first.)
            if (!tokens || i >= tokens->size())
                continue;
            const std::string_view t = text(i);
            if (!t.empty() && t.size() < 3)
                return "token " + std::to_string(i) + " ('" + shown(t) +
                       "') is a byte token (tokenizer.ggml.token_type 6) but not <0xXX>";
        }
    }
    // Every token once (llama.cpp names empty ones [EMPTY_<id>]).
    if (tokens) {
        std::unordered_map<std::string_view, std::size_t> seen;
        std::vector<std::string> renamed;
        seen.reserve(tokens->size());
        for (std::size_t i = 0; i < tokens->size(); ++i) {
            const std::string_view t = text(i);
            if (t.empty()) {
                renamed.push_back("[EMPTY_" + std::to_string(i) + "]");
                continue;
            }
            const auto [it, fresh] = seen.emplace(t, i);
            if (!fresh)
                return "tokenizer.ggml.tokens holds '" + shown(t) + "' twice (tokens " +
                       std::to_string(it->second) + " and " + std::to_string(i) + ")";
        }
        for (const auto& r : renamed)
            if (seen.count(r))
                return "tokenizer.ggml.tokens holds '" + r + "' beside an empty token";
    }
    return std::nullopt;
}

std::optional<std::string> llama_file_type_name(uint32_t file_type) {
    // LLAMA_FTYPE in llama.h; empty slots are removed values. 1024 marks a guessed type.
    static constexpr std::array<std::string_view, 42> kNames = {
        "F32",    "F16",    "Q4_0",    "Q4_1",      "",       "",        "",
        "Q8_0",   "Q5_0",   "Q5_1",    "Q2_K",      "Q3_K_S", "Q3_K_M",  "Q3_K_L",
        "Q4_K_S", "Q4_K_M", "Q5_K_S",  "Q5_K_M",    "Q6_K",   "IQ2_XXS", "IQ2_XS",
        "Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ1_S",     "IQ4_NL", "IQ3_S",   "IQ3_M",
        "IQ2_S",  "IQ2_M",  "IQ4_XS",  "IQ1_M",     "BF16",   "",        "",
        "",       "TQ1_0",  "TQ2_0",   "MXFP4_MOE", "NVFP4",  "Q1_0",    "Q2_0",
    };
    const uint32_t base = file_type & ~1024u;
    if (base >= kNames.size() || kNames[base].empty())
        return std::nullopt;
    std::string name(kNames[base]);
    if (file_type & 1024u)
        name += " (guessed)";
    return name;
}

Warnings model_doubts(const GgufFile& g) {
    Warnings out;
    const GgufArray* arr = g.get_array("tokenizer.ggml.tokens");
    const auto* tokens = arr ? std::get_if<std::vector<std::string>>(arr) : nullptr;
    if (!tokens)
        return out;  // no vocabulary of its own: llama.cpp runs it on token ids
    const uint64_t n_vocab = tokens->size();
    const std::string model = "model '" + g.path + "'";
    for (const auto& kv : g.kv) {
        const std::string_view k = kv.key;
        if (k.rfind("tokenizer.ggml.", 0) != 0 || k.size() < 9 ||
            k.compare(k.size() - 9, 9, "_token_id") != 0)
            continue;
        const auto id = g.get_u64(k);
        if (!id || *id < n_vocab)
            continue;
        out.push_back({"model_special_token_beyond_vocab",
                       model + ": " + kv.key + " is " + std::to_string(*id) + ", beyond its " +
                           std::to_string(n_vocab) +
                           "-token vocabulary; llama.cpp uses its default token instead (or none)",
                       "timings hold; text the model reads or writes (perplexity, fidelity --text) "
                       "may differ from the model's own: fix the GGUF's metadata"});
    }
    std::size_t empty = 0;
    for (const auto& t : *tokens)
        empty += t.empty() || t[0] == '\0';
    if (n_vocab > 0 && empty * 2 > n_vocab)
        out.push_back({"model_empty_vocabulary",
                       model + ": " + std::to_string(empty) + " of the " + std::to_string(n_vocab) +
                           " tokens of tokenizer.ggml.tokens are empty; the model cannot spell "
                           "text",
                       "timings hold (stagebench measures on random token ids); perplexity, "
                       "fidelity --text and generated text do not: use a GGUF with its "
                       "vocabulary"});
    return out;
}

ModelInfo inspect_model(const std::string& path) {
    const GgufFile g = read_gguf(path);
    ModelInfo m;
    m.path = path;
    const auto arch = g.architecture();
    if (!arch || arch->empty()) {
        throw input_error(path + ": no general.architecture; not a llama.cpp model");
    }
    if (g.tensors.empty())
        throw input_error(path + ": has no tensors (vocabulary-only file?)");
    check_llama_limits(g);
    // Metadata strings are bytes from the file: made valid UTF-8 before they reach a document
    // (keys below are still looked up with the architecture's bytes as written).
    const auto text = [](std::optional<std::string> v) -> std::optional<std::string> {
        if (v)
            make_valid_utf8(*v);
        return v;
    };
    m.arch = valid_utf8(*arch);
    m.name = text(g.get_string("general.name"));
    m.gguf_version = g.version;
    m.file_bytes = g.file_bytes;
    m.n_params = g.n_params();
    m.n_tensors = g.tensors.size();
    m.file_type_id = g.get_u32("general.file_type");
    if (m.file_type_id)
        m.file_type = llama_file_type_name(*m.file_type_id);

    std::map<std::string, uint64_t> bytes_by_type;
    for (const auto& t : g.tensors) {
        const std::string type(ggml_type_info(t.type)->name);
        ++m.tensor_types[type];
        bytes_by_type[type] += t.nbytes;
    }
    uint64_t most = 0;
    for (const auto& [type, bytes] : bytes_by_type) {
        if (bytes >= most) {
            most = bytes;
            m.dominant_type = type;
        }
    }

    m.synthetic = g.get_bool("stagebench.synthetic").value_or(false);
    m.synthetic_preset = text(g.get_string("stagebench.preset"));
    m.synthetic_seed = g.get_u64("stagebench.seed");
    m.synthetic_routing = text(g.get_string("stagebench.routing"));
    m.generator = text(g.get_string("stagebench.generator"));

    const std::string& a = *arch;
    m.n_layers = as_i64(g.get_u64(a + ".block_count"));
    m.n_embd = as_i64(g.get_u64(a + ".embedding_length"));
    m.n_head = as_i64(g.get_u64(a + ".attention.head_count"));
    m.n_head_kv = as_i64(g.get_u64(a + ".attention.head_count_kv"));
    m.n_ff = as_i64(g.get_u64(a + ".feed_forward_length"));
    m.n_ctx_train = as_i64(g.get_u64(a + ".context_length"));
    m.n_vocab = as_i64(g.get_u64(a + ".vocab_size"));
    if (!m.n_vocab)
        m.n_vocab = as_i64(g.get_array_size("tokenizer.ggml.tokens"));
    if (!m.n_vocab) {
        if (const auto* e = g.find_tensor("token_embd.weight"); e && e->ne.size() >= 2) {
            m.n_vocab = e->ne[1];
        }
    }
    m.tokenizer = text(g.get_string("tokenizer.ggml.model"));
    m.warnings = model_doubts(g);
    for (auto& w : m.warnings)
        make_valid_utf8(w.message);  // the path's bytes
    return m;
}

nlohmann::json to_json(const ModelInfo& m) {
    nlohmann::json j{
        {"path", m.path},
        {"arch", m.arch},
        {"name", opt(m.name)},
        {"gguf_version", m.gguf_version},
        {"file_bytes", m.file_bytes},
        {"n_params", m.n_params},
        {"n_tensors", m.n_tensors},
        {"file_type_id", opt(m.file_type_id)},
        {"file_type", opt(m.file_type)},
        {"dominant_type", m.dominant_type},
        {"tensor_types", m.tensor_types},
        {"synthetic", m.synthetic},
        {"synthetic_preset", opt(m.synthetic_preset)},
        {"synthetic_seed", opt(m.synthetic_seed)},
        {"synthetic_routing", opt(m.synthetic_routing)},
        {"generator", opt(m.generator)},
        {"n_layers", opt(m.n_layers)},
        {"n_embd", opt(m.n_embd)},
        {"n_head", opt(m.n_head)},
        {"n_head_kv", opt(m.n_head_kv)},
        {"n_ff", opt(m.n_ff)},
        {"n_ctx_train", opt(m.n_ctx_train)},
        {"n_vocab", opt(m.n_vocab)},
        {"tokenizer", opt(m.tokenizer)},
    };
    if (!m.warnings.empty()) {
        j["warnings"] = nlohmann::json::array();
        for (const auto& w : m.warnings)
            j["warnings"].push_back({{"code", w.code}, {"message", w.message}, {"hint", w.hint}});
    }
    return j;
}

Warnings model_warnings(const std::vector<nlohmann::json>& models) {
    Warnings out;
    for (const auto& m : models)
        if (m.is_object() && m.value("synthetic", false)) {
            out.push_back({"synthetic_model",
                           "model '" + m.value("path", "") +
                               "' is synthetic: random weights, real shapes; speed is "
                               "representative, output text is not",
                           "use a real GGUF for quality-sensitive measurements"});
            break;
        }
    for (const auto& m : models) {
        const auto ws = m.is_object() ? m.find("warnings") : m.end();
        if (ws == m.end() || !ws->is_array())
            continue;
        for (const auto& w : *ws)
            if (w.is_object() && w.value("message", nlohmann::json()).is_string())
                out.push_back({w.value("code", std::string("model")), w.value("message", ""),
                               w.value("hint", std::string())});
    }
    return out;
}

}  // namespace sb
