#pragma once
// One streamed generation as the client received it (Generation), and its measure: the stage
// times on the client clock (compute_timing) with the server's claims checked against them
// (request_measure). Stage definitions: engine/http_engine.hpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine.hpp"

namespace sb {

// Everything one streamed request returned, on the client clock.
struct Generation {
    struct Chunk {
        int64_t arrival_ns = 0;
        bool content = false;
        std::optional<int64_t> tokens, cum_tokens;
    };
    int64_t start_ns = 0;       // just before the request was sent
    int64_t end_ns = 0;         // the response ended
    std::vector<Chunk> chunks;  // messages that carried output, in arrival order
    // What the server claims (usage or its own counts), as it said them: not yet checked
    // against the stream (compute_timing, request_measure do that).
    std::optional<int64_t> prompt_tokens, completion_tokens;
    std::optional<ServerTimings> server;
    std::string finish_reason;
    // The first bytes of the response's body arrived (the first byte of the stream, whatever
    // it carries; null when none came), and the server's id of the request (the first one a
    // message carried).
    std::optional<int64_t> first_byte_ns;
    std::optional<std::string> request_id;
    int64_t n_asked = 0;       // output tokens asked for (max_tokens); 0: not known
    int64_t prompt_asked = 0;  // prompt tokens sent (or aimed at, for a text); 0: not known
    std::vector<std::string> rejected;  // ChunkInfo::rejected of every message, each once
};

// The most tokens a server may claim for one request when the request does not say how many
// were asked: 2^24, the longest context stagebench allows (cli/flag_checks.hpp kMaxTokens).
inline constexpr int64_t kMaxClaimedTokens = int64_t{1} << 24;

// Tokens are counted from the stream: a chunk's token array (vLLM token_ids, llama-server
// tokens) is what it carried, else each chunk is one token. The server's claims are checked
// against that count and against what was asked (g.n_asked, else kMaxClaimedTokens):
//   - running counts (llama-server timings.predicted_n, tokens_predicted) split the chunks
//     into tokens when they never decrease and end within what was asked; else they are
//     ignored, with a note;
//   - usage's completion count is the output count (n_out) when it lies between 1 and what
//     was asked; more tokens than chunks are then spread evenly over the chunks after the
//     first (with a note). Otherwise (10^12 tokens for a 4-token stream, 0 for a stream that
//     carried some) it is not believed: n_out is the stream's count, with a note.
// claimed_out keeps usage's count as the server said it; notes say where a claim and the
// count disagree. So no claim sizes an allocation: the gaps are at most what was asked or
// what arrived. Throws sb::Error(runtime) when g has no output chunk.
RequestTiming compute_timing(const Generation& g);

// A generation's measure: its start, compute_timing(g), the server's prompt count and timings,
// each checked: the prompt count when between 1 and 4 x the prompt sent + 4096 (a chat
// template's tokens), and at most kMaxClaimedTokens; server token counts within the prompt's
// and the output's bounds and equal to the client's (predicted_n = the output count n_out;
// prompt_n + cache_n = usage's prompt count, when believed); server times no longer than the
// request as the client saw it (start to end, or to the last token when later), the prompt's
// time within the client's TTFT and prompt and generation together within its E2E (each plus
// server_claim_slack_ns of that span, core/doc/server_claim.hpp). A claim that fails is left
// out of m.server (absent), with a note in timing.notes naming it; m.claim keeps the timings
// as the server said them, with the same reasons as its disagreements.
RequestMeasure request_measure(const Generation& g);

}  // namespace sb
