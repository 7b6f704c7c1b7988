#pragma once
// LlamaEngine: llama.cpp linked in-process. The timed loops mirror what llama.cpp's own
// llama-bench does (batch submission, one synchronisation per stage for prefill and per token
// for decode, a persistent CPU thread pool), so numbers are comparable with it; nothing else
// runs inside a timed region.
#include <functional>
#include <memory>

#include "engine/backends.hpp"
#include "engine/engine.hpp"

struct llama_model;  // llama.cpp's model, opaque here (engine/ and profile/ include llama.h)

namespace sb {

// How a LlamaEngine loads models, beyond LoadSpec.
struct LlamaEngineOptions {
    // Map the model file (llama.cpp's default) or read it into memory (--no-mmap): weights
    // that llama.cpp repacks for the CPU are copied out of the mapping, whose pages then stay
    // resident beside the copy, so a mapped repacked model costs about twice its size.
    bool use_mmap = true;
    // Advise the buffers llama.cpp allocates for the weights onto transparent huge pages
    // (engine/huge_pages.hpp): a load that reads the weights into memory then faults them in
    // 2 MiB at a time. Not llama.cpp's default (off), so not the stage sweeps'; `ops` turns
    // it on (--huge-pages).
    bool huge_pages = false;
};

class LlamaEngine final : public Engine {
  public:
    explicit LlamaEngine(LlamaEngineOptions options = {});
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
    // llama_get_memory_breakdown, buffer types that hold nothing left out, by name; empty for a
    // llama.cpp without it (cmake/llama.cmake) or before load.
    std::vector<BufferMemory> memory() const override;

    std::vector<std::string> notes() const override;
    std::optional<HugePageAdvice> huge_pages() const override;
    std::optional<uint64_t> weight_bytes() const override;
    std::optional<uint64_t> n_params() const override;
    std::optional<ModelShape> shape() const override;
    std::optional<double> kv_bytes_read(int depth) const override;
    size_t save_state(std::vector<uint8_t>& buf) override;
    void restore_state(std::span<const uint8_t> state) override;
    // The logits interface (engine.hpp, caps().logits). The span of last_logits is also valid
    // until unload(). tokenize is llama_tokenize with special tokens as text, as llama.cpp's
    // tools tokenize their input; it also throws sb::Error(input) when the vocabulary adds an
    // EOS (no tool of llama.cpp scores such input). evaluate decodes n_batch tokens per
    // llama_decode.
    std::span<const float> last_logits() const override;
    std::vector<int32_t> tokenize(const std::string& text, bool add_special) const override;
    void evaluate(std::span<const int32_t> tokens, int first_output,
                  std::vector<float>& out) override;
    // Frees the model and context (e.g. before switching device sets).
    void unload();
    // (optional) The loaded model, for code in engine/ that needs llama.cpp's vocabulary or
    // chat template beside this engine's timed calls (engine/text_generation.hpp). Not owned;
    // valid until the next load() of another placement, unload() or destruction; null before
    // load().
    const llama_model* model_handle() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Asks llama.cpp to read model_path's architecture, hyperparameters and vocabulary (no
// weights): what a peer built from the same llama.cpp (llama-server) refuses at startup is
// found here first and said as run says it. Throws sb::Error(input) "llama.cpp could not load
// model 'PATH': REASON" when it refuses. Cheap: tensors are neither read nor allocated.
void check_llama_accepts(const std::string& model_path);
// check_llama_accepts, then use(model) on that vocabulary-only load (no weights; not kept past
// the call; use may be empty). Throws as check_llama_accepts, and what use throws.
void with_llama_vocab(const std::string& model_path,
                      const std::function<void(const llama_model*)>& use);

}  // namespace sb
