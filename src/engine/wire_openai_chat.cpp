// openai-chat: OpenAI's /v1/chat/completions, streamed as server-sent events; the prompt is one
// user message of text (the server applies its chat template).
#include "engine/claim_fields.hpp"
#include "engine/wire_openai.hpp"

namespace sb {

using nlohmann::json;

namespace {

class OpenAiChat final : public WireApi {
  public:
    const char* name() const override { return "openai-chat"; }
    const char* help() const override { return "/v1/chat/completions"; }
    WireRequest request(const WireAsk& ask) const override {
        WireRequest r{"/v1/chat/completions", json::object()};
        r.body["messages"] = json::array({{{"role", "user"}, {"content", ask.prompt.text}}});
        add_openai_fields(r.body, ask);
        return r;
    }
    // choices[0].delta: content, reasoning (reasoning_content, reasoning) and tool calls are
    // output; content and tool calls are the answer's content.
    void read(const json& j, ChunkInfo& ci) const override {
        read_openai(j, ci, [](const json& c, ChunkInfo& ci) {
            const json delta = c.value("delta", json::object());
            const bool content = nonempty_string(delta, "content");
            const bool reasoning =
                nonempty_string(delta, "reasoning_content") || nonempty_string(delta, "reasoning");
            const bool tool = delta.is_object() && delta.contains("tool_calls") &&
                              delta["tool_calls"].is_array() && !delta["tool_calls"].empty();
            ci.output = content || reasoning || tool;
            ci.content = content || tool;
        });
    }
};

}  // namespace

const WireApi& openai_chat_api() {
    static const OpenAiChat api;
    return api;
}

}  // namespace sb
