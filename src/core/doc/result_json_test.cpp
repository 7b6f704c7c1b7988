// The typed result document against its JSON: from_json is the inverse of to_json, field by
// field and for whole documents (the fixture documents under tests/fixtures/documents, written
// by earlier builds, included), and every refusal is one line naming the source and the path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/device_set.hpp"
#include "core/document.hpp"
#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/result.hpp"
#include "core/stats_json.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
        return e.what();
    }
    return "";
}

ResultDocument read_doc(const json& j) {
    return from_json<ResultDocument>(j, "'d.json'");
}

// A document that uses every part of the format, as the commands would write it.
ResultDocument full_document() {
    ResultDocument d;
    d.command = "run";
    d.argv = {"stagebench", "run", "-m", "m.gguf"};
    d.tool_version = "0.9.0";
    d.build_type = "Release";
    d.llama = {{"tag", "b1"}, {"backends", {"CPU"}}};
    d.system = {{"host", "h"}, {"cpu", {{"model", "x"}}}};
    d.models = {{{"path", "m.gguf"},
                 {"arch", "llama"},
                 {"name", nullptr},
                 {"file_bytes", 1024},
                 {"n_params", 7},
                 {"synthetic", true},
                 {"tensor_types", {{"f16", 3}}}}};
    d.membw = {{"gbps", 12.5}};
    d.started_at = "2026-11-29T09:30:00Z";
    d.finished_at = "2026-11-29T09:31:00Z";

    TestResult t;
    t.config.model_path = "m.gguf";
    t.config.devices = "BLAS+RPC0";
    t.config.n_prompt = 16;
    t.config.n_gen = 4;
    t.config.flash_attn = FlashAttn::on;
    t.config.target_ci = 0.02;
    t.config.seed = uint64_t{1} << 63;
    t.config.engine = EngineKind::http;
    t.status = Status::interrupted;
    t.error = "stopped";
    t.error_kind = ErrorKind::runtime;
    t.backends = {"BLAS", "CPU"};
    t.memory = {{"CPU", 0, 524288, 1179904}, {"CPU_Mapped", uint64_t{1} << 40, 0, 0}};
    t.notes = {"a note"};
    t.reps_done = 2;
    t.stopped_by = StopReason::interrupt;
    StageResult pre;
    pre.n_tokens = 16;
    pre.duration_ns = {1000, 1100};
    pre.start_ns = {5, 7000};
    pre.duration = summarize_ns(pre.duration_ns);
    pre.tokens_per_s = {1.6e7, 1.45e7};
    pre.throughput = summarize(pre.tokens_per_s);
    pre.robust.tokens_per_s = 1.5e7;
    pre.stalls = detect_stalls(std::vector<double>{1000, 1100});
    t.prefill = pre;
    DecodeResult dec;
    dec.n_tokens = 4;
    dec.duration_ns = {400, 410};
    dec.token_latency_ns = {100, 100, 100, 100, 100, 100, 105, 105};
    dec.token_latency_counts = {4, 4};
    dec.itl = summarize_ns(dec.token_latency_ns);
    dec.token_stalls = detect_stalls(std::vector<double>{100, 100, 100, 100, 100, 100, 105, 900});
    dec.kv_depth_start = 16;
    t.decode = dec;
    t.ttft_ns = {1100, 1200};
    t.ttft = summarize_ns(t.ttft_ns);
    t.roofline.decode_bandwidth_gbps = 3.5;
    TestTelemetry tel;
    StageWindow w;
    w.stage = "test0/prefill";
    w.begin_ns = 5;
    w.end_ns = 1005;
    w.duration_ns = 1000;
    w.tokens = 16;
    w.total.metric = "rapl.psys.energy_uj";
    w.total.energy_j = 0.5;
    StageEnergy e;
    e.metric = "rapl.psys.energy_uj";
    e.method = "counter";
    e.energy_j = 0.5;
    e.system_total = true;
    w.energy = {e};
    StageGauge g;
    g.metric = "thermal.cpu.temp_mc";
    g.unit = "mC";
    g.start = 40000;
    g.samples = 3;
    w.gauges = {g};
    w.residency = {{"cpufreq.policy0", "sampled", {{1.2e6, 0.25}, {2.4e6, 0.75}}}};
    w.warnings = {{"short_window", "short", "longer"}};
    tel.prefill = {w};
    tel.summary["prefill"].j_per_token = summarize(std::vector<double>{0.03});
    tel.summary["prefill"].total_metric = "rapl.psys.energy_uj";
    BatteryDrain drain;
    drain.battery = "battery.battery";
    drain.begin_ns = 5;
    drain.end_ns = 1005;
    drain.span_s = 1e-6;
    drain.capacity_start_pct = 76;
    drain.capacity_end_pct = 76;
    drain.capacity_drain_pct = 0;
    drain.counter = "charge_counter";
    drain.counter_start = 3000000;
    drain.counter_end = 3000480;  // it charged
    drain.counter_full = 4800000;
    drain.counter_drain_pct = -0.01;
    drain.counter_drain_pct_per_h = -36000;
    drain.from = "charge_counter";
    drain.drain_pct = -0.01;
    drain.drain_pct_per_h = -36000;
    tel.battery = drain;
    t.telemetry = tel;
    t.started_ns = 1;
    t.finished_ns = 9000;
    ClientTimings c;
    c.e2e_ns = {2000, 2100};
    c.first_content_ns = {std::nullopt, 1300};
    c.chunks = {3, 3};
    t.client = c;
    ServerSide s;
    s.reps = {{"llama-server", 16, 0, 4, 900, 300, std::nullopt, std::nullopt}};
    s.ttft_minus_prompt_ns = {200};
    t.server = s;
    TestFidelity tf;
    tf.reference = "m.gguf on CPU (f16/f16)";
    tf.top_k = 10;
    tf.prefill = StageFidelity{1, 0.5, 0.5, 0.5, 1, 0.9, 0.25, 0.125};
    tf.decode = StageFidelity{4, 0.25, 0.5, 0.5, 0.75, 0.8, 0.5, 0.0625};
    t.fidelity = tf;
    d.tests = {t, TestResult{}};
    d.warnings = {{"governor", "powersave", "use performance"}};

    TelemetrySection ts;
    ts.hz = 10;
    ts.sources = {{"rapl", "rapl", {"rapl.psys.energy_uj"}, {{"path", "/sys/x"}}}};
    ts.classes = {{"rapl", 1, ""}, {"nvml", 0, "no libnvidia-ml"}};
    ts.absent = {"nvml"};
    ts.metrics = {{"rapl.psys.energy_uj", "rapl.psys", "energy", "uJ", MetricKind::counter, 2.6e11,
                   1000000, true, std::nullopt}};
    TelemetrySeries series;
    series.metric = "rapl.psys.energy_uj";
    series.unit = "uJ";
    series.kind = MetricKind::counter;
    series.t_ns = {0, 100};
    series.values = {1.0, std::nullopt};
    series.cumulative = std::vector<std::optional<double>>{0.0, std::nullopt};
    ts.series = std::vector<TelemetrySeries>{series};
    ts.marks = {{"test0/prefill", true, 5, 2}};
    ts.stages = {w};
    ts.idle = IdlePower{2000, {{"rapl.psys.energy_uj", 1500.5}}};
    d.telemetry = ts;

    SustainedResult sr;
    sr.config.model = "m.gguf";
    sr.config.devices = "CPU";
    sr.config.rounds = 2;
    sr.config.cooldown = "0";
    sr.config.trace_ops_rounds = {1};
    SustainedPhase ph;
    ph.name = "rounds";
    SustainedRound r1;
    r1.round = 1;
    r1.decode_tps = 50;
    r1.freq["cpufreq.policy0"] = {2.1e6, std::nullopt};
    RoundTracedPass pass;
    pass.label = "traced pass after round 1";
    pass.start_ns = 10;
    pass.end_ns = 20;
    StageProfile sp;
    sp.stage = "prefill";
    pass.stages = {sp};
    r1.ops = pass;
    SustainedRound r2;
    r2.round = 2;
    r2.status = Status::failed;
    r2.error = "gone";
    r1.battery = drain;
    ph.rounds = {r1, r2};
    ph.across.verdict = "stable";
    ph.across.battery = drain;
    ph.across.battery_drain_pct_per_h = {1,        -36000.0, std::nullopt, std::nullopt,
                                         -36000.0, -36000.0};
    ph.across.time_at_floor = {{"cpufreq.policy0.cur_freq_khz", 4e5, 1.5, 0.25}};
    sr.phases = {ph};
    sr.slowdown = {{"decode", 1.2, 1.1, 1.3, false}};
    d.sustained = sr;

    HybridSection h;
    h.prefill_device = "CPU";
    h.decode_device = "BLAS";
    h.memory.load_order = {"prefill", "decode"};
    h.memory.weight_bytes_decode_engine = 4096;
    h.memory.note = "host memory only";
    HybridPoint p;
    p.n_prompt = 16;
    p.n_gen = 4;
    p.tests = {{"hybrid", 0}, {"prefill_alone", 1}};
    p.transfer.bytes = {4096};
    p.transfer.duration_ns = {300};
    p.transfer.duration = summarize_ns(p.transfer.duration_ns);
    p.transfer.gbps = 13.6;
    p.e2e["hybrid"] = {{2000, 2100}, summarize_ns(std::vector<int64_t>{2000, 2100})};
    p.comparison["prefill_alone"] = {1.1, 1.0, 1.2, "no difference"};
    h.points = {p};
    h.crossover = HybridCrossover{{{4, std::nullopt}}, {{16, 4}}};
    d.hybrid = h;

    OpsProfile ops;
    ops.source = "trace";
    ops.devices = "BLAS";
    ops.requested = {"BLAS"};
    StageProfile st;
    st.stage = "decode";
    st.timeline_rep = 0;
    OpRecord op;
    op.op = "MUL_MAT";
    op.out = {"ffn_up-0", "f32", {256, 1}, true};
    op.srcs = {{"blk.0.ffn_up.weight", "q4_0", {256, 256}, true}};
    op.layer = 0;
    op.backend = "BLAS";
    op.call_ns = 1200;
    op.start_ns = 100;
    st.ops = {op};
    auto aggregate = [](std::string key, std::optional<int> layer, int count) {
        OpAggregate a;
        a.key = std::move(key);
        a.layer = layer;
        a.count = count;
        a.call_ns = 1200.0;
        return a;
    };
    st.by_op = {aggregate("MUL_MAT", std::nullopt, 1)};
    st.by_layer = {aggregate("0", 0, 1), aggregate("none", std::nullopt, 0)};
    st.by_backend = {aggregate("BLAS", std::nullopt, 1)};
    st.top = {0};
    st.splits = {{0, 0, "BLAS", 0, 1, 1, 1024, {"x"}, std::nullopt}};
    FallbackRow fb;
    fb.op = "SILU";
    fb.backend = "CPU";
    fb.requested = "BLAS";
    fb.count = 2;
    fb.note = "not supported by BLAS";
    st.fallback = {fb};
    st.rec.plain_ns = {5000};
    st.rec.op_within_stage = false;
    Decomposition dc;
    dc.parts = {{"host", -3.0, std::nullopt, "negative"}};
    dc.dispatch_ns = {{"BLAS", 800}};
    st.decomposition = dc;
    ops.stages = {st};
    ops.import_info = {{"lines", 3}};
    ops.huge_pages = HugePagesRecord{"madvise", 734003200, 2, ""};
    d.ops = ops;
    d.engines = {{"llama", {{"in_process", true}}}};
    d.extra = {{"future_section", {{"x", 1}}}};
    return d;
}

TEST(ResultJson, FromJsonIsTheInverseOfToJson) {
    const json j = to_json(full_document());
    const ResultDocument back = read_doc(j);
    EXPECT_EQ(to_json(back), j);
    // And the typed values themselves came back.
    ASSERT_EQ(back.tests.size(), 2u);
    EXPECT_EQ(back.tests[0].config.devices.names(), (std::vector<std::string>{"BLAS", "RPC0"}));
    EXPECT_EQ(back.tests[0].config.flash_attn, FlashAttn::on);
    EXPECT_EQ(back.tests[0].config.engine, EngineKind::http);
    EXPECT_EQ(back.tests[0].config.seed, uint64_t{1} << 63);
    EXPECT_EQ(back.tests[0].status, Status::interrupted);
    EXPECT_EQ(back.tests[0].stopped_by, StopReason::interrupt);
    EXPECT_EQ(back.tests[1].stopped_by, std::nullopt);
    EXPECT_EQ(back.tests[0].decode->token_stalls.indices, (std::vector<std::size_t>{7}));
    EXPECT_EQ(back.tests[0].telemetry->summary.at("prefill").total_metric, "rapl.psys.energy_uj");
    const ResultDocument want = full_document();
    ASSERT_TRUE(back.tests[0].telemetry->battery);
    EXPECT_EQ(back.tests[0].telemetry->battery, want.tests[0].telemetry->battery);
    EXPECT_EQ(back.sustained->phases[0].rounds[0].battery,
              want.sustained->phases[0].rounds[0].battery);
    EXPECT_EQ(back.sustained->phases[0].across.battery, want.sustained->phases[0].across.battery);
    ASSERT_EQ(back.tests[0].memory.size(), 2u);
    EXPECT_EQ(back.tests[0].memory[1].buffer, "CPU_Mapped");
    EXPECT_EQ(back.tests[0].memory[1].model_bytes, uint64_t{1} << 40);
    EXPECT_EQ(back.tests[0].memory[0].compute_bytes, 1179904u);
    EXPECT_EQ(back.tests[0].client->first_content_ns[0], std::nullopt);
    EXPECT_EQ(back.tests[0].fidelity->decode->top1_agreement, 0.75);
    EXPECT_FALSE(back.tests[1].fidelity);
    EXPECT_FALSE(j["tests"][1].contains("fidelity"));
    EXPECT_EQ(back.hybrid->points[0].tests.at("prefill_alone"), 1);
    EXPECT_EQ(back.hybrid->points[0].transfer.gbps, 13.6);
    EXPECT_FALSE(back.hybrid->points[0].transfer.bytes_per_token);
    EXPECT_EQ(back.sustained->phases[0].rounds[0].ops->stages[0].stage, "prefill");
    EXPECT_EQ(back.sustained->phases[0].rounds[1].status, Status::failed);
    EXPECT_EQ(back.ops->stages[0].by_layer[1].key, "none");
    EXPECT_EQ(back.ops->stages[0].by_op[0].key, "MUL_MAT");
    EXPECT_EQ(back.ops->huge_pages, (HugePagesRecord{"madvise", 734003200, 2, ""}));
    EXPECT_EQ(back.extra["future_section"]["x"], 1);
    EXPECT_TRUE(back.unknown.empty());
}

TEST(ResultJson, AbsentSectionsStayAbsent) {
    ResultDocument d;
    const json j = to_json(d);
    for (const char* k : {"sustained", "hybrid", "ops"})
        EXPECT_FALSE(j.contains(k)) << k;
    EXPECT_TRUE(j["telemetry"].is_null());
    const ResultDocument back = read_doc(j);
    EXPECT_FALSE(back.sustained || back.hybrid || back.ops || back.telemetry);
    EXPECT_EQ(to_json(back), j);
    // A document with only its schema: everything at its default, nothing invented.
    const ResultDocument bare = read_doc(json{{"schema", "stagebench.result"}});
    EXPECT_TRUE(bare.tests.empty());
    EXPECT_TRUE(bare.command.empty());
    // A test without fields: the defaults of TestResult (an older document lacks newer fields).
    const ResultDocument one =
        read_doc({{"schema", "stagebench.result"}, {"tests", {json::object()}}});
    ASSERT_EQ(one.tests.size(), 1u);
    EXPECT_FALSE(one.tests[0].prefill || one.tests[0].client || one.tests[0].telemetry);
    EXPECT_EQ(one.tests[0].config.devices.str(), "CPU");
}

TEST(ResultJson, UnknownMembersAreWrittenBackWhereTheyWere) {
    json j = to_json(full_document());
    j["tests"][0]["prefill"]["new_stat"] = {1, 2};
    j["tests"][1]["config"]["a/b~c"] = "odd key";
    j["hybrid"]["points"][0]["transfer"]["extra_ns"] = 5;
    j["top_level_new"] = true;
    const ResultDocument back = read_doc(j);
    EXPECT_EQ(back.unknown.size(), 3u);
    EXPECT_EQ(back.unknown.at("/tests/1/config/a~1b~0c"), "odd key");
    EXPECT_EQ(back.extra["top_level_new"], true);
    EXPECT_EQ(to_json(back), j);
    // A member whose parent is gone is not written (the test was removed).
    ResultDocument fewer = back;
    fewer.tests.pop_back();
    EXPECT_FALSE(to_json(fewer)["tests"][0]["config"].contains("a/b~c"));
    EXPECT_EQ(to_json(fewer)["tests"][0]["prefill"]["new_stat"], json({1, 2}));
}

TEST(ResultJson, TheFixtureDocumentsOfEarlierBuildsLoadAndWriteBackTheirValues) {
    const fs::path dir = fs::path(SB_SOURCE_DIR) / "tests" / "fixtures" / "documents";
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".json")
            continue;
        std::ifstream f(e.path());
        const json j = json::parse(f);
        if (j.value("schema", "") != "stagebench.result")
            continue;
        SCOPED_TRACE(e.path().filename().string());
        ++n;
        const ResultDocument d = load_result_document(e.path().string());
        EXPECT_TRUE(d.unknown.empty()) << d.unknown.begin()->first;
        EXPECT_TRUE(d.extra.empty()) << d.extra.dump();
        // Written back: every value the old document had is there, unchanged; newer fields
        // may be added.
        const json back = to_json(d);
        const json patch = json::diff(j, back);
        for (const auto& op : patch)
            EXPECT_EQ(op["op"], "add") << op.dump().substr(0, 200);
        // And once written, the round trip is exact.
        EXPECT_EQ(to_json(read_doc(back)), back);
    }
    EXPECT_GE(n, 7);
}

TEST(ResultJson, DocumentsOfTheCurrentFormatComeBackExactly) {
    // Written by the build this format was typed from (tests/fixtures/documents/README.md):
    // telemetry on every stage, traced passes after sustained rounds, a hybrid sweep.
    const fs::path dir = fs::path(SB_SOURCE_DIR) / "tests" / "fixtures" / "documents";
    for (const char* name :
         {"run-telemetry.json", "sustained-traced.json", "hybrid-current.json"}) {
        SCOPED_TRACE(name);
        std::ifstream f(dir / name);
        const json j = json::parse(f);
        const ResultDocument d = load_result_document((dir / name).string());
        // SB_GOLDEN_UPDATE=1 writes them in the current format (as the report goldens): for a
        // change that adds fields, after reading the diff.
        if (const char* u = std::getenv("SB_GOLDEN_UPDATE"); u && std::string(u) == "1")
            std::ofstream(dir / name) << to_json(d).dump(1) << "\n";
        EXPECT_EQ(to_json(d), j) << json::diff(j, to_json(d)).dump().substr(0, 400);
        EXPECT_TRUE(d.unknown.empty());
        EXPECT_TRUE(d.extra.empty());
    }
}

TEST(ResultJson, RefusalsNameTheSourceAndThePath) {
    const json base = to_json(full_document());
    auto refuse = [&](const std::function<void(json&)>& mutate, const std::string& expected) {
        json j = base;
        mutate(j);
        EXPECT_EQ(error_of([&] { read_doc(j); }), expected);
    };
    refuse([](json& j) { j["tests"][0]["config"]["n_prompt"] = "16"; },
           "'d.json': tests[0].config.n_prompt: expected an integer, found a string");
    refuse([](json& j) { j["tests"][0]["config"]["n_prompt"] = 1.5; },
           "'d.json': tests[0].config.n_prompt: expected an integer, found a number with a "
           "fraction");
    refuse([](json& j) { j["tests"][0]["config"]["n_prompt"] = 4294967296; },
           "'d.json': tests[0].config.n_prompt: the integer 4294967296 is out of range");
    refuse([](json& j) { j["tests"][0]["config"]["seed"] = -1; },
           "'d.json': tests[0].config.seed: expected an integer of at least 0, found -1");
    refuse([](json& j) { j["tests"][0]["config"]["n_prompt"] = nullptr; },
           "'d.json': tests[0].config.n_prompt: expected an integer, found null");
    refuse([](json& j) { j["tests"][0]["status"] = "done"; },
           "'d.json': tests[0].status: expected one of ok, failed, interrupted, found \"done\"");
    refuse([](json& j) { j["tests"][0]["config"]["test"] = 3; },
           "'d.json': tests[0].config.test: expected a string, found an integer");
    refuse([](json& j) { j["tests"][0]["decode"]["stalls"]["tokens"]["count"] = "x"; },
           "'d.json': tests[0].decode.stalls.tokens.count: expected an integer, found a string");
    refuse([](json& j) { j["tests"][0]["decode"]["throughput"]["median"] = "fast"; },
           "'d.json': tests[0].decode.throughput.median: expected a number, found a string");
    refuse([](json& j) { j["tests"][0]["memory"][0]["context_bytes"] = -1; },
           "'d.json': tests[0].memory[0].context_bytes: expected an integer of at least 0, "
           "found -1");
    refuse([](json& j) { j["tests"] = json::object(); },
           "'d.json': tests: expected an array, found an object");
    refuse([](json& j) { j["hybrid"]["points"][0]["tests"]["hybrid"] = 3; },
           "'d.json': hybrid.points[0].tests.hybrid: test 3 is not in tests (2 tests)");
    refuse([](json& j) { j["ops"]["stages"][0]["by_layer"][0]["layer"] = "3"; },
           "'d.json': ops.stages[0].by_layer[0].layer: expected an integer, found a string");
    refuse([](json& j) { j["ops"]["huge_pages"]["ranges"] = -1; },
           "'d.json': ops.huge_pages.ranges: expected at least 0, found -1");
    refuse([](json& j) { j["models"][0]["file_bytes"] = "1 KiB"; },
           "'d.json': models[0].file_bytes: expected an integer, found a string");
    refuse([](json& j) { j["llama"] = 1; },
           "'d.json': llama: expected an object, found an integer");
    refuse([](json& j) { j["schema_version"] = 3; },
           "'d.json' was written by a newer stagebench (schema_version 3; this build reads up "
           "to 2): use a newer stagebench");
    refuse([](json& j) { j["schema_version"] = 0; },
           "'d.json': schema_version: expected a version of at least 1, found 0");
    refuse([](json& j) { j["schema_version"] = json::parse("0"); },  // unsigned, as parsed
           "'d.json': schema_version: expected a version of at least 1, found 0");
    refuse([](json& j) { j["schema"] = "other"; },
           "'d.json' is not a stagebench result document (\"schema\": \"other\", not "
           "\"stagebench.result\")");
    refuse([](json& j) { j.erase("schema"); },
           "'d.json' is not a stagebench result document (no \"schema\": \"stagebench.result\")");
    EXPECT_EQ(error_of([] { read_doc(json::array()); }),
              "'d.json': the document: expected a JSON object, found an array");
}

TEST(ResultJson, TelemetryThisBuildCannotReadIsKeptNotRefused) {
    json j = to_json(full_document());
    j["telemetry"] = {{"series", "nope"}, {"hz", 10}};
    j["tests"][0]["telemetry"]["summary"] = 3;
    const ResultDocument d = read_doc(j);
    EXPECT_FALSE(d.telemetry);
    EXPECT_FALSE(d.tests[0].telemetry);
    EXPECT_EQ(d.extra["telemetry"]["series"], "nope");
    EXPECT_EQ(d.unknown.size(), 1u);
    EXPECT_EQ(d.unknown.at("/tests/0/telemetry")["summary"], 3);
    EXPECT_EQ(to_json(d), j);
}

TEST(ResultJson, LlamaBenchFlashAttentionSpellingsAreRead) {
    json j = to_json(full_document());
    j["tests"][0]["config"]["flash_attn"] = "1";
    EXPECT_EQ(read_doc(j).tests[0].config.flash_attn, FlashAttn::on);
    j["tests"][0]["config"]["flash_attn"] = "0";
    EXPECT_EQ(read_doc(j).tests[0].config.flash_attn, FlashAttn::off);
}

TEST(Enums, SpellingsRoundTrip) {
    for (auto s : {Status::ok, Status::failed, Status::interrupted})
        EXPECT_EQ(parse_enum<Status>(to_string(s)), s);
    for (auto s : {StopReason::reps, StopReason::target_ci, StopReason::max_reps, StopReason::error,
                   StopReason::interrupt})
        EXPECT_EQ(parse_enum<StopReason>(to_string(s)), s);
    EXPECT_EQ(to_string(FlashAttn::automatic), "auto");
    EXPECT_EQ(to_string(OutputFormat::jsonl), "jsonl");
    EXPECT_EQ(parse_enum<OutputFormat>("html"), OutputFormat::html);
    EXPECT_EQ(parse_enum<OutputFormat>("JSON"), std::nullopt);
    EXPECT_EQ(parse_enum<EngineKind>("http"), EngineKind::http);
    EXPECT_EQ(enum_spellings<OutputFormat>(), "md, csv, json, jsonl, html");
    try {
        enum_from_text<FlashAttn>("maybe", "--flash-attn");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(), "--flash-attn must be one of auto, on, off, not 'maybe'");
    }
}

TEST(DeviceSet, KeepsItsSpelling) {
    EXPECT_EQ(DeviceSet("BLAS+RPC0").names(), (std::vector<std::string>{"BLAS", "RPC0"}));
    EXPECT_EQ(DeviceSet("BLAS+RPC0").str(), "BLAS+RPC0");
    EXPECT_TRUE(DeviceSet("").empty());
    EXPECT_EQ(DeviceSet("").str(), "");
    EXPECT_EQ(DeviceSet("A++B").names(), (std::vector<std::string>{"A", "", "B"}));
    EXPECT_EQ(DeviceSet("A++B").str(), "A++B");
    EXPECT_EQ(DeviceSet("CPU>BLAS").names(), (std::vector<std::string>{"CPU>BLAS"}));
    EXPECT_TRUE(DeviceSet("CPU+BLAS").contains("BLAS"));
    EXPECT_FALSE(DeviceSet("CPU+BLAS").contains("BLA"));
    EXPECT_EQ(DeviceSet("CPU"), DeviceSet::parse("CPU"));
}

TEST(Parse, ListsKeepEmptyItems) {
    EXPECT_EQ(split_list("a,b"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(split_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
    EXPECT_EQ(split_list(""), (std::vector<std::string>{""}));
    EXPECT_EQ(split_list("x+y", '+'), (std::vector<std::string>{"x", "y"}));
}

TEST(Parse, Durations) {
    EXPECT_EQ(parse_duration("5s"), 5'000'000'000);
    EXPECT_EQ(parse_duration(" 500ms "), 500'000'000);
    EXPECT_EQ(parse_duration("2.5"), 2'500'000'000);
    EXPECT_EQ(parse_duration("1min"), 60'000'000'000);
    EXPECT_EQ(parse_duration("+7ns"), 7);
    for (const char* bad : {"", "s", "-1s", "5h", "inf", "nan", "1e30s", "5 s s", "1,5s"})
        EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
    try {
        parse_duration_ns("soon");
        ADD_FAILURE();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(),
                     "invalid duration 'soon': use e.g. 5s, 500ms, 1m or a number of "
                     "seconds");
    }
}

}  // namespace
}  // namespace sb
