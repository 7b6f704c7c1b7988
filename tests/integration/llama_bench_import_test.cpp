// `stagebench import llama-bench` on the real llama-bench's output: the pinned tree's
// llama-bench run live on the tiny synthetic model in every output format, its files imported,
// and the imported document taken by compare (against a stagebench run, --match p,n), report,
// advise and db import like a run's. Bad files through the real binary: one error line, exit 2.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace {

using nlohmann::json;
using namespace sbtest;

// llama-bench on the tiny model: pp8 and tg2, two repetitions, two threads.
Proc llama_bench(const std::string& format) {
    return run({peer("llama-bench"), "-m", tiny_model(), "-p", "8", "-n", "2", "-r", "2", "-t", "2",
                "-o", format},
               600);
}

TEST(LlamaBenchImport, EveryFormatOfTheLiveLlamaBench) {
    TempDir t;
    for (const std::string format : {"md", "csv", "json", "jsonl", "sql"}) {
        SCOPED_TRACE(format);
        const Proc b = llama_bench(format);
        ASSERT_EQ(b.exit_code, 0) << b.err;
        // As users keep it: the json with llama-bench's and the backends' stderr before it
        // (2>&1), the others as printed.
        const std::string file = t.file("lb." + format);
        write_file(file, format == "json" ? b.err + b.out : b.out);
        const std::string out = t.file("lb-" + format + ".json");
        const Proc p = run_sb({"import", "llama-bench", file, "--out", out, "-o", "json"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_EQ(p.err, "");
        const json doc = json::parse(read_file(out));
        EXPECT_EQ(json::parse(p.out), doc);
        EXPECT_EQ(doc["command"], "import");
        EXPECT_EQ(doc["import"]["tool"], "llama-bench");
        EXPECT_EQ(doc["import"]["files"][0]["format"], format);
        EXPECT_EQ(doc["import"]["files"][0]["rows"], 2);
        ASSERT_EQ(doc["tests"].size(), 1u);
        const json& test = doc["tests"][0];
        EXPECT_EQ(test["config"]["test"], "pp8+tg2");
        EXPECT_EQ(test["config"]["n_threads"], 2);
        EXPECT_EQ(test["import"]["rows"].size(), 2u);
        EXPECT_GT(test["prefill"]["throughput"]["mean"].get<double>(), 0);
        EXPECT_GT(test["decode"]["throughput"]["mean"].get<double>(), 0);
        // Markdown prints no CPU; every other format names it.
        if (format != "md") {
            EXPECT_TRUE(doc["system"]["cpu_model"].is_string()) << doc["system"].dump();
        }
        EXPECT_EQ(doc["llama"]["build_number"].is_number_integer(), true);
        EXPECT_EQ(doc["llama"]["source"], "llama-bench");
        if (format == "json" || format == "jsonl") {
            // The samples are llama-bench's own.
            std::string text = b.out;
            json rows = json::array();
            if (format == "json") {
                rows = json::parse(text);
            } else {
                std::istringstream in(text);
                for (std::string l; std::getline(in, l);)
                    if (!l.empty())
                        rows.push_back(json::parse(l));
            }
            EXPECT_EQ(test["prefill"]["duration_ns"], rows[0]["samples_ns"]);
            EXPECT_EQ(test["decode"]["duration_ns"], rows[1]["samples_ns"]);
            EXPECT_EQ(test["reps_done"], 2);
        } else {
            EXPECT_EQ(test["prefill"]["tokens_per_s"].size(), 1u);
        }
        // The Markdown of the document (the default output) prints the test.
        const Proc md = run_sb({"import", "llama-bench", file});
        ASSERT_EQ(md.exit_code, 0) << md.err;
        // Its stages as stagebench's run table names them; tg2 at the depth llama-bench
        // decoded from (0), not after the prompt.
        EXPECT_NE(md.out.find(" | pp8 | "), std::string::npos) << md.out;
        EXPECT_NE(md.out.find(" | tg2 | "), std::string::npos) << md.out;
    }
}

TEST(LlamaBenchImport, CompareReportAdviseAndDbTakeIt) {
    TempDir t;
    const Proc b = llama_bench("json");
    ASSERT_EQ(b.exit_code, 0) << b.err;
    write_file(t.file("lb.json"), b.out);
    Proc p = run_sb(
        {"import", "llama-bench", t.file("lb.json"), "--out", t.file("imp.json"), "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    p = run_sb({"run", "-m", tiny_model(), "-p", "8", "-n", "2", "-r", "2", "-t", "2", "--membw",
                "off", "-q", "--out", t.file("run.json"), "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;

    p = run_sb({"compare", t.file("run.json"), t.file("imp.json"), "--match", "p,n", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json c = json::parse(p.out);
    EXPECT_EQ(c["inputs"][1]["command"], "import llama-bench");
    std::set<std::string> stages;
    for (const auto& row : c["rows"]) {
        EXPECT_EQ(row["test"], "pp8+tg2");
        if (row["metric"] == "tokens_per_s") {
            stages.insert(row["stage"].get<std::string>());
            ASSERT_EQ(row["ratios"].size(), 1u);
            EXPECT_GT(row["ratios"][0]["median"].get<double>(), 0) << row.dump();
            EXPECT_EQ(row["sides"][1]["n"], 2);
        }
    }
    EXPECT_EQ(stages, (std::set<std::string>{"prefill", "decode"}));
    EXPECT_TRUE(c["unmatched"].empty()) << c["unmatched"].dump();
    bool noted = false;
    for (const auto& n : c["notes"])
        noted =
            noted || n.get<std::string>().find("is imported from llama-bench") != std::string::npos;
    EXPECT_TRUE(noted) << c["notes"].dump();
    p = run_sb({"compare", t.file("run.json"), t.file("imp.json"), "--match", "p,n"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| import llama-bench |"), std::string::npos) << p.out;

    p = run_sb({"report", t.file("imp.json"), t.file("run.json"), "-o", t.file("r.html")});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    p = run_sb({"advise", t.file("run.json"), t.file("imp.json")});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("imported from llama-bench"), std::string::npos) << p.out;
    p = run_sb({"db", "import", "--db", t.file("s.sqlite"), t.file("imp.json")});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    p = run_sb(
        {"import", "llama-bench", t.file("lb.json"), "--db", t.file("s.sqlite"), "-o", "json"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
}

TEST(LlamaBenchImport, BadFilesAreOneErrorLine) {
    TempDir t;
    write_file(t.file("bin"), std::string("\x7f"
                                          "ELF\x02\x01\x01\0\0\0",
                                          10));
    write_file(t.file("notes.txt"), "llama-bench said it was fast\n");
    const Proc md = llama_bench("md");
    ASSERT_EQ(md.exit_code, 0) << md.err;
    // The whole table cut off inside its first row: nothing complete.
    write_file(t.file("cut.md"), md.out.substr(0, md.out.find("pp8") + 3));
    for (const std::string f : {"bin", "notes.txt", "cut.md", "missing"}) {
        SCOPED_TRACE(f);
        const Proc p =
            run_sb({"import", "llama-bench", t.file(f), "--out", t.file(f + ".out.json")});
        EXPECT_EQ(p.exit_code, 2);
        EXPECT_EQ(p.out, "");
        EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_FALSE(std::filesystem::exists(t.file(f + ".out.json")));
    }
    // Its second row cut off: the first imported, the second named in a warning.
    write_file(t.file("half.md"), md.out.substr(0, md.out.find("tg2") + 8));
    const Proc p = run_sb({"import", "llama-bench", t.file("half.md"), "-o", "json"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(
        p.err.find("half.md line 4: row skipped: the row is cut off (6 of the header's 7 columns)"),
        std::string::npos)
        << p.err;
    EXPECT_EQ(json::parse(p.out)["warnings"][0]["code"], "import_rows_skipped");
}

}  // namespace
