#pragma once
// Synthetic models: a GGUF file with the exact architecture and tensor shapes of a real model
// (a preset, model/presets.hpp, or any supported config.json, model/hf_config.hpp), seeded
// random weights quantized per tensor as llama-quantize does (model/quant_mix.hpp), seeded
// expert routing for mixtures of experts (model/routing.hpp) and a vocabulary, which llama.cpp
// loads and runs like the real thing. Speed depends on shapes, types and which weights each
// token reads, not on trained values, so a synthetic model benchmarks like the model it copies
// without a download.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/quantizer.hpp"

namespace sb {

struct SynthOptions {
    std::string preset;          // a name from preset_names() ...
    std::string config_path;     // ... or a Hugging Face config.json (exactly one of the two)
    std::string quant = "q4_0";  // quant_names() (case-insensitive)
    // Every quantizable tensor at the quant's own type (llama-quantize --pure); false: the
    // per-tensor mix llama-quantize chooses by default for that type.
    bool pure = false;
    int layers = 0;     // 0: the model's layer count
    uint64_t seed = 1;  // same seed, options and quantizer: byte-identical file
    std::string out_path;
    // The tokenizer: "" (the default: a preset's family vocabulary, or for a config.json the
    // family vocabulary of its model_type whose size matches, when the pinned llama.cpp tree
    // that has it is here; otherwise "synthetic"), "synthetic" (make_synthetic_vocab, the
    // model's size), "none" (tokenizer.ggml.model "none", which llama.cpp runs but cannot
    // tokenize text with), or a vocabulary GGUF (a path, or a name of the tree's
    // models/ggml-vocab-<name>.gguf, resolve_vocab()) whose tokenizer.* keys are copied and
    // whose token count becomes the model's n_vocab. A family vocabulary gets the model's own
    // special tokens (a preset's tokenizer section, else config.json's bos/eos/pad ids).
    std::string vocab;
    // Mixtures of experts only: "" (skewed), "uniform" or "skewed" (model/routing.hpp).
    std::string routing;
    std::string generator = "stagebench";  // stagebench.generator; the CLI adds its version
    int threads = 0;                       // worker threads; 0: all hardware threads
    // Called on the calling thread as tensor data is written; optional.
    std::function<void(uint64_t bytes_done, uint64_t bytes_total)> on_progress;
};

struct SynthResult {
    std::string path;
    std::string preset;  // the preset's name; empty for a config.json
    std::string config;  // the config.json's path; empty for a preset
    std::string arch;    // general.architecture
    std::string quant;   // the requested file type: "q4_0", ...
    bool pure = false;
    std::string quantizer;  // Quantizer::name()
    uint64_t n_params = 0;  // without the RoPE factor tensors, as published counts
    uint64_t file_bytes = 0;
    uint64_t n_tensors = 0;
    int n_layers = 0;
    std::map<std::string, uint64_t> tensor_types;  // ggml type name -> tensors of that type
    // Tensors whose rows are not a multiple of the chosen type's block, written at a fallback
    // type as llama-quantize does ("blk.0.ffn_down.weight: q5_0").
    std::vector<std::string> fallbacks;
    std::string vocab;  // "synthetic", "none" or the vocabulary file's path
    int64_t n_vocab = 0;
    std::optional<std::string> routing;  // "uniform" | "skewed" for a mixture of experts
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

// The largest model file synth writes: 1 TiB. Each width and count of a config.json has its
// own ceiling too (model/hf_config.cpp), a few times the largest published model's.
inline constexpr uint64_t kMaxSynthFileBytes = uint64_t{1} << 40;

// Writes the model to a temporary file beside out_path and renames it into place at the end,
// so a failure never leaves a partial file at out_path (an existing file there is replaced
// only on success). Throws sb::Error(ErrorKind::usage) for an unknown preset or quant, both or
// neither of preset and config_path, a negative layer count, --routing for a dense model or an
// empty out_path; ErrorKind::input for a config.json that hf_config.hpp refuses, a vocabulary
// that is not one, a model file larger than kMaxSynthFileBytes or than the free space of
// out_path's filesystem (both checked before anything is written), or when out_path's
// directory is missing or not writable; ErrorKind::runtime when writing fails or is
// interrupted (interrupt_requested(), core/interrupt.hpp: Ctrl-C or SIGTERM), which removes
// the temporary.
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
