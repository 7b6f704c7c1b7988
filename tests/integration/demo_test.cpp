// `stagebench demo`, the README's main job, on a small setting: every file it promises, the
// hybrid section and the advice drawn from both documents.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

using nlohmann::json;

TEST(Demo, WritesModelResultsHybridAndAdvice) {
    sbtest::TempDir t;
    const std::string dir = t.file("demo");
    sbtest::Proc p =
        sbtest::run_sb({"demo", "--dir", dir, "--preset", "tiny", "--layers", "1", "-p", "32", "-n",
                        "8", "-r", "2", "-t", "1", "--db", t.file("r.sqlite"), "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    for (const char* f :
         {"model.gguf", "result.json", "hybrid.json", "summary.md", "report.html", "trace.json"})
        EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / f)) << f;
    const json run = json::parse(sbtest::read_file(dir + "/result.json"));
    EXPECT_EQ(run["command"], "demo");
    EXPECT_GE(run["tests"].size(), 2u);  // CPU and the RPC device at least
    const json hybrid = json::parse(sbtest::read_file(dir + "/hybrid.json"));
    EXPECT_EQ(hybrid["command"], "hybrid");
    EXPECT_EQ(hybrid["tests"].size(), 3u);
    const std::string summary = sbtest::read_file(dir + "/summary.md");
    EXPECT_NE(summary.find("## Hybrid: prefill on CPU, decode on RPC0"), std::string::npos);
    EXPECT_NE(summary.find("## Advice"), std::string::npos);
    EXPECT_NE(summary.find("predicted at"), std::string::npos) << summary;
    // stdout carries the same report (the summary adds a heading).
    EXPECT_NE(summary.find(p.out.substr(0, 200)), std::string::npos);
    EXPECT_NE(p.out.find("## Advice"), std::string::npos);
    // --db keeps both documents.
    sbtest::Proc list = sbtest::run_sb({"db", "list", "--db", t.file("r.sqlite"), "-o", "json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    const json rows = json::parse(list.out);
    ASSERT_EQ(rows.size(), 2u) << list.out;
    EXPECT_EQ(rows[0]["command"], "demo");
    EXPECT_EQ(rows[1]["command"], "hybrid");
}

}  // namespace
