// The serve serve_section in the Markdown table and in the HTML report's data, on a scripted
// serve_section.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "core/result.hpp"
#include "report/html_data.hpp"
#include "report/serve_report.hpp"

namespace sb {
namespace {

ServeSection serve_section() {
    ServeSection s;
    s.slots = 4;
    s.n_prompt = 16;
    s.n_gen = 8;
    s.slo_ms = {{"ttft", 500.0}};
    s.server = {{"server", "llama-server"}};
    ServePoint p;
    p.mode = "concurrency";
    p.value = 4;
    p.ok = 3;
    p.errors = 1;
    p.request_per_s = 1.5;
    p.output_tokens_per_s = 12.25;
    p.ttft = {3, 100.0, 110.0, 150.0, 199.0, {}, {}, {}, {}};
    p.tpot = {3, 20.0, 21.0, 25.0, 29.5, {}, {}, {}, {}};
    p.itl = {21, 20.0, 20.0, 24.0, 40.0, {}, {}, {}, {}};
    p.e2e = {3, 300.0, 310.0, 350.0, 390.0, {}, {}, {}, {}};
    p.goodput_per_s = 1.0;
    p.client_cpu_pct = 7;
    ServePoint inf = p;
    inf.mode = "rate";
    inf.value = std::numeric_limits<double>::infinity();
    inf.client_cpu_pct.reset();
    s.points = {p, inf};
    return s;
}

TEST(ServeReport, MarkdownRowPerPoint) {
    std::ostringstream out;
    write_serve_markdown(serve_section(), {{"serve_client_cpu", "too busy", "fewer clients"}}, out);
    EXPECT_EQ(out.str(),
              "| point | ok | failed | req/s | output tok/s | TTFT median ms | TTFT p99 ms | TPOT "
              "median ms | ITL p99 ms | E2E p90 ms | goodput req/s | client CPU |\n"
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "|\n"
              "| concurrency 4 | 3 | 1 | 1.50 | 12.2 | 110.0 | 199.0 | 21.0 | 40.0 | 350.0 | 1.00 "
              "| 7 % |\n"
              "| rate inf | 3 | 1 | 1.50 | 12.2 | 110.0 | 199.0 | 21.0 | 40.0 | 350.0 | 1.00 | - "
              "|\n"
              "\nTTFT: first streamed token (answer content, reasoning or a tool call) from the "
              "request's send; each request also keeps the first byte of the stream and the first "
              "content token (ttft_first_byte_ns, ttft_first_content_ns) and the server's request "
              "id where the API returns one.\n"
              "\nwarning: too busy (fewer clients)\n");
}

// The server's own timings: one line, how many requests agree with the client and the first
// that does not; none without them.
TEST(ServeReport, TheServersClaimsInOneLine) {
    ServeSection s = serve_section();
    s.points[0].requests.resize(3);
    for (int i = 0; i < 3; ++i) {
        ServeRequest& q = s.points[0].requests[static_cast<size_t>(i)];
        q.index = i;
        if (i == 2)
            continue;  // a request whose server said nothing
        q.server_claim = ServerClaim{{"llama-server", 16, 0, 8, 1, 2, {}, {}}, {}};
    }
    std::ostringstream agree;
    write_server_claims_markdown(s, agree);
    EXPECT_EQ(agree.str(),
              "\nServer timings (llama-server's own claims, kept per request as server_claim "
              "beside the client's measurement): 2 of 2 request(s) agree with it (the same token "
              "counts, the prompt time within the client's TTFT, prompt and generation within its "
              "E2E, by at most 1 ms + 1 % of the client's span).\n");
    s.points[0].requests[1].server_claim->disagreements = {
        "the llama-server timings count 9 "
        "generated tokens, the client 8: not "
        "believed"};
    std::ostringstream one;
    write_serve_markdown(s, {}, one);
    EXPECT_NE(one.str().find("): 1 of 2 request(s) agree with it (the same token counts, the "
                             "prompt time within the client's TTFT, prompt and generation within "
                             "its E2E, by at most 1 ms + 1 % of the client's span); 1 disagree, "
                             "e.g. concurrency 4 request 1: the llama-server timings count 9 "
                             "generated tokens, the client 8: not believed.\n"),
              std::string::npos)
        << one.str();
    std::ostringstream none;
    write_server_claims_markdown(serve_section(), none);
    EXPECT_EQ(none.str(), "");
}

TEST(ServeReport, APointStoppedByTheErrorRateSaysSo) {
    ServeSection s = serve_section();
    s.max_error_rate = 0.25;
    s.points[0].stopped_by = "max_error_rate";
    s.points[0].requests.resize(4);
    std::ostringstream out;
    write_serve_markdown(s, {}, out);
    EXPECT_NE(out.str().find("\nconcurrency 4 stopped early (max_error_rate): 1 of its 4 "
                             "request(s) sent failed, more than --max-error-rate 0.25; the rest "
                             "were not sent.\n"),
              std::string::npos)
        << out.str();
    EXPECT_EQ(out.str().find("rate inf stopped early"), std::string::npos);
}

TEST(ServeReport, HtmlDataHasTheCurveAndThePercentiles) {
    ResultDocument d;
    d.command = "serve";
    EXPECT_TRUE(serve_view(d).is_null());
    d.serve = serve_section();
    const nlohmann::json v = serve_view(d);
    EXPECT_EQ(v["server"], "llama-server");
    EXPECT_EQ(v["slots"], 4);
    EXPECT_EQ(v["slo_ms"], nlohmann::json({{"ttft", 500.0}}));
    ASSERT_EQ(v["points"].size(), 2u);
    EXPECT_EQ(v["points"][0]["label"], "concurrency 4");
    EXPECT_EQ(v["points"][1]["label"], "rate inf");
    EXPECT_EQ(v["points"][0]["output_tps"], 12.25);
    EXPECT_EQ(v["points"][0]["ttft"]["p50"], 110.0);
    EXPECT_EQ(v["points"][0]["ttft"]["p99"], 199.0);
    EXPECT_EQ(v["points"][0]["tpot"]["p90"], 25.0);
    EXPECT_EQ(v["points"][0]["e2e"]["mean"], 300.0);
    EXPECT_EQ(v["points"][0]["goodput_per_s"], 1.0);
    // The whole page's data holds the serve_section for a serve document.
    const nlohmann::json page = report_view({ReportInput::of("s.json", d)});
    EXPECT_EQ(page["documents"][0]["serve"], v);
    EXPECT_TRUE(page["documents"][0]["notes"].empty()) << page["documents"][0]["notes"];
}

}  // namespace
}  // namespace sb
