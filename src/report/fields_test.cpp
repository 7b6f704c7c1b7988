// The field tables: one table of a row's fields drives the CSV writer, the Markdown table and
// the HTML report's table, exactly.
#include "report/fields.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "report/compare_report.hpp"
#include "report/modes_report.hpp"
#include "report/ops_report.hpp"
#include "report/stage_fields.hpp"

namespace sb {
namespace {

using nlohmann::json;

TEST(Fields, CsvCellsByType) {
    EXPECT_EQ(csv_cell(FieldValue()), "");
    EXPECT_EQ(csv_cell(FieldValue(), "{}", CsvQuote::always), "\"\"");
    EXPECT_EQ(csv_cell(std::string("plain")), "plain");
    EXPECT_EQ(csv_cell(std::string("plain"), "{}", CsvQuote::always), "\"plain\"");
    EXPECT_EQ(csv_cell(std::string("a,b")), "\"a,b\"");
    EXPECT_EQ(csv_cell(std::string("say \"hi\"")), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_cell(std::string("two\nlines")), "\"two\nlines\"");
    EXPECT_EQ(csv_cell(std::string("cr\r")), "\"cr\r\"");
    EXPECT_EQ(csv_cell(int64_t{-42}), "-42");
    EXPECT_EQ(csv_cell(0.1), "0.1");  // the shortest text that reads back exactly
    EXPECT_EQ(csv_cell(1e22), "1e+22");
    EXPECT_EQ(csv_cell(2.25, "{:.1f}"), "2.2");  // round half to even, as fmt does
    EXPECT_EQ(csv_cell(1500000.0, "{:.0f}"), "1500000");
    EXPECT_EQ(csv_cell(true), "true");
    EXPECT_EQ(csv_cell(false), "false");
    EXPECT_EQ(markdown_cell("a|b\nc"), "a\\|b c");
    EXPECT_EQ(field_json(FieldValue()), json(nullptr));
    EXPECT_EQ(field_json(int64_t{3}), json(3));
    EXPECT_EQ(field_json(0.5), json(0.5));
    EXPECT_EQ(field_json(std::string("x")), json("x"));
    EXPECT_EQ(field_json(true), json(true));
}

struct Point {
    std::string name;
    std::optional<double> x;
    int n = 0;
};

// A table as a reporter declares one: a field added here reaches every format.
FieldTable<Point> point_fields() {
    return {{"name", [](const Point& p) { return FieldValue(p.name); }, "{}", CsvQuote::always,
             true, MarkdownColumn<Point>{"name", false, [](const Point& p) { return p.name; }}},
            {"x", [](const Point& p) { return p.x ? FieldValue(*p.x) : FieldValue(); }, "{:.2f}",
             CsvQuote::as_needed, true,
             MarkdownColumn<Point>{
                 "x", true,
                 [](const Point& p) { return p.x ? std::to_string(*p.x) : std::string("-"); }}},
            {"n", [](const Point& p) { return FieldValue(int64_t{p.n}); }},
            {"label", [](const Point&) { return FieldValue(); }, "{}", CsvQuote::as_needed, false,
             MarkdownColumn<Point>{"label", false,
                                   [](const Point& p) { return "<" + p.name + "|>"; }}}};
}

TEST(Fields, OneTableFeedsCsvMarkdownAndJson) {
    const auto t = point_fields();
    const std::vector<Point> rows = {{"a", 1.005, 2}, {"b,c", std::nullopt, 0}};
    std::ostringstream csv;
    write_csv_header(csv, t);
    for (const auto& r : rows)
        write_csv_row(csv, t, r);
    EXPECT_EQ(csv.str(), "name,x,n\n\"a\",1.00,2\n\"b,c\",,0\n");
    std::ostringstream md;
    write_markdown_header(md, t);
    for (const auto& r : rows)
        write_markdown_row(md, t, r);
    EXPECT_EQ(md.str(),
              "| name | x | label |\n| --- | ---: | --- |\n| a | 1.005000 | <a\\|> |\n"
              "| b,c | - | <b,c\\|> |\n");
    EXPECT_EQ(fields_json(t, rows), json::parse(R"({"columns": ["name", "x", "n"],
                              "rows": [["a", 1.005, 2], ["b,c", null, 0]]})"));
}

template <class Row>
void expect_well_formed(const FieldTable<Row>& t, const std::string& which) {
    std::set<std::string> names;
    for (const auto& f : t) {
        EXPECT_TRUE(names.insert(f.name).second) << which << ": " << f.name << " twice";
        EXPECT_TRUE(f.csv || f.markdown) << which << ": " << f.name << " reaches no format";
        EXPECT_TRUE(f.get) << which << ": " << f.name;
        if (f.markdown) {
            EXPECT_TRUE(f.markdown->text) << which << ": " << f.name;
        }
    }
}

TEST(Fields, EveryTableIsWellFormed) {
    expect_well_formed(stage_fields(), "stage_fields");
    expect_well_formed(op_fields(), "op_fields");
    expect_well_formed(mode_run_fields(), "mode_run_fields");
    expect_well_formed(compare_fields(), "compare_fields");
}

// A measured stage: the CSV row, the Markdown row and the HTML table come from the same fields.
TEST(StageFields, ATestsStagesInEveryFormat) {
    ResultDocument doc;
    doc.models.push_back({{"path", "/m/tiny.gguf"},
                          {"name", "tiny"},
                          {"file_bytes", 3 * 1024 * 1024},
                          {"n_params", 1500000}});
    TestResult t;
    t.config.model_path = "/m/tiny.gguf";
    t.config.n_prompt = 8;
    t.config.n_gen = 4;
    t.config.n_threads = 2;
    t.reps_done = 2;
    StageResult pre;
    pre.n_tokens = 8;
    pre.tokens_per_s = {100, 300};
    pre.throughput = summarize(pre.tokens_per_s);
    pre.duration_ns = {80'000'000, 26'666'667};
    pre.duration = summarize_ns(pre.duration_ns);
    pre.stalls = detect_stalls(std::vector<double>{8e7, 2.6666667e7});
    t.prefill = pre;
    TestFidelity f;
    f.reference = "tiny on CPU (f16/f16)";
    f.top_k = 5;
    f.prefill = StageFidelity{1, 0.5, 0.75, 1, 1, 1, 0.25, 0.1};
    t.fidelity = f;
    doc.tests.push_back(t);

    const auto rows = stage_rows(doc, doc.tests[0]);
    ASSERT_EQ(rows.size(), 1u);
    std::ostringstream csv;
    write_csv_row(csv, stage_fields(), rows[0]);
    EXPECT_EQ(
        csv.str(),
        "\"/m/tiny.gguf\",\"CPU\",2,99,2048,512,0,auto,f16,f16,\"pp8+tg4\",prefill,8,2,ok,200,"
        "141.4213562373095,0.7071067811865476,100,300,"
        "53333333.5,,,,,,,0,0,,,\"\",0.5,0.75,1,1,1,0.25\n");
    std::ostringstream md;
    write_markdown_row(md, stage_fields(), rows[0]);
    EXPECT_EQ(md.str(),
              "| tiny | 3.00 MiB | 1.50 M | CPU | 2 | 99 | pp8 | 200.00 | 141.42 | 70.71 | - | 0/2 "
              "reps | "
              "53.33 | - | - |\n");
    const json j = stage_fields_json(doc);
    ASSERT_EQ(j["rows"].size(), 1u);
    const auto& columns = j["columns"];
    const auto at = [&](const std::string& name) {
        for (std::size_t i = 0; i < columns.size(); ++i)
            if (columns[i] == name)
                return j["rows"][0][i];
        ADD_FAILURE() << "no column " << name;
        return json();
    };
    EXPECT_EQ(at("tokens_per_s_mean"), 200.0);
    EXPECT_EQ(at("kl_mean"), 0.5);
    EXPECT_EQ(at("itl_ns_p50"), nullptr);
    EXPECT_EQ(at("reps"), 2);
    // The CSV's columns, every one.
    std::ostringstream header;
    write_csv_header(header, stage_fields());
    std::string names;
    for (const auto& c : columns)
        names += (names.empty() ? "" : ",") + c.get<std::string>();
    EXPECT_EQ(names + "\n", header.str());
    EXPECT_TRUE(stage_fields_json(ResultDocument{}).is_null());
}

// A test that measured nothing is one row of stage "none" with its error.
TEST(StageFields, ATestWithoutStagesIsOneRow) {
    ResultDocument doc;
    TestResult t;
    t.status = Status::failed;
    t.error = "model, \"x\"";
    doc.tests.push_back(t);
    const auto rows = stage_rows(doc, doc.tests[0]);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_STREQ(rows[0].stage, "none");
    std::ostringstream csv;
    write_csv_row(csv, stage_fields(), rows[0]);
    EXPECT_EQ(
        csv.str(),
        "\"\",\"CPU\",0,99,2048,512,0,auto,f16,f16,\"pp512+tg128\",none,0,0,failed,,,,,,,,,,,,"
        ",,,,,\"model, \"\"x\"\"\",,,,,,\n");
}

}  // namespace
}  // namespace sb
