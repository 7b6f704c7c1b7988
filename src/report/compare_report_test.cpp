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
    write_compare(out, sample(), OutputFormat::md);
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

TEST(CompareReport, EnergyRowsAreLabelledAndScaledAndTheMatchIsStated) {
    CompareResult r = sample();
    // The default match says nothing.
    r.match = kCompareDefaultMatch;
    std::ostringstream plain;
    write_compare(plain, r, OutputFormat::md);
    EXPECT_EQ(plain.str().find("Matched by"), std::string::npos) << plain.str();

    r.match = {"model", "n_prompt", "n_gen", "n_depth"};
    r.model_alias = {{"qwen2.5:0.5b", "q.gguf"}};
    CompareRow e = r.rows[0];
    e.stage = "decode";
    e.metric = "j_per_token";
    e.higher_is_better = false;
    e.differs = {{"energy_meter", {"rapl.psys.energy_uj", "hwmon.ina3221.VDD_IN.power_mw"}}};
    e.sides = {{"A", 0.0123456, 0.02, 5}, {"B", 0.00987, 0.03, 5}};
    e.ratios = {{"B/A", 0.8, 0.78, 0.82, "less energy"}};
    r.rows.push_back(e);
    e.metric = "mean_power_mw";
    e.sides = {{"A", 4000, 0.01, 5}, {"B", 3200, 0.01, 5}};
    e.ratios = {{"B/A", 0.8, 0.79, 0.81, "lower power"}};
    r.rows.push_back(e);
    e.metric = "net_j_per_token";
    r.rows.push_back(e);
    std::ostringstream out;
    write_compare(out, r, OutputFormat::md);
    const std::string s = out.str();
    EXPECT_NE(s.find("Matched by: model, n_prompt, n_gen, n_depth; model qwen2.5:0.5b as q.gguf"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | decode J/token | 0.01235 | 2.0% | 0.00987 | 3.0% | 5 / 5 | "
                     "0.800 | [0.780, 0.820] | less energy | energy_meter: rapl.psys.energy_uj / "
                     "hwmon.ina3221.VDD_IN.power_mw |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | decode mean W | 4.00 | 1.0% | 3.20 |"), std::string::npos) << s;
    EXPECT_NE(s.find("| pp32+tg8 | decode net J/token | 4000"), std::string::npos) << s;
}

TEST(CompareReport, CsvHasOneLinePerRatioWithQuotedKeys) {
    std::ostringstream out;
    write_compare(out, sample(), OutputFormat::csv);
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
    write_compare(out, sample(), OutputFormat::json);
    EXPECT_EQ(json::parse(out.str()), to_json(sample()));
}

TEST(CompareReport, UnknownFormatIsUsageError) {
    std::ostringstream out;
    try {
        write_compare(out, sample(), OutputFormat::html);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
    }
}

}  // namespace
}  // namespace sb
