#include "model/inspect.hpp"

#include <array>
#include <string_view>

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

}  // namespace

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
    return m;
}

nlohmann::json to_json(const ModelInfo& m) {
    return nlohmann::json{
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
}

Warnings model_warnings(const std::vector<nlohmann::json>& models) {
    for (const auto& m : models)
        if (m.value("synthetic", false))
            return {{"synthetic_model",
                     "model '" + m.value("path", "") +
                         "' is synthetic: random weights, real shapes; speed is representative, "
                         "output text is not",
                     "use a real GGUF for quality-sensitive measurements"}};
    return {};
}

}  // namespace sb
