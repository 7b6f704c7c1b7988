// The "modes" section's JSON round trip through a whole result document, and the one-line error
// of a malformed one.
#include "core/doc/modes_section.hpp"

#include <gtest/gtest.h>

#include "core/result.hpp"

namespace sb {
namespace {

TEST(ModesSection, RoundTripsThroughTheDocument) {
    ModesSection s;
    s.source = "processes";
    s.model_path = "m.gguf";
    s.devices = "CPU";
    s.n_prompt = 16;
    s.n_gen = 4;
    s.rounds = 2;
    s.stages = {"prefill", "decode"};
    s.time_basis = "wall";
    Mode m;
    m.name = "queue";
    m.env = {{"GGML_HEXAGON_OPSTAGE", "0x1"}};
    ModeRun r;
    r.round = 1;
    r.sequence = 3;
    r.stage_ns = {{"prefill", 1500.5}, {"decode", 700}};
    r.exit_code = 0;
    r.wall_ns = 123456789;
    r.env_seen = {{"GGML_HEXAGON_OPSTAGE", "0x1"}};
    r.n_threads = 2;
    m.runs.push_back(r);
    ModeRun bad;
    bad.error = "the child process killed by signal 11";
    m.runs.push_back(bad);
    m.times.push_back({"prefill", 1, 1500.5, std::nullopt, std::nullopt});
    m.n_failed = 1;
    Mode full;
    full.name = "full";
    full.log_path = "c.log";
    s.modes = {m, full};
    ModePart p;
    p.stage = "prefill";
    p.name = "full";
    p.from = "queue";
    p.ns = 10;
    p.ci95_lo_ns = -1;
    p.ci95_hi_ns = 20;
    p.share = 0.5;
    p.no_difference = true;
    p.note = "full less queue";
    s.parts.push_back(p);
    s.notes = {"n"};

    ResultDocument doc;
    doc.command = "decompose";
    doc.modes = s;
    const nlohmann::json j = to_json(doc);
    ASSERT_TRUE(j.contains("modes"));
    const ResultDocument back = from_json<ResultDocument>(j, "d.json");
    const std::optional<ModesSection> s2 = back.modes;
    ASSERT_TRUE(s2);
    EXPECT_EQ(to_json(*s2), to_json(s));
    EXPECT_EQ(to_json(back), j);
    EXPECT_EQ(s2->modes[0].runs[0].stage_ns.at("prefill"), 1500.5);
    EXPECT_EQ(*s2->modes[1].log_path, "c.log");
    EXPECT_FALSE(ResultDocument{}.modes);
}

TEST(ModesSection, AMalformedSectionIsOneLineNamingTheField) {
    nlohmann::json j = to_json(ResultDocument{});
    j["modes"] = {{"modes", {{{"name", "a"}, {"runs", "nope"}}}}};
    try {
        (void)from_json<ResultDocument>(j, "d.json");
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "d.json: modes.modes[0].runs: expected an array, found a string");
    }
}

}  // namespace
}  // namespace sb
