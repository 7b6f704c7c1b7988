#include "report/compare_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"

namespace sb {
namespace {

using nlohmann::json;

CompareSide side(const char* label, std::optional<double> median, std::optional<double> cv,
                 std::size_t n) {
    CompareSide s;
    s.label = label;
    s.median = median;
    s.cv = cv;
    s.n = n;
    return s;
}

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
    row.sides = {side("A", 1234.5, 0.021, 5), side("B", 1300.25, 0.015, 5)};
    row.sides[0].median_ci_low = 1220.0;
    row.sides[0].median_ci_high = 1250.0;
    row.sides[0].robust = CompareRobust{1240.0, 1230.0, 1245.5, 1, 5, "reps"};
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
    r.unmatched = {{"B", "pp64+tg8", "-p 64 only in B (A: -p 32)"}};
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
    EXPECT_NE(s.find("| test | stage | A median [95% CI] | CV A | B median [95% CI] | CV B | n | "
                     "A robust t/s [95% CI] | stalls A | B robust t/s [95% CI] | stalls B | B/A | "
                     "95% CI | verdict | differs |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | prefill t/s | 1234.50 [1220.00, 1250.00] | 2.1% | 1300.25 | "
                     "1.5% | 5 / 5 | 1240.00 [1230.00, 1245.50] | 1/5 reps | - | - | 1.053 | "
                     "[0.981, 1.112] | no difference | n_threads: 2 / 1 |"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("| pp32+tg8 | TTFT ms | 1234.50 [1220.00, 1250.00] | 2.1% | - | - | 5 / 0 | "
                     "1240.00 [1230.00, 1245.50] | 1/5 reps | - | - | - | - | no data"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("Unmatched: B pp64+tg8 (-p 64 only in B (A: -p 32))\n"), std::string::npos)
        << s;
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
    e.sides = {side("A", 0.0123456, 0.02, 5), side("B", 0.00987, 0.03, 5)};
    e.ratios = {{"B/A", 0.8, 0.78, 0.82, "less energy"}};
    r.rows.push_back(e);
    e.metric = "mean_power_mw";
    e.sides = {side("A", 4000, 0.01, 5), side("B", 3200, 0.01, 5)};
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
                     "- | - | - | - | 0.800 | [0.780, 0.820] | less energy | energy_meter: "
                     "rapl.psys.energy_uj / "
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
    EXPECT_EQ(lines[1].rfind(
                  "pp32+tg8,\"model=tiny.gguf,n_prompt=32\",prefill,tokens_per_s,true,A,1234.5,"
                  "0.021,5,B,1300.25,0.015,5,1.0532,0.981,1.112,no difference,n_threads: 2 / 1,",
                  0),
              0u)
        << lines[1];
    EXPECT_NE(lines[2].find(",ttft_ms,false,A,"), std::string::npos) << lines[2];
    EXPECT_NE(lines[2].find(",B,,,0,,,,no data,"), std::string::npos) << lines[2];
    // The columns added later, at the end: the medians' CIs, totals, robust rates, stalls, op.
    EXPECT_NE(lines[0].find(",differs,baseline_median_ci_low,baseline_median_ci_high,"
                            "baseline_total,median_ci_low,median_ci_high,total,"
                            "baseline_robust_tokens_per_s,baseline_robust_ci_low,"
                            "baseline_robust_ci_high,baseline_stalls,baseline_stalls_of,"
                            "robust_tokens_per_s,robust_ci_low,robust_ci_high,stalls,stalls_of,"
                            "stalls_unit,op,role,shape"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[1].find("n_threads: 2 / 1,1220,1250,,,,,1240,1230,1245.5,1,5,,,,,,,,,"),
              std::string::npos)
        << lines[1];
}

TEST(CompareReport, OpsRowsNameTheirShapeAndTotals) {
    CompareResult r = sample();
    r.rows.clear();
    CompareRow total;
    total.test = "MUL_MAT";
    total.stage = "decode";
    total.metric = "op_total_us";
    total.higher_is_better = false;
    total.op = "MUL_MAT";
    total.sides = {side("A", std::nullopt, std::nullopt, 8),
                   side("B", std::nullopt, std::nullopt, 8)};
    total.sides[0].total = 1600;
    total.sides[1].total = 1940;
    total.ratios = {{"B/A", 1.2125, 1.2, 1.23, "slower"}};
    r.rows.push_back(total);
    CompareRow shape = total;
    shape.test = "MUL_MAT attn_q: q4_0 64×64, f32 64 → f32 64";
    shape.metric = "op_us";
    shape.signature = CompareOpSignature{"MUL_MAT", "attn_q", "q4_0 64×64, f32 64 → f32 64"};
    shape.sides = {side("A", 100, 0.01, 4), side("B", 155, 0.02, 4)};
    shape.sides[0].median_ci_low = 99.5;
    shape.sides[0].median_ci_high = 100.5;
    shape.ratios = {{"B/A", 1.55, 1.5, 1.6, "slower"}};
    r.rows.push_back(shape);
    std::ostringstream md;
    write_compare(md, r, OutputFormat::md);
    // No robust columns without robust rates.
    EXPECT_EQ(md.str().find("robust"), std::string::npos) << md.str();
    EXPECT_NE(md.str().find("| MUL_MAT | decode Σ op µs | Σ 1600.00 | - | Σ 1940.00 | - | 8 / 8 | "
                            "1.212 | [1.200, 1.230] | slower |"),
              std::string::npos)
        << md.str();
    EXPECT_NE(md.str().find("| MUL_MAT attn_q: q4_0 64×64, f32 64 → f32 64 | decode op µs | "
                            "100.00 [99.50, 100.50] | 1.0% | 155.00 | 2.0% | 4 / 4 | 1.550 |"),
              std::string::npos)
        << md.str();
    std::ostringstream csv;
    write_compare(csv, r, OutputFormat::csv);
    EXPECT_NE(csv.str().find(",,,1600,,,1940,,,,,,,,,,,,MUL_MAT,,,\n"), std::string::npos)
        << csv.str();
    EXPECT_NE(csv.str().find(",MUL_MAT,attn_q,\"q4_0 64×64, f32 64 → f32 64\","), std::string::npos)
        << csv.str();

    // A fused op's row says which side's value is its parts summed.
    CompareRow fused = shape;
    fused.test = "MUL_MAT+ADD attn_output: q4_0 64×64, f32 64, f32 64 → f32 64";
    fused.op = "MUL_MAT+ADD";
    fused.fused = "A: MUL_MAT + ADD summed";
    r.rows = {fused};
    std::ostringstream fmd, fcsv;
    write_compare(fmd, r, OutputFormat::md);
    EXPECT_NE(fmd.str().find("| MUL_MAT+ADD attn_output: q4_0 64×64, f32 64, f32 64 → f32 64 "
                             "(fused; A: MUL_MAT + ADD summed) | decode op µs |"),
              std::string::npos)
        << fmd.str();
    write_compare(fcsv, r, OutputFormat::csv);
    EXPECT_NE(fcsv.str().find(",A: MUL_MAT + ADD summed\n"), std::string::npos) << fcsv.str();
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
