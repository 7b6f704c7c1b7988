#include "scenario/http_run.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

using namespace sb;

namespace {

TestResult http_result(int p, int n) {
    TestResult r;
    r.config.engine = EngineKind::http;
    r.config.devices = "HTTP";
    r.config.n_prompt = p;
    r.config.n_gen = n;
    r.prefill.emplace().n_tokens = p;
    r.decode.emplace().n_tokens = n - 1;
    return r;
}

Generation generation(int64_t ttft_ms, int n, int64_t itl_ms, int prompt) {
    Generation g;
    g.start_ns = 0;
    for (int i = 0; i < n; ++i) {
        Generation::Chunk c;
        c.arrival_ns = (ttft_ms + i * itl_ms) * 1'000'000;
        c.content = true;
        g.chunks.push_back(c);
    }
    g.prompt_tokens = prompt;
    g.completion_tokens = n;
    return g;
}

}  // namespace

TEST(HttpRepetition, MapsClientTimesOntoTheStages) {
    TestResult r = http_result(100, 5);
    Generation g = generation(50, 5, 10, 100);  // TTFT 50 ms, then 4 tokens 10 ms apart
    ServerTimings s;
    s.source = "llama-server";
    s.prompt_n = 100;
    s.prompt_ns = 40'000'000;
    s.predicted_n = 5;
    s.predicted_ns = 38'000'000;
    g.server = s;
    add_request_repetition(r, request_measure(g), 100);
    finish_request_result(r, "llama-server");

    ASSERT_EQ(r.ttft_ns, (std::vector<int64_t>{50'000'000}));
    EXPECT_NEAR(r.prefill->tokens_per_s[0], 2000, 1e-6);  // n_prompt / TTFT
    EXPECT_EQ(r.decode->duration_ns[0], 40'000'000);      // E2E - TTFT
    EXPECT_NEAR(r.decode->tokens_per_s[0], 100, 1e-9);    // tokens after the first
    EXPECT_EQ(r.decode->token_latency_ns, (std::vector<int64_t>(4, 10'000'000)));
    EXPECT_DOUBLE_EQ(*r.decode->itl.median, 10'000'000);
    ASSERT_TRUE(r.client);
    EXPECT_EQ(r.client->e2e_ns[0], 90'000'000);
    EXPECT_EQ(r.client->tpot_ns[0], 10'000'000);
    EXPECT_EQ(r.client->prompt_tokens[0], 100);
    EXPECT_EQ(r.client->output_tokens[0], 5);
    ASSERT_TRUE(r.server);
    EXPECT_EQ(r.server->ttft_minus_prompt_ns[0], 10'000'000);
    EXPECT_EQ(r.server->e2e_minus_total_ns[0], 90'000'000 - 78'000'000);
    EXPECT_NEAR(*r.server->prefill_tokens_per_s.median, 2500, 1e-6);
    EXPECT_NEAR(*r.server->decode_tokens_per_s.median, 5 / 0.038, 1e-6);
    // A reader of the Markdown table sees the server's numbers in a note.
    bool noted = false;
    for (const auto& n : r.notes)
        noted |= n.find("server prefill 2500.0 t/s") != std::string::npos;
    EXPECT_TRUE(noted);

    nlohmann::json j = to_json(r);
    EXPECT_EQ(j["client"]["e2e_ns"][0], 90'000'000);
    EXPECT_EQ(j["server"]["reps"][0]["prompt_n"], 100);
    EXPECT_TRUE(j["server"]["reps"][0]["queue_ns"].is_null());
    EXPECT_EQ(j["server"]["client_minus_server"]["ttft_minus_prompt_ns"][0], 10'000'000);
    EXPECT_EQ(j["config"]["engine"], "http");
}

TEST(HttpRepetition, StagesStartAtTheRequestAndTheFirstToken) {
    TestResult r = http_result(100, 5);
    Generation g = generation(50, 5, 10, 100);
    const int64_t t0 = 7'000'000'000;  // the request's start on the monotonic clock
    g.start_ns += t0;
    for (auto& c : g.chunks)
        c.arrival_ns += t0;
    add_request_repetition(r, request_measure(g), 100);
    EXPECT_EQ(r.prefill->start_ns, (std::vector<int64_t>{t0}));
    EXPECT_EQ(r.decode->start_ns, (std::vector<int64_t>{t0 + 50'000'000}));
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>{40'000'000}));
}

TEST(HttpRepetition, NotesPromptLengthAndEarlyStops) {
    TestResult r = http_result(64, 8);
    Generation g = generation(5, 3, 1, 70);  // the server counted 70 and stopped at 3
    add_request_repetition(r, request_measure(g), 64);
    finish_request_result(r, "ollama");
    EXPECT_FALSE(r.server);
    EXPECT_NEAR(r.prefill->tokens_per_s[0], 14000, 1e-6);
    ASSERT_EQ(r.notes.size(), 2u);
    EXPECT_NE(r.notes[0].find("counted 70 prompt tokens (asked 64"), std::string::npos)
        << r.notes[0];
    EXPECT_NE(r.notes[1].find("stopped after 3 of 8"), std::string::npos) << r.notes[1];
}

TEST(HttpRepetition, ASingleTokenGivesNoDecodeSample) {
    TestResult r = http_result(16, 2);
    Generation g = generation(5, 1, 1, 16);
    add_request_repetition(r, request_measure(g), 16);
    finish_request_result(r, "llama-server");
    EXPECT_EQ(r.prefill->duration_ns.size(), 1u);
    EXPECT_TRUE(r.decode->duration_ns.empty());
    EXPECT_FALSE(r.decode->throughput.median);
}

TEST(HttpRun, RejectsBadCombinations) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    HttpRunOptions o;
    auto usage = [&](const HttpRunOptions& opts, const MatrixSpec& spec,
                     std::vector<std::string> rpc = {}) {
        try {
            HttpRun h(opts, spec, rpc);
            ADD_FAILURE() << "accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage) << e.what();
        }
    };
    o.engines = {};
    usage(o, m);
    o.engines = {EngineKind::http};
    o.url = "http://127.0.0.1:8080";
    o.engines = {EngineKind::llama, EngineKind::http};
    usage(o, m);  // --url with the in-process engine
    o.engines = {EngineKind::http};
    MatrixSpec deep = m;
    deep.n_depth = {512};
    usage(o, deep);
    usage(o, m, {"127.0.0.1:50052"});
    o.url = "127.0.0.1:8080";
    usage(o, m);
    o.url.reset();
    o.engines = {EngineKind::llama};
    o.url = "http://127.0.0.1:8080";
    usage(o, m);  // --url without --engine http
}

// An API of another server's own (Ollama's) is not spoken to the llama-server stagebench starts:
// the wire API and its server say so, the message names both.
TEST(HttpRun, AnotherServersOwnApiNeedsItsUrl) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    HttpRunOptions o;
    o.engines = {EngineKind::http};
    o.api = HttpApi::ollama;
    try {
        HttpRun h(o, m, {});
        ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(), "--api ollama needs --url of an Ollama server");
    }
    o.api = HttpApi::llama;  // llama-server's own: the server stagebench starts
    EXPECT_NO_THROW(HttpRun(o, m, {}));
}

TEST(HttpRun, PlanPutsTheHttpTestAfterItsInProcessTwin) {
    MatrixSpec m;
    m.models = {"a.gguf"};
    m.n_prompt = {16, 32};
    m.n_gen = {4};
    HttpRunOptions o;
    o.engines = {EngineKind::llama, EngineKind::http};
    try {
        HttpRun h(o, m, {});
        auto tests = h.plan(m);
        ASSERT_EQ(tests.size(), 4u);
        EXPECT_EQ(tests[0].engine, EngineKind::llama);
        EXPECT_EQ(tests[1].engine, EngineKind::http);
        EXPECT_EQ(tests[1].devices.str(), "HTTP");
        EXPECT_EQ(tests[1].n_prompt, 16);
        EXPECT_EQ(tests[2].engine, EngineKind::llama);
        EXPECT_EQ(tests[3].n_prompt, 32);
    } catch (const Error& e) {
        // Only when this build has no llama-server next to it.
        EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
    }
}
