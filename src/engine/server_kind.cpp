#include "engine/server_kind.hpp"

#include <string>

#include "core/document.hpp"
#include "core/error.hpp"
#include "engine/claim_fields.hpp"

namespace sb {

using nlohmann::json;

// ---- the defaults ----------------------------------------------------------------------------

bool ServerKind::recognises_props(const json&, json&) const {
    return false;
}
bool ServerKind::owns_models(const std::string&) const {
    return false;
}
bool ServerKind::discover(const ServerGet&, const std::string&, DiscoveredServer&) const {
    return false;
}
const char* ServerKind::described_as() const {
    return "an OpenAI-compatible server";
}

bool ServerKind::started_by_stagebench() const {
    return false;
}

bool ServerKind::reports_settings() const {
    return false;
}

const char* ServerKind::recognised_by() const {
    return "";
}
void ServerKind::openai_extras(json&, int64_t) const {}
void ServerKind::ban_tokens(json&, const std::vector<int32_t>&) const {}
bool ServerKind::serves_unnamed_model() const {
    return false;
}
bool ServerKind::llama_tokenize() const {
    return false;
}
const char* ServerKind::timings_source() const {
    return "";
}
std::optional<ServerTimings> ServerKind::timings(const json&, ChunkInfo&) const {
    return std::nullopt;
}
void ServerKind::complete_timings(ServerTimings&, std::optional<int64_t>,
                                  std::optional<int64_t>) const {}

// ---- reading answers before the run ----------------------------------------------------------

std::string json_type(const json& v) {
    if (v.is_null())
        return "null";
    if (v.is_boolean())
        return "a boolean";
    if (v.is_number())
        return "a number";
    if (v.is_string())
        return "a string";
    return v.is_array() ? "an array" : "an object";
}

std::optional<std::string> server_string(const json& obj, const char* key,
                                         const std::string& where) {
    if (!obj.is_object())
        throw input_error(where + ": expected a JSON object, found " + json_type(obj));
    auto it = obj.find(key);
    if (it == obj.end())
        return std::nullopt;
    if (!it->is_string())
        throw input_error(where + ": \"" + key + "\" is " + json_type(*it) + ", not a string");
    return it->get<std::string>();
}

json parse_or_null(const std::string& body) {
    std::optional<json> j = parse_server_json(body);
    return j ? std::move(*j) : json(nullptr);
}

json banned_logit_bias(const std::vector<int32_t>& tokens) {
    json bias = json::array();
    for (int32_t t : tokens)
        bias.push_back(json::array({t, false}));
    return bias;
}

namespace {

// ---- llama-server ----------------------------------------------------------------------------

class LlamaServer final : public ServerKind {
  public:
    const char* name() const override { return "llama-server"; }
    const char* described_as() const override { return "a llama-server"; }
    // /props answers with its settings or its build.
    bool recognises_props(const json& p, json& about) const override {
        if (!p.contains("default_generation_settings") && !p.contains("build_info"))
            return false;
        for (const char* k : {"build_info", "model_path", "total_slots"})
            if (p.contains(k))
                about[k] = p.at(k);
        if (p.contains("default_generation_settings") &&
            p.at("default_generation_settings").contains("n_ctx"))
            about["n_ctx"] = p.at("default_generation_settings").at("n_ctx");
        return true;
    }
    bool owns_models(const std::string& owned_by) const override { return owned_by == "llamacpp"; }
    const char* recognised_by() const override { return "no /props"; }
    void openai_extras(json& body, int64_t) const override {
        body["cache_prompt"] = false;      // a cold prefill every time
        body["timings_per_token"] = true;  // exact tokens per chunk
    }
    void ban_tokens(json& body, const std::vector<int32_t>& tokens) const override {
        if (!tokens.empty())
            body["logit_bias"] = banned_logit_bias(tokens);
    }
    bool serves_unnamed_model() const override { return true; }
    bool started_by_stagebench() const override { return true; }
    bool reports_settings() const override { return true; }
    bool llama_tokenize() const override { return true; }
    const char* timings_source() const override { return "llama-server"; }
    // timings{prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n}.
    std::optional<ServerTimings> timings(const json& t, ChunkInfo& ci) const override {
        ServerTimings s;
        s.source = timings_source();
        s.prompt_n = count_field(t, "prompt_n", "timings.", ci);
        s.cache_n = count_field(t, "cache_n", "timings.", ci);
        s.predicted_n = count_field(t, "predicted_n", "timings.", ci);
        s.prompt_ns = duration_field(t, "prompt_ms", 1e6, "timings.", ci);
        s.predicted_ns = duration_field(t, "predicted_ms", 1e6, "timings.", ci);
        return s;
    }
};

// ---- vLLM ------------------------------------------------------------------------------------

class Vllm final : public ServerKind {
  public:
    const char* name() const override { return "vllm"; }
    const char* described_as() const override { return "a vLLM server"; }
    bool owns_models(const std::string& owned_by) const override { return owned_by == "vllm"; }
    // ignore_eos alone does not keep vLLM from stopping early.
    void openai_extras(json& body, int64_t n_gen) const override { body["min_tokens"] = n_gen; }
    const char* timings_source() const override { return "vllm"; }
    // metrics{first_scheduled_time, first_token_time, last_token_time, time_in_queue}
    // (seconds, wall clock).
    std::optional<ServerTimings> timings(const json& m, ChunkInfo& ci) const override {
        const auto sched = num_field(m, "first_scheduled_time");
        const auto first = num_field(m, "first_token_time");
        const auto last = num_field(m, "last_token_time");
        if (!first)
            return std::nullopt;
        ServerTimings s;
        s.source = timings_source();
        if (sched)
            s.prompt_ns = duration_ns(*first - *sched, 1e9,
                                      "metrics.first_token_time - first_scheduled_time", ci);
        if (last)
            s.predicted_ns =
                duration_ns(*last - *first, 1e9, "metrics.last_token_time - first_token_time", ci);
        s.queue_ns = duration_field(m, "time_in_queue", 1e9, "metrics.", ci);
        return s;
    }
    // Its metrics time the tokens after the first; usage fills in what they leave out.
    void complete_timings(ServerTimings& s, std::optional<int64_t> prompt_tokens,
                          std::optional<int64_t> completion_tokens) const override {
        if (!s.prompt_n)
            s.prompt_n = prompt_tokens;
        if (!s.predicted_n && completion_tokens && *completion_tokens >= 1)
            s.predicted_n = *completion_tokens - 1;
    }
};

// ---- MLC LLM ---------------------------------------------------------------------------------

class MlcLlm final : public ServerKind {
  public:
    const char* name() const override { return "mlc-llm"; }
    const char* described_as() const override { return "an MLC LLM server"; }
    bool owns_models(const std::string& owned_by) const override {
        return owned_by.find("MLC") != std::string::npos;
    }
    const char* timings_source() const override { return "mlc"; }
    // usage.extra{prefill_tokens, decode_tokens, prefill_tokens_per_s, decode_tokens_per_s,
    // ttft_s, ...}.
    std::optional<ServerTimings> timings(const json& extra, ChunkInfo& ci) const override {
        if (!extra.is_object())
            return std::nullopt;
        ServerTimings s;
        s.source = timings_source();
        s.prompt_n = count_field(extra, "prefill_tokens", "usage.extra.", ci);
        s.predicted_n = count_field(extra, "decode_tokens", "usage.extra.", ci);
        const auto pre_rate = num_field(extra, "prefill_tokens_per_s");
        const auto dec_rate = num_field(extra, "decode_tokens_per_s");
        if (s.prompt_n && pre_rate && *pre_rate > 0)
            s.prompt_ns = duration_ns(*s.prompt_n / *pre_rate, 1e9,
                                      "usage.extra.prefill_tokens / prefill_tokens_per_s", ci);
        else
            s.prompt_ns = duration_field(extra, "ttft_s", 1e9, "usage.extra.", ci);
        if (s.predicted_n && dec_rate && *dec_rate > 0)
            s.predicted_ns = duration_ns(*s.predicted_n / *dec_rate, 1e9,
                                         "usage.extra.decode_tokens / decode_tokens_per_s", ci);
        if (!s.prompt_ns && !s.predicted_ns)
            return std::nullopt;
        return s;
    }
};

// ---- Ollama ----------------------------------------------------------------------------------

class Ollama final : public ServerKind {
  public:
    const char* name() const override { return "ollama"; }
    const char* described_as() const override { return "an Ollama server"; }
    // /api/version, and the models of /api/tags.
    bool discover(const ServerGet& get, const std::string& where,
                  DiscoveredServer& facts) const override {
        HttpResponse v = get("/api/version");
        json vj = parse_or_null(v.body);
        if (v.status != 200 || !vj.is_object())
            throw input_error(where + " does not answer Ollama's /api/version (HTTP " +
                              std::to_string(v.status) + "); is it an Ollama server?");
        facts.about["version"] = server_string(vj, "version", where + "/api/version").value_or("");
        HttpResponse tags = get("/api/tags");
        json tj = parse_or_null(tags.body);
        if (tags.status == 200 && tj.is_object() && tj.contains("models")) {
            if (!tj["models"].is_array())
                throw input_error(where + "/api/tags: \"models\" is " + json_type(tj["models"]) +
                                  ", not an array");
            for (size_t i = 0; i < tj["models"].size(); ++i) {
                const std::string at = where + "/api/tags: models[" + std::to_string(i) + "]";
                if (auto name = server_string(tj["models"][i], "name", at))
                    facts.models.push_back(*name);
            }
        }
        return true;
    }
    const char* recognised_by() const override { return "no /api/version"; }
    const char* timings_source() const override { return "ollama"; }
    // Its final message: prompt_eval_duration, eval_duration, load_duration (ns), with the
    // counts its reader took as usage (prompt_eval_count, eval_count).
    std::optional<ServerTimings> timings(const json& done, ChunkInfo& ci) const override {
        ServerTimings s;
        s.source = timings_source();
        s.prompt_n = ci.usage_prompt;
        s.predicted_n = ci.usage_completion;
        s.prompt_ns = duration_field(done, "prompt_eval_duration", 1, "", ci);
        s.predicted_ns = duration_field(done, "eval_duration", 1, "", ci);
        s.load_ns = duration_field(done, "load_duration", 1, "", ci);
        return s;
    }
};

// ---- any other OpenAI-compatible server ------------------------------------------------------

class OpenAiCompatible final : public ServerKind {
  public:
    const char* name() const override { return "openai-compatible"; }
};

}  // namespace

const ServerKind& llama_server_kind() {
    static const LlamaServer k;
    return k;
}
const ServerKind& vllm_kind() {
    static const Vllm k;
    return k;
}
const ServerKind& mlc_llm_kind() {
    static const MlcLlm k;
    return k;
}
const ServerKind& ollama_kind() {
    static const Ollama k;
    return k;
}
const ServerKind& openai_compatible_kind() {
    static const OpenAiCompatible k;
    return k;
}

const std::vector<const ServerKind*>& server_kinds() {
    static const std::vector<const ServerKind*> all = {&llama_server_kind(), &vllm_kind(),
                                                       &mlc_llm_kind(), &ollama_kind(),
                                                       &openai_compatible_kind()};
    return all;
}

const ServerKind* kind_of_timings(const std::string& source) {
    for (const ServerKind* k : server_kinds())
        if (*k->timings_source() && source == k->timings_source())
            return k;
    return nullptr;
}

}  // namespace sb
