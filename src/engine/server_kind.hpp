#pragma once
// What stagebench knows of each kind of server behind HTTP, one ServerKind per kind, each in
// one place (engine/server_kind.cpp): how discovery recognises it, the quirks of its requests
// (vLLM's min_tokens, llama-server's cache_prompt and logit_bias), its tokenizer, and how its
// own timings become the server's claim (ServerTimings, core/doc/server_claim.hpp). HttpEngine
// asks the kind it found (engine/http_engine.cpp connect); nothing compares a kind's name.
//
// The entries marked (optional) have the default they state: a kind says only what differs.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/http_client.hpp"
#include "engine/wire_api.hpp"

namespace sb {

// A GET of the server during discovery: the response, or sb::Error(input) when it cannot be
// reached.
using ServerGet = std::function<HttpResponse(const std::string& path)>;

// What discovery learns of a server besides its kind.
struct DiscoveredServer {
    std::vector<std::string> models;                  // the model names it lists
    nlohmann::json about = nlohmann::json::object();  // what it says of itself
    std::optional<int64_t> n_vocab;                   // its vocabulary's size, as it claims
};

class ServerKind {
  public:
    virtual ~ServerKind() = default;

    // "llama-server", "vllm", "mlc-llm", "ollama", "openai-compatible": the engine's
    // caps().name and describe()'s "server".
    virtual const char* name() const = 0;
    // (optional) One of it in words, with its article, for messages: "an Ollama server".
    // Default: "an OpenAI-compatible server".
    virtual const char* described_as() const;

    // ---- discovery (HttpEngine::connect) ----
    // (optional) Recognises it from its /props answer (a JSON object) and keeps what that
    // says of the server in about. Default: not recognised.
    virtual bool recognises_props(const nlohmann::json& props, nlohmann::json& about) const;
    // (optional) Recognises it from the owned_by of a model /v1/models lists. Default: not.
    virtual bool owns_models(const std::string& owned_by) const;
    // (optional) A server reached only through a wire API of its own (Ollama) is found its own
    // way, with get: its facts, or sb::Error(input) when where is not one. false: found the
    // common way (/props, /v1/models). Default: false.
    virtual bool discover(const ServerGet& get, const std::string& where,
                          DiscoveredServer& facts) const;
    // What would have recognised it, for the error when a wire API of its own finds another
    // server: "no /props". Default: "".
    virtual const char* recognised_by() const;

    // ---- requests ----
    // (optional) The fields it takes beyond OpenAI's in /v1/completions and
    // /v1/chat/completions of n_gen tokens (vLLM: min_tokens; llama-server: no prompt cache,
    // timings per token). Default: none.
    virtual void openai_extras(nlohmann::json& body, int64_t n_gen) const;
    // (optional) Bans tokens from a generation's body (llama-server: logit_bias [[id, false]]).
    // Default: nothing is sent (a server that cannot ban them is asked nothing).
    virtual void ban_tokens(nlohmann::json& body, const std::vector<int32_t>& tokens) const;
    // Serves a request that names no model (llama-server: its one model). Default: false, the
    // first model it lists is named.
    virtual bool serves_unnamed_model() const;
    // (optional) The server stagebench starts for -m (scenario/llama_server.hpp): an API of its
    // own is spoken to it without --url. Default: false.
    virtual bool started_by_stagebench() const;
    // (optional) Its settings can be read (`explain` compares them with the bench's): /props
    // with default_generation_settings and a startup log as llama-server writes them
    // (scenario/explain_settings.hpp). Default: false.
    virtual bool reports_settings() const;
    // Its /tokenize is llama-server's ({"content", "add_special"}). Default: false, /tokenize
    // is probed in vLLM's form.
    virtual bool llama_tokenize() const;

    // ---- claims ----
    // ServerTimings::source of its timings ("llama-server", "mlc", "vllm", "ollama"); "" when
    // it sends none. Default: "".
    virtual const char* timings_source() const;
    // (optional) Its timings as they stand in the object of a message that carries them
    // (llama-server: timings{}; MLC: usage.extra{}; vLLM: metrics{}; Ollama: its final
    // message), each count and time read as a claim (engine/claim_fields.hpp); absent when it
    // holds none. Default: none.
    virtual std::optional<ServerTimings> timings(const nlohmann::json& at, ChunkInfo& ci) const;
    // (optional) Completes its timings at the end of a stream with the counts the stream's
    // usage claimed (vLLM's metrics time the tokens after the first). Default: as they are.
    virtual void complete_timings(ServerTimings& s, std::optional<int64_t> prompt_tokens,
                                  std::optional<int64_t> completion_tokens) const;
};

const ServerKind& llama_server_kind();
const ServerKind& vllm_kind();
const ServerKind& mlc_llm_kind();
const ServerKind& ollama_kind();
// Any other server that speaks OpenAI's API: no quirks, no timings.
const ServerKind& openai_compatible_kind();
// Every kind, the generic one last.
const std::vector<const ServerKind*>& server_kinds();
// The kind whose timings have that ServerTimings::source; nullptr for none.
const ServerKind* kind_of_timings(const std::string& source);

// llama-server's logit_bias that bans tokens: [[id, false], ...].
nlohmann::json banned_logit_bias(const std::vector<int32_t>& tokens);

// Reading a server's answers before the run (/props, /v1/models, /api/tags): the body as
// JSON, null when it is none or nests too deep (parse_server_json); a string field of obj,
// absent when missing, sb::Error(input) when obj is no object or the field no string (the
// server is not what the API promises: bad input like a wrong --url); a JSON value's type in
// words ("an array").
nlohmann::json parse_or_null(const std::string& body);
std::optional<std::string> server_string(const nlohmann::json& obj, const char* key,
                                         const std::string& where);
std::string json_type(const nlohmann::json& v);

}  // namespace sb
