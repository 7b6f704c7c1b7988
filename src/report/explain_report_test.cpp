// explain's Markdown: the line on the server's own timings of levels 4 and 5, on a scripted
// section.
#include <gtest/gtest.h>

#include <sstream>

#include "core/result.hpp"
#include "report/explain_report.hpp"

namespace sb {
namespace {

ServerClaim claim(std::vector<std::string> disagreements = {}) {
    return ServerClaim{{"llama-server", 64, 0, 4, 2'000'000, 3'000'000, {}, {}},
                       std::move(disagreements)};
}

ExplainSection section() {
    ExplainSection s;
    s.model_path = "m.gguf";
    s.server_kind = "llama-server";
    ExplainMeasure server;
    server.id = "server";
    server.level = "server";
    server.what = "one client";
    ExplainRun r0, r1;
    r0.round = 0;
    r0.server_claim = claim();
    r1.round = 1;
    r1.server_claim = claim();
    server.runs = {r0, r1};
    ExplainMeasure served;
    served.id = "served@2";
    served.level = "served";
    served.what = "2 clients";
    ExplainRun sr;
    sr.round = 0;
    sr.clients = {ExplainClient{}, ExplainClient{}};
    sr.clients[0].client = 0;
    sr.clients[0].server_claim = claim();
    sr.clients[1].client = 1;  // its server said nothing
    served.runs = {sr};
    s.measures = {server, served};
    return s;
}

TEST(ExplainReport, TheServersClaimsInOneLineUnderTheLevels) {
    ExplainSection s = section();
    std::ostringstream agree;
    write_explain_markdown(s, {}, agree);
    EXPECT_NE(agree.str().find(
                  "- the server's own timings (kept per request as server_claim): 3 of 3 "
                  "request(s) agree with the client's measurement (the same token counts, the "
                  "prompt time within the client's TTFT, prompt and generation within its E2E, by "
                  "at most 1 ms + 1 % of the client's span)\n"),
              std::string::npos)
        << agree.str();
    s.measures[1].runs[0].clients[0].server_claim =
        claim({"the llama-server timings count 5 generated tokens, the client 4: not believed"});
    std::ostringstream one;
    write_explain_markdown(s, {}, one);
    EXPECT_NE(one.str().find("2 of 3 request(s) agree with the client's measurement (the same "
                             "token counts, the prompt time within the client's TTFT, prompt and "
                             "generation within its E2E, by at most 1 ms + 1 % of the client's "
                             "span); 1 disagree (not used), e.g. served@2 round 1 client 1: the "
                             "llama-server timings count 5 generated tokens, the client 4: not "
                             "believed\n"),
              std::string::npos)
        << one.str();
    // Without claims, no line.
    for (auto& m : s.measures)
        for (auto& r : m.runs) {
            r.server_claim.reset();
            for (auto& c : r.clients)
                c.server_claim.reset();
        }
    std::ostringstream none;
    write_explain_markdown(s, {}, none);
    EXPECT_EQ(none.str().find("the server's own timings"), std::string::npos);
}

}  // namespace
}  // namespace sb
