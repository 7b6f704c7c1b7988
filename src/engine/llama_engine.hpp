#pragma once
// LlamaEngine: llama.cpp linked in-process. The timed loops mirror what llama.cpp's own
// llama-bench does (batch submission, one synchronisation per stage for prefill and per token
// for decode, a persistent CPU thread pool), so numbers are comparable with it; nothing else
// runs inside a timed region.
#include <memory>

#include "engine/backends.hpp"
#include "engine/engine.hpp"

namespace sb {

class LlamaEngine final : public Engine {
  public:
    LlamaEngine();
    ~LlamaEngine() override;
    LlamaEngine(const LlamaEngine&) = delete;
    LlamaEngine& operator=(const LlamaEngine&) = delete;

    EngineCaps caps() const override;
    void load(const LoadSpec& spec) override;
    void reset() override;
    void fill_to_depth(int n_depth, uint64_t seed) override;
    StageTimes prefill(std::span<const int32_t> tokens) override;
    int64_t decode_step(int32_t token) override;
    int32_t n_vocab() const override;
    std::optional<int32_t> bos_token() const override;
    std::vector<std::string> active_backends() const override;

    std::vector<std::string> notes() const override;
    std::optional<uint64_t> weight_bytes() const override;
    std::optional<uint64_t> n_params() const override;
    std::optional<ModelShape> shape() const override;
    std::optional<double> kv_bytes_read(int depth) const override;
    size_t save_state(std::vector<uint8_t>& buf) override;
    void restore_state(std::span<const uint8_t> state) override;
    // The logits (n_vocab() floats, unnormalised) of the last token that the latest
    // decode_step() or prefill() computed, for checking that a sequence continues correctly
    // (e.g. after restore_state()); read outside any timed region. The span is valid until the
    // next prefill, decode_step, reset, fill_to_depth, restore_state, load or unload. Throws
    // sb::Error(runtime) when nothing has been computed since the context was created or reset.
    std::span<const float> last_logits() const;
    // The text as the model's vocabulary tokenizes it (llama_tokenize, special tokens as
    // text): with add_special, the BOS first when the vocabulary adds one, as llama.cpp's tools
    // tokenize their input. Throws sb::Error(input) when the model has no vocabulary (a
    // tokenizer of type none) or the vocabulary adds an EOS (no tool of llama.cpp scores
    // such input).
    std::vector<int32_t> tokenize(const std::string& text, bool add_special) const;
    // Evaluates tokens on a cleared cache from position 0 (one sequence, n_batch tokens per
    // llama_decode), asking for logits at every position >= first_output, and appends them to
    // out (n_vocab() floats per position, in order). Untimed: for fidelity and perplexity.
    // Afterwards the sequence continues with decode_step() and last_logits() is the last
    // position's.
    void evaluate(std::span<const int32_t> tokens, int first_output, std::vector<float>& out);
    // Frees the model and context (e.g. before switching device sets).
    void unload();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Asks llama.cpp to read model_path's architecture, hyperparameters and vocabulary (no
// weights): what a peer built from the same llama.cpp (llama-server) refuses at startup is
// found here first and said as run says it. Throws sb::Error(input) "llama.cpp could not load
// model 'PATH': REASON" when it refuses. Cheap: tensors are neither read nor allocated.
void check_llama_accepts(const std::string& model_path);

}  // namespace sb
