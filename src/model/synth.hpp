#pragma once
// Synthetic models: a GGUF file with the exact architecture and tensor shapes of a real model
// (see presets.hpp), seeded random weights and a valid SentencePiece-style vocabulary, which
// llama.cpp loads and runs like the real thing. Speed depends on shapes and types, not on
// trained values, so a synthetic model benchmarks like the model it copies without a download.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/quantizer.hpp"

namespace sb {

struct SynthOptions {
    std::string preset;          // a name from preset_names()
    std::string quant = "q4_0";  // q4_0 | q8_0 | f16 | f32 (case-insensitive)
    int layers = 0;              // 0: the preset's layer count
    uint64_t seed = 1;           // same seed, options and quantizer: byte-identical file
    std::string out_path;
    // The tokenizer: "" or "synthetic" (make_synthetic_vocab, the preset's size), "none" (no
    // vocabulary: tokenizer.ggml.model "none", which llama.cpp runs but cannot tokenize text
    // with), or a vocabulary GGUF (a path, or a name of the pinned llama.cpp tree's
    // models/ggml-vocab-<name>.gguf, resolve_vocab()) whose tokenizer.* keys are copied and whose
    // token count becomes the model's n_vocab, so the model tokenizes real text.
    std::string vocab;
    std::string generator = "stagebench";  // stagebench.generator; the CLI adds its version
    int threads = 0;                       // worker threads; 0: all hardware threads
    // Called on the calling thread as tensor data is written; optional.
    std::function<void(uint64_t bytes_done, uint64_t bytes_total)> on_progress;
};

struct SynthResult {
    std::string path;
    std::string preset;
    std::string quant;      // the requested type: "q4_0", ...
    std::string quantizer;  // Quantizer::name()
    uint64_t n_params = 0;  // without rope_freqs, as published counts
    uint64_t file_bytes = 0;
    uint64_t n_tensors = 0;
    int n_layers = 0;
    // Matrices stored as F16 because their rows are not a multiple of the quant's block size.
    std::vector<std::string> f16_fallback;
    std::string vocab;  // "synthetic", "none" or the vocabulary file's path
    int64_t n_vocab = 0;
};

// The vocabulary GGUF that a --vocab name means: a path (it has a '/' or ends in .gguf) as is;
// otherwise ggml-vocab-<name>.gguf in the directory STAGEBENCH_VOCAB_DIR names, else in
// bin/../share/stagebench/vocab beside the executable (the build tree: the pinned llama.cpp
// tree's models/; a dist: the presets' vocabularies). Throws
// sb::Error(usage) for an unknown name, listing the names there.
std::string resolve_vocab(const std::string& name);
// The names resolve_vocab() knows (sorted; empty when the directory is not there).
std::vector<std::string> bundled_vocab_names();
// The directory of those files.
std::string bundled_vocab_dir();

// Writes the model to a temporary file beside out_path and renames it into place at the end,
// so a failure never leaves a partial file at out_path (an existing file there is replaced
// only on success). Matrices (embedding included) get the requested type, 1D tensors F32.
// Throws sb::Error(ErrorKind::usage) for an unknown preset or quant, a negative layer count or
// an empty out_path; ErrorKind::input when out_path's directory is missing or not writable;
// ErrorKind::runtime when writing fails.
SynthResult write_synthetic_model(const SynthOptions& options, const Quantizer& quantizer);

// The vocabulary every synthetic model carries: <unk>, <s>, </s>, the 256 byte tokens <0x00>..
// <0xFF>, then unique printable pieces ("▁", ASCII characters, "▁"-prefixed and bare lowercase
// words) up to n_vocab. Token types follow llama.cpp: 2 unknown, 3 control, 6 byte, 1 normal.
// Throws sb::Error(ErrorKind::usage) when n_vocab < 260.
struct SyntheticVocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;  // non-increasing
    std::vector<int32_t> token_types;
};
SyntheticVocab make_synthetic_vocab(int64_t n_vocab);

// LLAMA_FTYPE value for general.file_type of a quant name ("q4_0" → 2); usage error if unknown.
uint32_t llama_file_type_for(const std::string& quant);

nlohmann::json to_json(const SynthResult& result);

}  // namespace sb
