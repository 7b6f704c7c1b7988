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
#include "engine/claim_fields.hpp"
#include "engine/server_kind.hpp"

namespace sb {

using nlohmann::json;

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

}  // namespace

HttpEngine::HttpEngine(HttpEngineOptions o)
    : opts_(std::move(o)), wire_(&wire_api(opts_.api)), kind_(&openai_compatible_kind()) {
    opts_.url = normalise_url(opts_.url);
    client_ = std::make_unique<HttpClient>(opts_.url, opts_.timeouts);
}

HttpEngine::~HttpEngine() = default;

EngineCaps HttpEngine::caps() const {
    EngineCaps c;
    c.name = kind_->name();
    c.in_process = false;
    c.measures_whole_request = true;
    c.server = kind_;
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
    throw input_error(std::string(kind_->name()) +
                      " takes whole requests: no prefill stage of its own");
}

int64_t HttpEngine::decode_step(int32_t) {
    throw input_error(std::string(kind_->name()) +
                      " takes whole requests: no decode step of its own");
}

RequestMeasure HttpEngine::run_request(const RequestSpec& spec) {
    // The prompt is made (and sized with the server's tokenizer) before the clock starts.
    const HttpPrompt prompt = make_prompt(model_, spec.n_prompt, spec.prompt_seed);
    if (spec.on_send)
        spec.on_send();
    return request_measure(generate(model_, prompt, spec.n_gen, spec.seed, spec.on_first_output));
}

void HttpEngine::connect() {
    const std::string where = client_->url().base();
    const ServerGet get = [&](const std::string& path) {
        try {
            return client_->get(path);
        } catch (const Error& e) {
            // Ctrl-C cut the request: not the server's fault, and not bad input.
            if (interrupt_requested())
                throw;
            throw input_error(std::string(e.what()));
        }
    };
    DiscoveredServer facts;
    const ServerKind* own = wire_->own_server();
    if (own && own->discover(get, where, facts)) {
        kind_ = own;
    } else {
        kind_ = &discover_common(get, where, facts);
        if (own && kind_ != own)
            throw input_error(std::string("--api ") + wire_->name() + " needs " + own->name() +
                              "'s native API; " + where + " does not look like " + own->name() +
                              " (" + own->recognised_by() + ")");
    }
    models_ = std::move(facts.models);
    about_ = std::move(facts.about);
    n_vocab_ = facts.n_vocab;
    if (kind_->llama_tokenize())
        tokenizer_ = Tokenizer::llama;
}

// /props recognises some servers (llama-server), /v1/models lists the models and their owner
// recognises others (the first model's owner that one does).
const ServerKind& HttpEngine::discover_common(const ServerGet& get, const std::string& where,
                                              DiscoveredServer& facts) {
    const ServerKind* kind = &openai_compatible_kind();
    HttpResponse props = get("/props");
    json pj = parse_or_null(props.body);
    if (props.status == 200 && pj.is_object())
        for (const ServerKind* k : server_kinds())
            if (k->recognises_props(pj, facts.about)) {
                kind = k;
                break;
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
                facts.models.push_back(*id);
            // llama-server's meta.n_vocab: a claim that bounds /tokenize's ids (the first
            // model's, a whole number of tokens within int32).
            const json& nv = json_field(json_field(m, "meta"), "n_vocab");
            if (i == 0 && nv.is_number_integer() && nv.get<int64_t>() > 0 &&
                nv.get<int64_t>() <= std::numeric_limits<int32_t>::max())
                facts.n_vocab = nv.get<int64_t>();
            const std::string owner = server_string(m, "owned_by", at).value_or("");
            if (kind == &openai_compatible_kind())
                for (const ServerKind* k : server_kinds())
                    if (k->owns_models(owner)) {
                        kind = k;
                        break;
                    }
        }
    } else if (mr.status == 0 || props.status == 0) {
        throw input_error(where + " answered nothing on /v1/models");
    }
    return *kind;
}

json HttpEngine::describe() const {
    json j{{"url", opts_.url},
           {"api", http_api_name(opts_.api)},
           {"server", kind_->name()},
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
    if (!model.empty() || models_.empty() || kind_->serves_unnamed_model())
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
    if (tokenizer_ == Tokenizer::unknown && wire_->takes_token_ids())
        tokenize(model, "probe", true);  // learns whether a /tokenize exists
    const bool has_tokenizer = tokenizer_ == Tokenizer::llama || tokenizer_ == Tokenizer::vllm;

    // Token ids: exact, and accepted by /completion and by OpenAI's /v1/completions.
    if (has_tokenizer && wire_->takes_token_ids()) {
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

std::unique_ptr<GenerationStream> HttpEngine::start_generation(
    const std::string& model_in, const HttpPrompt& prompt, int64_t n_gen, uint64_t seed,
    const std::function<void()>& on_first_output) const {
    const std::string model = resolve_model(model_in);
    n_gen = std::max<int64_t>(1, n_gen);
    WireRequest r = wire_->request(WireAsk{prompt, n_gen, seed, *kind_});
    if (!model.empty())
        r.body["model"] = model;
    kind_->ban_tokens(r.body, opts_.banned_tokens);

    GenerationStream::Spec spec;
    spec.api = opts_.api;
    spec.where = client_->url().base() + r.path;
    spec.path = std::move(r.path);
    spec.body = std::move(r.body);
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

}  // namespace sb
