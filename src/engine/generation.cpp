#include "engine/generation.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace sb {

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
    std::optional<int64_t> usage;
    if (g.completion_tokens) {
        const int64_t claimed = *g.completion_tokens;
        if (claimed < 1 || claimed > bound)
            t.notes.push_back("the server claims " + std::to_string(claimed) +
                              " output tokens (usage) for a stream of " + std::to_string(streamed) +
                              " token(s) in " + std::to_string(g.chunks.size()) + " chunk(s), " +
                              asked + ": not believed, the stream's count is used");
        else
            usage = claimed;
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

}  // namespace sb
