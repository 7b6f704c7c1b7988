#include "engine/http_engine.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "core/error.hpp"

using namespace sb;

namespace {

ChunkInfo read(HttpApi api, const std::string& data) {
    return interpret_message(api, StreamMessage{data, "", 0});
}

Generation::Chunk chunk(int64_t t, std::optional<int64_t> cum = {},
                        std::optional<int64_t> tokens = {}, bool content = true) {
    Generation::Chunk c;
    c.arrival_ns = t;
    c.cum_tokens = cum;
    c.tokens = tokens;
    c.content = content;
    return c;
}

}  // namespace

TEST(HttpApi, Names) {
    for (const char* n : {"openai", "openai-chat", "llama", "ollama"})
        EXPECT_STREQ(http_api_name(parse_http_api(n)), n);
    EXPECT_THROW(parse_http_api("grpc"), Error);
}

TEST(InterpretMessage, LlamaServerCompletionChunks) {
    // As llama-server's /v1/completions streams them with timings_per_token.
    auto c = read(
        HttpApi::openai,
        R"({"choices":[{"text":"axy","index":0,"finish_reason":null}],"timings":)"
        R"({"cache_n":0,"prompt_n":4,"prompt_ms":4.609,"predicted_n":2,"predicted_ms":5.737}})");
    EXPECT_TRUE(c.output);
    EXPECT_TRUE(c.content);
    EXPECT_EQ(c.cum_tokens, 2);
    EXPECT_FALSE(c.final);
    ASSERT_TRUE(c.server);
    EXPECT_EQ(c.server->source, "llama-server");
    EXPECT_EQ(c.server->prompt_ns, 4609000);
    auto fin = read(HttpApi::openai,
                    R"({"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":)"
                    R"({"completion_tokens":3,"prompt_tokens":4},"timings":{"cache_n":0,)"
                    R"("prompt_n":4,"prompt_ms":4.6,"predicted_n":3,"predicted_ms":6.7}})");
    EXPECT_FALSE(fin.output);
    EXPECT_TRUE(fin.final);
    EXPECT_EQ(fin.finish_reason, "length");
    EXPECT_EQ(fin.usage_prompt, 4);
    EXPECT_EQ(fin.usage_completion, 3);
    EXPECT_EQ(fin.server->predicted_n, 3);
    EXPECT_EQ(fin.server->predicted_ns, 6700000);
    EXPECT_TRUE(read(HttpApi::openai, "[DONE]").done_marker);
}

TEST(InterpretMessage, ChatReasoningCountsAsOutputNotContent) {
    auto role = read(HttpApi::openai_chat,
                     R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]})");
    EXPECT_FALSE(role.output);
    auto think = read(HttpApi::openai_chat,
                      R"({"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]})");
    EXPECT_TRUE(think.output);
    EXPECT_FALSE(think.content);
    auto think2 =
        read(HttpApi::openai_chat, R"({"choices":[{"index":0,"delta":{"reasoning":"so"}}]})");
    EXPECT_TRUE(think2.output);
    auto answer =
        read(HttpApi::openai_chat, R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})");
    EXPECT_TRUE(answer.output);
    EXPECT_TRUE(answer.content);
    auto tool = read(HttpApi::openai_chat,
                     R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]})");
    EXPECT_TRUE(tool.output);
    auto usage = read(HttpApi::openai_chat,
                      R"({"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":4}})");
    EXPECT_TRUE(usage.final);
    EXPECT_EQ(usage.usage_prompt, 40);
}

TEST(InterpretMessage, LlamaNative) {
    auto part =
        read(HttpApi::llama,
             R"({"index":0,"content":"","tokens":[3023],"stop":false,"tokens_predicted":2})");
    EXPECT_TRUE(part.output);  // a token whose text is empty still is a token
    EXPECT_EQ(part.tokens, 1);
    EXPECT_EQ(part.cum_tokens, 2);
    auto stop = read(HttpApi::llama,
                     R"({"content":"","tokens":[],"stop":true,"tokens_predicted":4,)"
                     R"("tokens_evaluated":5,"stop_type":"limit","timings":{"cache_n":0,)"
                     R"("prompt_n":5,"prompt_ms":1.332,"predicted_n":4,"predicted_ms":1.691}})");
    EXPECT_FALSE(stop.output);
    EXPECT_TRUE(stop.final);
    EXPECT_EQ(stop.usage_prompt, 5);
    EXPECT_EQ(stop.usage_completion, 4);
    EXPECT_EQ(stop.server->prompt_n, 5);
}

TEST(InterpretMessage, OllamaNative) {
    auto part = read(HttpApi::ollama, R"({"model":"m","response":"Hi","done":false})");
    EXPECT_TRUE(part.output);
    auto think =
        read(HttpApi::ollama, R"({"model":"m","response":"","thinking":"x","done":false})");
    EXPECT_TRUE(think.output);
    EXPECT_FALSE(think.content);
    auto done = read(HttpApi::ollama,
                     R"({"model":"m","response":"","done":true,"done_reason":"length",)"
                     R"("total_duration":5000000,"load_duration":1000,"prompt_eval_count":26,)"
                     R"("prompt_eval_duration":130000,"eval_count":12,"eval_duration":400000})");
    EXPECT_TRUE(done.final);
    EXPECT_EQ(done.usage_completion, 12);
    ASSERT_TRUE(done.server);
    EXPECT_EQ(done.server->source, "ollama");
    EXPECT_EQ(done.server->prompt_ns, 130000);
    EXPECT_EQ(done.server->predicted_ns, 400000);
    EXPECT_EQ(done.server->load_ns, 1000);
}

TEST(InterpretMessage, MlcUsageExtraAndVllmMetrics) {
    auto mlc = read(HttpApi::openai_chat,
                    R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"extra":)"
                    R"({"prefill_tokens":10,"decode_tokens":4,"prefill_tokens_per_s":1000.0,)"
                    R"("decode_tokens_per_s":50.0,"ttft_s":0.02}}})");
    ASSERT_TRUE(mlc.server);
    EXPECT_EQ(mlc.server->source, "mlc");
    EXPECT_EQ(mlc.server->prompt_ns, 10000000);     // 10 tokens at 1000 t/s
    EXPECT_EQ(mlc.server->predicted_ns, 80000000);  // 4 tokens at 50 t/s
    auto vllm = read(HttpApi::openai,
                     R"({"choices":[{"text":"","finish_reason":"length"}],"metrics":)"
                     R"({"arrival_time":100.0,"first_scheduled_time":100.5,"first_token_time":)"
                     R"(100.75,"last_token_time":101.75,"time_in_queue":0.5}})");
    ASSERT_TRUE(vllm.server);
    EXPECT_EQ(vllm.server->source, "vllm");
    EXPECT_EQ(vllm.server->prompt_ns, 250000000);
    EXPECT_EQ(vllm.server->predicted_ns, 1000000000);
    EXPECT_EQ(vllm.server->queue_ns, 500000000);
}

TEST(InterpretMessage, ErrorsAndMalformedJson) {
    auto e = read(HttpApi::openai, R"({"error":{"message":"context overflow","code":400}})");
    ASSERT_TRUE(e.error);
    EXPECT_EQ(*e.error, "context overflow");
    try {
        read(HttpApi::openai, "{not json");
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::runtime);
        EXPECT_NE(std::string(err.what()).find("malformed JSON"), std::string::npos);
    }
    EXPECT_THROW(read(HttpApi::openai, "[1,2]"), Error);
}

// A message nested deeper than any API (arrays in its error, its choices or an unknown member,
// 100,000 deep: quoting such an error recursed once per level until the stack overflowed) is
// one runtime error naming the depth; one nested within kMaxDocumentDepth is read.
TEST(InterpretMessage, AMessageNestedTooDeepIsOneRuntimeError) {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    for (const std::string& m : {R"({"error":)" + deep + "}", R"({"choices":)" + deep + "}",
                                 R"({"choices":[{"text":"a"}],"x":)" + deep + "}",
                                 R"({"error":{"message":)" + deep + "}}"}) {
        try {
            read(HttpApi::openai, m);
            ADD_FAILURE() << m.substr(0, 40) << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::runtime);
            const std::string w = e.what();
            EXPECT_NE(w.find("malformed message in the stream (nested more than 64 deep): '"),
                      std::string::npos)
                << w;
            EXPECT_LT(w.size(), 200u);
        }
    }
    const std::string within = std::string(62, '[') + std::string(62, ']');
    const ChunkInfo ci = read(HttpApi::openai, R"({"choices":[{"text":"a"}],"x":)" + within + "}");
    EXPECT_TRUE(ci.output && ci.content);
    const ChunkInfo err = read(HttpApi::openai, R"({"error":)" + within + "}");
    ASSERT_TRUE(err.error);
    EXPECT_EQ(err.error->substr(0, 4), "[[[[");
}

TEST(InterpretMessage, AFieldOfTheWrongTypeIsOneRuntimeError) {
    const std::vector<std::pair<HttpApi, std::string>> bad = {
        {HttpApi::ollama, R"({"response":"x","done":"yes"})"},
        {HttpApi::ollama, R"({"done":true,"done_reason":7})"},
        {HttpApi::llama, R"({"content":"x","stop":1})"},
        {HttpApi::llama, R"({"stop":true,"stop_type":[]})"},
        {HttpApi::openai_chat, R"({"choices":[{"delta":{"content":"x"}}],"model":1,)"
                               R"("choices2":0,"x":{}})"},
    };
    for (std::size_t i = 0; i + 1 < bad.size(); ++i) {
        try {
            read(bad[i].first, bad[i].second);
            ADD_FAILURE() << bad[i].second << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::runtime) << bad[i].second;
            EXPECT_NE(std::string(e.what()).find("wrong type"), std::string::npos) << e.what();
        }
    }
    EXPECT_NO_THROW(read(bad.back().first, bad.back().second));  // unknown fields are ignored
}

TEST(ComputeTiming, OneTokenPerChunk) {
    Generation g;
    g.start_ns = 1000;
    for (int i = 0; i < 5; ++i)
        g.chunks.push_back(chunk(1000 + 50'000'000 + i * 10'000'000));
    g.completion_tokens = 5;
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.ttft_ns, 50'000'000);
    EXPECT_EQ(t.e2e_ns, 90'000'000);
    EXPECT_EQ(t.n_out, 5);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>(4, 10'000'000)));
    EXPECT_EQ(t.tpot_ns, 10'000'000);  // (90 - 50) / (5 - 1)
    EXPECT_EQ(t.first_content_ns, 50'000'000);
    EXPECT_TRUE(t.notes.empty());
}

TEST(ComputeTiming, MultiTokenChunkSplitsItsGap) {
    // Cumulative counts 1, 3, 4: the second chunk brought two tokens after 30 ms.
    Generation g;
    g.start_ns = 0;
    g.chunks = {chunk(100, 1), chunk(130, 3), chunk(141, 4)};
    g.completion_tokens = 4;
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{15, 15, 11}));
    EXPECT_EQ(t.n_streamed, 4);
    EXPECT_EQ(t.tpot_ns, (141 - 100) / 3);
    // Token arrays (llama native) say the same.
    g.chunks = {chunk(100, {}, 1), chunk(131, {}, 2), chunk(141, {}, 1)};
    t = compute_timing(g);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{15, 16, 10}));
    EXPECT_EQ(std::accumulate(t.itl_ns.begin(), t.itl_ns.end(), int64_t{0}), 41);
}

TEST(ComputeTiming, UsageBeyondTheChunksIsSpreadWithANote) {
    // 3 chunks, usage says 7 tokens, no per-chunk counts: 4 extra over the last two chunks.
    Generation g;
    g.chunks = {chunk(10), chunk(40), chunk(70)};
    g.completion_tokens = 7;
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.n_out, 7);
    EXPECT_EQ(t.n_streamed, 7);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{10, 10, 10, 10, 10, 10}));
    EXPECT_EQ(t.tpot_ns, 10);
    ASSERT_EQ(t.notes.size(), 1u);
    EXPECT_NE(t.notes[0].find("estimated"), std::string::npos);
}

TEST(ComputeTiming, DisagreementIsNotedAndUsageWins) {
    Generation g;
    g.chunks = {chunk(10, 1), chunk(20, 2), chunk(30, 3)};
    g.completion_tokens = 4;
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.n_out, 4);
    EXPECT_EQ(t.n_streamed, 3);
    ASSERT_EQ(t.notes.size(), 1u);
}

TEST(ComputeTiming, ReasoningBeforeContent) {
    Generation g;
    g.start_ns = 0;
    g.chunks = {chunk(100, {}, {}, false), chunk(110, {}, {}, false), chunk(120), chunk(130)};
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.ttft_ns, 100);
    EXPECT_EQ(t.first_content_ns, 120);
    EXPECT_EQ(t.n_out, 4);  // no usage: the stream's count
}

TEST(ComputeTiming, FirstChunkWithSeveralTokensHasNoObservableGaps) {
    Generation g;
    g.chunks = {chunk(100, 3), chunk(110, 4)};
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.n_out, 4);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{10}));
    EXPECT_EQ(t.tpot_ns, 10 / 3);
}

TEST(ComputeTiming, OneTokenHasNoTpotAndNoTokenIsAnError) {
    Generation g;
    g.chunks = {chunk(100)};
    RequestTiming t = compute_timing(g);
    EXPECT_FALSE(t.tpot_ns);
    EXPECT_TRUE(t.itl_ns.empty());
    EXPECT_EQ(t.e2e_ns, t.ttft_ns);
    g.chunks.clear();
    EXPECT_THROW(compute_timing(g), Error);
}

// ---- the server's claims ---------------------------------------------------------------------

// 10^12 completion tokens claimed for a 4-token stream of 4 asked for: not believed, so no
// allocation per claimed token (the gaps were sized by the claim before: std::bad_alloc); the
// claim is kept beside the count, with a note.
TEST(ServerClaims, AnAbsurdUsageCountIsKeptAsAClaimAndNotBelieved) {
    Generation g;
    g.start_ns = 0;
    g.n_asked = 4;
    g.chunks = {chunk(100), chunk(110), chunk(120), chunk(130)};
    g.completion_tokens = 1'000'000'000'000;
    const RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.n_out, 4);
    EXPECT_EQ(t.n_streamed, 4);
    EXPECT_EQ(t.claimed_out, 1'000'000'000'000);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{10, 10, 10}));
    EXPECT_EQ(t.tpot_ns, 10);
    ASSERT_EQ(t.notes.size(), 1u);
    EXPECT_NE(t.notes[0].find("claims 1000000000000 output tokens (usage) for a stream of 4 "
                              "token(s) in 4 chunk(s), 4 asked for: not believed"),
              std::string::npos)
        << t.notes[0];
    // Unknown how many were asked: bounded by the longest context, 2^24.
    g.n_asked = 0;
    EXPECT_EQ(compute_timing(g).n_out, 4);
    g.completion_tokens = kMaxClaimedTokens + 1;
    EXPECT_EQ(compute_timing(g).n_out, 4);
    // Within what was asked: believed and spread (vLLM's stream interval).
    g.n_asked = 8;
    g.completion_tokens = 7;
    EXPECT_EQ(compute_timing(g).n_out, 7);
    EXPECT_EQ(compute_timing(g).itl_ns.size(), 6u);
    // No tokens for a stream that carried some: not believed either.
    g.completion_tokens = 0;
    EXPECT_EQ(compute_timing(g).n_out, 4);
    EXPECT_EQ(compute_timing(g).claimed_out, 0);
}

// Running counts (timings.predicted_n) that run backwards or beyond what was asked do not
// split chunks into tokens.
TEST(ServerClaims, RunningCountsThatAreNotBelievableAreIgnored) {
    Generation g;
    g.n_asked = 4;
    g.chunks = {chunk(100, 1), chunk(110, 1'000'000'000), chunk(120, 3)};
    RequestTiming t = compute_timing(g);
    EXPECT_EQ(t.n_streamed, 3);
    EXPECT_EQ(t.itl_ns, (std::vector<int64_t>{10, 10}));
    ASSERT_FALSE(t.notes.empty());
    EXPECT_NE(t.notes[0].find("running token counts"), std::string::npos) << t.notes[0];
    g.chunks = {chunk(100, 2), chunk(110, 1), chunk(120, 3)};
    EXPECT_EQ(compute_timing(g).n_streamed, 3);
}

// Counts and durations that are no count or no duration at all are rejected where they are
// read, named with the value as sent.
TEST(ServerClaims, NegativeFractionalAndHugeValuesAreRejectedWhereRead) {
    auto c = read(HttpApi::openai,
                  R"({"choices":[],"usage":{"prompt_tokens":-3,"completion_tokens":1e300}})");
    EXPECT_FALSE(c.usage_prompt);
    EXPECT_FALSE(c.usage_completion);
    ASSERT_EQ(c.rejected.size(), 2u);
    EXPECT_EQ(c.rejected[0], "usage.prompt_tokens = -3 (not a token count)");
    EXPECT_EQ(c.rejected[1], "usage.completion_tokens = 1e+300 (not a token count)");
    c = read(HttpApi::openai,
             R"({"choices":[{"text":"a"}],"timings":{"prompt_n":2.5,"prompt_ms":-4,)"
             R"("predicted_n":"7","predicted_ms":1e20}})");
    ASSERT_TRUE(c.server);
    EXPECT_FALSE(c.server->prompt_n);
    EXPECT_FALSE(c.server->prompt_ns);
    EXPECT_FALSE(c.server->predicted_n);
    EXPECT_FALSE(c.server->predicted_ns);
    EXPECT_FALSE(c.cum_tokens);
    EXPECT_EQ(c.rejected.size(), 4u);
    c = read(HttpApi::ollama, R"({"response":"","done":true,"eval_count":-1,"eval_duration":-5,)"
                              R"("prompt_eval_count":18446744073709551615})");
    EXPECT_FALSE(c.usage_completion);
    EXPECT_FALSE(c.usage_prompt);
    EXPECT_FALSE(c.server->predicted_ns);
    EXPECT_EQ(c.rejected.size(), 3u);
    // vLLM's wall-clock stamps out of order: a negative time.
    c = read(HttpApi::openai,
             R"({"choices":[],"metrics":{"first_scheduled_time":10,"first_token_time":5}})");
    ASSERT_TRUE(c.server);
    EXPECT_FALSE(c.server->prompt_ns);
    EXPECT_EQ(c.rejected.size(), 1u);
}

// The prompt count and the server's timings are checked against what was sent and what the
// client saw: a claim that fails is left out with a note.
TEST(ServerClaims, PromptCountsAndServerTimesAreBoundedByTheRequest) {
    Generation g;
    g.start_ns = 0;
    g.end_ns = 1'000'000;  // 1 ms as the client saw it
    g.n_asked = 2;
    g.prompt_asked = 16;
    g.chunks = {chunk(500'000), chunk(900'000)};
    g.completion_tokens = 2;
    g.prompt_tokens = 1'000'000'000;
    ServerTimings s;
    s.source = "llama-server";
    s.prompt_n = 16;
    s.predicted_n = 50;            // more than asked
    s.prompt_ns = 400'000;         // within the request
    s.predicted_ns = 100'000'000;  // 100 ms: longer than the request
    g.server = s;
    const RequestMeasure m = request_measure(g);
    EXPECT_FALSE(m.prompt_tokens);
    ASSERT_TRUE(m.server);
    EXPECT_EQ(m.server->prompt_n, 16);
    EXPECT_FALSE(m.server->predicted_n);
    EXPECT_EQ(m.server->prompt_ns, 400'000);
    EXPECT_FALSE(m.server->predicted_ns);
    EXPECT_EQ(m.timing.notes.size(), 3u);
    // Believable claims pass untouched: a chat template's tokens beyond the prompt.
    g.prompt_tokens = 16 + 30;
    g.server.reset();
    const RequestMeasure ok = request_measure(g);
    EXPECT_EQ(ok.prompt_tokens, 46);
    EXPECT_TRUE(ok.timing.notes.empty());
}

// The server's timings are also kept as it said them (m.claim), with one sentence for each way
// the client's measurement contradicts them: counts that differ, a prompt time longer than the
// TTFT, prompt and generation longer than the E2E, beyond 1 ms + 1 % of that span. What
// disagrees is left out of m.server; what agrees stays.
TEST(ServerClaims, TheClaimIsKeptAsSaidWithItsDisagreements) {
    Generation g;
    g.start_ns = 0;
    g.end_ns = 60'000'000;
    g.n_asked = 3;
    g.prompt_asked = 16;
    g.chunks = {chunk(20'000'000), chunk(40'000'000), chunk(60'000'000)};  // TTFT 20, E2E 60 ms
    g.completion_tokens = 3;
    g.prompt_tokens = 16;
    ServerTimings s;
    s.source = "llama-server";
    s.prompt_n = 12;
    s.cache_n = 4;
    s.predicted_n = 3;
    s.prompt_ns = 21'200'000;     // within 20 ms + 1.2 ms
    s.predicted_ns = 39'000'000;  // 60.2 ms together: within 60 ms + 1.6 ms
    g.server = s;
    const RequestMeasure agree = request_measure(g);
    ASSERT_TRUE(agree.claim);
    EXPECT_TRUE(agree.claim->disagreements.empty());
    EXPECT_EQ(agree.claim->said.prompt_ns, 21'200'000);
    EXPECT_EQ(agree.server->prompt_ns, 21'200'000);
    EXPECT_EQ(agree.server->predicted_n, 3);
    EXPECT_TRUE(agree.timing.notes.empty());

    s.prompt_n = 10;           // 10 + 4 cached: not the 16 usage counts
    s.predicted_n = 2;         // the client counted 3
    s.prompt_ns = 21'300'000;  // beyond 20 ms + 1.2 ms
    s.predicted_ns = 41'000'000;
    g.server = s;
    const RequestMeasure m = request_measure(g);
    ASSERT_TRUE(m.claim);
    EXPECT_EQ(m.claim->said.prompt_n, 10);  // as said
    EXPECT_EQ(m.claim->said.predicted_n, 2);
    EXPECT_EQ(m.claim->said.prompt_ns, 21'300'000);
    EXPECT_EQ(m.claim->disagreements,
              (std::vector<std::string>{
                  "the llama-server timings count 2 generated tokens, the client 3: not believed",
                  "the llama-server timings count 10 prompt tokens and 4 cached, the client 16: "
                  "not believed",
                  "the llama-server timings claim 21.300 ms of prompt processing, longer than "
                  "the client's TTFT of 20.000 ms: not believed"}));
    EXPECT_EQ(m.timing.notes, m.claim->disagreements);
    EXPECT_FALSE(m.server->prompt_n);
    EXPECT_FALSE(m.server->cache_n);
    EXPECT_FALSE(m.server->predicted_n);
    EXPECT_FALSE(m.server->prompt_ns);
    EXPECT_EQ(m.server->predicted_ns, 41'000'000);  // alone it contradicts nothing

    // Prompt and generation together longer than the E2E: both left out.
    s = agree.claim->said;
    s.predicted_ns = 41'000'000;  // 21.2 + 41 = 62.2 ms > 60 + 1.6
    g.server = s;
    const RequestMeasure sum = request_measure(g);
    EXPECT_EQ(sum.claim->disagreements,
              (std::vector<std::string>{
                  "the llama-server timings claim 62.200 ms of prompt processing and generation "
                  "together, longer than the client's E2E of 60.000 ms: not believed"}));
    EXPECT_FALSE(sum.server->prompt_ns);
    EXPECT_FALSE(sum.server->predicted_ns);
    // No timings, no claim.
    g.server.reset();
    EXPECT_FALSE(request_measure(g).claim);
}

// A stream through GenerationStream as generate() reads it: what was rejected reaches the notes.
TEST(ServerClaims, RejectedClaimsOfAStreamBecomeNotes) {
    GenerationStream::Spec spec;
    spec.api = HttpApi::openai;
    spec.n_gen = 2;
    spec.n_prompt = 4;
    spec.where = "http://x/v1/completions";
    GenerationStream st(std::move(spec));
    const std::string body =
        "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
        "data: {\"choices\":[{\"text\":\"b\"}]}\n\n"
        "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],"
        "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":-2}}\n\n"
        "data: [DONE]\n\n";
    ASSERT_TRUE(st.on_bytes(body, 1000));
    StreamOutcome o;
    o.status = 200;
    o.complete = true;
    const RequestMeasure m = request_measure(st.finish(o));
    EXPECT_EQ(m.timing.n_out, 2);
    EXPECT_FALSE(m.timing.claimed_out);
    ASSERT_EQ(m.timing.notes.size(), 1u);
    EXPECT_EQ(m.timing.notes[0],
              "the server sent usage.completion_tokens = -2 (not a token count): ignored");
}

// The TTFT definitions harnesses disagree on, each stamped at the arrival of its own part: a
// stream's first byte (a comment that carries no token), its first streamed token (reasoning,
// after the role), its first answer content. Arrival times as the transport gives them.
TEST(ComputeTiming, FirstByteFirstTokenAndFirstContentAreEachTheirOwnArrival) {
    GenerationStream::Spec spec;
    spec.api = HttpApi::openai_chat;
    spec.n_gen = 3;
    spec.where = "http://x/v1/chat/completions";
    GenerationStream st(std::move(spec));
    auto sse = [](const std::string& delta) {
        return "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":" + delta +
               ",\"finish_reason\":null}]}\n\n";
    };
    ASSERT_TRUE(st.on_bytes(": keep-alive\n\n", 1'000'000));
    ASSERT_TRUE(st.on_bytes(sse(R"({"role":"assistant"})"), 41'000'000));
    ASSERT_TRUE(st.on_bytes(sse(R"({"reasoning_content":"hm"})"), 42'000'000));
    ASSERT_TRUE(st.on_bytes(sse(R"({"content":"a"})") + sse(R"({"content":"b"})"), 82'000'000));
    ASSERT_TRUE(st.on_bytes("data: [DONE]\n\n", 83'000'000));
    StreamOutcome o;
    o.status = 200;
    o.complete = true;
    const Generation g = st.finish(o);
    ASSERT_TRUE(g.first_byte_ns);
    EXPECT_EQ(*g.first_byte_ns - g.start_ns, 1'000'000);
    const RequestMeasure m = request_measure(g);
    EXPECT_EQ(m.timing.ttft_ns, 42'000'000);
    EXPECT_EQ(m.timing.first_content_ns, 82'000'000);
}

TEST(PromptWords, DeterministicAndPrefixStable) {
    EXPECT_EQ(prompt_words(3, 10), prompt_words(3, 10));
    EXPECT_NE(prompt_words(3, 10), prompt_words(4, 10));
    const std::string a = prompt_words(5, 4), b = prompt_words(5, 9);
    EXPECT_EQ(b.rfind(a, 0), 0u);
    EXPECT_EQ(std::count(b.begin(), b.end(), ' '), 8);
}

// /tokenize's ids are sent back as the prompt: each is a claim, believed only as a token id of
// the vocabulary (when the server said its size) that fits int32; never truncated, never
// negative.
TEST(ServerClaims, TokenizeIdsAreBoundedByTheVocabularyAndInt32) {
    using nlohmann::json;
    EXPECT_EQ(claimed_token_id(json(0), std::nullopt), 0);
    EXPECT_EQ(claimed_token_id(json(4095), 4096), 4095);
    EXPECT_EQ(claimed_token_id(json{{"id", 7}, {"piece", "a"}}, 4096), 7);  // vLLM's form
    EXPECT_EQ(claimed_token_id(json(2147483647), std::nullopt), 2147483647);
    EXPECT_EQ(claimed_token_id(json(4096), 4096), std::nullopt);  // beyond the vocabulary
    EXPECT_EQ(claimed_token_id(json(-1), std::nullopt), std::nullopt);
    EXPECT_EQ(claimed_token_id(json(-5), 4096), std::nullopt);
    // 2^40 + 3 is not token 3 (what a cast to int32 makes of it).
    EXPECT_EQ(claimed_token_id(json((int64_t{1} << 40) + 3), std::nullopt), std::nullopt);
    EXPECT_EQ(claimed_token_id(json(2147483648LL), std::nullopt), std::nullopt);
    EXPECT_EQ(claimed_token_id(json(18446744073709551615ULL), std::nullopt), std::nullopt);
    for (const json& odd : {json(2.5), json("7"), json(nullptr), json(true), json::array(),
                            json::object(), json{{"id", -1}}, json{{"id", "7"}}})
        EXPECT_EQ(claimed_token_id(odd, std::nullopt), std::nullopt) << odd;
}
