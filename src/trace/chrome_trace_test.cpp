#include "trace/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/result.hpp"

using nlohmann::json;
using sb::TraceOptions;

namespace {

// The trace of a document given as JSON, read as `stagebench trace` reads a file.
json trace(const json& doc, const TraceOptions& o = {}) {
    return sb::chrome_trace(sb::from_json<sb::ResultDocument>(doc, "doc"), o);
}

constexpr int64_t kT0 = 5'000'000'123;  // an arbitrary point of the monotonic clock

json base_doc(const std::string& command) {
    return json{{"schema", "stagebench.result"},
                {"schema_version", 2},
                {"command", command},
                {"argv", json::array({"stagebench", command})},
                {"tests", json::array()},
                {"telemetry", nullptr}};
}

// One test of two repetitions of prefill (1 ms) then decode of 3 tokens.
json run_test(int64_t t0) {
    json pre{{"n_tokens", 32},
             {"start_ns", {t0 + 1'000'000, t0 + 11'000'000}},
             {"duration_ns", {1'000'000, 1'000'000}},
             {"tokens_per_s", {32000.0, 32000.0}}};
    json dec{{"n_tokens", 3},
             {"start_ns", {t0 + 2'000'001, t0 + 12'000'001}},
             {"duration_ns", {600'003, 900'000}},
             {"tokens_per_s", {5000.0, 3333.3}},
             {"token_latency_ns", {200'001, 200'001, 200'001, 300'000, 300'000, 300'000}}};
    return json{{"config",
                 {{"test", "pp32+tg3"},
                  {"n_prompt", 32},
                  {"n_gen", 3},
                  {"devices", "CPU"},
                  {"engine", "llama"}}},
                {"status", "ok"},
                {"reps_done", 2},
                {"started_ns", t0},
                {"finished_ns", t0 + 20'000'000},
                {"prefill", pre},
                {"decode", dec}};
}

// A sustained round's test: run_test's first repetition alone.
json round_test(int64_t t0) {
    json t = run_test(t0);
    t["reps_done"] = 1;
    for (const char* s : {"prefill", "decode"})
        for (const char* k : {"start_ns", "duration_ns", "tokens_per_s"})
            t[s][k].erase(1);
    t["decode"]["token_latency_ns"] = {200'001, 200'001, 200'001};
    return t;
}

json telemetry(int64_t t0, int n) {
    json temp{{"metric", "thermal.cpu.temp_mc"},
              {"kind", "gauge"},
              {"t_ns", json::array()},
              {"values", json::array()},
              {"cumulative", json::array()}};
    json energy{{"metric", "rapl.package-0.energy_uj"},
                {"kind", "counter"},
                {"t_ns", json::array()},
                {"values", json::array()},
                {"cumulative", json::array()}};
    for (int i = 0; i < n; ++i) {
        const int64_t t = t0 + i * 100'000'000LL;
        temp["t_ns"].push_back(t);
        temp["values"].push_back(i == 2 ? json(nullptr) : json(40000 + 10 * i));
        energy["t_ns"].push_back(t);
        energy["values"].push_back(1e9 + 1e6 * i);
        energy["cumulative"].push_back(1e6 * i);  // 1 J per 100 ms: 10 W
    }
    return json{{"hz", 10}, {"series", {temp, energy}}, {"marks", json::array()}};
}

std::vector<json> events_named(const json& trace, const std::string& name) {
    std::vector<json> out;
    for (const auto& e : trace["traceEvents"])
        if (e.value("name", "") == name)
            out.push_back(e);
    return out;
}

int64_t ns(const json& v) {
    return static_cast<int64_t>(v.get<double>() * 1000.0);
}

}  // namespace

TEST(ChromeTrace, RunDocumentNestsTestsRepetitionsStagesAndTokens) {
    json doc = base_doc("run");
    doc["tests"].push_back(run_test(kT0));
    doc["telemetry"] = telemetry(kT0 - 50'000'000, 5);
    const json tr = trace(doc);
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();

    // 1 test + 2 repetitions + 2 prefills + 2 decodes + 6 tokens on "stages".
    EXPECT_EQ(c.slices.at("stages"), 13u);
    ASSERT_EQ(events_named(tr, "pp32+tg3 on CPU").size(), 1u);
    const auto reps = events_named(tr, "repetition 2");
    ASSERT_EQ(reps.size(), 1u);
    // The origin is the first telemetry sample, 50 ms before the test; every time comes back
    // to the nanosecond through Perfetto's truncating conversion.
    EXPECT_EQ(tr["metadata"]["origin_ns"], kT0 - 50'000'000);
    EXPECT_EQ(ns(reps[0]["ts"]), 50'000'000 + 11'000'000);
    EXPECT_EQ(ns(reps[0]["dur"]), 1'900'001);  // prefill start to decode end
    const auto decodes = events_named(tr, "decode");
    ASSERT_EQ(decodes.size(), 2u);
    EXPECT_EQ(ns(decodes[0]["ts"]), 50'000'000 + 2'000'001);
    EXPECT_EQ(ns(decodes[0]["dur"]), 600'003);
    EXPECT_EQ(decodes[0]["args"]["tokens_per_s"], 5000.0);
    // The last token ends with its decode.
    const auto tok3 = events_named(tr, "token 3");
    ASSERT_EQ(tok3.size(), 2u);
    EXPECT_EQ(ns(tok3[0]["ts"]) + ns(tok3[0]["dur"]), ns(decodes[0]["ts"]) + ns(decodes[0]["dur"]));

    // Counters: the gauge without its missing sample, the counter cumulative, and power.
    EXPECT_EQ(c.counter_points.at("thermal.cpu.temp_mc"), 4u);
    EXPECT_EQ(c.counter_points.at("rapl.package-0.energy_uj"), 5u);
    const auto power = events_named(tr, "rapl.package-0.power_mw (from energy_uj)");
    ASSERT_EQ(power.size(), 4u);
    EXPECT_NEAR(power[0]["args"]["value"].get<double>(), 10000.0, 1e-6);
    EXPECT_EQ(ns(power[0]["ts"]), 0);
    for (const auto& e : events_named(tr, "rapl.package-0.energy_uj"))
        EXPECT_LT(e["args"]["value"].get<double>(), 1e8);  // cumulative, not the raw counter

    // Metadata names the processes and the tracks.
    std::set<std::string> names;
    for (const auto& e : tr["traceEvents"])
        if (e["ph"] == "M" && e.contains("args") && e["args"].contains("name"))
            names.insert(e["args"]["name"].get<std::string>());
    EXPECT_TRUE(names.count("stagebench run"));
    EXPECT_TRUE(names.count("stages"));
    EXPECT_TRUE(names.count("telemetry"));
}

TEST(ChromeTrace, OptionsLeaveOutTokensAndCounters) {
    json doc = base_doc("run");
    doc["tests"].push_back(run_test(kT0));
    doc["telemetry"] = telemetry(kT0, 3);
    TraceOptions o;
    o.tokens = false;
    o.counters = false;
    const json tr = trace(doc, o);
    const auto c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty());
    EXPECT_EQ(c.slices.at("stages"), 7u);
    EXPECT_TRUE(c.counter_points.empty());
}

TEST(ChromeTrace, SustainedDocumentHasPhasesRoundsAndCooldowns) {
    json doc = base_doc("sustained");
    json rounds = json::array();
    for (int r = 0; r < 3; ++r) {
        const int64_t t0 = kT0 + r * 100'000'000LL;
        doc["tests"].push_back(round_test(t0));
        // The cooldown said to be longer than the gap since the last round: clamped to it.
        rounds.push_back({{"round", r + 1},
                          {"start_ns", t0},
                          {"end_ns", t0 + 20'000'000},
                          {"cooldown_s", r == 0 ? 0.0 : 0.09},
                          {"decode_tps", 5000.0}});
    }
    json phase{{"name", "rounds"}, {"background", ""}, {"rounds", rounds}};
    doc["sustained"] = {{"phases", json::array({phase})}};
    const json tr = trace(doc);
    const auto c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    ASSERT_EQ(events_named(tr, "phase rounds").size(), 1u);
    const auto r2 = events_named(tr, "round 2");
    ASSERT_EQ(r2.size(), 1u);
    EXPECT_EQ(r2[0]["args"]["decode_tps"], 5000.0);
    EXPECT_EQ(r2[0]["args"]["phase"], "rounds");
    EXPECT_TRUE(events_named(tr, "repetition 1").empty());  // one repetition per round
    const auto cd = events_named(tr, "cooldown");
    ASSERT_EQ(cd.size(), 2u);
    EXPECT_EQ(ns(cd[0]["dur"]), 80'000'000);  // from the end of round 1
    // phase + 3 x (round, prefill, decode, 3 tokens) + 2 cooldowns
    EXPECT_EQ(c.slices.at("stages"), 1u + 3 * 6 + 2);
}

// A traced pass after a round: its uninstrumented and traced stage runs, two ops (one per
// backend, the second behind a copy) in the traced run, all between from and from + 1 ms.
json traced_pass(int round, int64_t from) {
    json ops = json::array();
    const char* backends[] = {"CPU", "BLAS"};
    for (int i = 0; i < 2; ++i) {
        const int64_t s = from + 500'000 + i * 100'000;
        ops.push_back({{"graph", 0},
                       {"node", i},
                       {"op", i == 0 ? "ADD" : "MUL_MAT"},
                       {"backend", backends[i]},
                       {"call_ns", 50'000.0},
                       {"op_ns", nullptr},
                       {"start_ns", s},
                       {"end_ns", s + 50'000}});
    }
    json stage{{"stage", "prefill"},
               {"timeline_rep", 0},
               {"reconciliation",
                {{"plain_start_ns", {from + 100'000}},
                 {"plain_ns", {200'000}},
                 {"traced_start_ns", {from + 400'000}},
                 {"traced_ns", {400'000}}}},
               {"ops", ops},
               {"splits",
                {{{"graph", 0}, {"index", 0}, {"backend", "CPU"}, {"first_node", 0}},
                 {{"graph", 0},
                  {"index", 1},
                  {"backend", "BLAS"},
                  {"first_node", 1},
                  {"n_inputs", 1},
                  {"input_bytes", 4096}}}}};
    return json{{"label", "traced pass after round " + std::to_string(round)},
                {"start_ns", from},
                {"end_ns", from + 1'000'000},
                {"status", "ok"},
                {"error", nullptr},
                {"devices", "BLAS"},
                {"stages", {stage}}};
}

TEST(ChromeTrace, SustainedTracedPassesNestTheirOpsAfterTheChosenRounds) {
    json doc = base_doc("sustained");
    json rounds = json::array();
    for (int r = 0; r < 4; ++r) {
        const int64_t t0 = kT0 + r * 100'000'000LL;
        doc["tests"].push_back(round_test(t0));
        json round{{"round", r + 1},
                   {"start_ns", t0},
                   {"end_ns", t0 + 20'000'000},
                   {"cooldown_s", r == 0 ? 0.0 : 0.09}};
        // Passes after rounds 2 and 4 (the last): right after the round ends; the cool-down
        // before round 3 (said to be 90 ms) is what is left after the pass.
        if (r == 1 || r == 3)
            round["ops"] = traced_pass(r + 1, t0 + 20'000'000);
        rounds.push_back(round);
    }
    json phase{{"name", "rounds"}, {"background", ""}, {"rounds", rounds}};
    doc["sustained"] = {{"config", {{"cooldown", "90ms"}}}, {"phases", json::array({phase})}};
    const json tr = trace(doc);
    const auto c = sb::check_chrome_trace(tr);
    ASSERT_TRUE(c.errors.empty()) << c.errors.front();

    std::vector<json> passes;
    for (const auto& e : tr["traceEvents"])
        if (e.value("cat", "") == "traced_pass")
            passes.push_back(e);
    ASSERT_EQ(passes.size(), 2u);
    EXPECT_EQ(passes[0]["name"], "traced pass after round 2");
    EXPECT_EQ(passes[1]["name"], "traced pass after round 4");
    EXPECT_EQ(passes[0]["args"]["round"], 2);
    EXPECT_EQ(passes[0]["tid"], 1);  // the stages track
    auto inside = [](const json& in, const json& out) {
        return ns(in["ts"]) >= ns(out["ts"]) &&
               ns(in["ts"]) + ns(in["dur"]) <= ns(out["ts"]) + ns(out["dur"]);
    };
    // Each pass after its round, inside the phase (the last one too).
    const auto phase_ev = events_named(tr, "phase rounds");
    ASSERT_EQ(phase_ev.size(), 1u);
    for (int k : {0, 1}) {
        const auto round = events_named(tr, k == 0 ? "round 2" : "round 4");
        ASSERT_EQ(round.size(), 1u);
        EXPECT_EQ(ns(passes[k]["ts"]), ns(round[0]["ts"]) + ns(round[0]["dur"]));
        EXPECT_TRUE(inside(passes[k], phase_ev[0]));
    }
    // Ops and copies only inside the passes, with the pass named; one track per backend.
    EXPECT_EQ(c.slices.at("ops on CPU"), 2u);
    EXPECT_EQ(c.slices.at("ops on BLAS"), 4u);  // 2 ops and 2 copies
    for (const auto& e : tr["traceEvents"]) {
        const std::string cat = e.value("cat", "");
        if (cat != "op" && cat != "copy" && e.value("name", "").find("(") == std::string::npos)
            continue;
        const int k = inside(e, passes[0]) ? 0 : inside(e, passes[1]) ? 1 : -1;
        ASSERT_GE(k, 0) << e.dump();
        EXPECT_EQ(e["args"]["pass"], passes[k]["name"]) << e.dump();
    }
    EXPECT_EQ(events_named(tr, "prefill (traced node by node)").size(), 2u);
    EXPECT_EQ(events_named(tr, "prefill (uninstrumented)").size(), 2u);
    // The cool-down before round 3 starts after the pass, not inside it.
    const auto cd = events_named(tr, "cooldown");
    ASSERT_EQ(cd.size(), 3u);
    EXPECT_EQ(ns(cd[1]["ts"]), ns(passes[0]["ts"]) + ns(passes[0]["dur"]));
    // phase + 4 x (round, prefill, decode, 3 tokens) + 3 cooldowns + 2 x (pass, 2 stage runs)
    EXPECT_EQ(c.slices.at("stages"), 1u + 4 * 6 + 3 + 2 * 3);

    // Without ops: the passes and their stage runs stay, the op tracks go.
    TraceOptions o;
    o.ops = false;
    const auto c2 = sb::check_chrome_trace(trace(doc, o));
    EXPECT_TRUE(c2.errors.empty());
    EXPECT_EQ(c2.slices.count("ops on CPU"), 0u);
    EXPECT_EQ(c2.slices.at("stages"), 1u + 4 * 6 + 3 + 2 * 3);
}

TEST(ChromeTrace, OpsDocumentPutsOpsOnBackendTracksWithCopies) {
    json doc = base_doc("ops");
    json ops = json::array();
    const char* backends[] = {"CPU", "CPU", "BLAS", "BLAS"};
    for (int i = 0; i < 4; ++i) {
        const int64_t s = kT0 + 1000 + i * 10'000;
        ops.push_back({{"graph", 0},
                       {"node", i},
                       {"op", i == 2 ? "MUL_MAT" : "ADD"},
                       {"name", "ffn_up-" + std::to_string(i)},
                       {"layer", i},
                       {"backend", backends[i]},
                       {"type", "f32"},
                       {"ne", {4096, 32, 1, 1}},
                       {"srcs", {{{"name", "w"}, {"type", "q4_0"}, {"ne", {4096, 4096, 1, 1}}}}},
                       {"op_ns", 1234.5},
                       {"call_ns", 5000.0},
                       {"start_ns", s},
                       {"end_ns", s + 5000}});
    }
    json stage{
        {"stage", "decode"},
        {"timeline_rep", 0},
        {"reconciliation",
         {{"plain_start_ns", {kT0 - 100'000}},
          {"plain_ns", {50'000}},
          {"traced_start_ns", {kT0}},
          {"traced_ns", {60'000}}}},
        {"ops", ops},
        {"splits",
         {{{"graph", 0}, {"index", 0}, {"backend", "CPU"}, {"first_node", 0}, {"n_inputs", 0}},
          {{"graph", 0},
           {"index", 1},
           {"backend", "BLAS"},
           {"first_node", 2},
           {"n_inputs", 1},
           {"input_bytes", 524288},
           {"inputs", {"ffn_norm-1"}},
           {"copy_ns", 4000.0}}}}};
    doc["ops"] = {{"stages", {stage}}};
    const json tr = trace(doc);
    const auto c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(c.slices.at("ops on CPU"), 2u);
    EXPECT_EQ(c.slices.at("ops on BLAS"), 3u);  // two ops and the copy
    EXPECT_EQ(c.slices.at("stages"), 2u);
    const auto mm = events_named(tr, "MUL_MAT");
    ASSERT_EQ(mm.size(), 1u);
    EXPECT_EQ(mm[0]["args"]["shape"], "4096x32");
    EXPECT_EQ(mm[0]["args"]["srcs"][0]["shape"], "4096x4096");
    EXPECT_EQ(mm[0]["args"]["srcs"][0]["type"], "q4_0");
    EXPECT_EQ(mm[0]["args"]["op_ns"], 1234.5);
    EXPECT_EQ(mm[0]["args"]["call_ns"], 5000.0);
    EXPECT_EQ(mm[0]["args"]["backend"], "BLAS");
    const auto copy = events_named(tr, "copy to BLAS");
    ASSERT_EQ(copy.size(), 1u);
    EXPECT_EQ(copy[0]["args"]["input_bytes"], 524288);
    EXPECT_EQ(ns(copy[0]["dur"]), 5000);  // end of node 1 to start of node 2
    EXPECT_EQ(copy[0]["tid"], mm[0]["tid"]);

    TraceOptions o;
    o.ops = false;
    const auto c2 = sb::check_chrome_trace(trace(doc, o));
    EXPECT_EQ(c2.slices.count("ops on CPU"), 0u);

    // No traced run dispatched every node alone (isolation_stride > 1): the ops are the
    // capturing run's, and a stage slice of their own spans them.
    doc["ops"]["stages"][0]["timeline_rep"] = nullptr;
    doc["ops"]["stages"][0]["isolation_stride"] = 4;
    const json tr3 = trace(doc);
    const auto c3 = sb::check_chrome_trace(tr3);
    EXPECT_TRUE(c3.errors.empty()) << c3.errors.front();
    EXPECT_EQ(c3.slices.at("stages"), 3u);
    const auto cap = events_named(tr3, "decode (capturing, every node alone)");
    ASSERT_EQ(cap.size(), 1u);
    EXPECT_EQ(ns(cap[0]["dur"]), 3 * 10'000 + 5000);  // first op's start to last op's end
    EXPECT_EQ(cap[0]["args"]["ops_shown"], true);
}

TEST(ChromeTrace, RejectsWhatIsNotAResultDocument) {
    EXPECT_THROW(trace(json{{"traceEvents", json::array()}}), sb::Error);
    EXPECT_THROW(trace(json::array()), sb::Error);
    // A document without timestamps (an imported log) gives an empty but valid trace.
    const auto c = sb::check_chrome_trace(trace(base_doc("import")));
    EXPECT_TRUE(c.errors.empty());
}

TEST(TraceCheck, FindsWhatPerfettoWouldMisread) {
    auto meta = [](const char* what, int tid, const char* name) {
        return json{{"ph", "M"},  {"name", what}, {"pid", 1},
                    {"tid", tid}, {"ts", 0},      {"args", {{"name", name}}}};
    };
    auto x = [](int tid, double ts, double dur) {
        return json{{"ph", "X"}, {"name", "s"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
    };
    json ok{{"traceEvents",
             {meta("process_name", 0, "p"), meta("thread_name", 1, "a"), x(1, 0, 10), x(1, 2, 3),
              x(1, 5, 5), x(1, 10, 1)}}};
    EXPECT_TRUE(sb::check_chrome_trace(ok).errors.empty());
    EXPECT_EQ(sb::check_chrome_trace(ok).slices.at("a"), 4u);

    json partial = ok;
    partial["traceEvents"].push_back(x(1, 8, 4));  // starts inside [0,10], ends after it
    EXPECT_FALSE(sb::check_chrome_trace(partial).errors.empty());

    json unnamed = ok;
    unnamed["traceEvents"].push_back(x(2, 0, 1));
    EXPECT_FALSE(sb::check_chrome_trace(unnamed).errors.empty());

    json no_ts = ok;
    no_ts["traceEvents"][2].erase("ts");
    EXPECT_FALSE(sb::check_chrome_trace(no_ts).errors.empty());

    json back = ok;
    back["traceEvents"].push_back(
        {{"ph", "C"}, {"name", "c"}, {"pid", 1}, {"tid", 0}, {"ts", 5}, {"args", {{"value", 1}}}});
    EXPECT_TRUE(sb::check_chrome_trace(back).errors.empty());
    back["traceEvents"].push_back(
        {{"ph", "C"}, {"name", "c"}, {"pid", 1}, {"tid", 0}, {"ts", 4}, {"args", {{"value", 2}}}});
    EXPECT_FALSE(sb::check_chrome_trace(back).errors.empty());

    json not_number = ok;
    not_number["traceEvents"].push_back({{"ph", "C"},
                                         {"name", "c"},
                                         {"pid", 1},
                                         {"tid", 0},
                                         {"ts", 5},
                                         {"args", {{"value", "hot"}}}});
    EXPECT_FALSE(sb::check_chrome_trace(not_number).errors.empty());

    EXPECT_FALSE(sb::check_chrome_trace(json::object()).errors.empty());
}

// A 20-round sustained run at 10 Hz: 20 rounds of 30 s with 40 telemetry series (a phone:
// temperatures, rails, clocks, residency bins) and 256 decoded tokens each.
TEST(ChromeTrace, TwentyRoundSustainedRunStaysLoadable) {
    json doc = base_doc("sustained");
    const int64_t round_ns = 30'000'000'000LL;
    json rounds = json::array();
    for (int r = 0; r < 20; ++r) {
        const int64_t t0 = kT0 + r * round_ns;
        json pre{{"n_tokens", 2048},
                 {"start_ns", {t0 + 1'000}},
                 {"duration_ns", {4'000'000'000LL}},
                 {"tokens_per_s", {512.0}}};
        json lat = json::array();
        for (int i = 0; i < 256; ++i)
            lat.push_back(100'000'000);
        json dec{{"n_tokens", 256},
                 {"start_ns", {t0 + 4'000'002'000LL}},
                 {"duration_ns", {25'600'000'000LL}},
                 {"tokens_per_s", {10.0}},
                 {"token_latency_ns", lat}};
        doc["tests"].push_back(
            {{"config",
              {{"test", "pp2048+tg256"}, {"n_prompt", 2048}, {"n_gen", 256}, {"devices", "CPU"}}},
             {"reps_done", 1},
             {"started_ns", t0},
             {"finished_ns", t0 + round_ns - 1'000'000},
             {"prefill", pre},
             {"decode", dec}});
        rounds.push_back({{"round", r + 1},
                          {"start_ns", t0},
                          {"end_ns", t0 + round_ns - 1'000'000},
                          {"cooldown_s", 0.0}});
    }
    json phase{{"name", "rounds"}, {"rounds", rounds}};
    doc["sustained"] = {{"phases", json::array({phase})}};
    json series = json::array();
    const int n = 20 * 30 * 10;
    for (int m = 0; m < 40; ++m) {
        json s{{"metric", "sensor" + std::to_string(m) + ".temp_mc"}, {"kind", "gauge"}};
        for (int i = 0; i < n; ++i) {
            s["t_ns"].push_back(kT0 + i * 100'000'000LL);
            s["values"].push_back(40000 + (i * 7 + m) % 5000);
        }
        series.push_back(s);
    }
    doc["telemetry"] = {{"series", series}};
    const std::string text = trace(doc).dump();
    const json back = json::parse(text);
    const auto c = sb::check_chrome_trace(back);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(c.counter_points.size(), 40u);
    EXPECT_EQ(c.counter_points.at("sensor0.temp_mc"), static_cast<size_t>(n));
    // 240,000 counter points and 5,180 slices: well inside what Perfetto's UI and
    // chrome://tracing load (hundreds of MB).
    EXPECT_LT(text.size(), 40u << 20) << text.size();
}

// A serve document on a scripted section: each point a slice on "stages", its requests on
// lanes (the first lane free at each send), each request holding its TTFT, failed requests
// named so, telemetry counters beside them.
TEST(ChromeTrace, ServeRequestsOnLanesWithTheirTtft) {
    auto request = [](int index, int64_t send_ms, std::optional<int64_t> ttft_ms,
                      std::optional<int64_t> e2e_ms) {
        json r{{"index", index},
               {"send_ns", send_ms * 1'000'000},
               {"ttft_ns", ttft_ms ? json(*ttft_ms * 1'000'000) : json(nullptr)},
               {"e2e_ns", e2e_ms ? json(*e2e_ms * 1'000'000) : json(nullptr)},
               {"output_tokens", 8}};
        if (!e2e_ms)
            r["error"] = "HTTP 500";
        return r;
    };
    json doc = base_doc("serve");
    json closed{{"mode", "concurrency"},
                {"value", 2},
                {"start_ns", kT0},
                {"ok", 3},
                {"errors", 1},
                {"requests",
                 {request(0, 0, 10, 50), request(1, 1, 20, 40), request(2, 41, 5, 30),
                  request(3, 52, std::nullopt, std::nullopt)}}};
    json open{{"mode", "rate"},
              {"value", "inf"},
              {"start_ns", kT0 + 100'000'000},
              {"requests", {request(0, 0, 2, 10)}}};
    json older{{"mode", "rate"}, {"value", 1}, {"requests", {request(0, 0, 2, 10)}}};
    doc["serve"] = {{"points", {closed, open, older}}};
    doc["telemetry"] = telemetry(kT0, 3);
    const json tr = trace(doc);
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    // Lane 1: requests 0 and 3 of the first point and the second point's request, each but the
    // failed one with its two parts; lane 2: requests 1 and 2 (2 was sent when 1 had ended and
    // 0 had not). The point without start_ns (an earlier build's) is left out.
    EXPECT_EQ(c.slices.at("requests, lane 1"), 7u);
    EXPECT_EQ(c.slices.at("requests, lane 2"), 6u);
    EXPECT_EQ(c.slices.count("requests, lane 3"), 0u);
    EXPECT_EQ(c.slices.at("stages"), 2u);
    const auto point = events_named(tr, "concurrency 2");
    ASSERT_EQ(point.size(), 1u);
    EXPECT_EQ(ns(point[0]["ts"]), 0);
    EXPECT_EQ(ns(point[0]["dur"]), 71'000'000);  // request 2 ends last, at 41 + 30 ms
    EXPECT_EQ(point[0]["args"]["lanes"], 2);
    EXPECT_EQ(events_named(tr, "rate inf").size(), 1u);
    EXPECT_EQ(events_named(tr, "rate 1").size(), 0u);
    const auto waits = events_named(tr, "waiting for the first token");
    ASSERT_EQ(waits.size(), 4u);
    EXPECT_EQ(ns(waits[1]["ts"]), 1'000'000);  // request 1, sent at 1 ms
    EXPECT_EQ(ns(waits[1]["dur"]), 20'000'000);
    const auto r1 = events_named(tr, "request 1");
    ASSERT_EQ(r1.size(), 1u);
    EXPECT_EQ(r1[0]["tid"], 101);
    EXPECT_EQ(ns(r1[0]["dur"]), 40'000'000);
    EXPECT_EQ(r1[0]["args"]["ttft_ms"], 20.0);
    const auto failed = events_named(tr, "request 3 (failed)");
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0]["args"]["error"], "HTTP 500");
    EXPECT_EQ(failed[0]["tid"], 100);
    EXPECT_EQ(ns(failed[0]["ts"]), 52'000'000);
    // The telemetry counters are there too.
    EXPECT_EQ(c.counter_points.at("rapl.package-0.energy_uj"), 3u);
}

namespace {

TEST(ChromeTrace, ExplainDocumentHasATrackPerLevelAndASlicePerRun) {
    sb::ResultDocument doc = sb::from_json<sb::ResultDocument>(base_doc("explain"), "doc");
    sb::ExplainSection s;
    s.rounds = 2;
    int64_t t = kT0;
    for (const char* id : {"graph", "graph+n_ubatch", "server"}) {
        sb::ExplainMeasure m;
        m.id = id;
        m.level = std::string(id) == "server" ? "server" : "graph";
        s.measures.push_back(m);
    }
    // Round 0 forward, round 1 backward; the server's second run failed.
    const int order[2][3] = {{0, 1, 2}, {2, 1, 0}};
    for (int round = 0; round < 2; ++round)
        for (int k : order[round]) {
            sb::ExplainRun r;
            r.round = round;
            r.start_ns = t;
            r.end_ns = t + 1'000'000;
            t += 2'000'000;
            r.prefill_ns = 0.5e6;
            if (k == 2 && round == 1) {
                r.prefill_ns.reset();
                r.error = "HTTP 500";
            }
            s.measures[static_cast<size_t>(k)].runs.push_back(r);
        }
    doc.explain = s;
    const json tr = sb::chrome_trace(doc);
    const sb::TraceCheck c = sb::check_chrome_trace(tr);
    EXPECT_TRUE(c.errors.empty()) << c.errors.front();
    EXPECT_EQ(c.slices.at("level 2: graph"), 2u);
    EXPECT_EQ(c.slices.at("level 2: graph+n_ubatch"), 2u);
    EXPECT_EQ(c.slices.at("level 4: server"), 2u);
    EXPECT_EQ(c.slices.at("stages"), 2u) << "one slice per round";
    bool failed = false, args = false;
    for (const auto& e : tr["traceEvents"]) {
        if (e.value("name", "") == "round 2 (failed)") {
            failed = true;
            EXPECT_EQ(e["args"]["error"], "HTTP 500");
        }
        if (e.value("name", "") == "round 1" && e.value("cat", "") == "graph")
            args = e["args"]["prefill_ms"] == 0.5;
    }
    EXPECT_TRUE(failed);
    EXPECT_TRUE(args);
}

}  // namespace
