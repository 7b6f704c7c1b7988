// The pipeline-modes loop with a scripted launcher: the syntax of --mode, the interleaved order,
// a failing mode kept beside the others, the parts and the section's JSON round trip. And the
// same parts from one Hexagon log per mode (import_mode_logs), split by tokens or by markers.
#include "scenario/mode_experiment.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace sb {
namespace {

TEST(ModeSpec, ParsesNamesAndEnvironments) {
    ModeSpec q = parse_mode_spec("queue=GGML_HEXAGON_OPSTAGE=0x1");
    EXPECT_EQ(q.name, "queue");
    ASSERT_EQ(q.env.size(), 1u);
    EXPECT_EQ(q.env[0].name, "GGML_HEXAGON_OPSTAGE");
    EXPECT_EQ(q.env[0].value, "0x1");
    ModeSpec two = parse_mode_spec("cpu-only=GGML_HEXAGON_OPFILTER=.*,GGML_HEXAGON_PROFILE=");
    ASSERT_EQ(two.env.size(), 2u);
    EXPECT_EQ(two.env[0].value, ".*");
    EXPECT_EQ(two.env[1].name, "GGML_HEXAGON_PROFILE");
    EXPECT_EQ(two.env[1].value, "");
    ModeSpec eq = parse_mode_spec("x=A=b=c");  // a value may hold '='
    EXPECT_EQ(eq.env[0].value, "b=c");
    EXPECT_TRUE(parse_mode_spec("base=").env.empty());
    for (const char* bad : {"queue", "=A=1", "q=A", "q=A=1,", "q=1A=2", "q=A-B=1", "q w=A=1",
                            "q=A=1,A=2", "q=,A=1"}) {
        try {
            parse_mode_spec(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
            EXPECT_NE(std::string(e.what()).find("--mode '"), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(parse_mode_log("full=c.log"),
              std::make_pair(std::string("full"), std::string("c.log")));
    EXPECT_THROW(parse_mode_log("full="), Error);
    EXPECT_THROW(parse_mode_log("c.log"), Error);
    EXPECT_THROW(check_mode_names({"a"}), Error);
    EXPECT_THROW(check_mode_names({"a", "b", "a"}), Error);
    EXPECT_NO_THROW(check_mode_names({"a", "b"}));
}

TEST(ModeSpec, VariablesNoBackendReadsAreNamedOnce) {
    const std::vector<ModeSpec> modes = {
        parse_mode_spec("base="),
        parse_mode_spec("queue=GGML_HEXAGON_OPSTAGE=1,GGML_HEXAGON_PROFILE=1"),
        parse_mode_spec("comp=GGML_HEXAGON_OPSTAGE=2,OMP_NUM_THREADS=2")};
    const std::vector<std::string> read = {"GGML_HEXAGON_OPBATCH", "GGML_HEXAGON_PROFILE"};
    EXPECT_EQ(unread_mode_variables(modes, read), std::vector<std::string>{"GGML_HEXAGON_OPSTAGE"});
    EXPECT_TRUE(unread_mode_variables(modes, {}).empty());  // unknown: nothing is said
    // What this build reads, from its llama.cpp's sources: sorted, once each, with the variable
    // every ggml since 2024 reads.
    const auto& built = llama_env_variables();
    EXPECT_TRUE(std::is_sorted(built.begin(), built.end()));
    EXPECT_EQ(std::adjacent_find(built.begin(), built.end()), built.end());
    EXPECT_TRUE(std::binary_search(built.begin(), built.end(), "GGML_NO_BACKTRACE"));
}

TEST(ModeExperiment, RoundsAlternateTheOrder) {
    const std::vector<std::pair<int, int>> want{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {1, 1},
                                                {1, 0}, {2, 0}, {2, 1}, {2, 2}};
    EXPECT_EQ(mode_run_order(3, 3), want);
}

TEST(ModeExperiment, RunsEveryModeInterleavedKeepsAFailureAndGivesTheParts) {
    ModeExperimentOptions o;
    o.modes = {parse_mode_spec("queue=K=1"), parse_mode_spec("broken=K=9"),
               parse_mode_spec("full=K=3")};
    o.rounds = 2;
    o.stages = {"prefill", "decode"};
    o.progress = true;
    std::vector<std::string> calls;
    // Scripted times: mode queue 100/10 ns + round, full 400/40 + round; broken fails.
    ModeLauncher launch = [&](const ModeSpec& m, int round) {
        calls.push_back(m.name + std::to_string(round));
        ModeChildResult r;
        r.env_seen = {{"K", m.env[0].value}};
        r.n_threads = 2;
        r.exit_code = 0;
        if (m.name == "broken") {
            r.exit_code = 2;
            r.error = "the child process exit 2: no backend";
            return r;
        }
        const double base = m.name == "queue" ? 100 : 400;
        r.stage_ns["prefill"] = base + round;
        r.stage_ns["decode"] = base / 10 + round;
        return r;
    };
    ResultDocument doc;
    std::ostringstream err;
    const int rc = run_mode_experiment(o, launch, doc, err);
    EXPECT_EQ(rc, 1) << "a run failed";
    EXPECT_EQ(calls, (std::vector<std::string>{"queue0", "broken0", "full0", "full1", "broken1",
                                               "queue1"}));
    const std::optional<ModesSection> s = doc.modes;
    ASSERT_TRUE(s);
    ASSERT_EQ(s->modes.size(), 3u);
    EXPECT_EQ(s->modes[0].runs.size(), 2u);
    EXPECT_EQ(s->modes[0].runs[1].sequence, 5);
    EXPECT_EQ(s->modes[2].runs[1].sequence, 3);
    EXPECT_EQ(s->modes[1].n_failed, 2);
    EXPECT_EQ(*s->modes[1].runs[0].error, "the child process exit 2: no backend");
    EXPECT_EQ(s->modes[1].runs[0].env_seen["K"], "9");
    EXPECT_EQ(*s->modes[0].times[0].median_ns, 100.5);
    EXPECT_EQ(*s->modes[2].times[1].median_ns, 40.5);
    // The parts next to the broken mode have no time; the first is queue's own.
    ASSERT_EQ(s->parts.size(), 6u);
    EXPECT_EQ(*s->parts[0].ns, 100.5);
    EXPECT_FALSE(s->parts[1].ns);
    EXPECT_FALSE(s->parts[2].ns);
    ASSERT_EQ(doc.warnings.size(), 1u);
    EXPECT_EQ(doc.warnings[0].code, "mode_failed");
    EXPECT_NE(err.str().find("mode broken round 1/2: failed: the child process exit 2"),
              std::string::npos)
        << err.str();
    // The section comes back from the document's JSON as it went in.
    const ResultDocument back = from_json<ResultDocument>(to_json(doc), "modes.json");
    const std::optional<ModesSection> s2 = back.modes;
    ASSERT_TRUE(s2);
    EXPECT_EQ(to_json(*s2), to_json(*s));
}

TEST(ModeExperiment, TwoGoodModesGiveTheirDifference) {
    ModeExperimentOptions o;
    o.modes = {parse_mode_spec("t1=OMP_NUM_THREADS=1"), parse_mode_spec("t2=")};
    o.rounds = 3;
    o.stages = {"decode"};
    o.progress = false;
    int call = 0;
    ModeLauncher launch = [&](const ModeSpec& m, int) {
        ModeChildResult r;
        r.stage_ns["decode"] = (m.name == "t1" ? 1000.0 : 700.0) + (call++ % 3);
        return r;
    };
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(run_mode_experiment(o, launch, doc, err), 0);
    EXPECT_EQ(err.str(), "");
    const ModesSection s = *doc.modes;
    ASSERT_EQ(s.parts.size(), 2u);
    // Calls t1 t2 | t2 t1 | t1 t2 by the script:
    // call 0 t1 1000, 1 t2 701, 2 t2 702, 3 t1 1000, 4 t1 1001, 5 t2 702.
    EXPECT_EQ(*s.modes[0].times[0].median_ns, 1000.0);
    EXPECT_EQ(*s.modes[1].times[0].median_ns, 702.0);
    EXPECT_EQ(*s.parts[1].ns, -298.0);
    ASSERT_TRUE(s.parts[1].ci95_lo_ns);
    EXPECT_GE(*s.parts[1].ci95_lo_ns, -300.0);
    EXPECT_LE(*s.parts[1].ci95_hi_ns, -298.0);
}

// The call-usec of each graph of a mode log, summed straight from its lines (independently of
// the importer): a graph starts at its first op, RMS_NORM of inp_embd into norm-0.
std::vector<double> call_usec_per_graph(const std::string& path) {
    std::ifstream f(path);
    EXPECT_TRUE(f.good()) << path;
    std::vector<double> sums;
    for (std::string line; std::getline(f, line);) {
        if (line.find("inp_embd ") != std::string::npos &&
            line.find(" -> norm-0 ") != std::string::npos)
            sums.push_back(0);
        const auto at = line.find("call-usec ");
        if (at != std::string::npos && !sums.empty())
            sums.back() += std::stod(line.substr(at + 10));
    }
    return sums;
}

// Per stage (prefill = the first graph, decode = the second), the three parts are the
// differences of the modes' call-usec sums and their shares are of the full mode's, exactly.
void expect_exact_parts(const ModesSection& s, const std::string& dir) {
    std::map<std::string, std::vector<double>> sums;  // mode -> per graph
    for (const char* m : {"queue", "quant", "full"})
        sums[m] = call_usec_per_graph(dir + m + ".log");
    ASSERT_EQ(s.stages, (std::vector<std::string>{"prefill", "decode"}));
    ASSERT_EQ(s.parts.size(), 6u);
    for (size_t g = 0; g < 2; ++g) {
        const std::string stage = s.stages[g];
        SCOPED_TRACE(stage);
        ASSERT_EQ(sums["full"].size(), 2u);
        const double queue = sums["queue"][g] * 1000, quant = sums["quant"][g] * 1000,
                     full = sums["full"][g] * 1000;
        std::vector<const ModePart*> parts;
        for (const auto& p : s.parts)
            if (p.stage == stage)
                parts.push_back(&p);
        ASSERT_EQ(parts.size(), 3u);
        EXPECT_EQ(parts[0]->name, "queue");
        EXPECT_EQ(*parts[0]->ns, queue);
        EXPECT_EQ(*parts[1]->ns, quant - queue);
        EXPECT_EQ(*parts[2]->ns, full - quant);
        EXPECT_DOUBLE_EQ(*parts[0]->share, queue / full);
        EXPECT_DOUBLE_EQ(*parts[1]->share, (quant - queue) / full);
        EXPECT_DOUBLE_EQ(*parts[2]->share, (full - quant) / full);
        EXPECT_GT(*parts[0]->ns, 0);
    }
}

std::vector<std::pair<std::string, std::string>> mode_logs(const std::string& dir) {
    return {{"queue", dir + "queue.log"}, {"quant", dir + "quant.log"}, {"full", dir + "full.log"}};
}

TEST(ImportModeLogs, FirstFormatLogsGiveEachStagesPartsExactly) {
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/modes_pr16547/";
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(import_mode_logs(mode_logs(dir), doc, err), 0);
    EXPECT_EQ(err.str(), "");
    ASSERT_TRUE(doc.modes);
    EXPECT_NE(doc.modes->time_basis.find("call-usec"), std::string::npos);
    expect_exact_parts(*doc.modes, dir);
}

TEST(ImportModeLogs, StageOfMarkersSplitLogsWithoutTokenCounts) {
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/modes_markers/";
    std::ostringstream err;
    // Without markers a log with no mat-mul is one stage.
    ResultDocument plain;
    import_mode_logs(mode_logs(dir), plain, err);
    EXPECT_EQ(plain.modes->stages, (std::vector<std::string>{"log"}));
    ImportOptions how;
    how.stage_of = {"=== prefill=prefill", "=== decode=decode"};
    ResultDocument doc;
    EXPECT_EQ(import_mode_logs(mode_logs(dir), doc, err, how), 0);
    expect_exact_parts(*doc.modes, dir);
    bool noted = false;
    for (const auto& n : doc.modes->notes)
        noted = noted || n == "mode 'full': stages prefill, decode (split by --stage-of markers)";
    EXPECT_TRUE(noted);
    // A bad --stage-of names the mode.
    how.stage_of = {"nostage"};
    try {
        import_mode_logs(mode_logs(dir), doc, err, how);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("mode 'queue': --stage-of 'nostage'"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sb
