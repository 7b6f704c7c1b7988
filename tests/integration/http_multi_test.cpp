// The event-loop client (HttpMulti: one thread, libcurl's multi interface) against the
// threaded one (HttpClient::post_stream, HttpEngine::generate on a thread per request), both
// on the same scripted streams of the fault server: the same framed messages, the same
// generations and timing structure, the same error lines for the same faults, and `serve
// --client loop` recording every request. Which of the two costs the client less CPU is a
// benchmark (bench/serve_client_models.sh), not a test.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "core/error.hpp"
#include "engine/http_client.hpp"
#include "engine/http_engine.hpp"
#include "engine/process.hpp"
#include "fault_server.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

// A generation request whose prompt names a fault gets it; any other gets max_tokens text
// messages, each cut in two chunks 2 ms apart (so a message is completed by its second
// chunk), then the final messages.
void scripted(const HttpRequest& req, FaultConn& c) {
    if (answer_discovery(req, c))
        return;
    const json j = req.json();
    const std::string prompt = j.value("prompt", "");
    if (prompt == "fault:500") {
        c.reply(500, "application/json", R"j({"error":{"message":"overloaded (injected)"}})j");
        return;
    }
    if (prompt == "fault:closed") {
        c.begin_chunked(200, "text/event-stream");
        c.chunk(sse_text("a") + sse_text("b"));
        c.sleep_ms(20);
        return;  // the connection closes mid-stream
    }
    if (prompt == "fault:silent") {
        c.wait_until_stopped();
        return;
    }
    if (prompt == "fault:malformed") {
        c.begin_chunked(200, "text/event-stream");
        c.chunk(sse_text("a") + "data: {\"choices\": [oops\n\n");
        c.end_chunked();
        return;
    }
    const int n = j.value("max_tokens", 1);
    c.begin_chunked(200, "text/event-stream");
    for (int i = 0; i < n; ++i) {
        const std::string m = sse_text(" w" + std::to_string(i));
        c.chunk(m.substr(0, 9));
        c.sleep_ms(2);
        c.chunk(m.substr(9));
    }
    c.chunk(sse_final(8, n));
    c.end_chunked();
}

sb::HttpEngineOptions engine_options(const FaultServer& s, int64_t read_ms = 5000) {
    sb::HttpEngineOptions o;
    o.url = s.url();
    o.timeouts = sb::HttpTimeouts{2000, read_ms};
    return o;
}

sb::HttpPrompt prompt(const std::string& text) {
    sb::HttpPrompt p;
    p.text = text;
    p.n_tokens = 8;
    return p;
}

// Every request of a batch, through the loop: the generation or the error line.
struct LoopResult {
    std::vector<sb::Generation> gens;
    std::vector<std::string> errors;
};

LoopResult run_loop(const sb::HttpEngine& e, const std::vector<std::string>& prompts,
                    int64_t n_gen) {
    sb::HttpMulti multi(e.options().url, e.options().timeouts);
    LoopResult r;
    r.gens.resize(prompts.size());
    r.errors.resize(prompts.size());
    std::vector<std::unique_ptr<sb::GenerationStream>> streams;
    for (size_t i = 0; i < prompts.size(); ++i) {
        streams.push_back(e.start_generation("", prompt(prompts[i]), n_gen, 1));
        sb::GenerationStream* s = streams.back().get();
        multi.start_stream(
            s->path(), s->body(), [s](std::string_view b, int64_t t) { return s->on_bytes(b, t); },
            [&r, s, i](sb::StreamOutcome o) {
                try {
                    r.gens[i] = s->finish(o);
                } catch (const sb::Error& err) {
                    r.errors[i] = err.what();
                }
            });
    }
    EXPECT_EQ(multi.in_flight(), static_cast<int>(prompts.size()));
    while (multi.in_flight() > 0)
        multi.poll(1000);
    return r;
}

// The same through a thread per request, each with its own connected engine.
LoopResult run_threads(const sb::HttpEngineOptions& o, const std::vector<std::string>& prompts,
                       int64_t n_gen) {
    LoopResult r;
    r.gens.resize(prompts.size());
    r.errors.resize(prompts.size());
    std::vector<std::thread> ts;
    for (size_t i = 0; i < prompts.size(); ++i)
        ts.emplace_back([&, i] {
            sb::HttpEngine e(o);
            e.connect();
            try {
                r.gens[i] = e.generate("", prompt(prompts[i]), n_gen, 1);
            } catch (const sb::Error& err) {
                r.errors[i] = err.what();
            }
        });
    for (auto& t : ts)
        t.join();
    return r;
}

// What the timing of a generation must satisfy whichever client read it: TTFT and E2E from the
// client's own start stamp to the first and last chunk, the gaps adding up to the streamed time.
void expect_timing_structure(const sb::Generation& g, int64_t n_gen) {
    ASSERT_EQ(g.chunks.size(), static_cast<size_t>(n_gen));
    const sb::RequestTiming t = sb::compute_timing(g);
    EXPECT_EQ(t.n_out, n_gen);
    EXPECT_EQ(t.ttft_ns, g.chunks.front().arrival_ns - g.start_ns);
    EXPECT_EQ(t.e2e_ns, g.chunks.back().arrival_ns - g.start_ns);
    ASSERT_EQ(t.itl_ns.size(), static_cast<size_t>(n_gen - 1));
    EXPECT_EQ(std::accumulate(t.itl_ns.begin(), t.itl_ns.end(), int64_t{0}), t.e2e_ns - t.ttft_ns);
    for (size_t i = 1; i < g.chunks.size(); ++i)
        EXPECT_LE(g.chunks[i - 1].arrival_ns, g.chunks[i].arrival_ns);
    EXPECT_LE(g.start_ns, g.chunks.front().arrival_ns);
    EXPECT_LE(g.chunks.back().arrival_ns, g.end_ns);
}

}  // namespace

// The raw transfers: every streamed byte framed by SseParser gives the same messages, in the
// same order, whether post_stream read them on its thread or HttpMulti with three others.
TEST(HttpMulti, FramesTheSameMessagesAsPostStream) {
    FaultServer server(scripted);
    const json body{{"prompt", "x"}, {"max_tokens", 5}, {"stream", true}};
    auto collect = [](sb::SseParser& p, std::vector<sb::StreamMessage>& out) {
        return [&p, &out](std::string_view b, int64_t t) {
            p.feed(b, t, out);
            return true;
        };
    };
    sb::HttpClient client(server.url(), sb::HttpTimeouts{2000, 5000});
    sb::SseParser tp;
    std::vector<sb::StreamMessage> threaded;
    const sb::StreamOutcome to = client.post_stream("/v1/completions", body, collect(tp, threaded));
    ASSERT_TRUE(to.complete);
    ASSERT_EQ(to.status, 200);
    ASSERT_FALSE(to.error);
    ASSERT_EQ(threaded.size(), 8u);  // 5 texts, the finish, the usage, [DONE]

    constexpr int kN = 4;
    sb::HttpMulti multi(server.url(), sb::HttpTimeouts{2000, 5000});
    std::vector<sb::SseParser> parsers(kN);
    std::vector<std::vector<sb::StreamMessage>> got(kN);
    std::vector<sb::StreamOutcome> outcomes(kN);
    std::vector<int> done(kN, 0);
    for (int i = 0; i < kN; ++i)
        multi.start_stream("/v1/completions", body, collect(parsers[i], got[i]),
                           [&, i](sb::StreamOutcome o) {
                               outcomes[i] = std::move(o);
                               ++done[i];
                           });
    while (multi.in_flight() > 0)
        multi.poll(1000);
    for (int i = 0; i < kN; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(done[i], 1);
        EXPECT_TRUE(outcomes[i].complete);
        EXPECT_EQ(outcomes[i].status, 200);
        EXPECT_FALSE(outcomes[i].error);
        EXPECT_FALSE(outcomes[i].stopped);
        ASSERT_EQ(got[i].size(), threaded.size());
        for (size_t m = 0; m < threaded.size(); ++m) {
            EXPECT_EQ(got[i][m].data, threaded[m].data);
            EXPECT_EQ(got[i][m].event, threaded[m].event);
            EXPECT_LE(outcomes[i].start_ns, got[i][m].arrival_ns);
            if (m > 0) {
                EXPECT_LE(got[i][m - 1].arrival_ns, got[i][m].arrival_ns);
            }
        }
    }
    // Connections: the threaded one, and one per stream in flight at once.
    EXPECT_EQ(server.requests(), 1 + kN);
}

// on_bytes returning false stops the transfer as it stops post_stream's.
TEST(HttpMulti, StopsWhenTheCallbackSaysSo) {
    FaultServer server(scripted);
    sb::HttpMulti multi(server.url(), sb::HttpTimeouts{2000, 5000});
    sb::StreamOutcome out;
    int calls = 0;
    multi.start_stream(
        "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 50}},
        [&](std::string_view, int64_t) { return ++calls < 2; },
        [&](sb::StreamOutcome o) { out = std::move(o); });
    while (multi.in_flight() > 0)
        multi.poll(1000);
    EXPECT_EQ(calls, 2);
    EXPECT_TRUE(out.stopped);
    EXPECT_FALSE(out.complete);
    EXPECT_FALSE(out.error);
}

// HttpEngine's generations, read by the loop and by threads: the same chunks, token counts,
// finish and usage, and the same timing structure.
TEST(HttpMulti, GenerationsAndTimingAsTheThreadedClient) {
    FaultServer server(scripted);
    sb::HttpEngine e(engine_options(server));
    e.connect();
    const std::vector<std::string> prompts = {"p0", "p1", "p2", "p3"};
    const LoopResult loop = run_loop(e, prompts, 6);
    const LoopResult threads = run_threads(engine_options(server), prompts, 6);
    for (size_t i = 0; i < prompts.size(); ++i) {
        SCOPED_TRACE(i);
        ASSERT_EQ(loop.errors[i], "");
        ASSERT_EQ(threads.errors[i], "");
        const sb::Generation& a = loop.gens[i];
        const sb::Generation& b = threads.gens[i];
        expect_timing_structure(a, 6);
        expect_timing_structure(b, 6);
        ASSERT_EQ(a.chunks.size(), b.chunks.size());
        for (size_t c = 0; c < a.chunks.size(); ++c) {
            EXPECT_EQ(a.chunks[c].content, b.chunks[c].content);
            EXPECT_EQ(a.chunks[c].tokens, b.chunks[c].tokens);
            EXPECT_EQ(a.chunks[c].cum_tokens, b.chunks[c].cum_tokens);
        }
        EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
        EXPECT_EQ(a.prompt_tokens, 8);
        EXPECT_EQ(a.completion_tokens, b.completion_tokens);
        EXPECT_EQ(a.completion_tokens, 6);
        EXPECT_EQ(a.finish_reason, b.finish_reason);
        EXPECT_EQ(a.finish_reason, "length");
    }
}

// The same faults give the same one-line errors, and the good requests beside them stand.
TEST(HttpMulti, FaultsGiveTheThreadedClientsErrors) {
    FaultServer server(scripted);
    const auto opts = engine_options(server, 1000);
    sb::HttpEngine e(opts);
    e.connect();
    const std::vector<std::string> prompts = {"fault:500", "ok", "fault:closed", "fault:silent",
                                              "fault:malformed"};
    const LoopResult loop = run_loop(e, prompts, 3);
    const LoopResult threads = run_threads(opts, prompts, 3);
    const std::string where = server.url() + "/v1/completions";
    const std::vector<std::string> expected = {
        "HTTP 500 from " + where + ": overloaded (injected)", "",
        "closed the connection mid-response",
        "no data from " + server.url() + " for 1 s (--timeout)", "malformed JSON in the stream"};
    for (size_t i = 0; i < prompts.size(); ++i) {
        SCOPED_TRACE(prompts[i]);
        EXPECT_EQ(loop.errors[i], threads.errors[i]);
        if (expected[i].empty())
            EXPECT_EQ(loop.errors[i], "");
        else
            EXPECT_NE(loop.errors[i].find(expected[i]), std::string::npos) << loop.errors[i];
    }
    expect_timing_structure(loop.gens[1], 3);
}

TEST(HttpMulti, UnreachableServerIsTheSameLine) {
    const int port = sb::free_loopback_port();
    sb::HttpMulti multi("http://127.0.0.1:" + std::to_string(port), sb::HttpTimeouts{2000, 2000});
    sb::StreamOutcome out;
    multi.start_stream(
        "/v1/completions", json::object(), [](std::string_view, int64_t) { return true; },
        [&](sb::StreamOutcome o) { out = std::move(o); });
    while (multi.in_flight() > 0)
        multi.poll(1000);
    sb::HttpClient client("http://127.0.0.1:" + std::to_string(port), sb::HttpTimeouts{2000, 2000});
    const sb::StreamOutcome t =
        client.post_stream("/v1/completions", json::object(), [](auto, auto) { return true; });
    ASSERT_TRUE(out.error);
    ASSERT_TRUE(t.error);
    // The same line but for libcurl's "after N ms", the time each refusal took (0 or 5 ms on
    // a loaded machine).
    const std::regex took(R"(after \d+ ms)");
    EXPECT_EQ(std::regex_replace(*out.error, took, "after N ms"),
              std::regex_replace(*t.error, took, "after N ms"));
    EXPECT_EQ(out.error->rfind("cannot connect to http://127.0.0.1:", 0), 0u) << *out.error;
}

// `serve --client loop`: closed and open loop record every request as the threaded client
// does (the same fields, exact token counts and gaps), and a bad --client is exit 2.
TEST(HttpMulti, ServeWithTheLoopClientRecordsEveryRequest) {
    FaultServer server(scripted);
    for (const std::string client : {"loop", "thread"}) {
        SCOPED_TRACE(client);
        for (const std::string sweep : {"--concurrency", "--rate"}) {
            Proc q = run_sb({"serve", "--url", server.url(), "--client", client, sweep,
                             sweep == "--rate" ? "inf" : "3", "--requests", "7", "-p", "8", "-n",
                             "4", "-o", "json", "--telemetry", "off"});
            ASSERT_EQ(q.exit_code, 0) << q.err;
            const json doc = json::parse(q.out);
            EXPECT_EQ(doc["serve"]["client"], client);
            const json pt = doc["serve"]["points"][0];
            ASSERT_EQ(pt["requests"].size(), 7u);
            EXPECT_EQ(pt["ok"], 7);
            EXPECT_EQ(pt["errors"], 0);
            std::vector<int> seen;
            for (const auto& r : pt["requests"]) {
                seen.push_back(r["index"].get<int>());
                EXPECT_TRUE(r["error"].is_null()) << r;
                EXPECT_EQ(r["output_tokens"], 4);
                EXPECT_EQ(r["prompt_tokens"], 8);
                ASSERT_EQ(r["itl_ns"].size(), 3u);
                int64_t sum = 0;
                for (const auto& g : r["itl_ns"])
                    sum += g.get<int64_t>();
                EXPECT_EQ(sum, r["e2e_ns"].get<int64_t>() - r["ttft_ns"].get<int64_t>());
                EXPECT_EQ(r["tpot_ns"].get<int64_t>(),
                          (r["e2e_ns"].get<int64_t>() - r["ttft_ns"].get<int64_t>()) / 3);
            }
            std::sort(seen.begin(), seen.end());
            EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
            EXPECT_FALSE(pt["client_cpu_ms_per_request"].is_null());
        }
    }
    Proc bad = run_sb({"serve", "--url", server.url(), "--client", "fibers", "--concurrency", "1"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--client 'fibers': expected thread or loop"), std::string::npos)
        << bad.err;
}
