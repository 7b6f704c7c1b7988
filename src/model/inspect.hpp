#pragma once
// What a model file is, read from its GGUF header without loading weights. The CLI calls
// inspect_model() before handing a path to llama.cpp, so an unusable file fails with one clear
// line instead of an abort inside the engine.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/warning.hpp"
#include "model/gguf.hpp"

namespace sb {

struct ModelInfo {
    std::string path;
    std::string arch;                 // general.architecture
    std::optional<std::string> name;  // general.name
    uint32_t gguf_version = 0;
    uint64_t file_bytes = 0;
    uint64_t n_params = 0;  // elements of all tensors except rope_freqs
    uint64_t n_tensors = 0;
    std::optional<uint32_t> file_type_id;          // general.file_type (LLAMA_FTYPE)
    std::optional<std::string> file_type;          // its name: "Q4_0", "F16", "Q4_K_M", ...
    std::string dominant_type;                     // ggml type holding the most bytes: "q4_0"
    std::map<std::string, uint64_t> tensor_types;  // ggml type name → tensor count
    bool synthetic = false;                        // stagebench.synthetic
    std::optional<std::string> synthetic_preset;   // stagebench.preset
    std::optional<uint64_t> synthetic_seed;        // stagebench.seed
    std::optional<std::string> synthetic_routing;  // stagebench.routing (mixtures of experts)
    std::optional<std::string> generator;          // stagebench.generator
    std::optional<int64_t> n_layers;               // <arch>.block_count
    std::optional<int64_t> n_embd;                 // <arch>.embedding_length
    std::optional<int64_t> n_head;                 // <arch>.attention.head_count
    std::optional<int64_t> n_head_kv;              // <arch>.attention.head_count_kv
    std::optional<int64_t> n_ff;                   // <arch>.feed_forward_length
    std::optional<int64_t> n_ctx_train;            // <arch>.context_length
    // <arch>.vocab_size, else the tokenizer's token count, else token_embd.weight's rows.
    std::optional<int64_t> n_vocab;
    std::optional<std::string> tokenizer;  // tokenizer.ggml.model
};

// llama.cpp's limits, facts of the pinned version: LLAMA_MAX_LAYERS, LLAMA_MAX_EXPERTS and
// ggml's TENSOR_ALIGNMENT (bytes).
inline constexpr int64_t kLlamaMaxLayers = 512;
inline constexpr int64_t kLlamaMaxExperts = 1024;
inline constexpr uint64_t kGgmlTensorAlignment = 32;

// Checks the metadata llama.cpp does not report as an error but aborts the process on (an
// assertion while loading or computing), so that such a model is bad input before any engine
// sees it: tensor data not at 32-byte file offsets (general.alignment below 32), a
// <arch>.block_count outside 1..512 or below a layer the tensors use, nextn layers beyond the
// layers, expert counts that do not fit together, a normalisation epsilon that is negative,
// infinite or nan, an unknown <arch>.rope.scaling.type, a vocabulary that holds a token twice,
// byte tokens in a BERT (WordPiece) vocabulary.
// Throws sb::Error(ErrorKind::input, "<path>: <reason>; llama.cpp cannot load this model").
void check_llama_limits(const GgufFile& g);

// Reads and validates path with read_gguf() and check_llama_limits() and summarizes it. Throws
// sb::Error(ErrorKind::input, "<path>: <reason>") for a missing path, a directory, a file that
// is not GGUF, is truncated or corrupt, has no general.architecture, has no tensors, or holds
// values llama.cpp aborts on.
ModelInfo inspect_model(const std::string& path);

// LLAMA_FTYPE name ("Q4_0", "MOSTLY_*" without the prefix), or nullopt for unknown values.
std::optional<std::string> llama_file_type_name(uint32_t file_type);

// Every field; absent values are null.
nlohmann::json to_json(const ModelInfo& info);

// Warnings a reader of results from these models (to_json(ModelInfo) entries) should see: a
// synthetic model's speed is representative, its output is not. At most one per kind.
Warnings model_warnings(const std::vector<nlohmann::json>& models);

}  // namespace sb
