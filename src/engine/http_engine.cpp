#include "engine/http_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"

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

// Everything a server says about counts and times is a claim (README "Bad input and
// faults"): read here only when it is a number of the right kind, bounded later by what was
// received (compute_timing, request_measure). A value that is no count or no duration at all
// (negative, fractional, beyond 2^53, absurdly long) is noted in ci.rejected, with the field
// and the value as sent, and read as absent.
constexpr double kMaxClaimValue = 9007199254740992.0;  // 2^53: exact in a JSON double
// No server time is longer than a day (the longest wait stagebench allows anywhere).
constexpr double kMaxClaimNs = 86400e9;

std::string claim_text(const json& v) {
    return v.is_string() ? "'" + utf8_prefix(valid_utf8(v.get<std::string>()), 40) + "'"
                         : utf8_prefix(dump_json(v), 40);
}

void reject(ChunkInfo& ci, const std::string& field, const json& v, const char* why) {
    if (ci.rejected.size() < 8)
        ci.rejected.push_back(field + " = " + claim_text(v) + " (" + why + ")");
}

// A token count: a whole number from 0 to 2^53. Absent when the field is.
std::optional<int64_t> count_field(const json& j, const char* key, const std::string& where,
                                   ChunkInfo& ci) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    const std::string field = where + key;
    if (!it->is_number()) {
        reject(ci, field, *it, "not a number");
        return std::nullopt;
    }
    const double v = it->get<double>();
    if (!(v >= 0) || v > kMaxClaimValue || v != std::floor(v)) {
        reject(ci, field, *it, "not a token count");
        return std::nullopt;
    }
    return static_cast<int64_t>(v);
}

std::optional<double> num_field(const json& j, const char* key) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || !it->is_number())
        return std::nullopt;
    return it->get<double>();
}

bool nonempty_string(const json& j, const char* key) {
    if (!j.is_object())
        return false;
    auto it = j.find(key);
    return it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

// A duration of v x scale ns: from 0 to a day. field names it in the note of a rejection.
std::optional<int64_t> duration_ns(std::optional<double> v, double scale, const std::string& field,
                                   ChunkInfo& ci) {
    if (!v)
        return std::nullopt;
    const double ns = *v * scale;
    if (!(ns >= 0) || ns > kMaxClaimNs) {
        reject(ci, field, json(*v), "not a duration");
        return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(ns));
}

// A duration field of j in units of scale ns; a field of another type is rejected.
std::optional<int64_t> duration_field(const json& j, const char* key, double scale,
                                      const std::string& where, ChunkInfo& ci) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    if (!it->is_number()) {
        reject(ci, where + key, *it, "not a number");
        return std::nullopt;
    }
    return duration_ns(it->get<double>(), scale, where + key, ci);
}

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

// ---- timing ----------------------------------------------------------------------------------

RequestTiming compute_timing(const Generation& g) {
    if (g.chunks.empty())
        throw runtime_error("the server streamed no tokens");
    RequestTiming t;
    t.n_chunks = static_cast<int64_t>(g.chunks.size());
    t.claimed_out = g.completion_tokens;
    for (const auto& r : g.rejected)
        t.notes.push_back("the server sent " + r + ": ignored");
    const int64_t bound = g.n_asked > 0 ? g.n_asked : kMaxClaimedTokens;
    const std::string asked = g.n_asked > 0 ? std::to_string(g.n_asked) + " asked for"
                                            : std::to_string(bound) + " at most";

    // Tokens per chunk as received: its token array, else one.
    std::vector<int64_t> k(g.chunks.size(), 1);
    bool any_array = false;
    for (size_t i = 0; i < g.chunks.size(); ++i)
        if (g.chunks[i].tokens) {
            k[i] = *g.chunks[i].tokens;
            any_array = true;
        }
    // The server's running counts split chunks into tokens, when they are believable.
    bool any_cum = false, cum_ok = true;
    int64_t prev_cum = 0, cum_last = 0;
    for (const auto& c : g.chunks) {
        if (!c.cum_tokens)
            continue;
        any_cum = true;
        if (*c.cum_tokens < prev_cum || *c.cum_tokens > bound)
            cum_ok = false;
        prev_cum = std::max(prev_cum, *c.cum_tokens);
        cum_last = *c.cum_tokens;
    }
    if (any_cum && cum_ok) {
        prev_cum = 0;
        for (size_t i = 0; i < g.chunks.size(); ++i) {
            const auto& c = g.chunks[i];
            if (c.cum_tokens) {
                k[i] = *c.cum_tokens - prev_cum;
                prev_cum = *c.cum_tokens;
            } else {
                prev_cum += k[i];
            }
        }
    } else if (any_cum) {
        t.notes.push_back("the server's running token counts (up to " + std::to_string(cum_last) +
                          ") decrease or exceed the tokens asked for (" + asked +
                          "): not believed, each chunk counted as it came");
    }
    const bool any_known = any_array || (any_cum && cum_ok);
    int64_t streamed = 0;
    for (auto x : k)
        streamed += x;

    // usage: believed when it lies between 1 and what was asked.
    std::optional<int64_t> usage = g.completion_tokens;
    if (usage && (*usage < 1 || *usage > bound)) {
        t.notes.push_back("the server claims " + std::to_string(*usage) +
                          " output tokens (usage) for a stream of " + std::to_string(streamed) +
                          " token(s) in " + std::to_string(g.chunks.size()) + " chunk(s), " +
                          asked + ": not believed, the stream's count is used");
        usage.reset();
    }
    if (!any_known && usage && *usage > streamed) {
        // Chunks that carry several tokens and say nothing about it (vLLM's stream interval,
        // merged UTF-8 pieces): spread what usage reports over the chunks after the first.
        int64_t extra = *usage - streamed;
        const size_t from = g.chunks.size() > 1 ? 1 : 0;
        const int64_t slots = static_cast<int64_t>(g.chunks.size() - from);
        for (size_t i = from; i < g.chunks.size(); ++i) {
            const int64_t idx = static_cast<int64_t>(i - from);
            k[i] += extra / slots + (idx < extra % slots ? 1 : 0);
        }
        t.notes.push_back("usage reports " + std::to_string(*usage) + " tokens in " +
                          std::to_string(g.chunks.size()) +
                          " streamed chunks: per-chunk token counts estimated");
        streamed = *usage;
    }
    t.n_streamed = streamed;
    t.n_out = usage.value_or(streamed);
    if (usage && *usage != streamed)
        t.notes.push_back("usage reports " + std::to_string(*usage) +
                          " output tokens, the stream carried " + std::to_string(streamed));

    std::optional<int64_t> first, last;
    int64_t prev = 0;
    for (size_t i = 0; i < g.chunks.size(); ++i) {
        const auto& c = g.chunks[i];
        if (c.content && !t.first_content_ns)
            t.first_content_ns = c.arrival_ns - g.start_ns;
        if (k[i] == 0)
            continue;
        if (!first) {
            first = c.arrival_ns;
        } else {
            // k tokens arrived together: their gap is split evenly, the rounding remainder
            // goes to the last one so the gaps add up to the observed time.
            const int64_t gap = c.arrival_ns - prev;
            const int64_t each = gap / k[i];
            for (int64_t j = 0; j < k[i]; ++j)
                t.itl_ns.push_back(j + 1 == k[i] ? gap - each * (k[i] - 1) : each);
        }
        prev = c.arrival_ns;
        last = c.arrival_ns;
    }
    if (!first)
        throw runtime_error("the server streamed no tokens");
    t.ttft_ns = *first - g.start_ns;
    t.e2e_ns = *last - g.start_ns;
    if (t.n_out >= 2 && t.e2e_ns > t.ttft_ns)
        t.tpot_ns = (t.e2e_ns - t.ttft_ns) / (t.n_out - 1);
    return t;
}

// ---- prompts -------------------------------------------------------------------------------

std::string prompt_words(uint64_t seed, int64_t n_words) {
    static const char* const kWords[] = {
        "time",     "people",  "water",  "world",    "school",  "family",  "system",  "program",
        "number",   "night",   "point",  "city",     "story",   "money",   "power",   "group",
        "mother",   "river",   "garden", "window",   "market",  "paper",   "music",   "friend",
        "morning",  "summer",  "winter", "mountain", "country", "machine", "letter",  "answer",
        "question", "light",   "table",  "street",   "animal",  "travel",  "simple",  "little",
        "green",    "yellow",  "quiet",  "early",    "happy",   "strong",  "bright",  "common",
        "open",     "small",   "large",  "young",    "clear",   "heavy",   "short",   "long",
        "walk",     "read",    "write",  "build",    "carry",   "follow",  "begin",   "listen",
        "measure",  "signal",  "energy", "memory",   "engine",  "bridge",  "forest",  "island",
        "ocean",    "planet",  "circle", "square",   "silver",  "golden",  "winter",  "harbor",
        "candle",   "pencil",  "ticket", "blanket",  "kitchen", "library", "village", "station",
        "doctor",   "teacher", "farmer", "painter",  "pilot",   "sailor",  "singer",  "writer"};
    constexpr size_t kN = sizeof kWords / sizeof kWords[0];
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::uniform_int_distribution<size_t> pick(0, kN - 1);
    std::string s;
    for (int64_t i = 0; i < n_words; ++i) {
        if (i)
            s += ' ';
        s += kWords[pick(rng)];
    }
    return s;
}

// ---- the engine ------------------------------------------------------------------------------

namespace {

std::string normalise_url(std::string url) {
    while (!url.empty() && url.back() == '/')
        url.pop_back();
    if (url.size() > 3 && url.compare(url.size() - 3, 3, "/v1") == 0)
        url.resize(url.size() - 3);
    return url;
}

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

// A string field of a server's answer before the run (/v1/models, /api/tags, /api/version):
// absent is nullopt; any other type means the server is not what the API promises, which is
// bad input like a wrong --url: sb::Error(input), one line.
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

// A body that is not JSON, or nests too deep to handle (parse_server_json), is null: what the
// callers say of a body that is no answer.
json parse_or_null(const std::string& body) {
    std::optional<json> j = parse_server_json(body);
    return j ? std::move(*j) : json(nullptr);
}

}  // namespace

HttpEngine::HttpEngine(HttpEngineOptions o) : opts_(std::move(o)) {
    opts_.url = normalise_url(opts_.url);
    client_ = std::make_unique<HttpClient>(opts_.url, opts_.timeouts);
}

HttpEngine::~HttpEngine() = default;

EngineCaps HttpEngine::caps() const {
    EngineCaps c;
    c.name = kind_;
    c.in_process = false;
    c.measures_whole_request = true;
    return c;
}

void HttpEngine::load(const LoadSpec& spec) {
    model_ = spec.model_path;
}

void HttpEngine::fill_to_depth(int n_depth, uint64_t) {
    if (n_depth > 0)
        throw input_error("a KV depth (-d) is not available with an engine behind HTTP");
}

StageTimes HttpEngine::prefill(std::span<const int32_t>) {
    throw input_error(kind_ + " takes whole requests: no prefill stage of its own");
}

int64_t HttpEngine::decode_step(int32_t) {
    throw input_error(kind_ + " takes whole requests: no decode step of its own");
}

RequestMeasure HttpEngine::run_request(const RequestSpec& spec) {
    // The prompt is made (and sized with the server's tokenizer) before the clock starts.
    const HttpPrompt prompt = make_prompt(model_, spec.n_prompt, spec.prompt_seed);
    if (spec.on_send)
        spec.on_send();
    return request_measure(generate(model_, prompt, spec.n_gen, spec.seed, spec.on_first_output));
}

namespace {

// Checks the server's timings of g against what the client saw and the bounds of a request
// (request_measure's contract): m.claim keeps them as said with every reason they fail,
// m.server the ones believed; each reason is also one of timing.notes.
void check_server_claim(const Generation& g, RequestMeasure& m) {
    ServerClaim claim{*g.server, {}};
    ServerTimings s = *g.server;
    const RequestTiming& t = m.timing;
    const std::string src = s.source.empty() ? "server" : s.source;
    auto refuse = [&](std::string why) {
        m.timing.notes.push_back(why);
        claim.disagreements.push_back(std::move(why));
    };
    const int64_t prompt_bound = g.prompt_asked > 0
                                     ? std::min(kMaxClaimedTokens, 4 * g.prompt_asked + 4096)
                                     : kMaxClaimedTokens;
    auto count = [&](std::optional<int64_t>& v, int64_t hi, const char* what) {
        if (v && *v > hi) {
            refuse("the " + src + " timings claim " + std::to_string(*v) + " " + what +
                   " tokens, more than " + std::to_string(hi) + ": not believed");
            v.reset();
        }
    };
    count(s.prompt_n, prompt_bound, "prompt");
    count(s.cache_n, prompt_bound, "cached prompt");
    count(s.predicted_n, g.n_asked > 0 ? g.n_asked : kMaxClaimedTokens, "generated");
    // Token counts the client counted otherwise: the output (usage when believed, else the
    // stream) and the prompt (usage, when believed). A server that reads a prompt partly from
    // its cache processes only the rest (prompt_n + cache_n = the prompt).
    if (s.predicted_n && *s.predicted_n != t.n_out) {
        refuse(fmt::format("the {} timings count {} generated tokens, the client {}: not believed",
                           src, *s.predicted_n, t.n_out));
        s.predicted_n.reset();
    }
    const std::optional<int64_t> prompt_seen = m.prompt_tokens;
    if (s.prompt_n && prompt_seen && *s.prompt_n + s.cache_n.value_or(0) != *prompt_seen) {
        refuse(fmt::format("the {} timings count {} prompt tokens{}, the client {}: not believed",
                           src, *s.prompt_n,
                           s.cache_n ? fmt::format(" and {} cached", *s.cache_n) : std::string(),
                           *prompt_seen));
        s.prompt_n.reset();
        s.cache_n.reset();
    }
    // Server time is spent within the request: no longer than the client saw it last (to the
    // end of the response, or at least to its last token; compute_timing has refused a stream
    // of none); the prompt is processed before the first token is sent (so within the client's
    // TTFT), prompt and generation before the last (within its E2E). The slack covers the
    // server's rounding and two clocks' rates (kServerClaimSlackNs).
    const int64_t last_ns =
        g.chunks.empty() ? g.end_ns : std::max(g.end_ns, g.chunks.back().arrival_ns);
    const int64_t seen_ns = std::max<int64_t>(0, last_ns - g.start_ns);
    auto time = [&](std::optional<int64_t>& v, const char* what) {
        if (v && *v > seen_ns) {
            refuse(
                fmt::format("the {} timings claim {:.3f} ms of {}, longer than the request's "
                            "{:.3f} ms: not believed",
                            src, *v / 1e6, what, seen_ns / 1e6));
            v.reset();
        }
    };
    time(s.prompt_ns, "prompt processing");
    time(s.predicted_ns, "generation");
    time(s.queue_ns, "queueing");
    time(s.load_ns, "model loading");
    if (s.prompt_ns && *s.prompt_ns > t.ttft_ns + server_claim_slack_ns(t.ttft_ns)) {
        refuse(
            fmt::format("the {} timings claim {:.3f} ms of prompt processing, longer than the "
                        "client's TTFT of {:.3f} ms: not believed",
                        src, *s.prompt_ns / 1e6, t.ttft_ns / 1e6));
        s.prompt_ns.reset();
    }
    if (s.prompt_ns && s.predicted_ns &&
        *s.prompt_ns + *s.predicted_ns > t.e2e_ns + server_claim_slack_ns(t.e2e_ns)) {
        refuse(
            fmt::format("the {} timings claim {:.3f} ms of prompt processing and generation "
                        "together, longer than the client's E2E of {:.3f} ms: not believed",
                        src, (*s.prompt_ns + *s.predicted_ns) / 1e6, t.e2e_ns / 1e6));
        s.prompt_ns.reset();
        s.predicted_ns.reset();
    }
    m.server = s;
    m.claim = std::move(claim);
}

}  // namespace

RequestMeasure request_measure(const Generation& g) {
    RequestMeasure m;
    m.start_ns = g.start_ns;
    m.timing = compute_timing(g);
    std::vector<std::string>& notes = m.timing.notes;
    // The prompt: what was sent, plus a chat template's tokens.
    const int64_t prompt_bound = g.prompt_asked > 0
                                     ? std::min(kMaxClaimedTokens, 4 * g.prompt_asked + 4096)
                                     : kMaxClaimedTokens;
    auto prompt_count = [&](std::optional<int64_t> v, const char* what) {
        if (v && (*v < 1 || *v > prompt_bound)) {
            notes.push_back("the server claims " + std::to_string(*v) + " prompt tokens (" + what +
                            ") for a prompt of " + std::to_string(g.prompt_asked) +
                            " token(s): not believed");
            v.reset();
        }
        return v;
    };
    m.prompt_tokens = prompt_count(g.prompt_tokens, "usage");
    if (g.server)
        check_server_claim(g, m);
    return m;
}

void HttpEngine::connect() {
    const std::string where = client_->url().base();
    auto get = [&](const std::string& path) {
        try {
            return client_->get(path);
        } catch (const Error& e) {
            // Ctrl-C cut the request: not the server's fault, and not bad input.
            if (interrupt_requested())
                throw;
            throw input_error(std::string(e.what()));
        }
    };
    if (opts_.api == HttpApi::ollama) {
        HttpResponse v = get("/api/version");
        json vj = parse_or_null(v.body);
        if (v.status != 200 || !vj.is_object())
            throw input_error(where + " does not answer Ollama's /api/version (HTTP " +
                              std::to_string(v.status) + "); is it an Ollama server?");
        kind_ = "ollama";
        about_["version"] = server_string(vj, "version", where + "/api/version").value_or("");
        HttpResponse tags = get("/api/tags");
        json tj = parse_or_null(tags.body);
        if (tags.status == 200 && tj.is_object() && tj.contains("models")) {
            if (!tj["models"].is_array())
                throw input_error(where + "/api/tags: \"models\" is " + json_type(tj["models"]) +
                                  ", not an array");
            for (size_t i = 0; i < tj["models"].size(); ++i) {
                const std::string at = where + "/api/tags: models[" + std::to_string(i) + "]";
                if (auto name = server_string(tj["models"][i], "name", at))
                    models_.push_back(*name);
            }
        }
        return;
    }
    HttpResponse props = get("/props");
    json pj = parse_or_null(props.body);
    if (props.status == 200 && pj.is_object() &&
        (pj.contains("default_generation_settings") || pj.contains("build_info"))) {
        kind_ = "llama-server";
        for (const char* k : {"build_info", "model_path", "total_slots"})
            if (pj.contains(k))
                about_[k] = pj[k];
        if (pj.contains("default_generation_settings") &&
            pj["default_generation_settings"].contains("n_ctx"))
            about_["n_ctx"] = pj["default_generation_settings"]["n_ctx"];
    }
    HttpResponse mr = get("/v1/models");
    json mj = parse_or_null(mr.body);
    if (mr.status == 200 && mj.is_object() && mj.contains("data") && !mj["data"].is_array())
        throw input_error(where + "/v1/models: \"data\" is " + json_type(mj["data"]) +
                          ", not an array");
    if (mr.status == 200 && mj.is_object() && mj["data"].is_array()) {
        for (size_t i = 0; i < mj["data"].size(); ++i) {
            const json& m = mj["data"][i];
            const std::string at = where + "/v1/models: data[" + std::to_string(i) + "]";
            if (auto id = server_string(m, "id", at))
                models_.push_back(*id);
            // llama-server's meta.n_vocab: a claim that bounds /tokenize's ids (the first
            // model's, a whole number of tokens within int32).
            const json& nv = json_field(json_field(m, "meta"), "n_vocab");
            if (i == 0 && nv.is_number_integer() && nv.get<int64_t>() > 0 &&
                nv.get<int64_t>() <= std::numeric_limits<int32_t>::max())
                n_vocab_ = nv.get<int64_t>();
            const std::string owner = server_string(m, "owned_by", at).value_or("");
            if (kind_ == "openai-compatible") {
                if (owner == "llamacpp")
                    kind_ = "llama-server";
                else if (owner == "vllm")
                    kind_ = "vllm";
                else if (owner.find("MLC") != std::string::npos)
                    kind_ = "mlc-llm";
            }
        }
    } else if (mr.status == 0 || props.status == 0) {
        throw input_error(where + " answered nothing on /v1/models");
    }
    if (opts_.api == HttpApi::llama && kind_ != "llama-server")
        throw input_error("--api llama needs llama-server's native API; " + where +
                          " does not look like llama-server (no /props)");
    if (kind_ == "llama-server")
        tokenizer_ = Tokenizer::llama;
}

json HttpEngine::describe() const {
    json j{{"url", opts_.url},
           {"api", http_api_name(opts_.api)},
           {"server", kind_},
           {"models", models_},
           {"connect_timeout_s", opts_.timeouts.connect_ms / 1000.0},
           {"read_timeout_s", opts_.timeouts.read_ms / 1000.0}};
    switch (tokenizer_) {
        case Tokenizer::llama:
        case Tokenizer::vllm:
            j["tokenizer"] = "/tokenize";
            break;
        default:
            j["tokenizer"] = nullptr;
    }
    j["about"] = about_;
    return j;
}

std::string HttpEngine::resolve_model(const std::string& model) const {
    if (!model.empty() || models_.empty() || kind_ == "llama-server")
        return model;
    return models_.front();
}

std::optional<std::vector<int32_t>> HttpEngine::tokenize(const std::string& model,
                                                         const std::string& text,
                                                         bool add_special) {
    if (tokenizer_ == Tokenizer::none)
        return std::nullopt;
    json body;
    if (tokenizer_ == Tokenizer::llama) {
        body = {{"content", text}, {"add_special", add_special}};
    } else {
        body = {{"prompt", text}, {"add_special_tokens", add_special}};
        const std::string m = resolve_model(model);
        if (!m.empty())
            body["model"] = m;
    }
    HttpResponse r = client_->post_json("/tokenize", body);
    json j = parse_or_null(r.body);
    if (r.status != 200 || !j.is_object() || !j["tokens"].is_array()) {
        if (tokenizer_ == Tokenizer::unknown) {
            tokenizer_ = Tokenizer::none;
            return std::nullopt;
        }
        throw runtime_error("/tokenize failed (HTTP " + std::to_string(r.status) +
                            "): " + error_message_of(r.body));
    }
    if (tokenizer_ == Tokenizer::unknown)
        tokenizer_ = Tokenizer::vllm;
    // Every id is a claim that is sent back as a prompt: a bad one fails the prompt, whole.
    std::vector<int32_t> out;
    for (const auto& t : j["tokens"]) {
        const auto id = claimed_token_id(t, n_vocab_);
        if (!id)
            throw runtime_error(
                "/tokenize of " + client_->url().base() + " returned " + claim_text(t) +
                ", not a token id (a whole number from 0" +
                (n_vocab_ ? " to " + std::to_string(*n_vocab_ - 1) + ", its vocabulary" : "") +
                ")");
        out.push_back(*id);
    }
    return out;
}

int64_t HttpEngine::probe_prompt_tokens(const std::string& model, const std::string& text) {
    HttpPrompt p;
    p.text = text;
    Generation g = generate(model, p, 1, 1);
    if (!g.prompt_tokens)
        throw runtime_error("cannot size prompts: " + client_->url().base() +
                            " reports no prompt token count (usage.prompt_tokens)");
    // A claim that sizes the prompts: a text of b bytes is at most b tokens, plus a chat
    // template's.
    const int64_t hi = 4 * static_cast<int64_t>(text.size()) + 4096;
    if (*g.prompt_tokens < 1 || *g.prompt_tokens > hi)
        throw runtime_error("cannot size prompts: " + client_->url().base() + " claims " +
                            std::to_string(*g.prompt_tokens) + " prompt tokens for a text of " +
                            std::to_string(text.size()) + " bytes");
    return *g.prompt_tokens;
}

HttpPrompt HttpEngine::make_prompt(const std::string& model, int64_t n, uint64_t seed) {
    if (n < 1)
        throw usage_error("a prompt needs at least one token");
    HttpPrompt p;
    p.n_tokens = n;
    if (tokenizer_ == Tokenizer::unknown && opts_.api != HttpApi::ollama &&
        opts_.api != HttpApi::openai_chat)
        tokenize(model, "probe", true);  // learns whether a /tokenize exists
    const bool has_tokenizer = tokenizer_ == Tokenizer::llama || tokenizer_ == Tokenizer::vllm;

    // Token ids: exact, and accepted by /completion and by OpenAI's /v1/completions.
    if (has_tokenizer && (opts_.api == HttpApi::openai || opts_.api == HttpApi::llama)) {
        for (int64_t words = n; words <= 64 * n + 64; words *= 2) {
            auto t = tokenize(model, prompt_words(seed, words), true);
            if (!t)
                break;
            if (static_cast<int64_t>(t->size()) >= n) {
                t->resize(static_cast<size_t>(n));
                p.tokens = std::move(*t);
                p.exact = true;
                return p;
            }
        }
        throw runtime_error("cannot build a prompt of " + std::to_string(n) +
                            " tokens with the server's tokenizer");
    }

    // Text: a number of words whose token count is as close to n as the server lets us see.
    std::function<int64_t(int64_t)> count;
    const std::string m = model;
    if (has_tokenizer) {
        // Chat on a server with a tokenizer: the text's tokens plus the chat template's,
        // measured once with a short request.
        if (!template_overhead_.count(m)) {
            const std::string probe = prompt_words(seed ^ 0x5bd1e995ULL, 8);
            auto t = tokenize(m, probe, false);
            const int64_t total = probe_prompt_tokens(m, probe);
            template_overhead_[m] = total - static_cast<int64_t>(t ? t->size() : 0);
        }
        count = [&, m](int64_t words) {
            auto t = tokenize(m, prompt_words(seed, words), false);
            return static_cast<int64_t>(t ? t->size() : 0) + template_overhead_[m];
        };
    } else {
        // No tokenizer: two short requests fit tokens = a + b x words (fresh words each, so
        // that no prefix cache shortens the count), and the words for n follow from it.
        if (!words_to_tokens_.count(m)) {
            const int64_t k1 = std::max<int64_t>(4, n / 4), k2 = std::max<int64_t>(k1 + 4, n);
            const double c1 =
                static_cast<double>(probe_prompt_tokens(m, prompt_words(seed ^ 0x1234567ULL, k1)));
            const double c2 =
                static_cast<double>(probe_prompt_tokens(m, prompt_words(seed ^ 0x7654321ULL, k2)));
            double b = (c2 - c1) / static_cast<double>(k2 - k1);
            if (!(b > 0))
                b = 1;
            words_to_tokens_[m] = {c1 - b * k1, b};
        }
        const auto [a, b] = words_to_tokens_[m];
        // The fit rests on the server's counts: at most the words the token-id path tries.
        const double fit = (n - a) / b;
        const int64_t words =
            std::isfinite(fit)
                ? std::clamp<int64_t>(std::llround(std::min(fit, 64.0 * n + 64)), 1, 64 * n + 64)
                : n;
        p.text = prompt_words(seed, words);
        return p;
    }
    int64_t words = n, best_words = n, best_diff = -1;
    std::vector<int64_t> tried;
    for (int iter = 0; iter < 16; ++iter) {
        const int64_t c = count(words);
        const int64_t diff = std::llabs(c - n);
        if (best_diff < 0 || diff < best_diff) {
            best_diff = diff;
            best_words = words;
        }
        if (diff == 0)
            break;
        tried.push_back(words);
        int64_t next = std::max<int64_t>(
            1, std::llround(static_cast<double>(words) * n / std::max<int64_t>(c, 1)));
        if (next == words)
            next = words + (c < n ? 1 : -1);
        if (next < 1 || std::find(tried.begin(), tried.end(), next) != tried.end()) {
            next = words + (c < n ? 1 : -1);
            if (next < 1 || std::find(tried.begin(), tried.end(), next) != tried.end())
                break;
        }
        // The counts are the server's: never more words than the token-id path tries.
        if (next > 64 * n + 64)
            break;
        words = next;
    }
    p.text = prompt_words(seed, best_words);
    p.exact = best_diff == 0;
    return p;
}

std::optional<int32_t> claimed_token_id(const json& v, std::optional<int64_t> n_vocab) {
    const json& id = v.is_object() ? json_field(v, "id") : v;
    int64_t limit = std::numeric_limits<int32_t>::max();
    if (n_vocab && *n_vocab > 0)
        limit = std::min(limit, *n_vocab - 1);
    if (id.is_number_unsigned()) {
        const auto u = id.get<uint64_t>();
        if (u <= static_cast<uint64_t>(limit))
            return static_cast<int32_t>(u);
    } else if (id.is_number_integer()) {
        const auto i = id.get<int64_t>();
        if (i >= 0 && i <= limit)
            return static_cast<int32_t>(i);
    }
    return std::nullopt;
}

json banned_logit_bias(const std::vector<int32_t>& tokens) {
    json bias = json::array();
    for (int32_t t : tokens)
        bias.push_back(json::array({t, false}));
    return bias;
}

std::unique_ptr<GenerationStream> HttpEngine::start_generation(
    const std::string& model_in, const HttpPrompt& prompt, int64_t n_gen, uint64_t seed,
    const std::function<void()>& on_first_output) const {
    const std::string model = resolve_model(model_in);
    n_gen = std::max<int64_t>(1, n_gen);
    const bool llama = kind_ == "llama-server";
    json body;
    std::string path;
    json prompt_value = prompt.tokens.empty() ? json(prompt.text) : json(prompt.tokens);
    switch (opts_.api) {
        case HttpApi::openai:
        case HttpApi::openai_chat:
            if (opts_.api == HttpApi::openai) {
                path = "/v1/completions";
                body["prompt"] = prompt_value;
            } else {
                path = "/v1/chat/completions";
                body["messages"] = json::array({{{"role", "user"}, {"content", prompt.text}}});
            }
            body["max_tokens"] = n_gen;
            body["stream"] = true;
            body["stream_options"] = {{"include_usage", true}};
            body["temperature"] = 0.0;
            body["top_p"] = 1.0;
            body["seed"] = seed;
            body["ignore_eos"] = true;
            if (kind_ == "vllm")
                body["min_tokens"] = n_gen;
            if (llama) {
                body["cache_prompt"] = false;      // a cold prefill every time
                body["timings_per_token"] = true;  // exact tokens per chunk
            }
            break;
        case HttpApi::llama:
            path = "/completion";
            body = {{"prompt", prompt_value},
                    {"n_predict", n_gen},
                    {"stream", true},
                    {"cache_prompt", false},
                    {"ignore_eos", true},
                    {"temperature", 0.0},
                    {"top_k", 1},
                    {"seed", seed}};
            break;
        case HttpApi::ollama: {
            path = "/api/generate";
            json options = {
                {"num_predict", n_gen}, {"temperature", 0.0}, {"top_k", 1}, {"seed", seed}};
            const int64_t ctx = prompt.n_tokens + n_gen + 64;
            if (ctx > 2048)
                options["num_ctx"] = ctx;
            body = {{"prompt", prompt.text}, {"raw", true}, {"stream", true}, {"options", options}};
            break;
        }
    }
    if (!model.empty())
        body["model"] = model;
    if (llama && !opts_.banned_tokens.empty())
        body["logit_bias"] = banned_logit_bias(opts_.banned_tokens);

    GenerationStream::Spec spec;
    spec.api = opts_.api;
    spec.where = client_->url().base() + path;
    spec.path = std::move(path);
    spec.body = std::move(body);
    spec.n_gen = n_gen;
    spec.n_prompt = prompt.n_tokens;
    spec.read_ms = opts_.timeouts.read_ms;
    spec.on_first_output = on_first_output;
    return std::make_unique<GenerationStream>(std::move(spec));
}

Generation HttpEngine::generate(const std::string& model, const HttpPrompt& prompt, int64_t n_gen,
                                uint64_t seed, const std::function<void()>& on_first_output) {
    auto s = start_generation(model, prompt, n_gen, seed, on_first_output);
    const StreamOutcome o = client_->post_stream(
        s->path(), s->body(), [&](std::string_view b, int64_t t) { return s->on_bytes(b, t); });
    return s->finish(o);
}

// Progress is a message that carries output or ends the stream: the client restarts its
// silence clock on any byte, so a server that trickles bytes (or sends only keep-alive
// comments) is caught here, --timeout after its last token. A server that never stops
// sending tokens is caught by their count. So every stream ends in bounded time.
GenerationStream::GenerationStream(Spec spec)
    : s_(std::move(spec)), max_messages_(4 * s_.n_gen + 64), last_progress_ns_(now_ns()) {}

// Runs inside libcurl's callback: nothing may throw through it.
bool GenerationStream::handle(const StreamMessage& m) {
    try {
        ChunkInfo ci = interpret_message(s_.api, m);
        if (ci.error) {
            stream_error_ = "the server reported an error in the stream: " + *ci.error;
            return false;
        }
        if (ci.output || ci.final) {
            last_progress_ns_ = m.arrival_ns;
            bytes_since_progress_ = 0;
            if (++n_progress_ > max_messages_) {
                stream_error_ = "the server streamed more than " + std::to_string(max_messages_) +
                                " messages for " + std::to_string(s_.n_gen) + " token(s)";
                return false;
            }
        }
        if (ci.output) {
            g_.chunks.push_back({m.arrival_ns, ci.content, ci.tokens, ci.cum_tokens});
            if (first_) {
                first_ = false;
                if (s_.on_first_output)
                    s_.on_first_output();
            }
        }
        for (auto& r : ci.rejected)
            if (g_.rejected.size() < 8 &&
                std::find(g_.rejected.begin(), g_.rejected.end(), r) == g_.rejected.end())
                g_.rejected.push_back(std::move(r));
        if (ci.usage_prompt)
            g_.prompt_tokens = ci.usage_prompt;
        if (ci.usage_completion)
            g_.completion_tokens = ci.usage_completion;
        if (ci.server)
            g_.server = ci.server;
        if (!ci.finish_reason.empty())
            g_.finish_reason = ci.finish_reason;
        if (ci.id && !g_.request_id)
            g_.request_id = ci.id;
        saw_final_ |= ci.final;
        return true;
    } catch (const std::exception& e) {
        stream_error_ = e.what();
        return false;
    }
}

bool GenerationStream::on_bytes(std::string_view bytes, int64_t t) {
    if (!g_.first_byte_ns && !bytes.empty())
        g_.first_byte_ns = t;
    msgs_.clear();
    if (s_.api == HttpApi::ollama)
        nd_.feed(bytes, t, msgs_);
    else
        sse_.feed(bytes, t, msgs_);
    const int64_t before = n_progress_;
    for (const auto& m : msgs_)
        if (!handle(m))
            return false;
    if (n_progress_ == before)
        bytes_since_progress_ += static_cast<int64_t>(bytes.size());
    if (t - last_progress_ns_ > s_.read_ms * 1'000'000) {
        char limit[32];
        std::snprintf(limit, sizeof limit, "%g", s_.read_ms / 1000.0);
        stream_error_ = std::string("no token for ") + limit +
                        " s though the server kept sending (" +
                        std::to_string(bytes_since_progress_) +
                        " byte(s) without a complete message; --timeout)";
        return false;
    }
    return true;
}

Generation GenerationStream::finish(const StreamOutcome& o) {
    Generation& g = g_;
    g.start_ns = o.start_ns;
    g.end_ns = now_ns();
    g.n_asked = s_.n_gen;
    g.prompt_asked = s_.n_prompt;
    if (!stream_error_ && o.complete) {
        msgs_.clear();
        if (s_.api == HttpApi::ollama)
            nd_.finish(g.end_ns, msgs_);
        else
            sse_.finish(g.end_ns, msgs_);
        for (const auto& m : msgs_)
            if (!handle(m))
                break;
    }
    const std::string& where = s_.where;
    const std::string progress =
        g.chunks.empty() ? "" : " after " + std::to_string(g.chunks.size()) + " streamed chunk(s)";
    if (stream_error_)
        throw runtime_error(*stream_error_ + " (" + where + progress + ")");
    if (o.status >= 300 || (o.status > 0 && o.status < 200))
        throw runtime_error("HTTP " + std::to_string(o.status) + " from " + where + ": " +
                            error_message_of(o.error_body));
    if (o.error)
        throw runtime_error(*o.error + progress);
    if (!saw_final_)
        throw runtime_error("the stream from " + where +
                            " ended before the server's final message" + progress);
    if (g.chunks.empty()) {
        // Seen on llama-server with the tiny random model: it generated every token asked for
        // but streamed only its final message, because it holds back text that ends in an
        // incomplete UTF-8 character and the model kept emitting a byte token (<0xCD>) that
        // never completed one. Nothing reached the client, so there is no first-token time;
        // vLLM's serving benchmark fails such a request too. The line says why.
        if (g.completion_tokens && *g.completion_tokens > 0)
            throw runtime_error(
                "the server streamed no tokens, though its final message claims " +
                std::to_string(*g.completion_tokens) +
                " generated (usage): none of their text reached the stream (llama-server holds "
                "back text that ends in an incomplete UTF-8 character) (" +
                where + ")");
        throw runtime_error("the server streamed no tokens (" + where + ")");
    }
    // vLLM's metrics time the tokens after the first; usage fills in what it leaves out.
    if (g.server && g.server->source == "vllm") {
        if (!g.server->prompt_n)
            g.server->prompt_n = g.prompt_tokens;
        if (!g.server->predicted_n && g.completion_tokens && *g.completion_tokens >= 1)
            g.server->predicted_n = *g.completion_tokens - 1;
    }
    return std::move(g_);
}

}  // namespace sb
