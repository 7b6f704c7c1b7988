// Reading llama-bench's output. The fixtures under tests/fixtures/llama-bench/ are the pinned
// tree's llama-bench run on a synthetic model (pinned*.{md,csv,json,jsonl,sql}: the commands
// are in that folder's README) and, for older versions, files written after the printers'
// history in tools/llama-bench/llama-bench.cpp (each says in its header what it follows).
// PinnedFixtures.FieldsAreThePinnedPrinters checks the pinned fixtures against the pinned
// source's field list, read at test time.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "profile/llama_bench_command.hpp"
#include "profile/llama_bench_import.hpp"

namespace sb {
namespace {

std::string fixture_path(const std::string& name) {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures/llama-bench/" + name;
}

std::string fixture(const std::string& name) {
    std::ifstream f(fixture_path(name), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_TRUE(f.good() || f.eof()) << name;
    return ss.str();
}

TEST(LlamaBenchTestName, EverySpelling) {
    auto t = parse_llama_bench_test("pp512");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->n_prompt, 512);
    EXPECT_EQ(t->n_gen, 0);
    t = parse_llama_bench_test("tg128 @ d4096");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->n_gen, 128);
    EXPECT_EQ(t->n_depth, 4096);
    t = parse_llama_bench_test("pp512+tg128");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->n_prompt, 512);
    EXPECT_EQ(t->n_gen, 128);
    t = parse_llama_bench_test("pp 512");  // 2023
    ASSERT_TRUE(t);
    EXPECT_EQ(t->n_prompt, 512);
    EXPECT_FALSE(parse_llama_bench_test(""));
    EXPECT_FALSE(parse_llama_bench_test("pp"));
    EXPECT_FALSE(parse_llama_bench_test("pp512x"));
    EXPECT_FALSE(parse_llama_bench_test("pp99999999999"));
    EXPECT_FALSE(parse_llama_bench_test("tg128 @ d"));
}

TEST(LlamaBenchParse, PinnedMarkdown) {
    const auto p = parse_llama_bench(fixture("pinned.md"));
    EXPECT_EQ(p.format, "md");
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_TRUE(p.skipped.empty());
    const auto& pp = p.rows[0];
    EXPECT_EQ(pp.line, 3);
    EXPECT_EQ(pp.test, "pp16");
    EXPECT_EQ(pp.n_prompt, 16);
    EXPECT_EQ(pp.n_gen, 0);
    EXPECT_DOUBLE_EQ(*pp.avg_ts, 9036.31);
    EXPECT_DOUBLE_EQ(*pp.stddev_ts, 8393.32);
    EXPECT_EQ(pp.fields.at("model_type"), "llama ?B Q4_0");
    EXPECT_EQ(pp.fields.at("size"), "2.52 MiB");
    EXPECT_EQ(pp.fields.at("params"), "4.20 M");
    EXPECT_EQ(pp.fields.at("backends"), "BLAS,Vulkan");
    EXPECT_EQ(pp.fields.at("n_threads"), "2");
    EXPECT_EQ(pp.fields.at("build_commit"), "80fb11a");
    EXPECT_EQ(pp.fields.at("build_number"), "1");
    EXPECT_TRUE(pp.samples_ns.empty());
    EXPECT_EQ(p.rows[1].test, "tg4");
    EXPECT_EQ(p.rows[1].n_gen, 4);
}

TEST(LlamaBenchParse, PinnedMatrixHasDepthsPgAndColumnsThatCome) {
    const auto p = parse_llama_bench(fixture("pinned-matrix.md"));
    ASSERT_EQ(p.rows.size(), 24u);
    EXPECT_EQ(p.rows[2].test, "pp16+tg4");
    EXPECT_EQ(p.rows[2].n_prompt, 16);
    EXPECT_EQ(p.rows[2].n_gen, 4);
    EXPECT_EQ(p.rows[4].test, "tg4 @ d8");
    EXPECT_EQ(p.rows[4].n_depth, 8);
    EXPECT_EQ(p.rows[6].fields.at("flash_attn"), "1");
    EXPECT_EQ(p.rows[12].fields.at("type_k"), "q8_0");
    EXPECT_EQ(p.rows[0].fields.at("n_ubatch"), "8");
}

TEST(LlamaBenchParse, PinnedJsonKeepsSamplesAndSkipsTheLogsBeforeIt) {
    const auto p = parse_llama_bench(fixture("pinned-stderr.json"));
    EXPECT_EQ(p.format, "json");
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_TRUE(p.skipped.empty());
    const auto& r = p.rows[0];
    EXPECT_EQ(r.samples_ns.size(), 2u);
    EXPECT_EQ(r.samples_ts.size(), 2u);
    EXPECT_EQ(r.fields.at("gpu_info"), "llvmpipe (LLVM 15.0.6, 256 bits)");
    EXPECT_EQ(r.fields.at("devices"), "Vulkan0");
    EXPECT_EQ(r.fields.at("n_gpu_layers"), "99");
    EXPECT_EQ(r.fields.at("cpu_strict"), "false");
    EXPECT_TRUE(r.avg_ns);
}

TEST(LlamaBenchParse, PinnedFormatsAgree) {
    // One run per format, so the values differ; the shape must not.
    for (const char* name : {"pinned.csv", "pinned.json", "pinned.jsonl", "pinned.sql"}) {
        SCOPED_TRACE(name);
        const auto p = parse_llama_bench(fixture(name));
        ASSERT_EQ(p.rows.size(), 2u);
        EXPECT_TRUE(p.skipped.empty());
        EXPECT_EQ(p.rows[0].test, "pp16");
        EXPECT_EQ(p.rows[1].test, "tg4");
        EXPECT_EQ(p.rows[0].fields.at("model_filename"), "/tmp/lbimport-tiny.gguf");
        EXPECT_EQ(p.rows[0].fields.at("model_size"), "2638848");
        EXPECT_EQ(p.rows[0].fields.at("build_commit"), "80fb11a");
        EXPECT_TRUE(p.rows[0].avg_ns && p.rows[0].stddev_ns && p.rows[0].stddev_ts);
    }
    EXPECT_EQ(parse_llama_bench(fixture("pinned.jsonl")).format, "jsonl");
    EXPECT_EQ(parse_llama_bench(fixture("pinned.sql")).variant,
              "sql, the `llama_bench` table (since 2025)");
    EXPECT_EQ(parse_llama_bench(fixture("pinned.jsonl")).rows[1].samples_ns.size(), 2u);
}

TEST(LlamaBenchParse, OlderMarkdown) {
    auto p = parse_llama_bench(fixture("md-2023-08.md"));
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_EQ(p.rows[0].test, "pp 512");
    EXPECT_EQ(p.rows[0].n_prompt, 512);
    EXPECT_EQ(p.rows[0].fields.at("n_gpu_layers"), "99");
    EXPECT_EQ(p.rows[0].fields.at("model_type"), "LLaMA 7B mostly Q4_0");
    EXPECT_EQ(p.rows[1].fields.at("build_number"), "1011");

    p = parse_llama_bench(fixture("md-2024-06.md"));
    EXPECT_EQ(p.n_tables, 2);
    ASSERT_EQ(p.rows.size(), 5u);
    ASSERT_EQ(p.skipped.size(), 1u);
    EXPECT_EQ(p.skipped[0].line, 22);
    EXPECT_NE(p.skipped[0].reason.find("cut off"), std::string::npos);
    EXPECT_EQ(p.rows[2].test, "pp512+tg128");
    EXPECT_EQ(p.rows[3].fields.at("n_ubatch"), "128");

    p = parse_llama_bench(fixture("md-2025-05.md"));
    ASSERT_EQ(p.rows.size(), 6u);
    EXPECT_EQ(p.rows[2].n_depth, 4096);
    EXPECT_EQ(p.rows[4].fields.at("devices"), "Vulkan0/Vulkan1");
    EXPECT_EQ(p.rows[4].fields.at("type_v"), "q8_0");
    EXPECT_EQ(p.rows[0].fields.count("devices"), 0u);
}

TEST(LlamaBenchParse, OlderJsonCsvSql) {
    auto p = parse_llama_bench(fixture("json-2024-01.json"));
    EXPECT_EQ(p.format, "json");
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_EQ(p.rows[0].samples_ns.size(), 5u);
    EXPECT_EQ(p.rows[0].samples_ts.size(), 5u);  // from samples_ns, as llama-bench computes them
    EXPECT_EQ(p.rows[0].fields.at("backends"), "cuda,gpu_blas,blas");

    p = parse_llama_bench(fixture("csv-2024-06.csv"));
    EXPECT_EQ(p.format, "csv");
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_EQ(p.rows[0].n_depth, 0);
    EXPECT_EQ(p.rows[1].test, "tg128");
    EXPECT_EQ(p.rows[0].fields.at("cpu_info"), "Cortex-A76");

    p = parse_llama_bench(fixture("sql-2024-06.sql"));
    EXPECT_EQ(p.variant, "sql, the old `test` table");
    ASSERT_EQ(p.rows.size(), 2u);
    EXPECT_EQ(p.rows[1].line, 47);
}

// Rows cut off mid-line in every format: skipped, each named by its line.
TEST(LlamaBenchParse, TruncatedRowsAreSkippedAndNamed) {
    for (const char* name : {"pinned.csv", "pinned.jsonl", "pinned.sql", "pinned.md"}) {
        SCOPED_TRACE(name);
        std::string text = fixture(name);
        // Cut the last row in its middle.
        std::size_t last = text.rfind('\n', text.size() - 2);
        if (std::string(name) == "pinned.md")
            last = text.find("tg4") - 40;
        text = text.substr(0, last + 50);
        const auto p = parse_llama_bench(text);
        EXPECT_EQ(p.rows.size(), 1u);
        ASSERT_EQ(p.skipped.size(), 1u);
        EXPECT_NE(p.skipped[0].reason.find("cut off"), std::string::npos) << p.skipped[0].reason;
    }
    std::string json = fixture("pinned.json");
    json = json.substr(0, json.size() - 200);
    const auto p = parse_llama_bench(json);
    EXPECT_EQ(p.rows.size(), 1u);
    ASSERT_EQ(p.skipped.size(), 1u);
    EXPECT_EQ(p.skipped[0].line, 47);
    EXPECT_EQ(p.skipped[0].reason, "the row is cut off (the file ends inside it)");
}

TEST(LlamaBenchParse, AbsurdNumbersAreSkipped) {
    const std::string head = fixture("pinned.md").substr(0, fixture("pinned.md").find("| llama"));
    auto one = [&](const std::string& row) { return parse_llama_bench(head + row + "\n"); };
    const std::string pre = "| llama ?B Q4_0 | 2.52 MiB | 4.20 M | CPU | 2 | ";
    EXPECT_EQ(one(pre + "pp16 | 100.00 ± 1.00 |").rows.size(), 1u);
    for (const char* bad :
         {"pp16 | -5.00 ± 1.00 |", "pp16 | 0.00 ± 0.00 |", "pp16 | 1e300 ± 1.00 |",
          "pp16 | nan ± 1.00 |", "pp16 | 100.00 ± -1.00 |", "pp0 | 100.00 ± 1.00 |",
          "pp16 | fast |", "xx16 | 100.00 ± 1.00 |"}) {
        SCOPED_TRACE(bad);
        const auto p = one(pre + bad);
        EXPECT_TRUE(p.rows.empty());
        EXPECT_EQ(p.skipped.size(), 1u);
    }
    // JSON: samples that are not what their mean says, a negative sample, a time over a day.
    std::string json = fixture("pinned.jsonl");
    const std::string first = json.substr(0, json.find('\n') + 1);
    auto edit = [&](const std::string& from, const std::string& to) {
        std::string t = first;
        t.replace(t.find(from), from.size(), to);
        return parse_llama_bench(t);
    };
    EXPECT_EQ(edit("\"avg_ts\": ", "\"avg_ts\": 1").skipped.size(), 1u);
    EXPECT_EQ(edit("\"samples_ns\": [ ", "\"samples_ns\": [ -").skipped.size(), 1u);
    EXPECT_EQ(edit("\"samples_ns\": [ ", "\"samples_ns\": [ 99999999").skipped.size(), 1u);
    EXPECT_EQ(edit("\"n_prompt\": 16", "\"n_prompt\": 1e30").skipped.size(), 1u);
    EXPECT_EQ(edit("\"n_prompt\": 16", "\"n_prompt\": 16").rows.size(), 1u);
}

TEST(LlamaBenchParse, NothingRecognisable) {
    EXPECT_EQ(parse_llama_bench("").format, "");
    EXPECT_EQ(parse_llama_bench("hello\nworld\n| a | b |\n").format, "");
    EXPECT_EQ(parse_llama_bench(std::string(3 << 20, 'x')).format, "");
}

// The pinned fixtures are what the pinned tree's printers print: their field list is the
// source's get_fields(), read now.
TEST(PinnedFixtures, FieldsAreThePinnedPrinters) {
    const std::string src = read_input_file(
        std::string(SB_LLAMA_SOURCE_DIR) + "/tools/llama-bench/llama-bench.cpp", "source");
    const std::size_t a = src.find("get_fields() {");
    ASSERT_NE(a, std::string::npos);
    const std::size_t b = src.find("};", a);
    std::vector<std::string> fields;
    for (std::size_t q = src.find('"', a); q < b; q = src.find('"', q + 1)) {
        const std::size_t e = src.find('"', q + 1);
        fields.push_back(src.substr(q + 1, e - q - 1));
        q = e;
    }
    std::string header;
    for (const auto& f : fields)
        header += (header.empty() ? "" : ",") + f;
    const std::string csv = fixture("pinned.csv");
    EXPECT_EQ(csv.substr(0, csv.find('\n')), header);
    EXPECT_NE(src.find("INSERT INTO llama_bench (%s) "), std::string::npos);
    EXPECT_NE(fixture("pinned.sql").find("INSERT INTO llama_bench (" + fields[0] + ", "),
              std::string::npos);
    EXPECT_NE(src.find("\" @ d%d\""), std::string::npos);  // markdown's depth suffix
}

// --- the document ------------------------------------------------------------------------

ResultDocument import_files(const std::vector<std::string>& names, std::string* err_text) {
    LlamaBenchImportOptions o;
    for (const auto& n : names)
        o.files.push_back(fixture_path(n));
    ResultDocument doc;
    doc.command = "import";
    std::ostringstream err;
    EXPECT_EQ(run_import_llama_bench(o, doc, err), 0);
    if (err_text)
        *err_text = err.str();
    return doc;
}

TEST(LlamaBenchDocument, PpAndTgRowsAreOneTest) {
    const ResultDocument doc = import_files({"pinned.json"}, nullptr);
    ASSERT_EQ(doc.tests.size(), 1u);
    const TestResult& t = doc.tests[0];
    EXPECT_EQ(t.config.test_name(), "pp16+tg4");
    EXPECT_EQ(t.config.model_path, "/tmp/lbimport-tiny.gguf");
    EXPECT_EQ(t.config.n_threads, 2);
    EXPECT_EQ(t.config.n_gpu_layers, -1);
    EXPECT_EQ(t.config.flash_attn, FlashAttn::automatic);
    EXPECT_EQ(t.config.devices.str(), "auto");
    ASSERT_TRUE(t.prefill && t.decode);
    EXPECT_EQ(t.prefill->duration_ns, (std::vector<int64_t>{244450869, 189923986}));
    EXPECT_EQ(t.prefill->tokens_per_s, (std::vector<double>{65.4528, 84.2442}));
    EXPECT_EQ(t.prefill->n_tokens, 16);
    EXPECT_EQ(t.decode->n_tokens, 4);
    EXPECT_EQ(t.decode->duration_ns, (std::vector<int64_t>{668413573, 942622}));
    EXPECT_EQ(t.reps_done, 2);
    EXPECT_EQ(t.backends, (std::vector<std::string>{"BLAS", "Vulkan"}));
    ASSERT_TRUE(t.imported);
    ASSERT_EQ(t.imported->rows.size(), 2u);
    EXPECT_EQ(t.imported->rows[0].stage, "pp");
    EXPECT_EQ(t.imported->rows[1].stage, "tg");
    EXPECT_EQ(t.imported->rows[1].line, 47);  // its "  {"
    EXPECT_EQ(doc.system["cpu_model"], "OpenBLAS, Intel(R) Xeon(R) Processor");
    EXPECT_EQ(doc.llama["commit"], "80fb11a");
    EXPECT_EQ(doc.llama["build_number"], 1);
    ASSERT_EQ(doc.models.size(), 1u);
    EXPECT_EQ(doc.models[0]["file_bytes"], 2638848);
    EXPECT_EQ(doc.models[0]["n_params"], 4196608);
    ASSERT_TRUE(doc.imported);
    EXPECT_EQ(doc.imported->tool, "llama-bench");
    ASSERT_EQ(doc.imported->files.size(), 1u);
    EXPECT_EQ(doc.imported->files[0].rows, 2);
    EXPECT_EQ(doc.started_at, "2026-12-06T17:58:49Z");
    // The document reads back as it was written.
    const nlohmann::json j = to_json(doc);
    EXPECT_EQ(to_json(from_json<ResultDocument>(j, "test")), j);
}

TEST(LlamaBenchDocument, MeansStandForSamplesAndPgRowsKeepTheirRate) {
    std::string err;
    const ResultDocument doc = import_files({"md-2024-06.md"}, &err);
    // Two tables: pp512+tg128 per n_ubatch, and the pp+tg row of the first (the second's is
    // cut off).
    ASSERT_EQ(doc.tests.size(), 3u);
    const TestResult& t = doc.tests[0];
    EXPECT_EQ(t.config.test_name(), "pp512+tg128");
    EXPECT_EQ(t.config.n_ubatch, 512);
    EXPECT_EQ(t.config.flash_attn, FlashAttn::on);
    EXPECT_EQ(t.config.model_path, "llama 8B Q4_K - Medium");
    EXPECT_EQ(t.prefill->tokens_per_s, (std::vector<double>{603.12}));
    EXPECT_DOUBLE_EQ(*t.prefill->throughput.stddev, 1.05);
    EXPECT_EQ(t.prefill->duration_ns, (std::vector<int64_t>{848918955}));  // 512 / 603.12 t/s
    EXPECT_EQ(t.reps_done, 1);
    const TestResult& pg = doc.tests[1];
    EXPECT_EQ(pg.config.test_name(), "pp512+tg128");
    EXPECT_FALSE(pg.prefill);
    EXPECT_FALSE(pg.decode);
    EXPECT_DOUBLE_EQ(*pg.imported->rows[0].avg_ts, 139.55);
    EXPECT_EQ(doc.tests[2].config.n_ubatch, 128);
    EXPECT_EQ(doc.models[0]["file_bytes"], 4917737554);  // 4.58 GiB, rounded as printed
    EXPECT_NE(err.find("md-2024-06.md line 22: row skipped: the row is cut off"), std::string::npos)
        << err;
    ASSERT_EQ(doc.warnings.size(), 1u);
    EXPECT_EQ(doc.warnings[0].code, "import_rows_skipped");
    EXPECT_EQ(doc.llama["build_number"], 3150);
}

TEST(LlamaBenchDocument, SeveralFilesAndDevices) {
    const ResultDocument doc = import_files({"md-2025-05.md", "csv-2024-06.csv"}, nullptr);
    // Pi 5: pp512+tg128 at depth 0 and at 4096; laptop: one; csv: one.
    ASSERT_EQ(doc.tests.size(), 4u);
    EXPECT_EQ(doc.tests[1].config.n_depth, 4096);
    EXPECT_EQ(doc.tests[1].decode->kv_depth_start, 4096);
    EXPECT_EQ(doc.tests[2].config.devices.str(), "Vulkan0+Vulkan1");
    EXPECT_EQ(doc.tests[2].config.type_k, KvType::q8_0);
    EXPECT_EQ(doc.tests[0].config.devices.str(), "CPU");
    EXPECT_EQ(doc.tests[3].config.flash_attn, FlashAttn::off);
    ASSERT_EQ(doc.imported->files.size(), 2u);
    EXPECT_EQ(doc.imported->files[1].format, "csv");
}

TEST(LlamaBenchDocument, BadFilesAreOneError) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("sb-lb-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir / name, std::ios::binary) << text;
        return (dir / name).string();
    };
    auto fails = [](const std::string& path) -> std::string {
        LlamaBenchImportOptions o;
        o.files = {path};
        ResultDocument doc;
        std::ostringstream err;
        try {
            run_import_llama_bench(o, doc, err);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            return e.what();
        }
        return "";
    };
    EXPECT_NE(fails(write("bin", std::string("\x7f"
                                             "ELF\0\0",
                                             6)))
                  .find("binary"),
              std::string::npos);
    EXPECT_NE(fails(write("empty", "")).find("no llama-bench output found"), std::string::npos);
    EXPECT_NE(fails(write("cut.json", fixture("pinned.json").substr(0, 300)))
                  .find("no complete llama-bench row"),
              std::string::npos);
    {
        std::ofstream f(dir / "huge");
        f.seekp(kLlamaBenchMaxBytes + 1);
        f << 'x';
    }
    EXPECT_NE(fails((dir / "huge").string()).find("more than llama-bench output can be"),
              std::string::npos);
    EXPECT_NE(fails((dir / "missing").string()), "");
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sb
