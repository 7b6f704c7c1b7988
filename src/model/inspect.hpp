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
    // Values llama.cpp loads and works around, with what that costs (model_doubts()); the
    // models[] entry's "warnings", and the document's warnings through model_warnings().
    Warnings warnings;
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
// byte tokens in a BERT (WordPiece) vocabulary or of 1 or 2 bytes (not <0xXX>). Also the values
// llama.cpp loads without a word but computes nothing meaningful with, so that nothing is measured
// on them: a RoPE value that is not finite (rope.*), a rope.freq_base (or freq_base_swa) of 0 or
// less (every angle is then infinite or nan), a negative rope.scaling.factor or rope.scale_linear.
// Throws sb::Error(ErrorKind::input, "<path>: <reason>; llama.cpp cannot load this model").
void check_llama_limits(const GgufFile& g);

// The vocabulary part of check_llama_limits: why llama.cpp cannot load the tokenizer.ggml.*
// keys of g (a token twice, a byte token in a BERT vocabulary, a byte token of 1 or 2 bytes,
// where its loader reads the byte from the text <0xXX>), or nullopt. For `synth --vocab`, before
// the keys are copied into a model.
std::optional<std::string> vocabulary_fault(const GgufFile& g);

// Values that are absurd but that llama.cpp works around, so that its timings still hold and
// only the text the model reads and writes may not: warnings, not refusals (README "Bad input
// and faults"):
//   - a special token id (tokenizer.ggml.*_token_id: BOS, EOS, padding, ...) beyond the
//     vocabulary: llama.cpp uses its default for that token, or none;
//   - a vocabulary whose tokens are mostly empty strings (llama.cpp names them [EMPTY_<id>]):
//     the model cannot spell text, and random token ids are what it is measured on.
Warnings model_doubts(const GgufFile& g);

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
// synthetic model's speed is representative, its output is not (at most one of these); each
// entry's own "warnings" (ModelInfo::warnings).
Warnings model_warnings(const std::vector<nlohmann::json>& models);

}  // namespace sb
