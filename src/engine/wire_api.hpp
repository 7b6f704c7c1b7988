#pragma once
// The wire APIs a server is spoken to in: their names, and what one streamed message of each
// says (ChunkInfo). Every count and time a message carries is the server's claim.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/http_client.hpp"

namespace sb {

// openai: /v1/completions (SSE); openai-chat: /v1/chat/completions (SSE); llama:
// llama-server's native /completion (SSE); ollama: Ollama's native /api/generate (NDJSON).
enum class HttpApi { openai, openai_chat, llama, ollama };

// Throws sb::Error(usage) for an unknown name.
HttpApi parse_http_api(const std::string& name);
const char* http_api_name(HttpApi api);

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

// Reads one streamed message of api. Throws sb::Error(runtime) ("malformed JSON in the
// stream: ...") when the payload is not a JSON object, or nests arrays and objects deeper than
// kMaxDocumentDepth (parse_server_json). Every count and time in it is the
// server's claim: read only when it is a count (a whole number, 0 to 2^53) or a duration (0
// to a day), else listed in `rejected`; bounded by what was received in compute_timing and
// request_measure.
ChunkInfo interpret_message(HttpApi api, const StreamMessage& m);

}  // namespace sb
