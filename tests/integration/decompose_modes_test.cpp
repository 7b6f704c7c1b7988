// `stagebench decompose --mode` on the real llama.cpp with the tiny synthetic model: every mode
// a fresh `stagebench run` process with its environment, interleaved rounds, the stage times and
// the parts with CIs; a mode whose environment breaks its child is kept as an error beside the
// others; bad --mode syntax is one line and exit 2. And `import hexagon-profile --mode` on three
// mode logs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

const json& stage_time(const json& mode, const std::string& stage) {
    for (const auto& t : mode["times"])
        if (t["stage"] == stage)
            return t;
    static const json none;
    return none;
}

}  // namespace

TEST(DecomposeModes, TwoCpuModesGiveBothStageTimesAndTheirDifferenceWithACi) {
    TempDir t;
    const std::string out = t.file("modes.json");
    // Two knobs the CPU build reads when it starts: ggml-cpu's GGML_CPU_DISABLE_FUSION and
    // llama.cpp's LLAMA_GRAPH_REUSE_DISABLE; SB_MODE_TAG has no effect but must be seen too.
    Proc p = run_sb({"decompose", "-m", tiny_model(), "-p", "16", "-n", "4", "-t", "1", "-r", "2",
                     "--mode", "plain=GGML_CPU_DISABLE_FUSION=0,SB_MODE_TAG=a", "--mode",
                     "rebuilt=GGML_CPU_DISABLE_FUSION=1,LLAMA_GRAPH_REUSE_DISABLE=1,SB_MODE_TAG=b",
                     "--out", out});
    ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
    EXPECT_NE(p.out.find("# Pipeline modes:"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| rebuilt − plain |"), std::string::npos) << p.out;
    EXPECT_NE(p.err.find("mode rebuilt round 2/2:"), std::string::npos) << p.err;

    const json doc = json::parse(read_file(out));
    EXPECT_EQ(doc["command"], "decompose");
    const json& s = doc["modes"];
    EXPECT_EQ(s["source"], "processes");
    EXPECT_EQ(s["stages"], json({"prefill", "decode"}));
    ASSERT_EQ(s["modes"].size(), 2u);
    std::vector<int> sequence;
    for (const auto& m : s["modes"]) {
        ASSERT_EQ(m["runs"].size(), 2u) << m.dump();
        for (const auto& r : m["runs"]) {
            EXPECT_TRUE(r["error"].is_null()) << r.dump();
            EXPECT_EQ(r["exit_code"], 0);
            EXPECT_EQ(r["n_threads"], 1);
            EXPECT_GT(r["stage_ns"]["prefill"].get<double>(), 0);
            EXPECT_GT(r["stage_ns"]["decode"].get<double>(), 0);
            sequence.push_back(r["sequence"].get<int>());
        }
        for (const char* stage : {"prefill", "decode"}) {
            const json& time = stage_time(m, stage);
            EXPECT_EQ(time["n"], 2) << stage;
            EXPECT_GT(time["median_ns"].get<double>(), 0) << stage;
            EXPECT_LE(time["ci95_lo_ns"].get<double>(), time["median_ns"].get<double>());
            EXPECT_GE(time["ci95_hi_ns"].get<double>(), time["median_ns"].get<double>());
        }
    }
    // Interleaved: plain ran 1st and 4th, rebuilt 2nd and 3rd (A B, B A).
    EXPECT_EQ(sequence, (std::vector<int>{0, 3, 1, 2}));
    // The environment reached every child: each recorded its own mode's values.
    const json& plain_seen = s["modes"][0]["runs"][1]["env_seen"];
    EXPECT_EQ(plain_seen["GGML_CPU_DISABLE_FUSION"], "0");
    EXPECT_EQ(plain_seen["SB_MODE_TAG"], "a");
    EXPECT_FALSE(plain_seen.contains("LLAMA_GRAPH_REUSE_DISABLE"));
    const json& rebuilt_seen = s["modes"][1]["runs"][0]["env_seen"];
    EXPECT_EQ(rebuilt_seen["GGML_CPU_DISABLE_FUSION"], "1");
    EXPECT_EQ(rebuilt_seen["LLAMA_GRAPH_REUSE_DISABLE"], "1");
    EXPECT_EQ(rebuilt_seen["SB_MODE_TAG"], "b");
    // The parts: plain's own time, then rebuilt - plain, each with a CI; they add up to
    // rebuilt's median (a difference of the medians above).
    ASSERT_EQ(s["parts"].size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        const json& part = s["parts"][i];
        const std::string stage = i < 2 ? "prefill" : "decode";
        EXPECT_EQ(part["stage"], stage);
        ASSERT_TRUE(part["ns"].is_number()) << part.dump();
        EXPECT_TRUE(part["ci95_lo_ns"].is_number()) << part.dump();
        EXPECT_TRUE(part["ci95_hi_ns"].is_number()) << part.dump();
        if (i % 2 == 1) {
            EXPECT_EQ(part["from"], "plain");
            const double a = stage_time(s["modes"][0], stage)["median_ns"].get<double>();
            const double b = stage_time(s["modes"][1], stage)["median_ns"].get<double>();
            EXPECT_EQ(part["ns"].get<double>(), b - a);
        }
    }
    // The parent's own document records its environment too (system.backend_env).
    EXPECT_TRUE(doc["system"]["backend_env"].is_object());
}

TEST(DecomposeModes, AModeThatBreaksItsChildIsKeptAsAnErrorBesideTheOthers) {
    TempDir t;
    const std::string out = t.file("modes.json");
    // No backends where the child looks for them: its run fails before measuring.
    Proc p = run_sb({"decompose", "-m", tiny_model(), "-p", "8", "-t", "1", "-r", "1", "--stage",
                     "prefill", "--mode", "ok=", "--mode",
                     "broken=STAGEBENCH_BACKEND_DIR=/nonexistent", "--out", out, "-q"});
    EXPECT_EQ(p.exit_code, 1) << p.err << p.out;
    const json s = json::parse(read_file(out))["modes"];
    EXPECT_EQ(s["stages"], json({"prefill"}));
    const json& ok = s["modes"][0];
    EXPECT_TRUE(ok["runs"][0]["error"].is_null()) << ok.dump();
    EXPECT_GT(stage_time(ok, "prefill")["median_ns"].get<double>(), 0);
    const json& broken = s["modes"][1];
    EXPECT_EQ(broken["n_failed"], 1);
    ASSERT_TRUE(broken["runs"][0]["error"].is_string()) << broken.dump();
    EXPECT_NE(broken["runs"][0]["error"].get<std::string>(), "");
    EXPECT_TRUE(stage_time(broken, "prefill")["median_ns"].is_null());
    EXPECT_TRUE(s["parts"][1]["ns"].is_null());
    EXPECT_EQ(s["parts"][1]["note"], "mode 'broken' has no prefill time");
    EXPECT_NE(p.out.find("mode 'broken': 1 of 1 run(s) failed"), std::string::npos) << p.out;
}

// The pinned tree reads neither GGML_HEXAGON_OPMASK nor GGML_HEXAGON_OPSTAGE: a mode that sets
// one runs the same build as the baseline, and the run says so (a warning line and the
// document's warning) instead of printing its noise as a queue share. A variable it reads
// (GGML_CPU_DISABLE_FUSION) draws no warning.
TEST(DecomposeModes, AVariableNoBackendReadsIsAWarning) {
    TempDir t;
    const std::string out = t.file("modes.json");
    Proc p = run_sb({"decompose", "-m", tiny_model(), "-p", "16", "-n", "2", "-t", "1", "-r", "1",
                     "--mode", "base=GGML_CPU_DISABLE_FUSION=0", "--mode",
                     "queue=GGML_HEXAGON_OPSTAGE=1", "--out", out, "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("stagebench: warning: GGML_HEXAGON_OPSTAGE is read by no backend of "
                         "this build's llama.cpp"),
              std::string::npos)
        << p.err;
    EXPECT_EQ(p.err.find("GGML_CPU_DISABLE_FUSION is read by no"), std::string::npos) << p.err;
    int warned = 0;
    const json doc = json::parse(read_file(out));
    for (const auto& w : doc["warnings"])
        warned += w["code"] == "mode_variable_not_read";
    EXPECT_EQ(warned, 1);
}

TEST(DecomposeModes, BadModeSyntaxIsOneLineAndExit2) {
    for (const std::vector<std::string>& modes :
         {std::vector<std::string>{"--mode", "a=NOVALUE", "--mode", "b="},
          std::vector<std::string>{"--mode", "only=GGML_X=1"},
          std::vector<std::string>{"--mode", "a=X=1", "--mode", "a=X=2"},
          std::vector<std::string>{"--mode", "a=1X=1", "--mode", "b="}}) {
        std::vector<std::string> args{"decompose", "-m", tiny_model(), "-q"};
        args.insert(args.end(), modes.begin(), modes.end());
        Proc p = run_sb(args, 60);
        EXPECT_EQ(p.exit_code, 2) << modes[1] << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_NE(p.err.find("--mode"), std::string::npos) << p.err;
        EXPECT_EQ(p.out, "");
    }
}

TEST(ImportModes, ThreeModeLogsGiveThePartsSummingToTheFullMode) {
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/modes/";
    Proc p =
        run_sb({"import", "hexagon-profile", "--mode", "queue=" + dir + "queue.log", "--mode",
                "quant=" + dir + "quant.log", "--mode", "full=" + dir + "full.log", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json s = json::parse(p.out)["modes"];
    EXPECT_EQ(s["source"], "hexagon-profile");
    ASSERT_EQ(s["modes"].size(), 3u);
    // Stages as the importer gives them (the whole log, or prefill and decode): in each, the
    // three parts add up exactly to the full mode's time, and over the stages the full mode's
    // times add up to the log's total call-usec.
    double full_total = 0, queue_total = 0, quant_total = 0;
    for (const auto& stage : s["stages"]) {
        double sum = 0;
        int n = 0;
        for (const auto& part : s["parts"])
            if (part["stage"] == stage) {
                sum += part["ns"].get<double>();
                ++n;
            }
        EXPECT_EQ(n, 3);
        const double full = stage_time(s["modes"][2], stage)["median_ns"].get<double>();
        EXPECT_EQ(sum, full) << stage;
        full_total += full;
        queue_total += stage_time(s["modes"][0], stage)["median_ns"].get<double>();
        quant_total += stage_time(s["modes"][1], stage)["median_ns"].get<double>();
    }
    EXPECT_EQ(queue_total, 323000.0);
    EXPECT_EQ(quant_total, 430000.0);
    EXPECT_EQ(full_total, 1053000.0);
    EXPECT_NE(s["time_basis"].get<std::string>().find("call"), std::string::npos);

    Proc md = run_sb({"import", "hexagon-profile", "--mode", "queue=" + dir + "queue.log", "--mode",
                      "quant=" + dir + "quant.log", "--mode", "full=" + dir + "full.log"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| quant − queue |"), std::string::npos) << md.out;

    Proc missing = run_sb({"import", "hexagon-profile", "--mode", "queue=" + dir + "queue.log",
                           "--mode", "full=" + dir + "nope.log"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("mode 'full'"), std::string::npos) << missing.err;
    Proc one = run_sb({"import", "hexagon-profile", "--mode", "queue=" + dir + "queue.log"});
    EXPECT_EQ(one.exit_code, 2);
    Proc both = run_sb({"import", "hexagon-profile", dir + "queue.log", "--mode",
                        "queue=" + dir + "queue.log", "--mode", "full=" + dir + "full.log"});
    EXPECT_EQ(both.exit_code, 2);
}

// The call-usec of each graph of a mode log, summed from its lines (a graph starts at RMS_NORM
// of inp_embd into norm-0).
std::vector<double> graph_call_usec(const std::string& path) {
    std::istringstream in(read_file(path));
    std::vector<double> sums;
    for (std::string line; std::getline(in, line);) {
        if (line.find("inp_embd ") != std::string::npos &&
            line.find(" -> norm-0 ") != std::string::npos)
            sums.push_back(0);
        const auto at = line.find("call-usec ");
        if (at != std::string::npos && !sums.empty())
            sums.back() += std::stod(line.substr(at + 10));
    }
    return sums;
}

// Per stage the three parts (queue, quant - queue, full - quant) and their shares of the full
// mode, exactly, from the logs' own lines.
void expect_parts_per_stage(const json& s, const std::string& dir) {
    ASSERT_EQ(s["stages"], json({"prefill", "decode"}));
    const std::vector<double> q = graph_call_usec(dir + "queue.log"),
                              u = graph_call_usec(dir + "quant.log"),
                              f = graph_call_usec(dir + "full.log");
    ASSERT_EQ(f.size(), 2u);
    for (size_t g = 0; g < 2; ++g) {
        const std::string stage = s["stages"][g];
        SCOPED_TRACE(stage);
        std::vector<json> parts;
        for (const auto& part : s["parts"])
            if (part["stage"] == stage)
                parts.push_back(part);
        ASSERT_EQ(parts.size(), 3u);
        const double want[3] = {q[g] * 1000, (u[g] - q[g]) * 1000, (f[g] - u[g]) * 1000};
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(parts[i]["ns"].get<double>(), want[i]) << i;
            EXPECT_DOUBLE_EQ(parts[i]["share"].get<double>(), want[i] / (f[g] * 1000)) << i;
        }
        EXPECT_EQ(stage_time(s["modes"][2], stage)["median_ns"].get<double>(), f[g] * 1000);
    }
}

TEST(ImportModes, FirstUpstreamFormatGivesEachStagesPartsAndSharesExactly) {
    // Three GGML_HEXAGON_OPMASK logs of the first format (PR 16547), each a prefill and a decode
    // graph, printed through its format string (src/profile/hexagon_import_formats_test.cpp).
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/modes_pr16547/";
    Proc p =
        run_sb({"import", "hexagon-profile", "--mode", "queue=" + dir + "queue.log", "--mode",
                "quant=" + dir + "quant.log", "--mode", "full=" + dir + "full.log", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.err, "");
    const json s = json::parse(p.out)["modes"];
    EXPECT_NE(s["time_basis"].get<std::string>().find("call-usec"), std::string::npos);
    expect_parts_per_stage(s, dir);
}

TEST(ImportModes, StageOfMarkersSplitModeLogsWithoutTokenCounts) {
    // The same modes where the mat-muls ran on the CPU: no line carries a token count; the
    // user's script echoed "=== prefill" and "=== decode" into the logs.
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/modes_markers/";
    const std::vector<std::string> base = {"import", "hexagon-profile",
                                           "--mode", "queue=" + dir + "queue.log",
                                           "--mode", "quant=" + dir + "quant.log",
                                           "--mode", "full=" + dir + "full.log",
                                           "-o",     "json"};
    Proc one = run_sb(base);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(json::parse(one.out)["modes"]["stages"], json({"log"}));
    std::vector<std::string> marked = base;
    for (const char* m : {"=== prefill=prefill", "=== decode=decode"}) {
        marked.push_back("--stage-of");
        marked.push_back(m);
    }
    Proc p = run_sb(marked);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    expect_parts_per_stage(json::parse(p.out)["modes"], dir);
    marked.back() = "nostage";
    Proc bad = run_sb(marked);
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
    EXPECT_NE(bad.err.find("expected TEXT=STAGE"), std::string::npos) << bad.err;
}
