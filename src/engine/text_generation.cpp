#include "engine/text_generation.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/utf8.hpp"
#include "engine/tokenizer_check.hpp"
#include "llama.h"

namespace sb {

namespace {

const llama_vocab* vocab_of(const LlamaEngine& e) {
    const llama_model* m = e.model_handle();
    if (!m)
        throw runtime_error("the engine has no model (load() first)");
    return llama_model_get_vocab(m);
}

// The text of one token (special tokens not rendered).
std::string piece_of(const llama_vocab* v, int32_t token) {
    char buf[128];
    int32_t n = llama_token_to_piece(v, token, buf, sizeof buf, 0, false);
    if (n >= 0)
        return std::string(buf, static_cast<size_t>(n));
    std::string big(static_cast<size_t>(-n), '\0');
    n = llama_token_to_piece(v, token, big.data(), static_cast<int32_t>(big.size()), 0, false);
    if (n < 0)
        throw runtime_error("llama.cpp could not detokenize token " + std::to_string(token));
    big.resize(static_cast<size_t>(n));
    return big;
}

std::vector<int32_t> non_utf8_of(const llama_vocab* v) {
    std::vector<int32_t> out;
    for (int32_t t = 0; t < llama_vocab_n_tokens(v); ++t) {
        const std::string p = piece_of(v, t);
        if (!p.empty() && !is_valid_utf8(p))
            out.push_back(t);
    }
    return out;
}

struct SamplerFree {
    void operator()(llama_sampler* s) const { llama_sampler_free(s); }
};

}  // namespace

nlohmann::json to_json(const SamplerSettings& s) {
    return nlohmann::json{{"chain", {"top_k", "top_p", "min_p", "temperature", "dist"}},
                          {"top_k", s.top_k},
                          {"top_p", s.top_p},
                          {"min_p", s.min_p},
                          {"temperature", s.temperature},
                          {"banned_tokens", s.banned.size()}};
}

ChatPrompter::ChatPrompter(const LlamaEngine& engine) : engine_(engine) {
    vocab_of(engine);  // a model is loaded
    // llama.cpp's tokenizer would end the process on such a vocabulary (an assertion).
    if (auto why = tokenizer_fault(engine.model_handle()))
        throw input_error("the model cannot be prompted with text: " + *why);
    const char* own = llama_model_chat_template(engine.model_handle(), nullptr);
    template_used_ = "the model's";
    if (own && *own) {
        template_ = own;
        // llama.cpp's C API knows a fixed list of templates (it recognises them by their
        // text); llama-server runs the rest through its Jinja engine. A template the C API
        // cannot apply is replaced by chatml, and the reader is told.
        llama_chat_message probe{"user", "x"};
        if (llama_chat_apply_template(template_.c_str(), &probe, 1, true, nullptr, 0) < 0) {
            template_ = "chatml";
            template_used_ =
                "chatml (llama.cpp's C API does not know the model's template; llama-server "
                "applies that one: the prompts may differ)";
        }
    } else {
        template_ = "chatml";
        template_used_ = "chatml (the model has none; llama-server falls back to it too)";
    }
}

std::string ChatPrompter::apply(const std::string& user_text) const {
    llama_chat_message msg{"user", user_text.c_str()};
    std::vector<char> buf(2 * user_text.size() + 256);
    int32_t n = llama_chat_apply_template(template_.c_str(), &msg, 1, true, buf.data(),
                                          static_cast<int32_t>(buf.size()));
    if (n > static_cast<int32_t>(buf.size())) {
        buf.resize(static_cast<size_t>(n));
        n = llama_chat_apply_template(template_.c_str(), &msg, 1, true, buf.data(),
                                      static_cast<int32_t>(buf.size()));
    }
    if (n < 0)
        throw runtime_error("llama.cpp could not apply the chat template");
    return std::string(buf.data(), static_cast<size_t>(n));
}

std::vector<int32_t> ChatPrompter::tokenize(const std::string& text) const {
    const llama_vocab* v = vocab_of(engine_);
    if (text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2))
        throw input_error("the prompt is too large to tokenize");
    const auto len = static_cast<int32_t>(text.size());
    std::vector<llama_token> out(static_cast<size_t>(len) + 2);
    int32_t n = llama_tokenize(v, text.data(), len, out.data(), static_cast<int32_t>(out.size()),
                               /*add_special=*/true, /*parse_special=*/true);
    if (n < 0) {  // -n tokens are needed
        out.resize(static_cast<size_t>(-n));
        n = llama_tokenize(v, text.data(), len, out.data(), static_cast<int32_t>(out.size()), true,
                           true);
    }
    if (n < 0)
        throw runtime_error("llama.cpp could not tokenize the prompt");
    out.resize(static_cast<size_t>(n));
    return {out.begin(), out.end()};
}

std::string ChatPrompter::piece(int32_t token) const {
    return piece_of(vocab_of(engine_), token);
}

std::vector<int32_t> ChatPrompter::non_utf8_tokens() const {
    return non_utf8_of(vocab_of(engine_));
}

std::vector<int32_t> non_utf8_tokens(const std::string& model_path) {
    std::vector<int32_t> out;
    with_llama_vocab(model_path,
                     [&](const llama_model* m) { out = non_utf8_of(llama_model_get_vocab(m)); });
    return out;
}

TokenBan synthetic_token_ban(bool synthetic, const std::vector<int32_t>& non_utf8,
                             const std::string& where) {
    TokenBan b;
    if (!synthetic || non_utf8.empty())
        return b;
    b.tokens = non_utf8;
    b.note = "the model is synthetic: the " + std::to_string(non_utf8.size()) +
             " tokens whose text is not UTF-8 on its own are never drawn " + where +
             ", since llama-server refuses a stream that carries one";
    return b;
}

TextGeneration generate_text(LlamaEngine& engine, const ChatPrompter& prompter,
                             const std::string& user_text, int n_gen, const SamplerSettings& s,
                             uint64_t seed) {
    if (n_gen < 1)
        throw usage_error("a generation needs at least one token");
    const llama_vocab* v = vocab_of(engine);
    const int32_t n_vocab = llama_vocab_n_tokens(v);
    // Made before the clock starts, as an application keeps its sampler between requests.
    std::unique_ptr<llama_sampler, SamplerFree> chain(
        llama_sampler_chain_init(llama_sampler_chain_default_params()));
    llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(s.top_k));
    llama_sampler_chain_add(chain.get(), llama_sampler_init_top_p(static_cast<float>(s.top_p), 1));
    llama_sampler_chain_add(chain.get(), llama_sampler_init_min_p(static_cast<float>(s.min_p), 1));
    llama_sampler_chain_add(chain.get(),
                            llama_sampler_init_temp(static_cast<float>(s.temperature)));
    llama_sampler_chain_add(chain.get(), llama_sampler_init_dist(static_cast<uint32_t>(seed)));
    std::vector<llama_token_data> cand(static_cast<size_t>(n_vocab));
    std::vector<bool> eog(static_cast<size_t>(n_vocab));
    for (int32_t t = 0; t < n_vocab; ++t)
        eog[static_cast<size_t>(t)] = llama_vocab_is_eog(v, t);
    for (int32_t t : s.banned)
        if (t >= 0 && t < n_vocab)
            eog[static_cast<size_t>(t)] = true;
    engine.reset();

    TextGeneration g;
    g.text.reserve(static_cast<size_t>(n_gen) * 8);
    // One token from the logits of the last evaluated position: the candidates as
    // common_sampler builds them (every token, its logit), end-of-generation and banned tokens
    // masked (llama-server's logit bias of -infinity).
    auto sample = [&]() {
        const std::span<const float> logits = engine.last_logits();
        for (int32_t t = 0; t < n_vocab; ++t)
            cand[static_cast<size_t>(t)] = {t,
                                            eog[static_cast<size_t>(t)]
                                                ? -std::numeric_limits<float>::infinity()
                                                : logits[static_cast<size_t>(t)],
                                            0.0f};
        llama_token_data_array arr{cand.data(), cand.size(), -1, false};
        llama_sampler_apply(chain.get(), &arr);
        if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size)
            throw runtime_error("the sampler chain selected no token");
        const llama_token tok = arr.data[arr.selected].id;
        llama_sampler_accept(chain.get(), tok);
        g.text += prompter.piece(tok);
        return tok;
    };

    g.start_ns = now_ns();
    const std::vector<int32_t> prompt = prompter.tokenize(prompter.apply(user_text));
    g.prompt_tokens = static_cast<int64_t>(prompt.size());
    engine.prefill(prompt);
    llama_token tok = sample();
    g.first_token_ns = now_ns();
    for (int i = 1; i < n_gen; ++i) {
        engine.decode_step(tok);
        tok = sample();
    }
    g.end_ns = now_ns();
    g.output_tokens = n_gen;
    return g;
}

namespace {

class LlamaTextGenerator final : public TextGenerator {
  public:
    Engine& engine() override { return engine_; }
    void load(const LoadSpec& spec) override {
        engine_.load(spec);
        if (!prompter_)
            prompter_.emplace(engine_);
    }
    void unload() override { engine_.unload(); }
    const std::string& template_used() const override { return prompter().template_used(); }
    std::string apply(const std::string& user_text) const override {
        return prompter().apply(user_text);
    }
    int64_t count(const std::string& user_text) const override {
        return prompter().count(user_text);
    }
    std::vector<int32_t> non_utf8_tokens() const override { return prompter().non_utf8_tokens(); }
    TextGeneration generate(const std::string& user_text, int n_gen, const SamplerSettings& s,
                            uint64_t seed) override {
        return generate_text(engine_, prompter(), user_text, n_gen, s, seed);
    }

  private:
    const ChatPrompter& prompter() const {
        if (!prompter_)
            throw runtime_error("the text generation's engine was never loaded");
        return *prompter_;
    }
    LlamaEngine engine_;
    std::optional<ChatPrompter> prompter_;  // after the first load (it reads the vocabulary)
};

}  // namespace

std::unique_ptr<TextGenerator> llama_text_generation() {
    return std::make_unique<LlamaTextGenerator>();
}

}  // namespace sb
