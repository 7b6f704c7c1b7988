#include "engine/generation_stream.hpp"

#include <algorithm>
#include <cstdio>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "engine/server_kind.hpp"

namespace sb {

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
    if (wire_api(s_.api).framing() == Framing::ndjson)
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
        if (wire_api(s_.api).framing() == Framing::ndjson)
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
    // The server's timings completed with what its usage said (vLLM's).
    if (g.server)
        if (const ServerKind* k = kind_of_timings(g.server->source))
            k->complete_timings(*g.server, g.prompt_tokens, g.completion_tokens);
    return std::move(g_);
}

}  // namespace sb
