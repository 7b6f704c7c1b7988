#pragma once
// Text generation as an application runs it in-process (level 3 of `stagebench explain`): a
// user's text becomes the prompt through the chat template and the tokenizer, the prompt is
// prefilled, and each token is sampled from the logits by a sampler chain and detokenized,
// until n_gen tokens were generated. The prefill and every decode step are LlamaEngine's own
// (the same calls, batches and synchronisation as llama-bench's loop), so what this adds over
// the bare stages is exactly the application's work: template, tokenizing, sampling,
// detokenizing.
//
// The prompt is made the way llama-server's chat endpoint makes it: the model's chat template
// (as llama.cpp's C API applies it), or chatml when the model has none (llama-server's
// fallback), one user message and the assistant's turn opened; then tokenized with the
// vocabulary's special tokens (BOS) added and special-token text parsed.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/llama_engine.hpp"

namespace sb {

// The sampler chain: top-k, top-p, min-p, temperature, then a seeded draw. The defaults are
// llama.cpp's (common_params_sampling, what llama-server samples with when a request says
// nothing); the samplers llama.cpp runs at neutral defaults (penalties 1.0, DRY 0, typical-p
// 1.0, XTC 0, top-n-sigma -1) change no token and are left out.
struct SamplerSettings {
    int top_k = 40;
    double top_p = 0.95;
    double min_p = 0.05;
    double temperature = 0.8;
    // Tokens never drawn (a logit bias of -infinity, as llama-server's logit_bias with false).
    std::vector<int32_t> banned;
};

// {"chain": ["top_k", "top_p", "min_p", "temperature", "dist"], "top_k", "top_p", "min_p",
// "temperature", "banned_tokens": count}
nlohmann::json to_json(const SamplerSettings& s);

// The chat template and tokenizer of a loaded engine's model.
class ChatPrompter {
  public:
    // engine must stay loaded with the same model while this is used. Throws sb::Error(input)
    // when its vocabulary cannot tokenize text (tokenizer_fault, engine/tokenizer_check.hpp).
    explicit ChatPrompter(const LlamaEngine& engine);
    // "the model's", or "chatml (...)" when the model has none or llama.cpp's C API does not
    // know its template.
    const std::string& template_used() const { return template_used_; }
    // The one-message chat as a prompt text (the assistant's turn opened).
    std::string apply(const std::string& user_text) const;
    // The prompt text as tokens: BOS added when the vocabulary adds one, special tokens parsed.
    std::vector<int32_t> tokenize(const std::string& prompt_text) const;
    // The text of one token (special tokens not rendered).
    std::string piece(int32_t token) const;
    // The tokens whose text is bytes that are not UTF-8 on their own (byte-fallback pieces):
    // llama-server refuses a stream in which such a byte stays unmatched.
    std::vector<int32_t> non_utf8_tokens() const;
    // apply() then tokenize(): the prompt's length in tokens.
    int64_t count(const std::string& user_text) const { return tokenize(apply(user_text)).size(); }

  private:
    const LlamaEngine& engine_;
    std::string template_;  // what llama_chat_apply_template gets
    std::string template_used_;
};

// One generation, on the sb::now_ns clock.
struct TextGeneration {
    int64_t start_ns = 0;        // before the template was applied
    int64_t first_token_ns = 0;  // the first token sampled and detokenized
    int64_t end_ns = 0;          // the last token sampled and detokenized
    int64_t prompt_tokens = 0;
    int64_t output_tokens = 0;
    std::string text;  // what was generated
};

// Clears the engine's KV cache, then, timed: applies the template to user_text, tokenizes,
// prefills, and n_gen times samples (chain seeded with seed; end-of-generation tokens are
// never drawn, as llama-server's ignore_eos) and detokenizes a token, decoding each one but the
// last. Throws sb::Error(usage) for n_gen < 1, what the engine throws otherwise.
TextGeneration generate_text(LlamaEngine& engine, const ChatPrompter& prompter,
                             const std::string& user_text, int n_gen, const SamplerSettings& s,
                             uint64_t seed);

// Explain's text-generation view of an in-process engine (level 3, and the texts of levels 3 to
// 5): the engine, its model's chat template and tokenizer (ChatPrompter's answers), and a
// generation as generate_text makes one. The run's engine factory makes it
// (EngineFactory::text_generation): LlamaEngine's for users (llama_text_generation), a scripted
// one in tests (engine/fake_engine.hpp), so a runner never holds a LlamaEngine itself.
class TextGenerator {
  public:
    virtual ~TextGenerator() = default;
    // The engine: the graph level's repetitions run on it (loaded by load()).
    virtual Engine& engine() = 0;
    // Loads the engine for spec (Engine::load's errors) and reads its model's template and
    // tokenizer (sb::Error(input) when it cannot tokenize text: tokenizer_fault). The model must
    // stay the same between loads.
    virtual void load(const LoadSpec& spec) = 0;
    // Frees the model and its context (the profiler loads its own); load() again before use.
    virtual void unload() = 0;
    // ChatPrompter's answers for the loaded model.
    virtual const std::string& template_used() const = 0;
    virtual std::string apply(const std::string& user_text) const = 0;
    virtual int64_t count(const std::string& user_text) const = 0;
    virtual std::vector<int32_t> non_utf8_tokens() const = 0;
    // generate_text on the engine (its times on the engine's clock).
    virtual TextGeneration generate(const std::string& user_text, int n_gen,
                                    const SamplerSettings& s, uint64_t seed) = 0;
};

// The view on a new LlamaEngine (in-process llama.cpp).
std::unique_ptr<TextGenerator> llama_text_generation();

// The tokens of the GGUF at model_path whose text is bytes that are not UTF-8 on their own
// (ChatPrompter::non_utf8_tokens), read through llama.cpp's vocabulary alone (no weights):
// what a llama-server serving that model should never draw when the model is synthetic
// (synthetic_token_ban). Throws sb::Error(input) as check_llama_accepts does when llama.cpp
// refuses the file; check_llama_limits (model/inspect.hpp) must have passed first.
std::vector<int32_t> non_utf8_tokens(const std::string& model_path);

// The tokens a server (and an in-process sampler beside it) should never draw for a model:
// random weights draw byte-fallback tokens that never form UTF-8, and llama-server ends such a
// stream with an error or streams none of its text, so for a synthetic model the tokens whose
// text is not UTF-8 on its own are banned; a real model's are left alone (its byte tokens
// form characters). note: one sentence for the document naming how many were banned and
// where (e.g. "in every request"), empty when none.
struct TokenBan {
    std::vector<int32_t> tokens;
    std::string note;
};
TokenBan synthetic_token_ban(bool synthetic, const std::vector<int32_t>& non_utf8,
                             const std::string& where);

}  // namespace sb
