#include "report/html_data.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/doc/modes_section.hpp"
#include "core/error.hpp"
#include "temp_dir.hpp"

namespace sb {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The typed document of a (partial) result document given as JSON, as a file would be read.
ResultDocument doc_of(json j) {
    j["schema"] = "stagebench.result";
    return from_json<ResultDocument>(j, "doc");
}

json summary(double median, double lo, double hi) {
    return json{{"n", 3}, {"median", median}, {"ci95_lo", lo}, {"ci95_hi", hi}, {"cv", 0.01}};
}

json test_result(const std::string& name, const std::string& devices, int threads) {
    return json{
        {"config",
         {{"test", name},
          {"n_prompt", 32},
          {"n_gen", 8},
          {"devices", devices},
          {"n_threads", threads},
          {"engine", "llama"},
          {"model_path", "/m/tiny.gguf"}}},
        {"status", "ok"},
        {"backends", {"CPU"}},
        {"prefill",
         {{"tokens_per_s", {990, 1000, 1010}},
          {"throughput", summary(1000, 950, 1050)},
          {"robust", {{"tokens_per_s", 1000}, {"ci95_lo", 950}, {"ci95_hi", 1050}}}}},
        {"decode",
         {{"tokens_per_s", {60, 100, 101}},
          {"throughput", summary(100, 90, 110)},
          {"robust", {{"tokens_per_s", 100}, {"ci95_lo", 90}, {"ci95_hi", 110}}},
          {"stalls",
           {{"tokens",
             {{"rule", "3 x median"}, {"k", 3}, {"n", 24}, {"count", 1}, {"indices", {5}}}}}},
          {"itl", {{"median", 2e6}, {"p99", 3.5e6}}}}},
        {"ttft", summary(40e6, -116e6, 355e6)},  // the mean's Student-t interval: not shown
        {"ttft_ns", {38'000'000, 40'000'000, 42'000'000}}};
}

json result_doc() {
    return json{{"schema", "stagebench.result"},
                {"command", "run"},
                {"system", {{"hostname", "pi5"}, {"cpu_model", "Cortex-A76"}}},
                {"tests", {test_result("pp32+tg8", "CPU", 0), test_result("pp32+tg8", "CPU", 4)}}};
}

TEST(HtmlData, LoadReportInputReadsJsonAndRejectsTheRest) {
    const sbtest::TempDir tmp;
    const fs::path& dir = tmp.path;
    std::ofstream(dir / "ok.json") << R"({"command": "run"})";
    std::ofstream(dir / "bad.json") << "{ not json";
    EXPECT_EQ(load_report_input((dir / "ok.json").string()).other["command"], "run");
    EXPECT_FALSE(load_report_input((dir / "ok.json").string()).result);
    std::ofstream(dir / "result.json") << R"({"schema": "stagebench.result", "command": "run"})";
    EXPECT_EQ(load_report_input((dir / "result.json").string()).result->command, "run");
    std::ofstream(dir / "typed.json") << R"({"schema": "stagebench.result", "tests": 1})";
    EXPECT_THROW(load_report_input((dir / "typed.json").string()), Error);
    try {
        load_report_input((dir / "bad.json").string());
        FAIL() << "no error for a file that is not JSON";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos);
    }
    EXPECT_THROW(load_report_input((dir / "absent.json").string()), Error);
}

// The memory section: a row per test and buffer type in MiB, with the test's -ngl; none when
// no test says (an older document, an engine behind HTTP).
TEST(HtmlData, MemoryIsARowPerTestAndBufferInMiB) {
    EXPECT_TRUE(memory_view(doc_of(result_doc())).is_null());
    json doc = result_doc();
    doc["tests"][1]["config"]["n_gpu_layers"] = 99;
    doc["tests"][1]["memory"] = {{{"buffer", "CPU_Mapped"}, {"model_bytes", 860160}},
                                 {{"buffer", "Vulkan0"},
                                  {"model_bytes", 2 * 1048576},
                                  {"context_bytes", 524288},
                                  {"compute_bytes", 1048576}}};
    const json rows = memory_view(doc_of(doc));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1]["test"], "pp32+tg8");
    EXPECT_EQ(rows[1]["devices"], "CPU");
    EXPECT_EQ(rows[1]["n_gpu_layers"], 99);
    EXPECT_EQ(rows[1]["buffer"], "Vulkan0");
    EXPECT_DOUBLE_EQ(rows[1]["weights_mib"].get<double>(), 2);
    EXPECT_DOUBLE_EQ(rows[1]["context_mib"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(rows[1]["compute_mib"].get<double>(), 1);
    EXPECT_DOUBLE_EQ(rows[1]["total_mib"].get<double>(), 3.5);
    EXPECT_DOUBLE_EQ(rows[0]["weights_mib"].get<double>(), 860160.0 / 1048576);
    EXPECT_DOUBLE_EQ(rows[0]["context_mib"].get<double>(), 0);
    EXPECT_EQ(rows[0]["tests"], 1);
    EXPECT_EQ(rows[0]["model"], "tiny.gguf");

    // The same test again (a sustained round) with the same memory: its rows count two tests;
    // with other memory, its own rows.
    doc["tests"].push_back(doc["tests"][1]);
    doc["tests"].push_back(doc["tests"][1]);
    doc["tests"][3]["memory"][1]["compute_bytes"] = 2 * 1048576;
    const json alike = memory_view(doc_of(doc));
    ASSERT_EQ(alike.size(), 4u) << alike.dump();
    EXPECT_EQ(alike[0]["tests"], 2);
    EXPECT_EQ(alike[1]["tests"], 2);
    EXPECT_EQ(alike[3]["tests"], 1);
    EXPECT_DOUBLE_EQ(alike[3]["compute_mib"].get<double>(), 2);
}

TEST(HtmlData, SummaryConvertsToDisplayUnitsAndKeepsMissingNull) {
    json rows = summary_view(doc_of(result_doc()));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_TRUE(rows[0]["threads"].is_null()) << "0 threads is the default, not zero threads";
    EXPECT_EQ(rows[1]["threads"], 4);
    EXPECT_EQ(rows[0]["model"], "tiny.gguf");
    EXPECT_DOUBLE_EQ(rows[0]["prefill"]["median"].get<double>(), 1000);
    EXPECT_DOUBLE_EQ(rows[0]["prefill"]["lo"].get<double>(), 950);
    // The stall-robust rate, not the median of the raw rates (60, 100, 101), and its stalls.
    EXPECT_DOUBLE_EQ(rows[0]["decode"]["median"].get<double>(), 100);
    EXPECT_EQ(rows[0]["decode"]["stalls"], json({{"count", 1}, {"of", 24}, {"unit", "tokens"}}));
    EXPECT_EQ(rows[0]["prefill"]["stalls"]["count"], 0);
    EXPECT_DOUBLE_EQ(rows[0]["ttft_ms"]["median"].get<double>(), 40);
    // The median's own interval (bootstrap over the repetitions): within them, never negative.
    EXPECT_GE(rows[0]["ttft_ms"]["lo"].get<double>(), 38);
    EXPECT_LE(rows[0]["ttft_ms"]["hi"].get<double>(), 42);
    EXPECT_DOUBLE_EQ(rows[0]["itl_ms"]["p99"].get<double>(), 3.5);

    json doc = result_doc();
    doc["tests"][0]["prefill"] = nullptr;  // a decode-only test
    doc["tests"][0]["ttft"] = json::object();
    doc["tests"][0]["ttft_ns"] = json::array();
    rows = summary_view(doc_of(doc));
    EXPECT_TRUE(rows[0]["prefill"].is_null());
    EXPECT_TRUE(rows[0]["ttft_ms"].is_null());
    EXPECT_TRUE(summary_view(doc_of(json{{"tests", json::array()}})).is_null());
}

TEST(HtmlData, ThroughputLabelsNameDevicesAndThreadsAndStayDistinct) {
    json doc = result_doc();
    doc["tests"].push_back(test_result("pp32+tg8", "CPU", 4));  // a repeat, as sustained has
    json t = throughput_view(doc_of(doc));
    ASSERT_EQ(t["labels"].size(), 3u);
    EXPECT_EQ(t["labels"][0], "pp32+tg8 · CPU");
    EXPECT_EQ(t["labels"][1], "pp32+tg8 · CPU · 4t");
    EXPECT_EQ(t["labels"][2], "pp32+tg8 · CPU · 4t #2");
    EXPECT_DOUBLE_EQ(t["decode"][1]["hi"].get<double>(), 110);
    // An -ngl sweep: the layers offloaded join the label (and the summary's devices) only where
    // the tests differ in them.
    doc["tests"][2]["config"]["n_gpu_layers"] = 0;
    t = throughput_view(doc_of(doc));
    EXPECT_EQ(t["labels"][0], "pp32+tg8 · CPU · ngl 99");
    EXPECT_EQ(t["labels"][2], "pp32+tg8 · CPU · ngl 0 · 4t");
    EXPECT_EQ(summary_view(doc_of(doc))[2]["n_gpu_layers"], 0);

    json failed = result_doc();
    for (auto& test : failed["tests"]) {
        test["prefill"] = nullptr;
        test["decode"] = nullptr;
    }
    EXPECT_TRUE(throughput_view(doc_of(failed)).is_null());
}

TEST(HtmlData, StageSpansPairEachBeginWithItsEnd) {
    json marks = json::array({
        {{"stage", "idle"}, {"begin", true}, {"t_ns", 1'000'000'000}},
        {{"stage", "idle"}, {"begin", false}, {"t_ns", 1'500'000'000}},
        {{"stage", "p0/r1/round"}, {"begin", true}, {"t_ns", 2'000'000'000}},
        {{"stage", "p0/r1/prefill"}, {"begin", true}, {"t_ns", 2'100'000'000}},
        {{"stage", "p0/r1/prefill"}, {"begin", false}, {"t_ns", 2'200'000'000}},
        {{"stage", "decode"}, {"begin", false}, {"t_ns", 2'250'000'000}},  // no begin: dropped
        {{"stage", "p0/r1/round"}, {"begin", false}, {"t_ns", 2'300'000'000}},
        {{"stage", "decode"}, {"begin", true}, {"t_ns", 2'400'000'000}},  // no end: dropped
    });
    json spans = stage_spans(from_json<std::vector<TelemetryMark>>(marks), 1'000'000'000);
    ASSERT_EQ(spans.size(), 3u) << spans.dump();
    EXPECT_EQ(spans[0]["kind"], "idle");
    EXPECT_DOUBLE_EQ(spans[0]["begin_s"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(spans[0]["end_s"].get<double>(), 0.5);
    EXPECT_EQ(spans[1]["stage"], "p0/r1/round");
    EXPECT_EQ(spans[2]["stage"], "p0/r1/prefill");
    EXPECT_EQ(spans[2]["kind"], "prefill");
    EXPECT_NEAR(spans[2]["end_s"].get<double>(), 1.2, 1e-12);
}

TEST(HtmlData, ReducePointsKeepsSpikesOrderAndGaps) {
    std::vector<std::pair<double, std::optional<double>>> pts;
    for (int i = 0; i < 10'000; ++i)
        pts.push_back({i * 0.01, 50.0});
    pts[4321].second = 99.0;  // a spike
    pts[7000].second = 1.0;   // a dip
    for (int i = 8000; i < 8100; ++i)
        pts[i].second = std::nullopt;  // the sensor did not answer

    EXPECT_EQ(reduce_points(pts, 20'000).size(), pts.size());
    auto r = reduce_points(pts, 1000);
    ASSERT_LE(r.size(), 1000u);
    ASSERT_GE(r.size(), 400u);
    double hi = 0, lo = 100;
    bool gap = false;
    for (std::size_t i = 0; i < r.size(); ++i) {
        if (i > 0) {
            EXPECT_LE(r[i - 1].first, r[i].first) << "time order at " << i;
        }
        if (!r[i].second) {
            gap = true;
            continue;
        }
        hi = std::max(hi, *r[i].second);
        lo = std::min(lo, *r[i].second);
    }
    EXPECT_EQ(hi, 99.0);
    EXPECT_EQ(lo, 1.0);
    EXPECT_TRUE(gap) << "a stretch without readings stays a gap";
}

json telemetry_doc() {
    auto series = [](const std::string& metric, const std::string& unit, const std::string& kind,
                     json values) {
        json s{{"metric", metric},
               {"unit", unit},
               {"kind", kind},
               {"t_ns", {5'000'000'000, 6'000'000'000, 7'000'000'000}},
               {"values", values}};
        if (kind == "counter")
            s["cumulative"] = values;
        return s;
    };
    return json{
        {"schema", "stagebench.result"},
        {"command", "run"},
        {"telemetry",
         {{"hz", 10},
          {"series",
           {series("thermal.cpu.temp_mc", "mC", "gauge", {45000, nullptr, 47500}),
            series("cpufreq.policy0.cur_freq_khz", "kHz", "gauge", {1800000, 2400000, 2400000}),
            series("cpufreq.policy0.max_freq_khz", "kHz", "gauge", {2400000, 2400000, 2400000}),
            series("rapl.package-0.energy_uj", "uJ", "counter", {0, 2'000'000, 5'000'000}),
            series("battery.BAT0.power_mw", "mW", "gauge", {7000, 7100, 7200}),
            series("battery.BAT0.voltage_mv", "mV", "gauge", {12000, 12000, 12000}),
            series("nvml.gpu0.mem_used_mb", "MB", "gauge", {4950.3, 6000, 6000}),
            series("nvml.gpu0.busy_pct", "%", "gauge", {0, 93, 100})}},
          {"marks",
           {{{"stage", "p0/r1/round"}, {"begin", true}, {"t_ns", 5'000'000'000}},
            {{"stage", "test0/prefill"}, {"begin", true}, {"t_ns", 5'500'000'000}},
            {{"stage", "test0/prefill"}, {"begin", false}, {"t_ns", 5'600'000'000}},
            {{"stage", "test0/decode"}, {"begin", true}, {"t_ns", 5'600'000'000}},
            {{"stage", "test0/decode"}, {"begin", false}, {"t_ns", 6'500'000'000}},
            {{"stage", "p0/r1/round"}, {"begin", false}, {"t_ns", 6'600'000'000}}}}}}};
}

TEST(HtmlData, TelemetryGroupsSeriesInDisplayUnitsWithStageShading) {
    std::vector<std::string> notes;
    json t = telemetry_view(doc_of(telemetry_doc()), notes);
    ASSERT_FALSE(t.is_null());
    ASSERT_EQ(t["groups"].size(), 5u) << t.dump();
    const json& temp = t["groups"][0];
    EXPECT_EQ(temp["quantity"], "temperature");
    EXPECT_EQ(temp["unit"], "°C");
    EXPECT_DOUBLE_EQ(temp["series"][0]["points"][0][0].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(temp["series"][0]["points"][0][1].get<double>(), 45.0);
    EXPECT_TRUE(temp["series"][0]["points"][1][1].is_null()) << "missing stays missing";
    EXPECT_DOUBLE_EQ(temp["series"][0]["points"][2][1].get<double>(), 47.5);

    const json& freq = t["groups"][1];
    ASSERT_EQ(freq["series"].size(), 1u) << "limits are not charted";
    EXPECT_DOUBLE_EQ(freq["series"][0]["points"][0][1].get<double>(), 1800.0);

    const json& power = t["groups"][2];
    ASSERT_EQ(power["series"].size(), 2u);
    // The energy counter: 2 J over the first second, 3 J over the next: 2 W then 3 W.
    const json& rapl = power["series"][0];
    EXPECT_NE(rapl["name"].get<std::string>().find("energy counter"), std::string::npos);
    ASSERT_EQ(rapl["points"].size(), 2u);
    EXPECT_DOUBLE_EQ(rapl["points"][0][0].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(rapl["points"][0][1].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(rapl["points"][1][1].get<double>(), 3.0);
    EXPECT_DOUBLE_EQ(power["series"][1]["points"][0][1].get<double>(), 7.0);

    // A GPU's busy share and its memory in use, as they were read.
    const json& percent = t["groups"][3];
    EXPECT_EQ(percent["quantity"], "percent");
    EXPECT_EQ(percent["unit"], "%");
    EXPECT_EQ(percent["series"][0]["name"], "nvml.gpu0.busy_pct");
    EXPECT_DOUBLE_EQ(percent["series"][0]["points"][1][1].get<double>(), 93.0);
    const json& memory = t["groups"][4];
    EXPECT_EQ(memory["quantity"], "memory");
    EXPECT_EQ(memory["unit"], "MB");
    EXPECT_DOUBLE_EQ(memory["series"][0]["points"][0][1].get<double>(), 4950.3);

    // Only the stages are shaded, not the rounds that hold them.
    ASSERT_EQ(t["spans"].size(), 2u);
    EXPECT_EQ(t["spans"][0]["kind"], "prefill");
    EXPECT_NEAR(t["spans"][0]["begin_s"].get<double>(), 0.5, 1e-12);
    EXPECT_EQ(t["spans"][1]["kind"], "decode");

    ASSERT_EQ(notes.size(), 2u);
    EXPECT_NE(notes[0].find("limit"), std::string::npos);
    EXPECT_NE(notes[1].find("mV"), std::string::npos);
}

TEST(HtmlData, TelemetryWithoutSeriesIsANoteNotAChart) {
    std::vector<std::string> notes;
    EXPECT_TRUE(telemetry_view(doc_of(json{{"telemetry", nullptr}}), notes).is_null());
    EXPECT_TRUE(notes.empty()) << "no telemetry is nothing to note";
    EXPECT_TRUE(telemetry_view(doc_of(json{{"telemetry", {{"hz", 10}}}}), notes).is_null());
    EXPECT_EQ(notes.size(), 1u);
}

TEST(HtmlData, OpsSplitOpTimeFromCallOverheadAndFlagFallback) {
    json stage{{"stage", "prefill"},
               {"n_tokens", 32},
               {"by_op",
                {{{"op", "MUL_MAT"}, {"count", 7}, {"op_ns", 3e6}, {"call_ns", 5e6}},
                 {{"op", "ADD"}, {"count", 2}, {"op_ns", 4e5}, {"call_ns", 3e5}},
                 {{"op", "VIEW"}, {"count", 9}, {"op_ns", 0}, {"call_ns", 0}},
                 {{"op", "ROPE"}, {"count", 2}, {"op_ns", nullptr}, {"call_ns", 1e5}}}},
               {"by_backend", {{{"backend", "CPU"}, {"op_ns", 3.4e6}, {"call_ns", 5.4e6}}}},
               {"fallback",
                {{{"op", "ADD"}, {"backend", "CPU"}, {"requested", "BLAS"}, {"count", 2}},
                 {{"op", "MUL_MAT"},
                  {"backend", "CPU"},
                  {"requested", "BLAS"},
                  {"count", 2},
                  {"op_ns", 1e6},
                  {"call_ns", 1.5e6}}}},
               {"coverage_devices", {"BLAS", "CPU"}},
               {"coverage",
                {{{"op", "MUL_MAT"},
                  {"count", 7},
                  {"supported", {{"BLAS", 7}, {"CPU", 7}}},
                  {"ran", {{"BLAS", 7}}},
                  {"note", ""}},
                 {{"op", "ADD"},
                  {"count", 2},
                  {"supported", {{"BLAS", 0}, {"CPU", 2}}},
                  {"ran", {{"CPU", 2}}},
                  {"note", "BLAS: 2 not supported"}}}},
               {"reconciliation", {{"plain_median_ns", 6e6}, {"sum_op_ns", 3.4e6}}},
               {"decomposition",
                {{"parts",
                  {{{"name", "accelerator_compute"}, {"ns", 2e6}, {"share", 0.33}},
                   {{"name", "host"}, {"ns", nullptr}, {"share", nullptr}}}},
                 {"accelerators", {"BLAS"}}}}};
    std::vector<std::string> notes;
    json v = ops_view(doc_of(json{{"ops", {{"devices", "BLAS"}, {"stages", {stage}}}}}), notes);
    ASSERT_FALSE(v.is_null());
    const json& s = v["stages"][0];
    ASSERT_EQ(s["by_op"].size(), 4u) << "ops that take no time are left out";
    // 2 of the 7 MUL_MAT nodes fell back: a bar of the 5 that ran where asked, and a fallback
    // bar holding only the 2 (a bar called fallback holds only fallback nodes).
    EXPECT_EQ(s["by_op"][0]["label"], "MUL_MAT");
    EXPECT_EQ(s["by_op"][0]["count"], 5);
    EXPECT_DOUBLE_EQ(s["by_op"][0]["op_ms"].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(s["by_op"][0]["overhead_ms"].get<double>(), 1.5);
    EXPECT_TRUE(s["by_op"][0]["fallback"].is_null());
    EXPECT_EQ(s["by_op"][1]["label"], "MUL_MAT fallback (2 nodes: CPU instead of BLAS)");
    EXPECT_EQ(s["by_op"][1]["count"], 2);
    EXPECT_DOUBLE_EQ(s["by_op"][1]["op_ms"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(s["by_op"][1]["overhead_ms"].get<double>(), 0.5);
    // Every ADD node fell back (the rows carry no times): the bar is the fallback's alone. A
    // call below its op time (separate measurements) shows no overhead and is listed.
    EXPECT_DOUBLE_EQ(s["by_op"][2]["overhead_ms"].get<double>(), 0.0);
    EXPECT_EQ(s["clamped"], json::array({"ADD fallback (2 nodes: CPU instead of BLAS)"}));
    EXPECT_EQ(s["by_op"][2]["fallback"], "CPU instead of BLAS");
    EXPECT_EQ(s["by_op"][2]["label"], "ADD fallback (2 nodes: CPU instead of BLAS)");
    EXPECT_TRUE(s["by_op"][3]["overhead_ms"].is_null()) << "no op time: overhead unknown";
    EXPECT_DOUBLE_EQ(s["by_backend"][0]["overhead_ms"].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(s["reconciliation"]["plain_ms"].get<double>(), 6.0);
    EXPECT_DOUBLE_EQ(s["decomposition"]["parts"][0]["ms"].get<double>(), 2.0);
    EXPECT_TRUE(s["decomposition"]["parts"][1]["ms"].is_null());
    EXPECT_TRUE(notes.empty());
    // The coverage matrix as the ops section has it: the devices asked, per op type the nodes
    // each supports and where they ran, and why they ran elsewhere.
    EXPECT_EQ(s["coverage"]["devices"], json::array({"BLAS", "CPU"}));
    ASSERT_EQ(s["coverage"]["rows"].size(), 2u);
    EXPECT_EQ(s["coverage"]["rows"][0]["ran"], json({{"BLAS", 7}}));
    EXPECT_EQ(s["coverage"]["rows"][1]["supported"]["BLAS"], 0);
    EXPECT_EQ(s["coverage"]["rows"][1]["note"], "BLAS: 2 not supported");

    EXPECT_TRUE(ops_view(doc_of(json{{"ops", {{"stages", json::array()}}}}), notes).is_null());
    EXPECT_EQ(notes.size(), 1u);
}

TEST(HtmlData, HybridModesStageByStageWithSpeedups) {
    auto test = [](double prefill_ns, double decode_ns) {
        return json{{"status", "ok"},
                    {"prefill", {{"duration", {{"median", prefill_ns}}}}},
                    {"decode", {{"duration", {{"median", decode_ns}}}}},
                    {"ttft", {{"median", prefill_ns}}},
                    {"ttft_ns", {static_cast<int64_t>(prefill_ns)}}};
    };
    json doc{{"tests", {test(2e6, 8e6), test(2e6, 12e6), test(6e6, 8e6)}},
             {"hybrid",
              {{"prefill_device", "CPU"},
               {"decode_device", "RPC0"},
               {"points",
                {{{"n_prompt", 32},
                  {"n_gen", 8},
                  {"tests", {{"hybrid", 0}, {"prefill_alone", 1}, {"decode_alone", 2}}},
                  {"transfer", {{"duration", {{"median", 1e6}}}, {"bytes", {4096, 4096}}}},
                  {"e2e",
                   {{"hybrid",
                     {{"samples_ns", {10'000'000, 11'000'000, 12'000'000}},
                      {"summary", {{"median", 11e6}}}}},
                    {"prefill_alone",
                     {{"samples_ns", {14'000'000, 14'000'000}}, {"summary", {{"median", 14e6}}}}}}},
                  {"comparison",
                   {{"prefill_alone",
                     {{"speedup", 1.27},
                      {"ci95_lo", 1.1},
                      {"ci95_hi", 1.4},
                      {"verdict", "hybrid faster"}}}}}}}}}}};
    json v = hybrid_view(doc_of(doc));
    ASSERT_EQ(v["points"].size(), 1u);
    const json& p = v["points"][0];
    EXPECT_EQ(p["test"], "pp32+tg8");
    ASSERT_EQ(p["modes"].size(), 3u);
    EXPECT_EQ(p["modes"][0]["label"], "CPU → RPC0");
    EXPECT_DOUBLE_EQ(p["modes"][0]["transfer_ms"].get<double>(), 1.0);
    EXPECT_EQ(p["modes"][0]["transfer_bytes"], 4096);
    EXPECT_DOUBLE_EQ(p["modes"][0]["e2e"]["median"].get<double>(), 11.0);
    EXPECT_GE(p["modes"][0]["e2e"]["lo"].get<double>(), 10.0);  // the median's CI
    EXPECT_LE(p["modes"][0]["e2e"]["hi"].get<double>(), 12.0);
    EXPECT_EQ(p["modes"][1]["label"], "CPU alone");
    EXPECT_DOUBLE_EQ(p["modes"][1]["transfer_ms"].get<double>(), 0.0);
    EXPECT_TRUE(p["modes"][2]["e2e"].is_null()) << "no end-to-end samples: null, not 0";
    ASSERT_EQ(p["comparisons"].size(), 1u);
    EXPECT_EQ(p["comparisons"][0]["verdict"], "hybrid faster");
    EXPECT_TRUE(hybrid_view(doc_of(json{{"tests", json::array()}})).is_null());
}

TEST(HtmlData, SustainedRoundsWithOnsetAndSlowdown) {
    json doc{{"sustained",
              {{"phases",
                {{{"name", "baseline"},
                  {"background", ""},
                  {"rounds",
                   {{{"round", 1},
                     {"decode_tps", 50.0},
                     {"temp_max_c", 60.0},
                     {"cpu_freq_mean_khz", 2.4e6}},
                    {{"round", 2},
                     {"decode_tps", 40.0},
                     {"temp_max_c", 80.0},
                     {"e2e_s", 72.0},
                     {"combined_tps", 564 / 72.0},
                     {"power_w", 1.9},
                     {"temp_cpu_c", 61.5},
                     {"battery_capacity_start_pct", 80.0},
                     {"battery_capacity_end_pct", 79.0}}}},
                  {"across",
                   {{"throttle_onset_round", 2},
                    {"drop_round", 2},
                    {"throttle_evidence", {"clock 3187 MHz before round 2, 1805 MHz from it on"}},
                    {"power_w", {{"n", 1}, {"mean", 1.9}}},
                    {"battery_drain_capacity_pct", 1.0},
                    {"verdict", "throttled at round 2"}}}},
                 {{"name", "loaded"}, {"rounds", json::array()}}}},
               {"slowdown",
                {{{"stage", "decode"},
                  {"ratio", 1.3},
                  {"ci95_lo", 1.2},
                  {"ci95_hi", 1.4},
                  {"no_difference", false}}}}}}};
    json v = sustained_view(doc_of(doc));
    ASSERT_EQ(v["phases"].size(), 1u) << "a phase without rounds is left out";
    const json& p = v["phases"][0];
    EXPECT_EQ(p["onset_round"], 2);
    EXPECT_EQ(p["verdict"], "throttled at round 2");
    EXPECT_DOUBLE_EQ(p["rounds"][0]["cpu_freq_mhz"].get<double>(), 2400.0);
    EXPECT_TRUE(p["rounds"][1]["prefill_tps"].is_null());
    // The study's figures of a round, and their spread and the evidence over the phase.
    EXPECT_TRUE(p["rounds"][0]["e2e_s"].is_null());
    EXPECT_DOUBLE_EQ(p["rounds"][1]["e2e_s"].get<double>(), 72.0);
    EXPECT_DOUBLE_EQ(p["rounds"][1]["combined_tps"].get<double>(), 564 / 72.0);
    EXPECT_DOUBLE_EQ(p["rounds"][1]["power_w"].get<double>(), 1.9);
    EXPECT_DOUBLE_EQ(p["rounds"][1]["temp_cpu_c"].get<double>(), 61.5);
    EXPECT_TRUE(p["rounds"][1]["temp_gpu_c"].is_null());
    EXPECT_EQ(p["rounds"][1]["battery_capacity_start_pct"], 80.0);
    EXPECT_EQ(p["rounds"][1]["battery_capacity_end_pct"], 79.0);
    EXPECT_EQ(p["drop_round"], 2);
    EXPECT_EQ(p["evidence"][0], "clock 3187 MHz before round 2, 1805 MHz from it on");
    EXPECT_TRUE(p["load"].is_null());
    EXPECT_EQ(p["across"]["power_w"]["n"], 1);
    EXPECT_DOUBLE_EQ(p["across"]["power_w"]["mean"].get<double>(), 1.9);
    EXPECT_TRUE(p["across"]["power_w"]["sd"].is_null());
    EXPECT_TRUE(p["across"]["e2e_s"]["mean"].is_null());
    EXPECT_EQ(p["battery_drain_capacity_pct"], 1.0);
    EXPECT_TRUE(p["battery_drain_energy_pct"].is_null());
    EXPECT_DOUBLE_EQ(v["slowdown"][0]["lo"].get<double>(), 1.2);
    EXPECT_TRUE(sustained_view(doc_of(json{{"sustained", {{"phases", json::array()}}}})).is_null());
}

TEST(HtmlData, WarningsFromTheDocumentAndItsTelemetryOnceEach) {
    json w{{"code", "governor_not_performance"}, {"message", "m"}, {"hint", "h"}};
    json doc{{"warnings", {w, w}},
             {"telemetry", {{"warnings", {{{"code", "telemetry_stale"}, {"message", "x"}}}}}}};
    json v = warnings_view(doc_of(doc));
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0]["hint"], "h");
    EXPECT_EQ(v[1]["where"], "telemetry");
    EXPECT_TRUE(warnings_view(doc_of(json{{"warnings", json::array()}})).is_null());
}

TEST(HtmlData, CompareFixtureBecomesRowsWithRatiosAndNotes) {
    ReportInput in =
        load_report_input(std::string(SB_SOURCE_DIR) + "/tests/fixtures/report/compare.json");
    ASSERT_TRUE(in.compare);
    EXPECT_FALSE(in.result);
    json v = compare_view(*in.compare);
    ASSERT_EQ(v["rows"].size(), 3u);
    const json& r = v["rows"][0];
    EXPECT_EQ(r["stage"], "prefill");
    EXPECT_EQ(r["unit"], "tok/s");
    EXPECT_EQ(r["differs"], "n_threads: 1 / 2");
    EXPECT_EQ(r["sides"].size(), 2u);
    EXPECT_DOUBLE_EQ(r["ratios"][0]["lo"].get<double>(), 1.77);
    EXPECT_EQ(r["ratios"][0]["verdict"], "faster");
    EXPECT_EQ(v["rows"][2]["unit"], "ms");
    EXPECT_EQ(v["unmatched"][0]["test"], "pp64+tg8");
    EXPECT_EQ(v["inputs"].size(), 2u);

    // A compare document of a newer stagebench is refused where it is read, in one line.
    json future = to_json(*in.compare);
    future["compare_schema_version"] = 2;
    try {
        ReportInput::of("future.json", future);
        ADD_FAILURE() << "a newer compare document was read";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("written by a newer stagebench"), std::string::npos)
            << e.what();
    }
}

TEST(HtmlData, CompareEnergyRowsCarryTheirUnits) {
    CompareResult doc;
    for (const char* m : {"j_per_token", "net_j_per_token", "mean_power_mw"}) {
        CompareRow r;
        r.test = "pp32+tg8";
        r.stage = "decode";
        r.metric = m;
        doc.rows.push_back(r);
    }
    const json v = compare_view(doc);
    ASSERT_EQ(v["rows"].size(), 3u);
    EXPECT_EQ(v["rows"][0]["unit"], "J/token");
    EXPECT_EQ(v["rows"][1]["unit"], "J/token net");
    EXPECT_EQ(v["rows"][2]["unit"], "mW");
}

TEST(HtmlData, ReportViewNotesWhatItCannotShowAndShowsTheRest) {
    json unknown_section = result_doc();
    unknown_section["command"] = "frobnicate";
    unknown_section["brand_new"] = {{"x", 1}};
    CompareResult compare;
    compare.created_at = "2026-11-29T10:00:00Z";
    compare.notes = {"a note"};
    json v = report_view({ReportInput::of("a.json", json::array({1, 2})),
                          ReportInput::of("b.json", doc_of(unknown_section)),
                          ReportInput::of("c.json", compare)});
    const json& docs = v["documents"];
    ASSERT_EQ(docs.size(), 3u);
    EXPECT_EQ(docs[0]["kind"], "unknown");
    EXPECT_EQ(docs[0]["notes"].size(), 1u);
    EXPECT_EQ(docs[1]["kind"], "result");
    EXPECT_EQ(docs[1]["header"]["host"], "pi5");
    EXPECT_TRUE(docs[1].contains("summary"));
    EXPECT_TRUE(docs[1].contains("throughput"));
    EXPECT_FALSE(docs[1].contains("telemetry"));
    ASSERT_EQ(docs[1]["notes"].size(), 2u) << docs[1]["notes"].dump();
    EXPECT_NE(docs[1]["notes"][1].get<std::string>().find("brand_new"), std::string::npos);
    EXPECT_EQ(docs[2]["kind"], "compare");
    EXPECT_EQ(docs[2]["header"]["created_at"], "2026-11-29T10:00:00Z");
    EXPECT_EQ(docs[2]["compare"]["notes"], json({"a note"}));
    EXPECT_TRUE(docs[2]["compare"]["rows"].empty());
    // A compare document that cannot be read is refused in one line naming it, as a result
    // document is.
    try {
        ReportInput::of("c.json", json{{"command", "compare"}});
        ADD_FAILURE() << "a compare document without a version was read";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "'c.json': the document: no compare_schema_version: not a compare document");
    }
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

TEST(HtmlData, ModesShowEveryModesTimesAndTheParts) {
    ModesSection s;
    s.source = "hexagon-profile";
    s.time_basis = "call-usec";
    s.stages = {"log"};
    Mode a, b;
    a.name = "queue";
    a.log_path = "a.log";
    a.times = {{"log", 1, 2e6, std::nullopt, std::nullopt}};
    b.name = "full";
    b.env = {{"GGML_HEXAGON_OPMASK", "0x7"}};
    b.times = {{"log", 1, 5e6, std::nullopt, std::nullopt}};
    s.modes = {a, b};
    ModePart p;
    p.stage = "log";
    p.name = "full";
    p.from = "queue";
    p.ns = 3e6;
    p.share = 0.6;
    s.parts = {p};
    ResultDocument doc;
    doc.command = "import";
    doc.modes = s;
    const nlohmann::json v = modes_view(doc);
    EXPECT_EQ(v["modes"][0]["env"], "a.log");
    EXPECT_EQ(v["modes"][1]["env"], "GGML_HEXAGON_OPMASK=0x7");
    EXPECT_EQ(v["modes"][1]["times"]["log"]["ms"], 5.0);
    EXPECT_TRUE(v["modes"][1]["times"]["log"]["lo_ms"].is_null());
    EXPECT_EQ(v["parts"][0]["name"], "full − queue");
    EXPECT_EQ(v["parts"][0]["ms"], 3.0);
    EXPECT_EQ(v["parts"][0]["share"], 0.6);
    EXPECT_TRUE(modes_view(ResultDocument{}).is_null());
    // The whole view shows it, without a note that the section is unknown.
    const nlohmann::json all = report_view({ReportInput::of("m.json", doc)});
    EXPECT_TRUE(all["documents"][0].contains("modes"));
    for (const auto& n : all["documents"][0]["notes"])
        EXPECT_EQ(n.get<std::string>().find("'modes'"), std::string::npos) << n;
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

FidelityVariant fidelity_variant(const std::string& model, const std::string& devices,
                                 std::optional<double> decode_tps, std::vector<double> decode_reps,
                                 double decode_kl) {
    FidelityVariant v;
    v.model = "/m/" + model;
    v.model_name = model;
    v.devices = devices;
    v.type_k = v.type_v = KvType::f16;
    v.decode_tps = decode_tps;
    v.decode_tps_reps = std::move(decode_reps);
    v.decode.positions = 16;
    v.decode.kl_mean = decode_kl;
    v.decode.kl_p99 = 3 * decode_kl;
    v.decode.kl_max = 4 * decode_kl;
    v.decode.top1_agreement = decode_kl > 0 ? 0.875 : 1.0;
    v.prefill.positions = 1;
    v.prefill.kl_mean = 2 * decode_kl;
    return v;
}

// A scripted quant sweep: the f16 reference, q8_0 (on the frontier), q4_0 (slower and farther
// than q8_0: off it) and a variant that failed.
ResultDocument fidelity_doc() {
    FidelitySection s;
    s.reference = "f16.gguf on CPU (f16/f16)";
    s.n_prompt = 32;
    s.n_gen = 16;
    s.top_k = 10;
    s.reps = 3;
    FidelityVariant f16 = fidelity_variant("f16.gguf", "CPU", 100, {98, 100, 103}, 0);
    f16.reference = f16.frontier = true;
    f16.prefill_tps = 1000;
    f16.prefill_tps_reps = {1010, 990, 1000};
    f16.perplexity = 33552.5;
    f16.perplexity_error = 812.25;
    FidelityVariant q8 = fidelity_variant("q8_0.gguf", "CPU", 150, {149, 150, 155}, 2e-5);
    q8.frontier = true;
    FidelityVariant q4 = fidelity_variant("q4_0.gguf", "CPU", 140, {140, 139, 141}, 2.6e-3);
    FidelityVariant bad = fidelity_variant("q4_0.gguf", "BLAS", std::nullopt, {}, 0);
    bad.error = "BLAS: out of memory";
    s.variants = {f16, q8, q4, bad};
    s.text = FidelityText{"t.txt", 3012, 128, 23, 1449, 33552.5, 812.25, "windows"};
    ResultDocument doc;
    doc.command = "fidelity";
    doc.models = {json{{"path", "/m/f16.gguf"}, {"file_type", "F16"}, {"dominant_type", "f16"}},
                  json{{"path", "/m/q8_0.gguf"}, {"dominant_type", "q8_0"}}};
    doc.fidelity = s;
    return doc;
}

TEST(HtmlData, FidelityViewHasEveryVariantsSpeedDistanceAndFrontier) {
    const json v = fidelity_view(fidelity_doc());
    EXPECT_EQ(v["reference"], "f16.gguf on CPU (f16/f16)");
    EXPECT_EQ(v["n_prompt"], 32);
    EXPECT_EQ(v["n_gen"], 16);
    EXPECT_EQ(v["reps"], 3);
    EXPECT_EQ(v["prefill_kl_stage"], "prefill");
    // The smallest KL drawn is q8_0's decode 2e-5: the floor is the decade below 1e-5.
    EXPECT_DOUBLE_EQ(v["kl_floor"].get<double>(), 1e-6);
    EXPECT_EQ(
        v["text"],
        (json{
            {"path", "t.txt"}, {"n_ctx", 128}, {"chunks", 23}, {"reference_perplexity", 33552.5}}));
    const json& vs = v["variants"];
    ASSERT_EQ(vs.size(), 4u);
    EXPECT_EQ(
        vs[0],
        (json{{"label", "f16.gguf on CPU (f16/f16)"},
              {"short_label", "f16.gguf · CPU"},
              {"model", "f16.gguf"},
              {"devices", "CPU"},
              {"weights", "F16"},
              {"type_k", "f16"},
              {"type_v", "f16"},
              {"reference", true},
              {"frontier", true},
              {"error", nullptr},
              {"decode_tps", {{"median", 100.0}, {"min", 98.0}, {"max", 103.0}, {"n", 3}}},
              {"prefill_tps", {{"median", 1000.0}, {"min", 990.0}, {"max", 1010.0}, {"n", 3}}},
              {"decode_kl_mean", 0.0},
              {"decode_kl_p99", 0.0},
              {"decode_top1", 1.0},
              {"prefill_kl_mean", 0.0},
              {"perplexity", 33552.5},
              {"perplexity_error", 812.25}}));
    EXPECT_EQ(vs[1]["weights"], "q8_0") << "the dominant type when the file type is absent";
    EXPECT_TRUE(vs[1]["frontier"]);
    EXPECT_FALSE(vs[1]["reference"]);
    EXPECT_EQ(vs[1]["decode_kl_mean"], 2e-5);
    EXPECT_EQ(vs[1]["decode_kl_p99"], 3 * 2e-5);  // the helper's p99
    EXPECT_EQ(vs[1]["decode_top1"], 0.875);
    EXPECT_EQ(vs[1]["prefill_kl_mean"], 4e-5);
    EXPECT_TRUE(vs[1]["prefill_tps"].is_null()) << "no prefill speed measured";
    EXPECT_TRUE(vs[1]["perplexity"].is_null());
    EXPECT_EQ(vs[2]["short_label"], "q4_0.gguf · CPU");
    EXPECT_TRUE(vs[2]["weights"].is_null()) << "a model the document does not describe";
    EXPECT_FALSE(vs[2]["frontier"]);
    EXPECT_EQ(vs[2]["decode_tps"],
              (json{{"median", 140.0}, {"min", 139.0}, {"max", 141.0}, {"n", 3}}));
    // The failed variant: its error, no speed and no distance.
    EXPECT_EQ(vs[3]["short_label"], "q4_0.gguf · BLAS");
    EXPECT_EQ(vs[3]["error"], "BLAS: out of memory");
    for (const char* k : {"decode_tps", "prefill_tps", "decode_kl_mean", "decode_kl_p99",
                          "decode_top1", "prefill_kl_mean"})
        EXPECT_TRUE(vs[3][k].is_null()) << k;
    EXPECT_TRUE(fidelity_view(ResultDocument{}).is_null());
    // The whole view shows it, without a note that the command is unknown.
    const json all = report_view({ReportInput::of("f.json", fidelity_doc())});
    EXPECT_EQ(all["documents"][0]["fidelity"], v);
    EXPECT_TRUE(all["documents"][0]["notes"].empty()) << all["documents"][0]["notes"];
}

TEST(HtmlData, FidelityShortLabelsSayWhatDiffersAndThePromptStageMovesTheFloor) {
    ResultDocument doc = fidelity_doc();
    FidelitySection& s = *doc.fidelity;
    FidelityVariant a = fidelity_variant("q4_0.gguf", "CPU", 10, {10}, 0);
    FidelityVariant b = a;
    b.type_k = KvType::q8_0;
    b.decode.kl_mean = 0.5;
    b.prompt = StageFidelity{};
    b.prompt->kl_mean = 5e-7;
    a.prompt = StageFidelity{};
    s.variants = {a, b};
    s.prompt_logits = true;
    s.text.reset();
    json v = fidelity_view(doc);
    EXPECT_EQ(v["variants"][0]["short_label"], "KV f16/f16");
    EXPECT_EQ(v["variants"][1]["short_label"], "KV q8_0/f16");
    EXPECT_EQ(v["prefill_kl_stage"], "prompt");
    EXPECT_EQ(v["variants"][1]["prefill_kl_mean"], 5e-7) << "the prompt stage's, not prefill's";
    // No prefill speed: the prompt KL is not drawn, the floor is decode's (0.5 -> 0.01).
    EXPECT_DOUBLE_EQ(v["kl_floor"].get<double>(), 0.01);
    EXPECT_TRUE(v["text"].is_null());
    s.variants[1].prefill_tps = 100;
    v = fidelity_view(doc);
    EXPECT_DOUBLE_EQ(v["kl_floor"].get<double>(), 1e-8);
    // Nothing tells them apart: the devices; no KL above 0 at all: the floor is 1e-9.
    s.variants = {a, a};
    v = fidelity_view(doc);
    EXPECT_EQ(v["variants"][0]["short_label"], "CPU");
    EXPECT_EQ(v["variants"][1]["short_label"], "CPU");
    EXPECT_DOUBLE_EQ(v["kl_floor"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace sb
