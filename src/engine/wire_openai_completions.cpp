// openai: OpenAI's /v1/completions, streamed as server-sent events; a prompt of token ids or
// text.
#include "engine/claim_fields.hpp"
#include "engine/wire_openai.hpp"

namespace sb {

using nlohmann::json;

namespace {

class OpenAiCompletions final : public WireApi {
  public:
    const char* name() const override { return "openai"; }
    const char* help() const override { return "/v1/completions"; }
    bool takes_token_ids() const override { return true; }
    WireRequest request(const WireAsk& ask) const override {
        WireRequest r{"/v1/completions", json::object()};
        r.body["prompt"] =
            ask.prompt.tokens.empty() ? json(ask.prompt.text) : json(ask.prompt.tokens);
        add_openai_fields(r.body, ask);
        return r;
    }
    // choices[0].text
    void read(const json& j, ChunkInfo& ci) const override {
        read_openai(j, ci, [](const json& c, ChunkInfo& ci) {
            ci.output = ci.content = nonempty_string(c, "text");
        });
    }
};

}  // namespace

const WireApi& openai_completions_api() {
    static const OpenAiCompletions api;
    return api;
}

}  // namespace sb
