// `stagebench report`: real documents from the real binary on the tiny synthetic model (run with
// telemetry from a fixture sysfs tree, ops, decompose, sustained) and the compare fixture, made
// into one HTML page that headless Chromium opens with every request intercepted
// (tests/integration/report_check.mjs): no request but the file, no console or page error, and
// every expected chart drawn. Bad inputs: one line, exit 2; odd documents: a note, no crash.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_harness.hpp"
#include "doc_stats.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

std::string source_path(const std::string& rel) {
    return (fs::path(SB_SOURCE_DIR) / rel).string();
}

void write_json(const std::string& path, const json& j) {
    std::ofstream(path) << j.dump(1) << "\n";
}

// Runs stagebench with args and asserts it succeeded; returns the document written with --out.
json make_document(const std::vector<std::string>& args, const std::string& out) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--out", out, "-q"});
    Proc p = run_sb(a);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return json::parse(read_file(out));
}

// The one chart of kind in document doc_id (as report_check.mjs dumped them).
const json& chart_of(const json& charts, const std::string& doc_id, const std::string& kind) {
    const json* found = nullptr;
    for (const auto& c : charts)
        if (c["doc"] == doc_id && c["kind"] == kind) {
            EXPECT_EQ(found, nullptr) << "two charts " << kind << " in " << doc_id;
            found = &c;
        }
    static const json none = json::object();
    if (!found)
        ADD_FAILURE() << "no chart " << kind << " in " << doc_id;
    return found ? *found : none;
}

const json& dataset_of(const json& chart, const std::string& label) {
    static const json none = json::array();
    if (!chart.contains("datasets"))
        return none;  // chart_of said which chart is missing
    for (const auto& d : chart["datasets"])
        if (d["label"] == label)
            return d["data"];
    ADD_FAILURE() << "no dataset " << label;
    return none;
}

void expect_same(const json& got, double want, const std::string& what) {
    ASSERT_TRUE(got.is_number()) << what << ": " << got.dump();
    EXPECT_NEAR(got.get<double>(), want, 1e-9 * std::abs(want)) << what;
}

}  // namespace

TEST(Report, DrawsEveryChartInHeadlessChromiumWithoutAnyRequest) {
    const std::string node = on_path("node").empty() ? on_path("nodejs") : on_path("node");
    const std::string chromium = chromium_path();
    if (node.empty())
        GTEST_SKIP() << "node is not installed (scripts/setup-deps.sh installs it)";
    if (chromium.empty())
        GTEST_SKIP() << "chromium is not installed (scripts/setup-deps.sh installs it)";
    const std::string driver = std::string(SB_REPORT_ASSETS_DIR) + "/playwright-core";
    ASSERT_TRUE(fs::exists(driver + "/package.json"))
        << driver << " is missing: run scripts/report-assets.sh";

    TempDir t;
    const fs::path sys = t.path / "sys";
    fs::copy(source_path("tests/fixtures/telemetry/x86-laptop-rapl/sys"), sys,
             fs::copy_options::recursive);
    const std::string& model = tiny_model();
    json run_doc = make_document(
        {"run", "-m", model, "-p", "32", "-n", "8", "-r", "2", "--membw", "off", "--sysfs-root",
         sys.string(), "--telemetry", "on", "--idle", "0.2", "--telemetry-hz", "50"},
        t.file("run.json"));
    ASSERT_FALSE(run_doc["telemetry"]["series"].empty());
    make_document({"ops", "-m", model, "-p", "32", "--device", "CPU+BLAS", "--reps", "1",
                   "--plain-reps", "2", "--replay", "2"},
                  t.file("ops.json"));
    make_document({"decompose", "-m", model, "-p", "32", "--device", "CPU+BLAS", "--reps", "1",
                   "--plain-reps", "2", "--replay", "2"},
                  t.file("decompose.json"));
    // f16 weights: BLAS takes 25 of the 29 prefill mat-muls, the other 4 fall back to the CPU.
    const std::string f16 = t.file("tiny-f16.gguf");
    ASSERT_EQ(
        run_sb({"synth", "--preset", "tiny", "--seed", "7", "--quant", "f16", "-o", f16}).exit_code,
        0);
    json blas_ops = make_document({"ops", "-m", f16, "-p", "32", "--device", "BLAS", "--reps", "1",
                                   "--plain-reps", "2", "--replay", "2"},
                                  t.file("blas-ops.json"));
    make_document({"ops", "-m", f16, "-p", "32", "--device", "CPU", "--reps", "1", "--plain-reps",
                   "2", "--replay", "2"},
                  t.file("cpu-ops.json"));
    Proc cmp = run_sb({"compare", t.file("cpu-ops.json"), t.file("blas-ops.json"), "--out",
                       t.file("compare-ops.json")});
    ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
    json sustained = make_document(
        {"sustained", "-m", model, "--rounds", "4", "--prompt-tokens", "32", "--max-tokens", "8",
         "--sysfs-root", sys.string(), "--telemetry", "on", "--idle", "0"},
        t.file("sustained.json"));
    json hybrid;
    {
        sbtest::RpcServer server(t);
        ASSERT_TRUE(server.ready);
        hybrid = make_document({"hybrid", "-m", model, "--decode-device", "RPC0", "--rpc",
                                server.endpoint(), "-p", "32", "-n", "8", "-r", "2"},
                               t.file("hybrid.json"));
    }
    // A fixture tree does not heat up: the onsets are set by hand so that their markers are
    // drawn (the sustained tests find planted ones in real runs).
    ASSERT_FALSE(sustained["sustained"]["phases"].empty());
    sustained["sustained"]["phases"][0]["across"]["throttle_onset_round"] = 3;
    sustained["sustained"]["phases"][0]["across"]["freq_onset_round"] = 4;
    write_json(t.file("sustained.json"), sustained);
    write_json(t.file("odd.json"), json{{"hello", "world"}});

    const fs::path dir = fs::path(SB_BINARY_DIR) / "report_test";
    fs::create_directories(dir);
    const std::string html = (dir / "report.html").string();
    const std::string png = (dir / "report.png").string();
    Proc r = run_sb({"report", t.file("run.json"), t.file("ops.json"), t.file("decompose.json"),
                     t.file("sustained.json"), t.file("hybrid.json"),
                     source_path("tests/fixtures/report/compare.json"), t.file("odd.json"),
                     t.file("blas-ops.json"), t.file("compare-ops.json"), "-o", html, "--title",
                     "integration"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << "the page goes to the file, not stdout";

    const std::string dump = t.file("charts.json");
    std::string why;
    std::vector<std::string> check = report_check_argv(html, png, dump, why);
    ASSERT_FALSE(check.empty()) << why;
    // Every chart also as a PNG of its own, to look at.
    check.insert(check.end(), {"--chart-shots", (dir / "charts").string()});
    for (const char* kind :
         {"throughput-prefill", "throughput-decode", "telemetry-temperature", "telemetry-frequency",
          "telemetry-power", "ops-by-op", "ops-by-backend", "decomposition", "sustained-decode",
          "sustained-prefill", "compare-ratios", "hybrid-e2e"}) {
        check.push_back("--expect-chart");
        check.push_back(kind);
    }
    for (const char* kind : {"telemetry-temperature", "sustained-decode", "compare-ratios"}) {
        check.push_back("--expect-annotated");  // stage shading, onset marker, the line at 1
        check.push_back(kind);
    }
    for (const char* text :
         {"not a stagebench result or compare document", "throttle onset", "B/A", "Fallback",
          "Op coverage", "BLAS supports", "chart.js 4.", "chartjs-plugin-annotation",
          "prefill tok/s robust [95% CI]", "decode stalls", "TTFT ms median [95% CI]", "all shapes",
          "ffn_down", "Without a counterpart"}) {
        check.push_back("--expect-text");
        check.push_back(text);
    }
    Proc c = sbtest::run(check, 180);
    std::cout << "report: " << html << "\nscreenshot: " << png << "\n" << c.out;
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    EXPECT_TRUE(fs::exists(png));

    // What the charts hold is what the documents say. Inputs: d0 run, d3 sustained, d4 hybrid.
    const json charts = json::parse(read_file(dump));
    {
        SCOPED_TRACE("run: throughput bars are each test's stall-robust tokens/s");
        const json& tests = run_doc["tests"];
        for (const char* stage : {"prefill", "decode"}) {
            const json& ch = chart_of(charts, "d0", std::string("throughput-") + stage);
            const json& data = dataset_of(ch, std::string(stage) + " tokens/s (robust)");
            ASSERT_EQ(data.size(), tests.size()) << stage;
            for (size_t i = 0; i < tests.size(); ++i)
                expect_same(data[i], tests[i][stage]["robust"]["tokens_per_s"].get<double>(),
                            stage);
        }
    }
    {
        SCOPED_TRACE("ops on BLAS: a bar called fallback holds only the fallback nodes");
        const json& stage = blas_ops["ops"]["stages"][0];  // prefill
        ASSERT_EQ(stage["stage"], "prefill");
        json fallback_ms = json::object(), fallback_n = json::object();
        for (const auto& f : stage["fallback"]) {
            const std::string op = f["op"];
            fallback_ms[op] = fallback_ms.value(op, 0.0) + f["op_ns"].get<double>() / 1e6;
            fallback_n[op] = fallback_n.value(op, 0) + f["count"].get<int>();
        }
        ASSERT_EQ(fallback_n["MUL_MAT"], 4) << "25 of 29 on BLAS";
        json* by_op = nullptr;
        for (auto& c : const_cast<json&>(charts))
            if (c["doc"] == "d7" && c["kind"] == "ops-by-op" && !by_op)
                by_op = &c;  // the first: prefill
        ASSERT_TRUE(by_op);
        const json& labels = (*by_op)["labels"];
        const json& plain = dataset_of(*by_op, "op time (ms)");
        const json& fell = dataset_of(*by_op, "op time, fallback nodes only (ms)");
        std::size_t fallback_bars = 0;
        for (std::size_t i = 0; i < labels.size(); ++i) {
            const std::string label = labels[i];
            const std::string op = label.substr(0, label.find(' '));
            if (label.find("fallback") != std::string::npos) {
                ++fallback_bars;
                ASSERT_TRUE(fallback_n.contains(op)) << label;
                EXPECT_NE(label.find("(" + std::to_string(fallback_n[op].get<int>()) + " node"),
                          std::string::npos)
                    << label;
                EXPECT_TRUE(plain[i].is_null()) << label;
                expect_same(fell[i], fallback_ms[op].get<double>(), label);
            } else {
                EXPECT_TRUE(fell[i].is_null()) << label;
            }
        }
        EXPECT_EQ(fallback_bars, fallback_n.size());
        // MUL_MAT's own bar holds the 25 nodes BLAS ran: the op type's time less the fallback's.
        for (std::size_t i = 0; i < labels.size(); ++i)
            if (labels[i] == "MUL_MAT") {
                double all = 0;
                for (const auto& a : stage["by_op"])
                    if (a["op"] == "MUL_MAT")
                        all = a["op_ns"].get<double>() / 1e6;
                expect_same(plain[i], all - fallback_ms["MUL_MAT"].get<double>(), "MUL_MAT");
            }
    }
    {
        SCOPED_TRACE("compare of ops documents: the chart holds the op types' total ratios");
        const json compare_doc = json::parse(read_file(t.file("compare-ops.json")));
        const json& ch = chart_of(charts, "d8", "compare-ratios");
        std::size_t totals = 0;
        for (const auto& row : compare_doc["rows"])
            totals += row["metric"] == "op_total_us";
        ASSERT_TRUE(ch.contains("labels"));
        EXPECT_EQ(ch["labels"].size(), totals);
    }
    {
        SCOPED_TRACE(
            "sustained: every round's tokens/s, and the onsets where the document has them");
        const json& phase = sustained["sustained"]["phases"][0];
        const json& rounds = phase["rounds"];
        const json& ch = chart_of(charts, "d3", "sustained-decode");
        const json& data = dataset_of(ch, "decode tokens/s");
        ASSERT_EQ(data.size(), rounds.size());
        for (size_t i = 0; i < rounds.size(); ++i) {
            EXPECT_EQ(data[i]["x"], rounds[i]["round"]);
            expect_same(data[i]["y"], rounds[i]["decode_tps"].get<double>(), "decode_tps");
        }
        const json& ann = ch["annotations"];
        ASSERT_TRUE(ann.contains("onset")) << ann.dump();
        EXPECT_EQ(ann["onset"]["xMin"], phase["across"]["throttle_onset_round"]);
        EXPECT_EQ(ann["onset"]["xMax"], 3);
        ASSERT_TRUE(ann.contains("freq")) << ann.dump();
        EXPECT_EQ(ann["freq"]["xMin"], phase["across"]["freq_onset_round"]);
        EXPECT_EQ(ann["freq"]["xMin"], 4);
    }
    {
        SCOPED_TRACE("hybrid: stacked bars are each mode's median stage times and transfer");
        const json& pt = hybrid["hybrid"]["points"][0];
        const json& ch = chart_of(charts, "d4", "hybrid-e2e");
        const json& pre = dataset_of(ch, "prefill (ms)");
        const json& tr = dataset_of(ch, "state transfer (ms)");
        const json& dec = dataset_of(ch, "decode (ms)");
        const std::vector<std::string> modes = {"hybrid", "prefill_alone", "decode_alone"};
        ASSERT_EQ(pre.size(), modes.size());
        ASSERT_EQ(tr.size(), modes.size());
        ASSERT_EQ(dec.size(), modes.size());
        for (size_t i = 0; i < modes.size(); ++i) {
            const json& test = hybrid["tests"][pt["tests"][modes[i]].get<size_t>()];
            expect_same(pre[i], median_of(test["prefill"]["duration_ns"]) / 1e6, modes[i]);
            expect_same(dec[i], median_of(test["decode"]["duration_ns"]) / 1e6, modes[i]);
        }
        expect_same(tr[0], median_of(pt["transfer"]["duration_ns"]) / 1e6, "transfer");
        EXPECT_EQ(tr[1], 0);
        EXPECT_EQ(tr[2], 0);
    }
}

TEST(Report, MissingOrNonJsonInputIsOneLineAndExit2) {
    TempDir t;
    Proc missing = run_sb({"report", t.file("absent.json"), "-o", t.file("r.html")});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("absent.json"), std::string::npos) << missing.err;
    EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
    EXPECT_FALSE(fs::exists(t.file("r.html")));

    std::ofstream(t.file("bad.json")) << "{\"command\": \"run\", ";
    Proc bad = run_sb({"report", t.file("bad.json"), "-o", t.file("r.html")});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("not JSON"), std::string::npos) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(Report, UnknownCommandsAndSectionsBecomeNotesNotFailures) {
    TempDir t;
    write_json(t.file("other.json"), json{{"name", "not from stagebench"}});
    write_json(t.file("future.json"), json{{"schema", "stagebench.result"},
                                           {"command", "frobnicate"},
                                           {"tests", json::array()},
                                           {"telemetry", {{"series", "nope"}}},
                                           {"brand_new_section", {{"x", 1}}}});
    Proc p =
        run_sb({"report", t.file("other.json"), t.file("future.json"), "-o", t.file("r.html")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const std::string html = read_file(t.file("r.html"));
    EXPECT_NE(html.find("not a stagebench result or compare document"), std::string::npos);
    EXPECT_NE(html.find("command 'frobnicate' is not known"), std::string::npos);
    EXPECT_NE(html.find("section 'brand_new_section' is not known"), std::string::npos);
}

// What cannot be read as this stagebench's documents is bad input (README, "Bad input and
// faults"): a JSON that is not an object, known fields of the wrong type, a newer version.
TEST(Report, DocumentsOfTheWrongShapeOrANewerVersionAreOneLineAndExit2) {
    TempDir t;
    write_json(t.file("array.json"), json::array({1, 2, 3}));
    write_json(t.file("typed.json"),
               json{{"schema", "stagebench.result"},
                    {"tests", {{{"config", "not an object"}, {"prefill", 42}}}}});
    write_json(t.file("ops.json"),
               json{{"schema", "stagebench.result"}, {"ops", {{"stages", {1, "two"}}}}});
    write_json(t.file("compare2.json"),
               json{{"command", "compare"}, {"compare_schema_version", 2}});
    for (const char* name : {"array.json", "typed.json", "ops.json", "compare2.json"}) {
        Proc p = run_sb({"report", t.file(name), "-o", t.file("r.html")});
        EXPECT_EQ(p.exit_code, 2) << name << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_NE(p.err.find(name), std::string::npos) << p.err;
    }
}
