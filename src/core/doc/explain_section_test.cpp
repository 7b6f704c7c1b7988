#include "core/doc/explain_section.hpp"

#include <gtest/gtest.h>

#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

ExplainSection sample() {
    ExplainSection s;
    s.model_path = "m.gguf";
    s.n_prompt = 512;
    s.n_gen = 16;
    s.n_threads = 2;
    s.rounds = 3;
    s.concurrency = {4};
    s.server_args = {"-ub", "32"};
    s.server_kind = "llama-server";
    s.settings_read = true;
    s.server = {{"url", "http://127.0.0.1:1"}};
    s.chat_template = "the model's";
    s.sampler = {{"top_k", 40}};
    s.order = {"ops", "graph", "server"};
    ExplainMeasure m;
    m.id = "server";
    m.level = "server";
    m.what = "one client";
    m.config = {{"slots", 1}};
    ExplainRun r;
    r.round = 1;
    r.sequence = 4;
    r.start_ns = 100;
    r.end_ns = 200;
    r.prefill_ns = 1.5e6;
    r.decode_ns = 2.5e5;
    r.prompt_tokens = 512;
    r.output_tokens = 16;
    r.server = ExplainServerTimes{512, 3, 16, 1.2e6, 3e6};
    r.server_claim = ServerClaim{
        {"llama-server", 509, 3, 16, 1'200'000, 3'000'000, std::nullopt, std::nullopt}, {}};
    r.notes = {"n"};
    ExplainRun failed;
    failed.round = 2;
    failed.error = "HTTP 500";
    m.runs = {r, failed};
    m.prefill = {1, 1.5e6, std::nullopt, std::nullopt};
    ExplainMeasure served;
    served.id = "served@4";
    served.level = "served";
    served.concurrency = 4;
    ExplainRun sr;
    sr.clients = {
        {0, 1e6, 2e5, 512, 16, std::nullopt, std::nullopt},
        {1, std::nullopt, std::nullopt, std::nullopt, std::nullopt, "boom", std::nullopt}};
    sr.clients[0].server_claim =
        ServerClaim{{"llama-server", 512, 0, 17, 1'500'000, 3'000'000, std::nullopt, std::nullopt},
                    {"the llama-server timings count 17 generated tokens, the client 16: not "
                     "believed"}};
    served.runs = {sr};
    s.measures = {m, served};
    ExplainSetting set;
    set.name = "n_ubatch";
    set.label = "micro-batch (-ub)";
    set.bench = "512";
    set.server = "32";
    set.source = "--server-args";
    set.differs = true;
    set.measure = "graph+n_ubatch";
    ExplainSetting unknown;
    unknown.name = "type_k";
    unknown.bench = "f16";
    s.settings = {set, unknown};
    ExplainPart p;
    p.stage = "prefill";
    p.kind = "setting";
    p.name = "n_ubatch";
    p.from = "graph";
    p.to = "graph+n_ubatch";
    p.ns = 3e6;
    p.ci95_lo_ns = 2e6;
    p.ci95_hi_ns = 4e6;
    p.share = 0.7;
    p.n_rounds = 3;
    s.parts = {p};
    s.steps = {p};
    s.findings = {{"order", "decode", "ops above graph"}};
    s.verdicts = {"prefill: ..."};
    s.notes = {"a note"};
    s.interrupted = true;
    return s;
}

TEST(ExplainSection, JsonRoundTripsEveryField) {
    const ExplainSection s = sample();
    const json j = to_json(s);
    ExplainSection back;
    read(JsonIn(j, "'e.json'"), back);
    EXPECT_EQ(to_json(back), j);
    EXPECT_EQ(j["measures"][0]["runs"][0]["server"]["cache_n"], 3);
    EXPECT_TRUE(j["measures"][0]["runs"][1]["prefill_ns"].is_null());
    EXPECT_TRUE(j["settings"][1]["server"].is_null()) << "missing is not zero";
    EXPECT_EQ(j["url"], nullptr);
    // The server's claims: level 4's run and level 5's clients, absent where none was said.
    EXPECT_EQ(j["measures"][0]["runs"][0]["server_claim"]["prompt_n"], 509);
    EXPECT_TRUE(j["measures"][0]["runs"][0]["server_claim"]["disagreements"].empty());
    EXPECT_FALSE(j["measures"][0]["runs"][1].contains("server_claim"));
    const json& c0 = j["measures"][1]["runs"][0]["clients"][0]["server_claim"];
    EXPECT_EQ(c0["predicted_n"], 17);
    EXPECT_EQ(c0["disagreements"].size(), 1u);
    EXPECT_FALSE(j["measures"][1]["runs"][0]["clients"][1].contains("server_claim"));
    ASSERT_TRUE(back.measures[1].runs[0].clients[0].server_claim);
    EXPECT_EQ(back.measures[1].runs[0].clients[0].server_claim->said.prompt_ns, 1'500'000);
}

TEST(ExplainSection, ThroughTheResultDocument) {
    ResultDocument d;
    d.command = "explain";
    d.explain = sample();
    const json j = to_json(d);
    ASSERT_TRUE(j.contains("explain"));
    ResultDocument back;
    read(JsonIn(j, "'e.json'"), back);
    ASSERT_TRUE(back.explain);
    EXPECT_EQ(to_json(*back.explain), to_json(*d.explain));
    // A document without the section has none.
    ResultDocument plain;
    EXPECT_FALSE(to_json(plain).contains("explain"));
}

TEST(ExplainSection, AWrongShapeIsOneLineNamingTheField) {
    json j = to_json(sample());
    j["measures"][0]["runs"][0]["prefill_ns"] = "fast";
    ExplainSection back;
    try {
        read(JsonIn(j, "'e.json'"), back);
        FAIL() << "read a string as a time";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("'e.json': measures[0].runs[0].prefill_ns"),
                  std::string::npos)
            << e.what();
    }
}

// A time or a count below 0 cannot be true; a part of the gap (a difference) may be negative.
TEST(ExplainSection, ANegativeTimeIsRefusedADifferenceIsNot) {
    json j = to_json(sample());
    j["measures"][0]["runs"][0]["decode_ns"] = -5;
    ExplainSection back;
    try {
        read(JsonIn(j, "'e.json'"), back);
        FAIL() << "read a negative time";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("measures[0].runs[0].decode_ns: expected at least 0"),
                  std::string::npos)
            << e.what();
    }
    json k = to_json(sample());
    ExplainPart p;
    p.stage = "prefill";
    p.kind = "setting";
    p.name = "threads";
    p.ns = -2e6;
    p.ci95_lo_ns = -3e6;
    p.ci95_hi_ns = -1e6;
    k["parts"].push_back(to_json(p));
    read(JsonIn(k, "'e.json'"), back);
    EXPECT_EQ(back.parts.back().ns, -2e6);
}

TEST(ExplainSection, FindMeasure) {
    const ExplainSection s = sample();
    ASSERT_NE(find_measure(s, "served@4"), nullptr);
    EXPECT_EQ(find_measure(s, "served@4")->concurrency, 4);
    EXPECT_EQ(find_measure(s, "nope"), nullptr);
}

}  // namespace
}  // namespace sb
