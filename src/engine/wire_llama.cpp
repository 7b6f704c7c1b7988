// llama: llama-server's native /completion, streamed as server-sent events; a prompt of token
// ids or text. Only llama-server speaks it.
#include "engine/claim_fields.hpp"
#include "engine/server_kind.hpp"
#include "engine/wire_api.hpp"

namespace sb {

using nlohmann::json;

namespace {

class LlamaCompletion final : public WireApi {
  public:
    const char* name() const override { return "llama"; }
    const char* help() const override { return "llama-server /completion"; }
    bool takes_token_ids() const override { return true; }
    const ServerKind* own_server() const override { return &llama_server_kind(); }
    WireRequest request(const WireAsk& ask) const override {
        const HttpPrompt& p = ask.prompt;
        return {"/completion",
                {{"prompt", p.tokens.empty() ? json(p.text) : json(p.tokens)},
                 {"n_predict", ask.n_gen},
                 {"stream", true},
                 {"cache_prompt", false},
                 {"ignore_eos", true},
                 {"temperature", 0.0},
                 {"top_k", 1},
                 {"seed", ask.seed}}};
    }
    // content and tokens (with tokens_predicted, the running count) until stop; the last
    // message has tokens_evaluated and tokens_predicted (usage) and timings{}.
    void read(const json& j, ChunkInfo& ci) const override {
        const bool stop = j.value("stop", false);
        const bool has_tokens =
            j.contains("tokens") && j["tokens"].is_array() && !j["tokens"].empty();
        if (!stop && (has_tokens || nonempty_string(j, "content"))) {
            ci.output = ci.content = true;
            if (has_tokens)
                ci.tokens = static_cast<int64_t>(j["tokens"].size());
            ci.cum_tokens = count_field(j, "tokens_predicted", "", ci);
        }
        if (stop) {
            ci.final = true;
            ci.finish_reason = j.value("stop_type", "stop");
            ci.usage_prompt = count_field(j, "tokens_evaluated", "", ci);
            ci.usage_completion = count_field(j, "tokens_predicted", "", ci);
            // A last message that still carries text (older servers) is output too.
            if (nonempty_string(j, "content")) {
                ci.output = ci.content = true;
                ci.cum_tokens = ci.usage_completion;
            }
        }
        if (auto t = j.find("timings"); t != j.end() && t->is_object())
            ci.server = llama_server_kind().timings(*t, ci);
    }
};

}  // namespace

const WireApi& llama_completion_api() {
    static const LlamaCompletion api;
    return api;
}

}  // namespace sb
