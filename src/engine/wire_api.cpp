#include "engine/wire_api.hpp"

#include <nlohmann/json.hpp>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"
#include "engine/claim_fields.hpp"

namespace sb {

using nlohmann::json;

HttpApi parse_http_api(const std::string& name) {
    if (name == "openai")
        return HttpApi::openai;
    if (name == "openai-chat")
        return HttpApi::openai_chat;
    if (name == "llama")
        return HttpApi::llama;
    if (name == "ollama")
        return HttpApi::ollama;
    throw usage_error("--api must be openai, openai-chat, llama or ollama, not '" + name + "'");
}

const char* http_api_name(HttpApi api) {
    switch (api) {
        case HttpApi::openai:
            return "openai";
        case HttpApi::openai_chat:
            return "openai-chat";
        case HttpApi::llama:
            return "llama";
        case HttpApi::ollama:
            return "ollama";
    }
    return "?";
}

// ---- reading streamed messages ------------------------------------------------------------

namespace {

// llama-server: timings{prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n}.
ServerTimings llama_timings(const json& t, ChunkInfo& ci) {
    ServerTimings s;
    s.source = "llama-server";
    s.prompt_n = count_field(t, "prompt_n", "timings.", ci);
    s.cache_n = count_field(t, "cache_n", "timings.", ci);
    s.predicted_n = count_field(t, "predicted_n", "timings.", ci);
    s.prompt_ns = duration_field(t, "prompt_ms", 1e6, "timings.", ci);
    s.predicted_ns = duration_field(t, "predicted_ms", 1e6, "timings.", ci);
    return s;
}

// MLC LLM: usage.extra{prefill_tokens, decode_tokens, prefill_tokens_per_s,
// decode_tokens_per_s, ttft_s, ...}.
std::optional<ServerTimings> mlc_timings(const json& extra, ChunkInfo& ci) {
    if (!extra.is_object())
        return std::nullopt;
    ServerTimings s;
    s.source = "mlc";
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

// vLLM: metrics{first_scheduled_time, first_token_time, last_token_time, time_in_queue}
// (seconds, wall clock).
std::optional<ServerTimings> vllm_timings(const json& m, ChunkInfo& ci) {
    const auto sched = num_field(m, "first_scheduled_time");
    const auto first = num_field(m, "first_token_time");
    const auto last = num_field(m, "last_token_time");
    if (!first)
        return std::nullopt;
    ServerTimings s;
    s.source = "vllm";
    if (sched)
        s.prompt_ns = duration_ns(*first - *sched, 1e9,
                                  "metrics.first_token_time - first_scheduled_time", ci);
    if (last)
        s.predicted_ns =
            duration_ns(*last - *first, 1e9, "metrics.last_token_time - first_token_time", ci);
    s.queue_ns = duration_field(m, "time_in_queue", 1e9, "metrics.", ci);
    return s;
}

// Stream text quoted in an error: valid UTF-8 (the bytes are the server's), one line.
std::string shorten(const std::string& s, size_t n = 80) {
    std::string o = valid_utf8(s);
    if (o.size() > n)
        o = utf8_prefix(o, n) + "...";
    for (char& c : o)
        if (c == '\n' || c == '\r')
            c = ' ';
    return o;
}

std::string error_text(const json& e) {
    if (e.is_string())
        return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
    return dump_json(e);
}

void read_openai(const json& j, bool chat, ChunkInfo& ci) {
    if (auto it = j.find("choices"); it != j.end() && it->is_array() && !it->empty()) {
        const json& c = (*it)[0];
        if (chat) {
            const json delta = c.value("delta", json::object());
            const bool content = nonempty_string(delta, "content");
            const bool reasoning =
                nonempty_string(delta, "reasoning_content") || nonempty_string(delta, "reasoning");
            const bool tool = delta.is_object() && delta.contains("tool_calls") &&
                              delta["tool_calls"].is_array() && !delta["tool_calls"].empty();
            ci.output = content || reasoning || tool;
            ci.content = content || tool;
        } else {
            ci.output = ci.content = nonempty_string(c, "text");
        }
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
            ci.server = mlc_timings((*u)["extra"], ci);
    }
    if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
        ci.server = llama_timings(*t, ci);
        ci.cum_tokens = ci.server->predicted_n;
    }
    if (auto m = j.find("metrics"); m != j.end() && m->is_object())
        ci.server = vllm_timings(*m, ci);
}

void read_llama(const json& j, ChunkInfo& ci) {
    const bool stop = j.value("stop", false);
    const bool has_tokens = j.contains("tokens") && j["tokens"].is_array() && !j["tokens"].empty();
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
        ci.server = llama_timings(*t, ci);
}

void read_ollama(const json& j, ChunkInfo& ci) {
    const bool response = nonempty_string(j, "response");
    ci.output = response || nonempty_string(j, "thinking");
    ci.content = response;
    if (j.value("done", false)) {
        ci.final = true;
        ci.finish_reason = j.value("done_reason", "stop");
        ci.usage_prompt = count_field(j, "prompt_eval_count", "", ci);
        ci.usage_completion = count_field(j, "eval_count", "", ci);
        ServerTimings s;
        s.source = "ollama";
        s.prompt_n = ci.usage_prompt;
        s.predicted_n = ci.usage_completion;
        s.prompt_ns = duration_field(j, "prompt_eval_duration", 1, "", ci);
        s.predicted_ns = duration_field(j, "eval_duration", 1, "", ci);
        s.load_ns = duration_field(j, "load_duration", 1, "", ci);
        ci.server = s;
    }
}

}  // namespace

ChunkInfo interpret_message(HttpApi api, const StreamMessage& m) {
    ChunkInfo ci;
    if (m.data == "[DONE]") {
        ci.done_marker = true;
        ci.final = true;
        return ci;
    }
    bool too_deep = false;
    std::optional<json> parsed = parse_server_json(m.data, &too_deep);
    if (!parsed) {
        const std::string what = too_deep ? "malformed message in the stream (nested more than " +
                                                std::to_string(kMaxDocumentDepth) + " deep)"
                                          : std::string("malformed JSON in the stream");
        throw runtime_error(what + ": '" + shorten(m.data) + "'");
    }
    json j = std::move(*parsed);
    if (!j.is_object())
        throw runtime_error("malformed message in the stream (not a JSON object): '" +
                            shorten(m.data) + "'");
    if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
        ci.error = error_text(*e);
        return ci;
    }
    if (m.event == "error") {
        ci.error = shorten(m.data, 200);
        return ci;
    }
    try {
        switch (api) {
            case HttpApi::openai:
                read_openai(j, false, ci);
                break;
            case HttpApi::openai_chat:
                read_openai(j, true, ci);
                break;
            case HttpApi::llama:
                read_llama(j, ci);
                break;
            case HttpApi::ollama:
                read_ollama(j, ci);
                break;
        }
    } catch (const json::exception&) {
        // A field of the wrong type ("done": "yes"): the request fails, the test records it.
        throw runtime_error("malformed message in the stream (a field of the wrong type): '" +
                            shorten(m.data) + "'");
    }
    if (auto id = j.find("id"); id != j.end() && id->is_string() && !id->empty())
        ci.id = utf8_prefix(valid_utf8(id->get_ref<const std::string&>()), 128);
    return ci;
}

}  // namespace sb
