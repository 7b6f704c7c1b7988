#include "engine/wire_openai.hpp"

#include "engine/claim_fields.hpp"
#include "engine/server_kind.hpp"

namespace sb {

using nlohmann::json;

void add_openai_fields(json& body, const WireAsk& ask) {
    body["max_tokens"] = ask.n_gen;
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    body["temperature"] = 0.0;
    body["top_p"] = 1.0;
    body["seed"] = ask.seed;
    body["ignore_eos"] = true;
    ask.server.openai_extras(body, ask.n_gen);
}

void read_openai(const json& j, ChunkInfo& ci, void (*output)(const json& choice, ChunkInfo& ci)) {
    if (auto it = j.find("choices"); it != j.end() && it->is_array() && !it->empty()) {
        const json& c = (*it)[0];
        output(c, ci);
        if (auto t = c.find("token_ids"); t != c.end() && t->is_array())  // vLLM
            ci.tokens = static_cast<int64_t>(t->size());
        if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) {
            ci.final = true;
            ci.finish_reason = f->get<std::string>();
        }
    }
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
        ci.usage_prompt = count_field(*u, "prompt_tokens", "usage.", ci);
        ci.usage_completion = count_field(*u, "completion_tokens", "usage.", ci);
        ci.final = true;
        if (u->contains("extra"))
            ci.server = mlc_llm_kind().timings(u->at("extra"), ci);
    }
    if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
        ci.server = llama_server_kind().timings(*t, ci);
        // With timings_per_token, the running count of generated tokens.
        ci.cum_tokens = ci.server->predicted_n;
    }
    if (auto m = j.find("metrics"); m != j.end() && m->is_object())
        ci.server = vllm_kind().timings(*m, ci);
}

}  // namespace sb
