// What users of serving benchmarks asked of `serve` (issue 29): each request's TTFT by the
// definitions harnesses disagree on (first byte of the stream, first streamed token, first
// content token), the one the statistics use named; the server's request id per request; and
// --max-error-rate ending a point early. Against the fault server, which times its bytes
// exactly as the test says.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_harness.hpp"
#include "core/clock.hpp"
#include "fault_server.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;

std::string sse(const json& j) {
    return "data: " + j.dump() + "\n\n";
}

json delta(const std::string& id, const json& d, const json& finish = nullptr) {
    return json{{"id", id},
                {"object", "chat.completion.chunk"},
                {"choices", {{{"index", 0}, {"delta", d}, {"finish_reason", finish}}}}};
}

// The three stamps are checked against when the server sent each part, on the monotonic clock
// both processes read (a request's absolute times: its point's start_ns + send_ns + the TTFT):
// no stamp can come before its part was sent, whatever the machine's stalls (which only make a
// stamp later), and a stamp taken at an earlier part than its own would.
struct SentAt {
    int64_t comment = 0, reasoning = 0, content = 0;
};

TEST(ServeTtft, EveryRequestKeepsTheFirstByteTheFirstTokenTheFirstContentAndItsId) {
    std::atomic<int> k{0};
    std::mutex mu;
    std::map<std::string, SentAt> sent;  // by the request's id
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        const int n = req.json().value("max_tokens", 1);
        const std::string id = "chatcmpl-" + std::to_string(k++);
        SentAt at;
        c.begin_chunked(200, "text/event-stream");
        at.comment = sb::now_ns();
        c.chunk(": keep-alive\n\n");  // the first byte: no token
        c.sleep_ms(40);
        c.chunk(sse(delta(id, {{"role", "assistant"}})));
        at.reasoning = sb::now_ns();
        c.chunk(sse(delta(id, {{"reasoning_content", "hm"}})));  // the first token: reasoning
        c.sleep_ms(40);
        at.content = sb::now_ns();
        {
            std::lock_guard<std::mutex> lock(mu);
            sent[id] = at;
        }
        for (int i = 1; i < n; ++i)
            c.chunk(sse(delta(id, {{"content", "a"}})));  // the first content
        c.chunk(sse(delta(id, json::object(), "length")));
        c.chunk(sse(json{{"id", id},
                         {"choices", json::array()},
                         {"usage", {{"prompt_tokens", 8}, {"completion_tokens", n}}}}));
        c.chunk("data: [DONE]\n\n");
        c.end_chunked();
    });
    Proc p = run_sb({"serve", "--url", server.url(), "--api", "openai-chat", "-p", "8", "-n", "4",
                     "--concurrency", "1", "--requests", "3", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json d = json::parse(p.out);
    EXPECT_NE(d["serve"]["ttft_definition"].get<std::string>().find("first streamed token"),
              std::string::npos);
    const json& point = d["serve"]["points"][0];
    const json& reqs = point["requests"];
    ASSERT_EQ(reqs.size(), 3u);
    std::set<std::string> ids;
    for (const auto& r : reqs) {
        ASSERT_TRUE(r["ttft_first_byte_ns"].is_number()) << r;
        ASSERT_TRUE(r["ttft_first_content_ns"].is_number()) << r;
        const int64_t byte = r["ttft_first_byte_ns"], token = r["ttft_ns"],
                      content = r["ttft_first_content_ns"];
        EXPECT_GE(byte, 0);
        EXPECT_LE(byte, token);
        EXPECT_LE(token, content);
        ASSERT_TRUE(r["request_id"].is_string()) << r;
        const std::string id = r["request_id"];
        SentAt at;
        {
            std::lock_guard<std::mutex> lock(mu);
            ASSERT_TRUE(sent.count(id)) << id;
            at = sent[id];
        }
        const int64_t sent_ns = point["start_ns"].get<int64_t>() + r["send_ns"].get<int64_t>();
        EXPECT_GE(sent_ns + byte, at.comment) << "the first byte: the comment";
        EXPECT_GE(sent_ns + token, at.reasoning) << "the first token: the reasoning, 40 ms later";
        EXPECT_GE(sent_ns + content, at.content) << "the first content, 40 ms after that";
        EXPECT_TRUE(
            std::regex_match(r["request_id"].get<std::string>(), std::regex("chatcmpl-[0-9]+")))
            << r["request_id"];
        ids.insert(r["request_id"].get<std::string>());
    }
    EXPECT_EQ(ids.size(), 3u) << "one id per request";
    // The Markdown names the definition.
    Proc md = run_sb({"serve", "--url", server.url(), "--api", "openai-chat", "-p", "8", "-n", "4",
                      "--concurrency", "1", "--requests", "1"});
    EXPECT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("TTFT: first streamed token"), std::string::npos) << md.out;
}

// A server that fails every other measured request: with --max-error-rate 0.25 the point stops
// once 4 requests finished (2 failed, 50 %), the rest are not sent and the point says why;
// with 0.6 every request is sent.
TEST(ServeTtft, MaxErrorRateStopsAPointAgainstAServerFailingEveryOtherRequest) {
    std::atomic<int> n{0};
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        // The measured requests ask for 4 tokens; the prompt calibration asks for fewer.
        if (req.json().value("max_tokens", 1) == 4 && n++ % 2 == 1) {
            c.reply(500, "application/json", R"({"error":"overloaded"})");
            return;
        }
        c.begin_chunked(200, "text/event-stream");
        for (int i = 0; i < 4; ++i)
            c.chunk(sse_text("t"));
        c.chunk(sse_final(8, 4));
        c.end_chunked();
    });
    Proc p = run_sb({"serve", "--url", server.url(), "-p", "8", "-n", "4", "--concurrency", "1",
                     "--requests", "20", "--max-error-rate", "0.25", "-o", "json"});
    EXPECT_EQ(p.exit_code, 1) << p.err;
    const json d = json::parse(p.out);
    EXPECT_EQ(d["serve"]["max_error_rate"], 0.25);
    const json& pt = d["serve"]["points"][0];
    EXPECT_EQ(pt["stopped_by"], "max_error_rate");
    EXPECT_EQ(pt["requests"].size(), 4u) << "stopped once 4 finished, 2 of them failed";
    EXPECT_EQ(pt["errors"], 2);
    EXPECT_EQ(pt["ok"], 2);
    EXPECT_NE(p.err.find("stopped after 4 of 20 requests"), std::string::npos) << p.err;

    n = 0;
    Proc q = run_sb({"serve", "--url", server.url(), "-p", "8", "-n", "4", "--concurrency", "1",
                     "--requests", "20", "--max-error-rate", "0.6", "-o", "json"});
    EXPECT_EQ(q.exit_code, 1) << q.err;
    const json qd = json::parse(q.out);
    const json& all = qd["serve"]["points"][0];
    EXPECT_TRUE(all["stopped_by"].is_null());
    EXPECT_EQ(all["requests"].size(), 20u);
    EXPECT_EQ(all["errors"], 10);

    Proc bad =
        run_sb({"serve", "--url", server.url(), "--concurrency", "1", "--max-error-rate", "1.5"});
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
