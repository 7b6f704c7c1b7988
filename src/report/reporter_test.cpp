// The one switch from an output format to what writes a result document.
#include "report/reporter.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"

namespace sb {
namespace {

using nlohmann::json;

ResultDocument two_tests() {
    ResultDocument d;
    d.command = "run";
    for (int p : {16, 32}) {
        TestResult t;
        t.config.n_prompt = p;
        t.config.n_gen = 4;
        t.reps_done = 2;
        t.stopped_by = StopReason::reps;
        StageResult pre;
        pre.n_tokens = p;
        pre.tokens_per_s = {100.0, 110.0};
        pre.throughput = summarize(pre.tokens_per_s);
        t.prefill = pre;
        d.tests.push_back(t);
    }
    return d;
}

std::string printed_doc(OutputFormat f, const ResultDocument& d) {
    std::ostringstream out;
    print_document(f, d, out);
    return out.str();
}

TEST(Reporter, EachFormatHasItsReporter) {
    const ResultDocument d = two_tests();
    EXPECT_EQ(json::parse(printed_doc(OutputFormat::json, d)), to_json(d));
    const std::string jsonl = printed_doc(OutputFormat::jsonl, d);
    std::istringstream lines(jsonl);
    std::string line;
    int n = 0;
    while (std::getline(lines, line))
        EXPECT_EQ(json::parse(line), to_json(d.tests[n++]));
    EXPECT_EQ(n, 2);
    const std::string csv = printed_doc(OutputFormat::csv, d);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);  // the header and a prefill row each
    EXPECT_NE(csv.find("\"pp32+tg4\",prefill,32,2,ok,105"), std::string::npos) << csv;
    const std::string md = printed_doc(OutputFormat::md, d);
    EXPECT_NE(md.find("| pp16 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| pp32 |"), std::string::npos) << md;
}

// -ngl shows in the run table and the tables after it only where the tests differ in it: an
// offload sweep's rows are told apart, a run of one -ngl keeps the table as it was. The CSV
// always has it.
TEST(Reporter, TheNglColumnShowsWhereTheTestsDifferInIt) {
    ResultDocument d = two_tests();
    for (auto& t : d.tests)
        t.ttft.median = 1e6;  // the TTFT table after the run table
    std::string md = printed_doc(OutputFormat::md, d);
    EXPECT_EQ(md.find("ngl"), std::string::npos) << md;
    EXPECT_NE(printed_doc(OutputFormat::csv, d).find(",n_threads,n_gpu_layers,n_batch,"),
              std::string::npos);

    for (auto& t : d.tests)
        t.config.n_threads = 2;
    d.tests[0].config.n_gpu_layers = 0;
    d.tests[0].config.devices = DeviceSet("CPU");
    d.tests[1].config.devices = DeviceSet("Vulkan0");
    md = printed_doc(OutputFormat::md, d);
    EXPECT_NE(md.find("| threads | ngl | test |"), std::string::npos) << md;
    EXPECT_NE(md.find("| CPU | 2 | 0 | pp16 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| Vulkan0 | 2 | 99 | pp32 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| pp32+tg4 | Vulkan0 (ngl 99) |"), std::string::npos) << md;

    // Streamed: the planned tests decide the header before any test is done.
    std::ostringstream out;
    auto r = make_reporter(OutputFormat::md, out);
    std::vector<TestConfig> plan{d.tests[0].config, d.tests[1].config};
    r->plan(plan);
    ResultDocument empty;
    r->begin(empty);
    EXPECT_NE(out.str().find("| ngl |"), std::string::npos) << out.str();
}

TEST(Reporter, MarkdownOfAHybridOrSustainedDocumentIsItsSection) {
    ResultDocument h = two_tests();
    h.hybrid.emplace().prefill_device = "CPU";
    h.hybrid->decode_device = "BLAS";
    EXPECT_EQ(
        printed_doc(OutputFormat::md, h).rfind("## Hybrid: prefill on CPU, decode on BLAS", 0), 0u);
    ResultDocument s = two_tests();
    s.sustained.emplace().phases.emplace_back().name = "rounds";
    EXPECT_EQ(printed_doc(OutputFormat::md, s).rfind("## rounds", 0), 0u);
    // The other formats are the document's whatever its command.
    EXPECT_EQ(json::parse(printed_doc(OutputFormat::json, h)), to_json(h));
}

// A test that measured nothing is one row: its leading columns, the error, empty stage cells.
TEST(Reporter, AFailedOrInterruptedTestIsOneRowWithItsError) {
    ResultDocument d = two_tests();
    d.tests[0].status = Status::failed;
    d.tests[0].error = "model refused | badly";
    d.tests[0].prefill.reset();
    d.tests[1].status = Status::interrupted;
    d.tests[1].config.n_threads = 4;
    const std::string md = printed_doc(OutputFormat::md, d);
    EXPECT_NE(md.find("\n|  | - | - | CPU | server's | pp16+tg4 | FAILED: model refused \\| badly "
                      "| | | | | | | |\n"),
              std::string::npos)
        << md;
    // The measured stage's row, then the status.
    EXPECT_NE(md.find("\n|  | - | - | CPU | 4 | pp32 | 105.00 | 7.07 | 6.73 | - | 0/0 reps | - "
                      "| - | - |\n|  | - | - | CPU | 4 | pp32+tg4 | interrupted:  | | | | | | | "
                      "|\n"),
              std::string::npos)
        << md;
    // Every row has the header's 14 columns.
    std::istringstream lines(md);
    for (std::string l; std::getline(lines, l) && !l.empty();)
        EXPECT_EQ(std::count(l.begin(), l.end(), '|') - std::count(l.begin(), l.end(), '\\'), 15)
            << l;
}

TEST(Reporter, HtmlIsNotAStreamFormat) {
    std::ostringstream out;
    try {
        make_reporter(OutputFormat::html, out);
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(e.what()).find("stagebench report"), std::string::npos);
    }
}

}  // namespace
}  // namespace sb
