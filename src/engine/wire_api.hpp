#pragma once
// The wire APIs a server is spoken to in (--api): one WireApi per API, each in a file of its own
// (engine/wire_*.cpp), listed once in the registry (engine/wire_apis.cpp) that --api, --help and
// parse_http_api read. A wire API makes the request of one streamed generation (path and body)
// and reads each streamed message into a ChunkInfo: output or not, content or reasoning, token
// counts, the final message, usage, errors. Every count and time a message carries is the
// server's claim (engine/claim_fields.hpp). What differs between the servers that speak an API
// is their ServerKind's (engine/server_kind.hpp).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/http_client.hpp"

namespace sb {

class ServerKind;

// A wire API: its place in the registry (wire_apis()). The enumerators name the APIs code
// refers to by name, in the registry's order (wire_api_test checks it): openai:
// /v1/completions (SSE); openai-chat: /v1/chat/completions (SSE); llama: llama-server's native
// /completion (SSE); ollama: Ollama's native /api/generate (NDJSON). An API added to the
// registry alone is reached by its name (parse_http_api).
enum class HttpApi : uint8_t { openai, openai_chat, llama, ollama };

// Throws sb::Error(usage) for an unknown name: "--api must be openai, openai-chat, llama or
// ollama, not 'grpc'".
HttpApi parse_http_api(const std::string& name);
const char* http_api_name(HttpApi api);
// Every API's name, in the registry's order (--api's choices).
std::vector<std::string> http_api_names();
// --api's help: "openai (/v1/completions), openai-chat (/v1/chat/completions), ...".
std::string http_api_help();

// What one streamed message says, whatever the API.
struct ChunkInfo {
    bool output = false;   // carries generated output: text, reasoning, a tool call or a token
    bool content = false;  // carries answer content (not reasoning)
    std::optional<int64_t> tokens;      // tokens it carries, when the server says
    std::optional<int64_t> cum_tokens;  // tokens generated so far, when the server says
    bool final = false;                 // the server's last message (finish, usage, done, stop)
    bool done_marker = false;           // "data: [DONE]"
    std::optional<int64_t> usage_prompt, usage_completion;
    std::optional<ServerTimings> server;
    std::optional<std::string> error;  // an error the server reported inside the stream
    std::string finish_reason;
    // The server's id of the request ("id" of an OpenAI-style message, at most 128 bytes of
    // it), when it sends one: what joins a record with the server's logs. A claim.
    std::optional<std::string> id;
    // Counts and times of the message that are no count or no duration (negative,
    // fractional, beyond 2^53, longer than a day, of another type): "usage.completion_tokens =
    // -3 (not a token count)". Read as absent.
    std::vector<std::string> rejected;
};

// A prompt made before the clock starts.
struct HttpPrompt {
    std::vector<int32_t> tokens;  // sent as token ids when non-empty: exactly n_tokens long
    std::string text;             // sent as text otherwise
    int64_t n_tokens = 0;         // the length the server should count
    bool exact = false;           // verified with the server's tokenizer
};

// How a response's messages are framed: server-sent events ("data: ..." lines) or one JSON
// object per line.
enum class Framing { sse, ndjson };

// One streamed generation asked of a server: n_gen tokens (>= 1) of prompt, greedy, with seed.
struct WireAsk {
    const HttpPrompt& prompt;
    int64_t n_gen = 1;
    uint64_t seed = 0;
    const ServerKind& server;  // the server it goes to: its extras (ServerKind::openai_extras)
};

// A request: POST path with body (JSON).
struct WireRequest {
    std::string path;
    nlohmann::json body;
};

class WireApi {
  public:
    virtual ~WireApi() = default;
    // Its --api name ("openai-chat") and what --help says it reaches ("/v1/chat/completions").
    virtual const char* name() const = 0;
    virtual const char* help() const = 0;
    // (optional) How its responses are framed. Default: SSE.
    virtual Framing framing() const;
    // (optional) It takes a prompt as token ids (/v1/completions, /completion): the prompts are
    // then made exact with the server's tokenizer, which is probed for. Default: text only.
    virtual bool takes_token_ids() const;
    // (optional) The server whose own API this is (llama: llama-server; ollama: Ollama):
    // connect() finds it in its way (ServerKind::discover) and refuses any other server with
    // sb::Error(input). Default: nullptr, any server.
    virtual const ServerKind* own_server() const;
    // (optional) Every request names its model (Ollama's /api/generate, whose models are
    // tags): a server that lists none needs the name given (-m NAME). Default: false, a request
    // without one goes to the server's default model.
    virtual bool needs_model_name() const;
    // The request of one streamed generation as ask says, EOS ignored where the API allows,
    // without the model (the engine names it) or banned tokens (ServerKind::ban_tokens).
    virtual WireRequest request(const WireAsk& ask) const = 0;
    // Reads one streamed message, a JSON object that reports no error (interpret_message has
    // handled those), into ci. May throw nlohmann::json::exception for a field of the wrong
    // type (interpret_message makes it one line).
    virtual void read(const nlohmann::json& j, ChunkInfo& ci) const = 0;
};

// The registry: every wire API, in --help's order. Never empty.
const std::vector<const WireApi*>& wire_apis();
// api's entry of the registry.
const WireApi& wire_api(HttpApi api);

// Reads one streamed message of api. Throws sb::Error(runtime) ("malformed JSON in the
// stream: ...") when the payload is not a JSON object, or nests arrays and objects deeper than
// kMaxDocumentDepth (parse_server_json). Every count and time in it is the
// server's claim: read only when it is a count (a whole number, 0 to 2^53) or a duration (0
// to a day), else listed in `rejected`; bounded by what was received in compute_timing and
// request_measure.
ChunkInfo interpret_message(HttpApi api, const StreamMessage& m);

}  // namespace sb
