// Documents handed back to stagebench, mutated by a seeded generator: every reader (report,
// compare, advise, trace, db import) must end with exit 0 or with exit 2 and one error line,
// never with a library exception (exit 1), and a value whose JSON type differs from what the
// document format holds there must be refused by the one reading path (core/document.hpp).
// The fixture documents are real outputs of run, ops, decompose, sustained, hybrid, import
// and compare on a tiny synthetic model (tests/fixtures/documents/README.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/run_cli_test_util.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "fuzz_seed.hpp"
#include "report/html_data.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Outcome run(const std::vector<std::string>& args) {
    return run_captured(args);
}

fs::path fixtures() {
    return fs::path(SB_SOURCE_DIR) / "tests" / "fixtures" / "documents";
}

json read(const fs::path& p) {
    std::ifstream f(p);
    return json::parse(f);
}

fs::path temp_dir() {
    const fs::path d = fs::path(testing::TempDir()) /
                       ("sb_document_fuzz." + std::to_string(::getpid())) /
                       testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

// Every value of a document with its path ("tests[0].config.n_prompt"); arrays contribute
// their first three elements.
void walk(const json& v, const std::string& path,
          std::vector<std::pair<std::string, json::json_pointer>>& out,
          const json::json_pointer& ptr) {
    out.push_back({path, ptr});
    if (v.is_object()) {
        for (const auto& [k, x] : v.items())
            walk(x, path.empty() ? k : path + "." + k, out, ptr / k);
    } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.size() && i < 3; ++i)
            walk(v[i], path + "[" + std::to_string(i) + "]", out, ptr / i);
    }
}

// Parts of documents that are free-form by design (a machine's description, telemetry
// series, per-device maps): any JSON is accepted there.
bool free_form(const std::string& path) {
    for (const char* p : {"llama", "system", "membw", "telemetry", "engines", "argv"})
        if (path.rfind(p, 0) == 0)
            return true;
    for (const char* p :
         {".telemetry", ".tensor_types", "hybrid.memory", ".freq", "rounds[0].ops", ".dispatch_ns",
          "ops.import", ".differs", "config.cooldown", "sustained.config.background"})
        if (path.find(p) != std::string::npos)
            return true;
    return false;
}

int type_class(const json& v) {
    if (v.is_number())
        return 0;
    if (v.is_string())
        return 1;
    if (v.is_boolean())
        return 2;
    if (v.is_array())
        return 3;
    if (v.is_object())
        return 4;
    return 5;  // null
}

json of_class(int c, std::mt19937_64& rng) {
    switch (c) {
        case 0:
            return rng() % 2 ? json(1.5) : json(-7);
        case 1:
            return rng() % 2 ? json("x") : json("");
        case 2:
            return json(true);
        case 3:
            return json::array({1, "a"});
        default:
            return json::object({{"k", 1}});
    }
}

TEST(DocumentFuzz, ReadersEndInExit0OrOneBadInputLine) {
    const fs::path dir = temp_dir();
    std::vector<fs::path> docs;
    for (const auto& e : fs::directory_iterator(fixtures()))
        if (e.path().extension() == ".json")
            docs.push_back(e.path());
    std::sort(docs.begin(), docs.end());
    ASSERT_GE(docs.size(), 6u);
    const std::string baseline = (fixtures() / "run.json").string();
    sbtest::FuzzRun fuzz(99);
    std::mt19937_64 rng(fuzz.seed());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int cases = 0, typed_changes = 0;
    while (cases < 400 && std::chrono::steady_clock::now() < deadline) {
        const fs::path src = docs[rng() % docs.size()];
        json doc = read(src);
        std::vector<std::pair<std::string, json::json_pointer>> paths;
        walk(doc, "", paths, json::json_pointer());
        const auto& [path, ptr] = paths[1 + rng() % (paths.size() - 1)];
        const json before = doc.at(ptr);
        json after;
        const int kind = static_cast<int>(rng() % 8);
        if (kind == 0) {
            after = nullptr;
        } else if (kind == 1) {
            after = json(uint64_t{1} << 63);
        } else if (kind == 2) {
            after = json(1e300);
        } else {
            int c = static_cast<int>(rng() % 5);
            if (c == type_class(before))
                c = (c + 1) % 5;
            after = of_class(c, rng);
        }
        doc.at(ptr) = after;
        const std::string file = (dir / ("m_" + src.filename().string())).string();
        std::ofstream(file) << doc.dump();
        ++cases;
        fuzz.next_case();

        // The one reading path: a changed JSON type where the format has one is refused.
        bool refused = false;
        try {
            load_report_input(file);
        } catch (const Error& e) {
            refused = true;
            EXPECT_EQ(e.kind(), ErrorKind::input);
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << path << ": not an sb::Error: " << e.what();
        }
        const bool type_changed = type_class(before) != type_class(after) && !after.is_null() &&
                                  !before.is_null() && !free_form(path);
        if (type_changed) {
            ++typed_changes;
            EXPECT_TRUE(refused) << src.filename() << ": " << path << " "
                                 << before.dump().substr(0, 60) << " -> " << after.dump()
                                 << " was accepted";
        }

        // Every reader: exit 0, or exit 2 with one line.
        for (const auto& cmd : std::vector<std::vector<std::string>>{
                 {"report", file, "-o", (dir / "r.html").string()},
                 {"compare", baseline, file},
                 {"advise", file},
                 {"trace", file, "-o", (dir / "t.json").string()},
                 {"db", "import", "--db", (dir / "s.sqlite").string(), file}}) {
            const Outcome o = run(cmd);
            const std::string what = cmd[0] + " " + src.filename().string() + " with " + path +
                                     " = " + after.dump().substr(0, 40);
            EXPECT_TRUE(o.code == 0 || o.code == 2) << what << ": exit " << o.code << "\n" << o.err;
            if (o.code == 2) {
                EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << what << "\n" << o.err;
                EXPECT_EQ(o.err.rfind("stagebench: error: ", 0), 0u) << what << "\n" << o.err;
            }
            if (refused) {
                EXPECT_EQ(o.code, 2) << what << " passed a reader after being refused";
            }
        }
    }
    EXPECT_GE(cases, 50);
    EXPECT_GE(typed_changes, 10);
}

// Every reader, on a document: exit 2 with one "stagebench: error:" line holding needle.
void expect_every_reader_refuses(const std::string& file, const std::string& needle,
                                 const fs::path& dir, const std::string& what) {
    const std::string baseline = (fixtures() / "run.json").string();
    for (const auto& cmd : std::vector<std::vector<std::string>>{
             {"report", file, "-o", (dir / "r.html").string()},
             {"compare", baseline, file},
             {"advise", file},
             {"trace", file, "-o", (dir / "t.json").string()},
             {"db", "import", "--db", (dir / "s.sqlite").string(), file}}) {
        const Outcome o = run(cmd);
        EXPECT_EQ(o.code, 2) << cmd[0] << " " << what << "\n" << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << cmd[0] << " " << what << "\n"
                                                                   << o.err;
        EXPECT_EQ(o.err.rfind("stagebench: error: ", 0), 0u) << cmd[0] << "\n" << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << cmd[0] << " " << what << "\n" << o.err;
    }
    // Nothing of it was stored.
    const Outcome list = run({"db", "list", "--db", (dir / "s.sqlite").string(), "-o", "json"});
    if (list.code == 0) {
        EXPECT_EQ(json::parse(list.out).size(), 0u) << what;
    }
}

// Fields that hold a duration, a rate or a count, wherever they are in a document: one of
// them made negative is refused by every reader, naming the file and the field.
bool is_measure(const std::string& path) {
    static const std::vector<std::string> names = {
        ".duration_ns", ".tokens_per_s",  ".n_prompt",         ".n_gen",
        ".n_tokens",    ".ttft_ns",       ".token_latency_ns", ".e2e_ns",
        ".tpot_ns",     ".prompt_tokens", ".output_tokens",    ".reps_done",
        ".op_ns",       ".call_ns",       ".decode_tps",       ".prefill_tps",
        ".ttft_ms",     ".samples_ns",    "throughput.median", "duration.median",
        "itl.p99",      "ttft.mean"};
    std::string last = path.substr(0, path.find('[', path.rfind('.')));
    for (const auto& n : names)
        if (last.size() >= n.size() && last.compare(last.size() - n.size(), n.size(), n) == 0)
            return path.find("telemetry") == std::string::npos;
    return false;
}

TEST(DocumentFuzz, NegativeDurationsRatesAndCountsAreRefusedByEveryReader) {
    const fs::path dir = temp_dir();
    sbtest::FuzzRun fuzz(4711);
    std::mt19937_64 rng(fuzz.seed());
    std::vector<fs::path> docs;
    for (const auto& e : fs::directory_iterator(fixtures()))
        if (e.path().extension() == ".json" &&
            read(e.path()).value("schema", "") == "stagebench.result")
            docs.push_back(e.path());
    std::sort(docs.begin(), docs.end());
    ASSERT_GE(docs.size(), 6u);
    for (int i = 0; i < 40; ++i) {
        const fs::path src = docs[rng() % docs.size()];
        json doc = read(src);
        std::vector<std::pair<std::string, json::json_pointer>> paths, measures;
        walk(doc, "", paths, json::json_pointer());
        for (const auto& p : paths)
            if (doc.at(p.second).is_number() && doc.at(p.second).get<double>() > 0 &&
                is_measure(p.first))
                measures.push_back(p);
        if (measures.empty())
            continue;
        const auto& [path, ptr] = measures[rng() % measures.size()];
        json& v = doc.at(ptr);
        v = v.is_number_float() ? json(-v.get<double>())
                                : json(-1 - static_cast<int64_t>(rng() % 1000));
        fuzz.next_case();
        const std::string file = (dir / ("neg_" + src.filename().string())).string();
        std::ofstream(file) << doc.dump();
        // The one reading path names the field; every reader says so on one line.
        std::string why;
        try {
            load_report_input(file);
        } catch (const Error& e) {
            why = e.what();
        }
        EXPECT_NE(why.find(path), std::string::npos)
            << src.filename() << " " << path << ": " << why;
        EXPECT_NE(why.find("expected at least 0"), std::string::npos) << why;
        expect_every_reader_refuses(file, "expected at least 0", dir,
                                    src.filename().string() + " " + path);
    }
    EXPECT_GE(fuzz.cases(), 30);
}

TEST(DocumentFuzz, DeepNestingAnywhereIsOneLineInEveryReader) {
    const fs::path dir = temp_dir();
    sbtest::FuzzRun fuzz(1000000);
    std::mt19937_64 rng(fuzz.seed());
    const std::vector<std::string> names = {"run.json", "ops.json", "sustained.json",
                                            "hybrid.json"};
    for (int i = 0; i < 8; ++i) {
        fuzz.next_case();
        const fs::path src = fixtures() / names[rng() % names.size()];
        json doc = read(src);
        std::vector<std::pair<std::string, json::json_pointer>> paths;
        walk(doc, "", paths, json::json_pointer());
        // An unknown member placed in some object of the document, holding deep arrays.
        std::vector<json::json_pointer> objects;
        for (const auto& p : paths)
            if (doc.at(p.second).is_object())
                objects.push_back(p.second);
        const json::json_pointer at = objects[rng() % objects.size()];
        const int depth = i % 2 ? 100000 : 65 + static_cast<int>(rng() % 1000);
        std::string text = doc.dump();
        doc.at(at)["zz_unknown"] = "@@DEEP@@";
        text = doc.dump();
        const std::string deep = std::string(depth, '[') + "7" + std::string(depth, ']');
        text.replace(text.find("\"@@DEEP@@\""), 10, deep);
        const std::string file = (dir / ("deep_" + src.filename().string())).string();
        std::ofstream(file) << text;
        expect_every_reader_refuses(file, "nests arrays and objects more than 64 deep", dir,
                                    src.filename().string() + " depth " + std::to_string(depth));
    }
}

TEST(DocumentFuzz, TheFixturesThemselvesAreAccepted) {
    for (const auto& e : fs::directory_iterator(fixtures()))
        if (e.path().extension() == ".json") {
            EXPECT_NO_THROW(load_report_input(e.path().string())) << e.path();
        }
}

// Documents written by earlier builds and by this format's build (tests/fixtures/documents)
// are read by every reader: the report shows them, trace converts the result documents, and
// the store takes them and gives them back with what they measured.
TEST(Documents, EveryFixtureLoadsInReportTraceAndTheStore) {
    const fs::path dir = temp_dir();
    const std::string db = (dir / "fixtures.sqlite").string();
    int stored = 0;
    for (const auto& e : fs::directory_iterator(fixtures())) {
        if (e.path().extension() != ".json")
            continue;
        const std::string file = e.path().string();
        SCOPED_TRACE(e.path().filename().string());
        const Outcome report = run({"report", file, "-o", (dir / "r.html").string()});
        EXPECT_EQ(report.code, 0) << report.err;
        if (read(e.path()).value("schema", "") != "stagebench.result")
            continue;
        const Outcome trace = run({"trace", file, "-o", (dir / "t.json").string()});
        EXPECT_EQ(trace.code, 0) << trace.err;
        const Outcome imported = run({"db", "import", "--db", db, file});
        ASSERT_EQ(imported.code, 0) << imported.err;
        ++stored;
        const std::string id = std::to_string(stored);
        const Outcome shown = run({"db", "show", id, "--db", db});
        EXPECT_EQ(shown.code, 0) << shown.err;
        const Outcome exported = run({"db", "export", id, "--db", db});
        ASSERT_EQ(exported.code, 0) << exported.err;
        const json original = read(e.path()), back = json::parse(exported.out);
        EXPECT_EQ(back["tests"].size(), original["tests"].size());
        for (const char* section : {"hybrid", "sustained", "ops"})
            EXPECT_EQ(back.contains(section), original.contains(section)) << section;
        const Outcome compared = run({"compare", file, "db:" + id, "--db", db});
        if (!original["tests"].empty() && !original.contains("sustained")) {
            EXPECT_EQ(compared.code, 0) << compared.err;
        }
    }
    EXPECT_GE(stored, 10);
}

TEST(Documents, ParseFailuresAndVersionsAreOneInputError) {
    auto refuse = [](const std::string& text, const std::string& needle) {
        try {
            const json doc = parse_document_text(text, "'d.json'");
            check_document(doc, "'d.json'");
            ReportInput::of("d.json", doc);  // the typed reading, as load_report_input's
            ADD_FAILURE() << text << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    };
    refuse(R"({"schema": "stagebench.result", "tests": [)", "not JSON");
    refuse(R"({"schema": "stagebench.result", "membw": 1e999})", "d.json");
    refuse(R"({"schema": "stagebench.result", "schema_version": 3})", "newer stagebench");
    refuse(R"({"schema": "stagebench.result", "schema_version": 18446744073709551615})",
           "newer stagebench");
    refuse(R"({"schema": "stagebench.result", "schema_version": "2"})", "schema_version");
    refuse(R"({"schema": "stagebench.result", "schema_version": 0})", "schema_version");
    refuse(R"({"command": "compare", "compare_schema_version": 2})", "newer stagebench");
    refuse(R"({"schema": "stagebench.result", "tests": [{"config": {"n_prompt": null}}]})",
           "tests[0].config.n_prompt");
    refuse(R"({"schema": "stagebench.result", "tests": [{"config": {"n_prompt": 3e9}}]})",
           "tests[0].config.n_prompt");
    refuse(R"({"schema": "stagebench.result", "tests": [{"config": {"n_prompt": 4294967296}}]})",
           "out of range");
    refuse(R"({"schema": "stagebench.result", "tests": [{"config": {"seed": -1}}]})",
           "tests[0].config.seed");
    refuse(R"({"schema": "stagebench.result", "tests": [], "hybrid": {"points":
              [{"tests": {"hybrid": 3}}]}})",
           "hybrid.points[0].tests.hybrid");
    refuse(R"([1, 2])", "a JSON object");
    refuse(R"({"schema": 5})", "schema");
    EXPECT_NO_THROW(check_document(json::parse(R"({"schema": "stagebench.result"})"), "x"));
    EXPECT_NO_THROW(check_document(json::parse(R"({"anything": [1, {"b": null}]})"), "x"));
}

}  // namespace
}  // namespace sb::cli
