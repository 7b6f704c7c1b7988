// `--trace` and `stagebench trace` with the real binary on the tiny synthetic model: the traces
// are parsed back and checked against the Chrome Trace Event format as Perfetto reads it
// (nesting per track, one clock, counters per telemetry series, named tracks, op arguments).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_harness.hpp"
#include "trace/chrome_trace.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

int64_t ns(const json& v) {
    return static_cast<int64_t>(v.get<double>() * 1000.0);
}

std::map<int64_t, std::string> thread_names(const json& tr) {
    std::map<int64_t, std::string> out;
    for (const auto& e : tr["traceEvents"])
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 1)
            out[e["tid"].get<int64_t>()] = e["args"]["name"];
    return out;
}

std::vector<json> slices(const json& tr, const std::string& cat) {
    std::vector<json> out;
    for (const auto& e : tr["traceEvents"])
        if (e["ph"] == "X" && e.value("cat", "") == cat)
            out.push_back(e);
    return out;
}

bool within(const json& inner, const json& outer) {
    return ns(inner["ts"]) >= ns(outer["ts"]) &&
           ns(inner["ts"]) + ns(inner["dur"]) <= ns(outer["ts"]) + ns(outer["dur"]);
}

fs::path fixture_tree(const TempDir& t) {
    const fs::path root = t.path / "sys";
    fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/android-snapdragon/sys", root,
             fs::copy_options::recursive);
    return root;
}

}  // namespace

TEST(Trace, OpsTraceHasEveryTracedOpOnItsBackendInsideItsStage) {
    TempDir t;
    const std::string out = t.file("ops.json"), trace = t.file("ops.trace.json");
    Proc p = run_sb({"ops", "-m", tiny_model(), "-p", "16", "-t", "1", "--replay", "2", "--reps",
                     "2", "--plain-reps", "2", "--out", out, "--trace", trace, "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.err.find("trace written to"), std::string::npos) << p.err;
    const json doc = json::parse(read_file(out));
    const json tr = json::parse(read_file(trace));
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(tr["metadata"]["command"], "ops");

    const auto names = thread_names(tr);
    size_t n_ops = 0;
    std::set<std::string> backends;
    for (const auto& st : doc["ops"]["stages"]) {
        n_ops += st["ops"].size();
        for (const auto& r : st["ops"]) {
            backends.insert(r["backend"].get<std::string>());
            ASSERT_TRUE(r["start_ns"].is_number()) << r.dump();
            EXPECT_GE(r["end_ns"].get<int64_t>(), r["start_ns"].get<int64_t>());
        }
    }
    ASSERT_GT(n_ops, 0u);
    const auto ops = slices(tr, "op");
    EXPECT_EQ(ops.size(), n_ops);
    for (const auto& b : backends)
        EXPECT_TRUE(c.slices.count("ops on " + b)) << b;

    // The stage run whose timeline the records keep holds all of that stage's ops.
    std::map<std::string, json> shown;
    for (const auto& s : slices(tr, "stage"))
        if (s["args"].value("ops_shown", false))
            shown[s["args"]["stage"]] = s;
    ASSERT_EQ(shown.size(), doc["ops"]["stages"].size());
    for (const auto& o : ops) {
        const json& a = o["args"];
        for (const char* k : {"name", "backend", "shape", "type", "op_ns", "call_ns", "srcs"})
            EXPECT_TRUE(a.contains(k)) << k << " in " << o.dump();
        EXPECT_EQ(names.at(o["tid"].get<int64_t>()), "ops on " + a["backend"].get<std::string>());
        ASSERT_TRUE(shown.count(a["stage"]));
        EXPECT_TRUE(within(o, shown[a["stage"]])) << o.dump();
    }

    // `stagebench trace` on the saved document writes the same trace.
    const std::string again = t.file("again.json");
    Proc q = run_sb({"trace", out, "-o", again});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    EXPECT_EQ(json::parse(read_file(again)), tr);
}

TEST(Trace, SustainedTraceHasRoundsStagesAndACounterPerTelemetrySeries) {
    TempDir t;
    const fs::path root = fixture_tree(t);
    const std::string out = t.file("s.json"), trace = t.file("s.trace.json");
    Proc p = run_sb({"sustained",   "-m",
                     tiny_model(),  "--rounds",
                     "3",           "--prompt-tokens",
                     "32",          "--max-tokens",
                     "8",           "-t",
                     "1",           "--cooldown",
                     "200ms",       "--sysfs-root",
                     root.string(), "--telemetry",
                     "on",          "--telemetry-hz",
                     "10",          "--idle",
                     "0",           "--out",
                     out,           "--trace",
                     trace,         "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json tr = json::parse(read_file(trace));
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();

    // A counter track for every telemetry series that has a reading.
    ASSERT_TRUE(doc["telemetry"]["series"].is_array());
    ASSERT_FALSE(doc["telemetry"]["series"].empty());
    for (const auto& s : doc["telemetry"]["series"]) {
        size_t present = 0;
        const char* key = s["kind"] == "counter" ? "cumulative" : "values";
        for (const auto& v : s[key])
            present += v.is_number();
        if (present == 0)
            continue;
        const std::string m = s["metric"];
        ASSERT_TRUE(c.counter_points.count(m)) << m;
        EXPECT_EQ(c.counter_points.at(m), present) << m;
    }

    // Rounds inside their phase; prefill and decode (and its tokens) inside their round.
    const auto rounds = slices(tr, "round");
    ASSERT_EQ(rounds.size(), 3u);
    const auto phases = slices(tr, "phase");
    ASSERT_EQ(phases.size(), 1u);
    const auto stages = slices(tr, "stage");
    EXPECT_EQ(stages.size(), 6u);
    EXPECT_EQ(slices(tr, "token").size(), 3u * 8);
    EXPECT_EQ(slices(tr, "cooldown").size(), 2u);
    for (const auto& r : rounds) {
        EXPECT_TRUE(within(r, phases[0]));
        int inside = 0;
        for (const auto& s : stages)
            inside += within(s, r);
        EXPECT_EQ(inside, 2) << r.dump();
    }
    // One clock: the round times of the document, relative to the trace's origin.
    const int64_t origin = tr["metadata"]["origin_ns"];
    const json& r1 = doc["sustained"]["phases"][0]["rounds"][0];
    EXPECT_EQ(ns(rounds[0]["ts"]), r1["start_ns"].get<int64_t>() - origin);
    EXPECT_EQ(ns(rounds[0]["dur"]), r1["end_ns"].get<int64_t>() - r1["start_ns"].get<int64_t>());
    // The telemetry samples span the rounds.
    int64_t first_counter = INT64_MAX, last_counter = 0;
    for (const auto& e : tr["traceEvents"])
        if (e["ph"] == "C") {
            first_counter = std::min(first_counter, ns(e["ts"]));
            last_counter = std::max(last_counter, ns(e["ts"]));
        }
    EXPECT_LE(first_counter, ns(rounds[0]["ts"]));
    EXPECT_GE(last_counter, ns(rounds[2]["ts"]));
}

// --trace-ops-rounds 1,3: a node-by-node traced pass after rounds 1 and 3 only, outside the
// rounds' measured time and cool-downs; its ops on the backend tracks, inside the pass.
TEST(Trace, SustainedTraceOpsRoundsPutsOpsInTracedPassesAfterTheChosenRounds) {
    TempDir t;
    const fs::path root = fixture_tree(t);
    const std::string out = t.file("s.json"), trace = t.file("s.trace.json");
    auto args = [&](const std::string& doc_path, bool traced) {
        std::vector<std::string> a{
            "sustained", "-m",           tiny_model(),  "--rounds",    "4",      "--prompt-tokens",
            "32",        "--max-tokens", "8",           "-t",          "1",      "--cooldown",
            "200ms",     "--sysfs-root", root.string(), "--telemetry", "on",     "--telemetry-hz",
            "10",        "--idle",       "0",           "--out",       doc_path, "-q"};
        if (traced)
            for (const char* x : {"--trace-ops-rounds", "1,3", "--trace"})
                a.push_back(x);
        if (traced)
            a.push_back(trace);
        return a;
    };
    Proc p = run_sb(args(out, true));
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json tr = json::parse(read_file(trace));
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(doc["sustained"]["config"]["trace_ops_rounds"], json::array({1, 3}));

    // The document: a pass after rounds 1 and 3 only, after the round ended and before the
    // next round's cool-down began; its ops timed within it.
    const json& rs = doc["sustained"]["phases"][0]["rounds"];
    ASSERT_EQ(rs.size(), 4u);
    for (size_t i = 0; i < rs.size(); ++i) {
        const json& r = rs[i];
        if (i == 1 || i == 3) {
            EXPECT_FALSE(r.contains("ops")) << i;
            continue;
        }
        ASSERT_TRUE(r.contains("ops")) << i;
        const json& pass = r["ops"];
        EXPECT_EQ(pass["label"], "traced pass after round " + std::to_string(i + 1));
        EXPECT_EQ(pass["status"], "ok") << pass["error"];
        const int64_t ps = pass["start_ns"], pe = pass["end_ns"];
        EXPECT_GE(ps, r["end_ns"].get<int64_t>());
        // The round's test record ends with the round, before the pass.
        EXPECT_EQ(doc["tests"][i]["finished_ns"].get<int64_t>(), r["end_ns"].get<int64_t>());
        if (i + 1 < rs.size()) {
            const json& next = rs[i + 1];
            const double cd_ns = next["cooldown_s"].get<double>() * 1e9;
            EXPECT_GE(cd_ns, 0.19e9);
            EXPECT_LE(static_cast<double>(pe) + cd_ns,
                      static_cast<double>(next["start_ns"].get<int64_t>()) + 1e6);
        }
        std::set<std::string> stages;
        for (const auto& st : pass["stages"]) {
            stages.insert(st["stage"].get<std::string>());
            ASSERT_FALSE(st["ops"].empty());
            for (const auto& op : st["ops"]) {
                EXPECT_EQ(op["backend"], "CPU");
                EXPECT_GE(op["start_ns"].get<int64_t>(), ps);
                EXPECT_LE(op["end_ns"].get<int64_t>(), pe);
            }
        }
        EXPECT_EQ(stages, (std::set<std::string>{"prefill", "decode"}));
    }

    // The trace: two passes on the stages track inside the phase, each after its round; every
    // op slice inside one of them.
    const auto passes = slices(tr, "traced_pass");
    ASSERT_EQ(passes.size(), 2u);
    const auto rounds = slices(tr, "round");
    ASSERT_EQ(rounds.size(), 4u);
    const auto phases = slices(tr, "phase");
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_EQ(passes[0]["name"], "traced pass after round 1");
    EXPECT_EQ(passes[1]["name"], "traced pass after round 3");
    for (int k : {0, 1}) {
        const json& round = rounds[k == 0 ? 0 : 2];
        EXPECT_GE(ns(passes[k]["ts"]), ns(round["ts"]) + ns(round["dur"]));
        EXPECT_TRUE(within(passes[k], phases[0]));
        for (const auto& r : rounds)
            EXPECT_FALSE(within(passes[k], r));
    }
    const auto ops = slices(tr, "op");
    ASSERT_FALSE(ops.empty());
    size_t in_pass[2] = {0, 0};
    for (const auto& o : ops) {
        const int k = within(o, passes[0]) ? 0 : within(o, passes[1]) ? 1 : -1;
        ASSERT_GE(k, 0) << o.dump();
        ++in_pass[k];
        EXPECT_EQ(o["args"]["pass"], passes[k]["name"]);
    }
    EXPECT_GT(in_pass[0], 0u);
    EXPECT_GT(in_pass[1], 0u);
    EXPECT_EQ(c.slices.at("ops on CPU"), ops.size());
    // The rounds' own stages are those of a run without passes: prefill and decode per round.
    int round_stages = 0;
    for (const auto& st : slices(tr, "stage"))
        round_stages += within(st, rounds[0]) || within(st, rounds[1]) || within(st, rounds[2]) ||
                        within(st, rounds[3]);
    EXPECT_EQ(round_stages, 8);

    // The round records carry the same fields as without tracing (and nothing of the pass).
    const std::string plain = t.file("plain.json");
    Proc q = run_sb(args(plain, false));
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const json plain_doc = json::parse(read_file(plain));
    const json& prs = plain_doc["sustained"]["phases"][0]["rounds"];
    ASSERT_EQ(prs.size(), rs.size());
    for (size_t i = 0; i < rs.size(); ++i) {
        std::set<std::string> a, b;
        for (const auto& [k, v] : rs[i].items())
            if (k != "ops")
                a.insert(k);
        for (const auto& [k, v] : prs[i].items())
            b.insert(k);
        EXPECT_EQ(a, b) << i;
    }
}

TEST(Trace, TraceOpsRoundsBadInputIsOneLineAndExitTwo) {
    for (const char* bad : {"0", "5", "1,,3", "x"}) {
        Proc p = run_sb({"sustained", "-m", tiny_model(), "--rounds", "4", "--telemetry", "off",
                         "--trace-ops-rounds", bad, "-q"});
        EXPECT_EQ(p.exit_code, 2) << bad;
        EXPECT_NE(p.err.find("--trace-ops-rounds"), std::string::npos) << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_TRUE(p.out.empty());
    }
    Proc p =
        run_sb({"sustained", "-m", tiny_model(), "--rounds", "2", "--telemetry", "off", "--engine",
                "http", "--url", "http://127.0.0.1:9", "--trace-ops-rounds", "1", "-q"});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("in-process engine"), std::string::npos) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
}

TEST(Trace, RunTraceNestsRepetitionsInTests) {
    TempDir t;
    const std::string trace = t.file("r.trace.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16,32", "-n", "4", "-r", "2", "-t", "1",
                     "--membw", "off", "--telemetry", "off", "--trace", trace, "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json tr = json::parse(read_file(trace));
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();
    const auto tests = slices(tr, "test");
    ASSERT_EQ(tests.size(), 2u);
    const auto reps = slices(tr, "repetition");
    ASSERT_EQ(reps.size(), 4u);
    for (const auto& r : reps)
        EXPECT_TRUE(within(r, tests[0]) || within(r, tests[1]));
    EXPECT_EQ(slices(tr, "stage").size(), 8u);
    EXPECT_EQ(slices(tr, "token").size(), 16u);
}

// 20 rounds with telemetry at 10 Hz: the trace stays small and valid.
TEST(Trace, TwentyRoundSustainedRunAtTenHertz) {
    TempDir t;
    const fs::path root = fixture_tree(t);
    const std::string trace = t.file("s20.trace.json");
    Proc p = run_sb({"sustained",   "-m",
                     tiny_model(),  "--rounds",
                     "20",          "--prompt-tokens",
                     "64",          "--max-tokens",
                     "16",          "-t",
                     "1",           "--sysfs-root",
                     root.string(), "--telemetry",
                     "on",          "--telemetry-hz",
                     "10",          "--idle",
                     "0",           "--trace",
                     trace,         "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const std::string text = read_file(trace);
    EXPECT_LT(text.size(), 16u << 20);
    const sb::TraceCheck c = sb::check_chrome_trace(json::parse(text));
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(c.slices.at("stages"), 1u + 20 * (3 + 16));
    EXPECT_FALSE(c.counter_points.empty());
}

TEST(Trace, BadInputIsOneLineAndExitTwo) {
    TempDir t;
    Proc p = run_sb({"trace", t.file("missing.json")});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("cannot read"), std::string::npos) << p.err;

    const std::string other = t.file("other.json");
    std::ofstream(other) << R"({"traceEvents": []})";
    p = run_sb({"trace", other});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("not a stagebench result document"), std::string::npos) << p.err;

    const std::string broken = t.file("broken.json");
    std::ofstream(broken) << "{";
    p = run_sb({"trace", broken});
    EXPECT_EQ(p.exit_code, 2);

    // An unwritable --trace is refused before the run starts.
    p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "--trace",
                t.file("no/such/dir/t.json"), "-q"});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("--trace"), std::string::npos) << p.err;
    EXPECT_TRUE(p.out.empty());
}
