#include "report/compare_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"

namespace sb {
namespace {

using nlohmann::json;

CompareResult sample() {
    CompareResult r;
    r.tool_version = "0.1.0";
    r.created_at = "2026-11-29T10:00:00Z";
    r.inputs = {{"A", "a.json", "run", "host-a", "Cortex-X4", "2026-11-29T09:00:00Z"},
                {"B", "db:2", "run", "host-b", std::nullopt, std::nullopt}};
    CompareRow row;
    row.test = "pp32+tg8";
    row.key = "model=tiny.gguf,n_prompt=32";
    row.stage = "prefill";
    row.metric = "tokens_per_s";
    row.differs = {{"n_threads", {2, 1}}};
    row.sides = {{"A", 1234.5, 0.021, 5}, {"B", 1300.25, 0.015, 5}};
    row.ratios = {{"B/A", 1.0532, 0.981, 1.112, "no difference"}};
    r.rows.push_back(row);
    CompareRow ttft = row;
    ttft.stage = "ttft";
    ttft.metric = "ttft_ms";
    ttft.higher_is_better = false;
    ttft.sides[1].median.reset();
    ttft.sides[1].cv.reset();
    ttft.sides[1].n = 0;
    ttft.ratios = {{"B/A", std::nullopt, std::nullopt, std::nullopt, "no data"}};
    r.rows.push_back(ttft);
    r.unmatched = {{"B", "pp64+tg8"}};
    r.notes = {"pp32+tg8 decode: B's CV (4.0%) is more than 2x A's (1.0%)"};
    return r;
}

TEST(CompareReport, MarkdownShowsSidesRatiosAndNotes) {
    std::ostringstream out;
    write_compare(out, sample(), "md");
    const std::string s = out.str();
    EXPECT_NE(s.find("| A | a.json | run | host-a | Cortex-X4 | 2026-11-29T09:00:00Z |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| B | db:2 | run | host-b | - | - |"), std::string::npos) << s;
    EXPECT_NE(s.find("| test | stage | A | CV A | B | CV B | n | B/A | 95% CI | verdict | "
                     "differs |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | prefill t/s | 1234.50 | 2.1% | 1300.25 | 1.5% | 5 / 5 | "
                     "1.053 | [0.981, 1.112] | no difference | n_threads: 2 / 1 |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | TTFT ms | 1234.50 | 2.1% | - | - | 5 / 0 | - | - | no data"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("Unmatched: B pp64+tg8"), std::string::npos) << s;
    EXPECT_NE(s.find("- pp32+tg8 decode: B's CV"), std::string::npos) << s;
}

TEST(CompareReport, CsvHasOneLinePerRatioWithQuotedKeys) {
    std::ostringstream out;
    write_compare(out, sample(), "csv");
    std::istringstream in(out.str());
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
        lines.push_back(l);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0].rfind("test,key,stage,metric,", 0), 0u);
    EXPECT_EQ(lines[1],
              "pp32+tg8,\"model=tiny.gguf,n_prompt=32\",prefill,tokens_per_s,true,A,1234.5,0.021,"
              "5,B,1300.25,0.015,5,1.0532,0.981,1.112,no difference,n_threads: 2 / 1");
    EXPECT_NE(lines[2].find(",ttft_ms,false,A,"), std::string::npos) << lines[2];
    EXPECT_NE(lines[2].find(",B,,,0,,,,no data,"), std::string::npos) << lines[2];
}

TEST(CompareReport, JsonIsTheCompareDocument) {
    std::ostringstream out;
    write_compare(out, sample(), "json");
    EXPECT_EQ(json::parse(out.str()), to_json(sample()));
}

TEST(CompareReport, UnknownFormatIsUsageError) {
    std::ostringstream out;
    try {
        write_compare(out, sample(), "html");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
}

}  // namespace
}  // namespace sb
