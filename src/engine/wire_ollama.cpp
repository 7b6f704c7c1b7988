// ollama: Ollama's native /api/generate, streamed as one JSON object per line; the prompt is
// raw text. Only Ollama speaks it.
#include "engine/claim_fields.hpp"
#include "engine/server_kind.hpp"
#include "engine/wire_api.hpp"

namespace sb {

using nlohmann::json;

namespace {

class OllamaGenerate final : public WireApi {
  public:
    const char* name() const override { return "ollama"; }
    const char* help() const override { return "/api/generate"; }
    Framing framing() const override { return Framing::ndjson; }
    const ServerKind* own_server() const override { return &ollama_kind(); }
    bool needs_model_name() const override { return true; }
    WireRequest request(const WireAsk& ask) const override {
        json options = {
            {"num_predict", ask.n_gen}, {"temperature", 0.0}, {"top_k", 1}, {"seed", ask.seed}};
        // Its default context (2048) would cut a longer prompt.
        const int64_t ctx = ask.prompt.n_tokens + ask.n_gen + 64;
        if (ctx > 2048)
            options["num_ctx"] = ctx;
        return {
            "/api/generate",
            {{"prompt", ask.prompt.text}, {"raw", true}, {"stream", true}, {"options", options}}};
    }
    // response (content) or thinking until done; the last message has prompt_eval_count and
    // eval_count (usage) and Ollama's timings.
    void read(const json& j, ChunkInfo& ci) const override {
        const bool response = nonempty_string(j, "response");
        ci.output = response || nonempty_string(j, "thinking");
        ci.content = response;
        if (j.value("done", false)) {
            ci.final = true;
            ci.finish_reason = j.value("done_reason", "stop");
            ci.usage_prompt = count_field(j, "prompt_eval_count", "", ci);
            ci.usage_completion = count_field(j, "eval_count", "", ci);
            ci.server = ollama_kind().timings(j, ci);
        }
    }
};

}  // namespace

const WireApi& ollama_generate_api() {
    static const OllamaGenerate api;
    return api;
}

}  // namespace sb
