#include "analysis/advise.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

using nlohmann::json;

// A test as `run` writes it: raw tokens/s per repetition and the duration medians.
json test_of(const std::string& devices, int p, int n, std::vector<double> pp_tps,
             std::vector<double> tg_tps, std::optional<double> decode_jpt = {}) {
    json t = {{"status", "ok"},
              {"config", {{"devices", devices}, {"n_prompt", p}, {"n_gen", n}, {"n_depth", 0}}},
              {"prefill",
               {{"tokens_per_s", pp_tps}, {"duration", {{"median", p * 1e9 / *median(pp_tps)}}}}},
              {"decode",
               {{"tokens_per_s", tg_tps}, {"duration", {{"median", n * 1e9 / *median(tg_tps)}}}}}};
    if (decode_jpt)
        t["telemetry"] = {{"summary", {{"decode", {{"j_per_token", {{"median", *decode_jpt}}}}}}}};
    return t;
}

// The advice of documents given as JSON (each read typed, as a file would be) as its document
// writes it; every advice read back from that document equals itself.
json advised(const std::vector<std::pair<std::string, json>>& docs, const AdviseOptions& opts) {
    std::vector<AdviseInput> in;
    for (const auto& [source, doc] : docs)
        in.push_back({source, from_json<ResultDocument>(doc, source)});
    const Advice a = advise(in, opts);
    const json j = to_json(a);
    EXPECT_EQ(from_json<Advice>(j, "advice"), a) << j.dump(1);
    return j;
}

TEST(Interpolate, BetweenBeyondAndSingle) {
    std::vector<std::pair<double, double>> pts{{100, 10}, {200, 30}};
    EXPECT_DOUBLE_EQ(interpolate(pts, 150), 20);
    const Interpolated in = interpolate_bounded(pts, 150, Scaling::per_unit);
    EXPECT_FALSE(in.extrapolated);
    EXPECT_EQ(in.from, 100);
    EXPECT_EQ(in.to, 200);
    // Beyond the measurements the last segment is extended (50 at 300) but a time per token
    // stays within the measured 0.1-0.15: at most 300 x 0.15.
    const Interpolated above = interpolate_bounded(pts, 300, Scaling::per_unit);
    EXPECT_TRUE(above.extrapolated);
    EXPECT_DOUBLE_EQ(above.value, 45);
    EXPECT_DOUBLE_EQ(interpolate(pts, 250), 37.5);  // the segment's 40 is above 250 x 0.15
    // Where the extended segment stays within the bounds, it is the segment itself: 20 at 300,
    // between the last measured 15 and 300 x 0.1.
    EXPECT_DOUBLE_EQ(interpolate({{100, 10}, {200, 15}}, 300), 20);
    // Below them, the segment would reach 0 at 50: at least x times the smallest rate.
    EXPECT_DOUBLE_EQ(interpolate(pts, 50), 5);
    EXPECT_DOUBLE_EQ(interpolate(pts, 20), 2);
    // A level (decode time per token over depth) stays within the measured levels.
    EXPECT_DOUBLE_EQ(interpolate(pts, 300, Scaling::level), 30);
    EXPECT_DOUBLE_EQ(interpolate(pts, 20, Scaling::level), 10);
    EXPECT_DOUBLE_EQ(interpolate({{100, 10}}, 50), 5);
    EXPECT_DOUBLE_EQ(interpolate({{100, 10}}, 50, Scaling::level), 10);
    EXPECT_TRUE(interpolate_bounded({{100, 10}}, 50, Scaling::level).extrapolated);
    EXPECT_THROW(interpolate({}, 1), Error);
    // A segment falling steeply (two documents of different load) never takes a time to 0:
    // extended, it would be -2560 at 2048.
    const std::vector<std::pair<double, double>> falling{{512, 5120}, {1024, 2560}};
    EXPECT_LT(2560 + (2560.0 - 5120) / 512 * 1024, 0);
    EXPECT_DOUBLE_EQ(interpolate(falling, 2048), 2560);
    EXPECT_DOUBLE_EQ(interpolate(falling, 2048, Scaling::level), 2560);
}

// A run document measured under the given load (system.loadavg_1m on 2 CPUs, its other_load
// warning when above a quarter of them) on host.
json run_doc(const std::string& host, double load, json tests) {
    json d = {{"schema", "stagebench.result"},
              {"command", "run"},
              {"system",
               {{"hostname", host},
                {"loadavg_1m", load},
                {"cores_logical", 2},
                {"governors", {"performance"}}}},
              {"llama", {{"tag", "b7588"}}},
              {"tests", std::move(tests)}};
    if (load > 0.5)
        d["warnings"] = {{{"code", "other_load"}, {"message", "load"}, {"hint", ""}}};
    return d;
}

TEST(Advise, DocumentsOfDifferentConditionsWarnAndNoStageIsEverZero) {
    // The case: one run measured under load (prefill 100 t/s, decode 10 t/s at pp512),
    // another quiet (400 and 40 t/s at pp1024). Extended, the line through them predicts 0 ms
    // of prefill and of decode at pp2048+tg128; bounded by what was measured it cannot, and the
    // mixed load is named before anything is predicted.
    json loaded = run_doc("vm", 3.4, {test_of("CPU", 512, 128, {100, 100, 100}, {10, 10, 10})});
    json quiet = run_doc("vm", 0.1, {test_of("CPU", 1024, 128, {400, 400, 400}, {40, 40, 40})});
    loaded["tests"][0]["config"]["n_threads"] = 2;
    quiet["tests"][0]["config"]["n_threads"] = 2;
    AdviseOptions o;
    o.n_prompt = 2048;
    o.n_gen = 128;
    const json a = advised({{"loaded.json", loaded}, {"quiet.json", quiet}}, o);
    ASSERT_EQ(a["warnings"].size(), 1u) << a.dump(1);
    const json& w = a["warnings"][0];
    EXPECT_EQ(w["code"], "mixed_conditions");
    EXPECT_NE(w["message"].get<std::string>().find(
                  "load: loaded.json loaded (load 3.40 on 2 CPUs), quiet.json quiet (load 0.10 "
                  "on 2 CPUs)"),
              std::string::npos)
        << w["message"];
    // Host, governor, threads and llama.cpp agree: not named.
    EXPECT_EQ(w["message"].get<std::string>().find("host:"), std::string::npos);
    EXPECT_EQ(w["message"].get<std::string>().find("threads:"), std::string::npos);
    ASSERT_EQ(a["conditions"].size(), 2u);
    EXPECT_EQ(a["conditions"][0]["threads"], "2");
    EXPECT_EQ(a["conditions"][1]["llama"], "b7588");

    ASSERT_EQ(a["predictions"].size(), 1u);
    const json& best = a["predictions"][0]["best"];
    // Prefill at least the longest measured prompt's time (2560 ms), decode at least the
    // fastest measured 25 ms per token: never 0.
    EXPECT_DOUBLE_EQ(best["prefill_ns"].get<double>(), 2560e6);
    EXPECT_DOUBLE_EQ(best["decode_ns"].get<double>(), 128 * 25e6);
    EXPECT_GT(best["prefill_ns"].get<double>(), 0);
    EXPECT_GT(best["decode_ns"].get<double>(), 0);
    // Each extrapolated part is named with the range measured.
    ASSERT_EQ(best["extrapolated"].size(), 2u) << best.dump();
    EXPECT_EQ(best["extrapolated"][0],
              "prefill on CPU at 2048 tokens, beyond the measured prompts 512–1024");
    EXPECT_EQ(best["extrapolated"][1],
              "decode on CPU at KV depth 2112, beyond the measured depths 576–1088");
    bool said = false;
    for (const auto& s : a["sentences"])
        said = said || s.get<std::string>().find(
                           "extrapolated, bounded by the measured rates: "
                           "prefill on CPU at 2048 tokens") != std::string::npos;
    EXPECT_TRUE(said) << a["sentences"].dump(1);
}

TEST(Advise, DocumentsOfOneConditionDoNotWarn) {
    json a = run_doc("vm", 0.1, {test_of("CPU", 64, 16, {1000, 1000}, {50, 50})});
    json b = run_doc("vm", 0.2, {test_of("BLAS", 64, 16, {1200, 1200}, {50, 50})});
    const json adv = advised({{"a.json", a}, {"b.json", b}}, {});
    EXPECT_TRUE(adv["warnings"].empty()) << adv["warnings"].dump();
    // Within the measured lengths nothing is extrapolated.
    AdviseOptions at;
    at.n_prompt = 64;
    at.n_gen = 16;
    const json within = advised({{"a.json", a}, {"b.json", b}}, at);
    for (const auto& x : within["predictions"][0]["assignments"])
        EXPECT_TRUE(x["extrapolated"].empty()) << x.dump();
    // Another host is named.
    b["system"]["hostname"] = "phone";
    const json other = advised({{"a.json", a}, {"b.json", b}}, {});
    ASSERT_EQ(other["warnings"].size(), 1u);
    EXPECT_NE(
        other["warnings"][0]["message"].get<std::string>().find("host: a.json vm, b.json phone"),
        std::string::npos);
}

TEST(Advise, NamesTheFastestPerStageWithCi) {
    json doc = {
        {"schema", "stagebench.result"},
        {"command", "run"},
        {"tests",
         {test_of("CPU", 64, 16, {1000, 1010, 990, 1005, 995}, {50, 51, 49, 50, 50}, 0.5),
          test_of("RPC0", 64, 16, {500, 505, 495, 502, 498}, {100, 101, 99, 100, 100}, 0.2)}}};
    json a = advised({{"r.json", doc}}, {});
    ASSERT_EQ(a["stages"].size(), 2u);
    EXPECT_EQ(a["stages"][0]["stage"], "prefill");
    EXPECT_EQ(a["stages"][0]["fastest"], "CPU");
    EXPECT_NEAR(a["stages"][0]["ratio_to_runner_up"]["ratio"].get<double>(), 2.0, 0.05);
    EXPECT_TRUE(a["stages"][0]["ratio_to_runner_up"]["decisive"].get<bool>());
    EXPECT_EQ(a["stages"][1]["fastest"], "RPC0");
    EXPECT_EQ(a["stages"][1]["most_efficient"]["devices"], "RPC0");
    // Without a measured transfer, only the device sets alone are predicted.
    ASSERT_FALSE(a["predictions"].empty());
    for (const auto& x : a["predictions"][0]["assignments"])
        EXPECT_EQ(x["prefill"], x["decode"]);
}

TEST(Advise, PredictsTheHybridFromItsPartsAndFindsTheCrossover) {
    // CPU: prefill 1000 t/s, decode 50 t/s; RPC0: prefill 200 t/s, decode 100 t/s; the
    // transfer costs 1 ms + 10 us per prompt token.
    json doc = {{"schema", "stagebench.result"}, {"command", "hybrid"}, {"tests", json::array()}};
    json points = json::array();
    for (int p : {64, 256}) {
        doc["tests"].push_back(test_of("CPU", p, 32, {1000, 1000, 1000}, {50, 50, 50}));
        doc["tests"].push_back(test_of("RPC0", p, 32, {200, 200, 200}, {100, 100, 100}));
        const double transfer = 1e6 + 1e4 * p;
        const double measured = p * 1e6 + transfer + 32 * 1e7;
        points.push_back(
            {{"n_prompt", p},
             {"n_gen", 32},
             {"transfer", {{"duration", {{"median", transfer}}}, {"bytes_per_token", 1024.0}}},
             {"e2e", {{"hybrid", {{"summary", {{"median", measured}}}}}}}});
    }
    doc["hybrid"] = {{"prefill_device", "CPU"}, {"decode_device", "RPC0"}, {"points", points}};
    json a = advised({{"h.json", doc}}, {});
    ASSERT_EQ(a["validation"].size(), 2u);
    for (const auto& v : a["validation"])
        EXPECT_NEAR(v["error"].get<double>(), 0.0, 1e-9);
    ASSERT_EQ(a["model"]["transfer"].size(), 1u);
    EXPECT_NEAR(a["model"]["transfer"][0]["intercept_ns"].get<double>(), 1e6, 1);
    EXPECT_NEAR(a["model"]["transfer"][0]["ns_per_token"].get<double>(), 1e4, 1e-3);
    // At pp256+tg32: CPU alone 256 + 640 = 896 ms, RPC0 alone 1280 + 320, hybrid
    // 256 + 3.56 + 320 = 579.6 ms.
    const json& best = a["predictions"][1]["best"];
    EXPECT_EQ(best["prefill"], "CPU");
    EXPECT_EQ(best["decode"], "RPC0");
    // Crossover: with 32 generated tokens the hybrid beats CPU alone once its transfer
    // (1 ms + 10 us/token) costs less than the 320 ms decode saves: at every length here.
    ASSERT_EQ(a["crossover"].size(), 1u);
    EXPECT_EQ(a["crossover"][0]["ranges"].back()["best"], "CPU → RPC0");
}

TEST(Advise, AHybridIsPredictedFromItsOwnRunsModesAlone) {
    // The hybrid document measured CPU and RPC0 alone beside the hybrid; an older run measured
    // them much slower. The validation takes the parts from the hybrid's own run.
    json hybrid = {{"schema", "stagebench.result"},
                   {"command", "hybrid"},
                   {"tests",
                    {test_of("CPU", 64, 32, {1000, 1000, 1000}, {50, 50, 50}),
                     test_of("RPC0", 64, 32, {200, 200, 200}, {100, 100, 100})}}};
    const double measured = 64e6 + 1e6 + 32 * 1e7;
    hybrid["hybrid"] = {{"prefill_device", "CPU"},
                        {"decode_device", "RPC0"},
                        {"points",
                         {{{"n_prompt", 64},
                           {"n_gen", 32},
                           {"transfer", {{"duration", {{"median", 1e6}}}}},
                           {"e2e", {{"hybrid", {{"summary", {{"median", measured}}}}}}}}}}};
    json old_run = {{"schema", "stagebench.result"},
                    {"command", "run"},
                    {"tests",
                     {test_of("CPU", 64, 32, {100, 100, 100}, {5, 5, 5}),
                      test_of("RPC0", 64, 32, {20, 20, 20}, {10, 10, 10})}}};
    json a = advised({{"old.json", old_run}, {"h.json", hybrid}}, {});
    ASSERT_EQ(a["validation"].size(), 1u);
    EXPECT_NEAR(a["validation"][0]["error"].get<double>(), 0.0, 1e-9);
    EXPECT_EQ(a["validation"][0]["basis"], "the hybrid run's own modes alone");
    EXPECT_EQ(a["validation"][0]["source"], "h.json");
}

TEST(Advise, APredictionIsItsPartsMediansAndTheErrorIsAgainstTheMeasuredMedian) {
    // Uneven samples, so that a mean or a wrong sample would show: CPU prefill medians
    // 64 / 1000 t/s = 64 ms, RPC0 decode 32 / 80 t/s = 400 ms, transfer median 3 ms; the hybrid
    // measured at 520 ms. Predicted 64 + 3 + 400 = 467 ms, error 467 / 520 - 1.
    json hybrid = {{"schema", "stagebench.result"},
                   {"command", "hybrid"},
                   {"tests",
                    {test_of("CPU", 64, 32, {900, 1000, 1300}, {40, 50, 51}),
                     test_of("RPC0", 64, 32, {150, 200, 210}, {70, 80, 200})}}};
    hybrid["hybrid"] = {{"prefill_device", "CPU"},
                        {"decode_device", "RPC0"},
                        {"points",
                         {{{"n_prompt", 64},
                           {"n_gen", 32},
                           {"transfer", {{"duration", {{"median", 3e6}}}}},
                           {"e2e", {{"hybrid", {{"summary", {{"median", 520e6}}}}}}}}}}};
    json a = advised({{"h.json", hybrid}}, {});
    ASSERT_EQ(a["validation"].size(), 1u);
    const json& v = a["validation"][0];
    EXPECT_EQ(v["prefill"], "CPU");
    EXPECT_EQ(v["decode"], "RPC0");
    EXPECT_DOUBLE_EQ(v["predicted_ns"].get<double>(), 64e6 + 3e6 + 400e6);
    EXPECT_DOUBLE_EQ(v["measured_ns"].get<double>(), 520e6);
    EXPECT_DOUBLE_EQ(v["error"].get<double>(), 467.0 / 520.0 - 1);
}

TEST(Advise, FlagsDispatchOverheadAndFallback) {
    json ops = {{"stages",
                 {{{"stage", "decode"},
                   {"decomposition",
                    {{"parts",
                      {{{"name", "communication"}, {"share", 0.25}},
                       {{"name", "compute"}, {"share", 0.75}}}}}},
                   {"fallback",
                    {{{"op", "RMS_NORM"},
                      {"backend", "CPU"},
                      {"requested", "BLAS"},
                      {"count", 3},
                      {"call_ns", 9000.0},
                      {"penalty", 1.5}}}},
                   {"ops",
                    {{{"op", "ADD"}, {"backend", "RPC0"}, {"op_ns", 1000.0}, {"call_ns", 30000.0}},
                     {{"op", "ADD"}, {"backend", "RPC0"}, {"op_ns", 1000.0}, {"call_ns", 25000.0}},
                     {{"op", "MUL_MAT"}, {"backend", "CPU"}, {"op_ns", 9e4}, {"call_ns", 9.2e4}},
                     {{"op", "VIEW"},
                      {"backend", "CPU"},
                      {"no_compute", true},
                      {"op_ns", 0.0},
                      {"call_ns", 5e4}}}}}}}};
    ops["devices"] = "RPC0";
    json doc = {{"schema", "stagebench.result"}, {"command", "ops"}, {"ops", ops}};
    json a = advised({{"o.json", doc}}, {});
    ASSERT_EQ(a["decomposition"].size(), 1u);
    bool said = false;
    for (const auto& s : a["sentences"])
        said = said || s.get<std::string>().find(
                           "RPC0 splits into communication 25 %, compute "
                           "75 %") != std::string::npos;
    EXPECT_TRUE(said) << a["sentences"].dump(1);
    ASSERT_EQ(a["dispatch"].size(), 1u);
    EXPECT_EQ(a["dispatch"][0]["op"], "ADD");
    EXPECT_NEAR(a["dispatch"][0]["median_overhead_ns"].get<double>(), 26500, 1e-6);
    ASSERT_EQ(a["fallback"].size(), 1u);
    EXPECT_EQ(a["fallback"][0]["op"], "RMS_NORM");
    // A larger budget flags nothing.
    AdviseOptions o;
    o.dispatch_budget_ns = 50'000;
    EXPECT_TRUE(advised({{"o.json", doc}}, o)["dispatch"].empty());
}

TEST(Advise, NamesTheFallbacksThatCostMost) {
    // Three fallbacks in two stages: the advice lists them costliest first (the time their
    // nodes spent off the device asked for: call time, else op time) and names the costliest.
    auto fb = [](const char* op, int count, std::optional<double> call_ns,
                 std::optional<double> op_ns) {
        json f = {{"op", op}, {"backend", "CPU"}, {"requested", "HTP0"}, {"count", count}};
        f["call_ns"] = call_ns ? json(*call_ns) : json(nullptr);
        f["op_ns"] = op_ns ? json(*op_ns) : json(nullptr);
        return f;
    };
    json ops = {
        {"devices", "HTP0"},
        {"stages",
         {{{"stage", "prefill"},
           {"fallback", {fb("RMS_NORM", 28, 2e6, 1e6), fb("FLASH_ATTN_EXT", 28, 9e6, 8e6)}}},
          {{"stage", "decode"}, {"fallback", {fb("GET_ROWS", 1, std::nullopt, 4e6)}}}}}};
    json doc = {{"schema", "stagebench.result"}, {"command", "ops"}, {"ops", ops}};
    const json a = advised({{"o.json", doc}}, {});
    ASSERT_EQ(a["fallback"].size(), 3u);
    EXPECT_EQ(a["fallback"][0]["op"], "FLASH_ATTN_EXT");
    EXPECT_EQ(a["fallback"][1]["op"], "GET_ROWS");  // 4 ms of op time, no call time
    EXPECT_EQ(a["fallback"][2]["op"], "RMS_NORM");
    bool said = false;
    for (const auto& x : a["sentences"])
        said = said || x.get<std::string>() ==
                           "The fallbacks that cost most (time their nodes spent off the device "
                           "asked for): prefill FLASH_ATTN_EXT on CPU instead of HTP0 (9.00 ms per "
                           "stage); decode GET_ROWS on CPU instead of HTP0 (4.00 ms per stage); "
                           "prefill RMS_NORM on CPU instead of HTP0 (2.00 ms per stage): "
                           "implementing these natively would keep them on the device.";
    EXPECT_TRUE(said) << a["sentences"].dump(1);
}

TEST(Advise, OpsADeviceCannotRunAreTheThirdGuideline) {
    json ops = {{"devices", "BLAS"},
                {"requested", {"BLAS"}},
                {"stages",
                 {{{"stage", "prefill"},
                   {"coverage_devices", {"BLAS", "CPU"}},
                   {"coverage",
                    {{{"op", "MUL_MAT"},
                      {"count", 2},
                      {"supported", {{"BLAS", 2}, {"CPU", 2}}},
                      {"ran", {{"BLAS", 2}}}},
                     {{"op", "RMS_NORM"},
                      {"count", 2},
                      {"supported", {{"BLAS", 0}, {"CPU", 2}}},
                      {"ran", {{"CPU", 2}}}},
                     {{"op", "ADD"},
                      {"count", 1},
                      {"supported", {{"BLAS", 0}, {"CPU", 1}}},
                      {"ran", {{"CPU", 1}}}}}},
                   {"ops",
                    {{{"op", "MUL_MAT"}, {"backend", "BLAS"}, {"op_ns", 9e4}, {"call_ns", 1e5}},
                     {{"op", "MUL_MAT"}, {"backend", "BLAS"}, {"op_ns", 9e4}, {"call_ns", 1e5}},
                     {{"op", "RMS_NORM"}, {"backend", "CPU"}, {"op_ns", 1e3}, {"call_ns", 2e5}},
                     {{"op", "RMS_NORM"}, {"backend", "CPU"}, {"op_ns", 1e3}, {"call_ns", 2e5}},
                     {{"op", "ADD"}, {"backend", "CPU"}, {"op_ns", 1e3}, {"call_ns", 5e5}}}}}}}};
    json doc = {{"schema", "stagebench.result"}, {"command", "ops"}, {"ops", ops}};
    json a = advised({{"o.json", doc}}, {});
    ASSERT_EQ(a["coverage"].size(), 2u) << a["coverage"].dump();
    // Costliest first: ADD's 0.5 ms of calls, then RMS_NORM's 0.4 ms.
    EXPECT_EQ(a["coverage"][0]["op"], "ADD");
    EXPECT_EQ(a["coverage"][1]["op"], "RMS_NORM");
    EXPECT_EQ(a["coverage"][1]["unsupported"], 2);
    EXPECT_DOUBLE_EQ(a["coverage"][1]["call_ns"].get<double>(), 4e5);
    EXPECT_EQ(a["coverage"][1]["device"], "BLAS");
    bool said = false;
    for (const auto& s : a["sentences"])
        said = said || s.get<std::string>().rfind(
                           "prefill: BLAS does not support RMS_NORM (2 of 2 nodes), which ran on "
                           "CPU",
                           0) == 0;
    EXPECT_TRUE(said) << a["sentences"].dump(1);
}

TEST(Advise, SustainedSteadyStateCanOverturnTheChoice) {
    json run = {{"schema", "stagebench.result"},
                {"command", "run"},
                {"tests",
                 {test_of("CPU", 64, 16, {1000, 1000}, {80, 80}),
                  test_of("RPC0", 64, 16, {500, 500}, {100, 100})}}};
    json sus = {{"schema", "stagebench.result"}, {"command", "sustained"}};
    sus["sustained"] = {{"config", {{"devices", "RPC0"}}},
                        {"phases",
                         {{{"name", "baseline"},
                           {"across",
                            {{"steady_decode_tps", 60.0},
                             {"peak_to_steady", 1.66},
                             {"verdict", "throttled at round 3"}}}}}}};
    json a = advised({{"r.json", run}, {"s.json", sus}}, {});
    ASSERT_EQ(a["sustained"].size(), 1u);
    EXPECT_FALSE(a["sustained"][0]["still_fastest_decode"].get<bool>());
    EXPECT_EQ(a["sustained"][0]["compared_with"]["devices"], "CPU");
}

TEST(Advise, APlainSustainedRunsRoundsAreItsSteadyState) {
    // `sustained` without --background names its one phase "rounds"; with --background the
    // unloaded phase is "baseline" and the "loaded" one is left out.
    json run = {{"schema", "stagebench.result"},
                {"command", "run"},
                {"tests",
                 {test_of("CPU", 64, 16, {1000, 1000}, {80, 80}),
                  test_of("RPC0", 64, 16, {500, 500}, {100, 100})}}};
    json sus = {{"schema", "stagebench.result"}, {"command", "sustained"}};
    sus["sustained"] = {{"config", {{"devices", "RPC0"}}},
                        {"phases",
                         {{{"name", "rounds"},
                           {"background", ""},
                           {"across",
                            {{"steady_decode_tps", 60.0},
                             {"peak_to_steady", 1.66},
                             {"verdict", "throttled at round 3"}}}}}}};
    json a = advised({{"r.json", run}, {"s.json", sus}}, {});
    ASSERT_EQ(a["sustained"].size(), 1u) << a.dump(1);
    EXPECT_EQ(a["sustained"][0]["phase"], "rounds");
    EXPECT_DOUBLE_EQ(a["sustained"][0]["steady_decode_tps"].get<double>(), 60.0);
    bool said = false;
    for (const auto& s : a["sentences"])
        said = said || s.get<std::string>().find(
                           "RPC0 decodes at 60.0 tokens/s in the steady "
                           "state") != std::string::npos;
    EXPECT_TRUE(said) << a["sentences"].dump(1);

    sus["sustained"]["phases"][0]["name"] = "baseline";
    sus["sustained"]["phases"].push_back(
        {{"name", "loaded"}, {"background", "cpu:2"}, {"across", {{"steady_decode_tps", 20.0}}}});
    a = advised({{"r.json", run}, {"s.json", sus}}, {});
    ASSERT_EQ(a["sustained"].size(), 1u) << a.dump(1);
    EXPECT_EQ(a["sustained"][0]["phase"], "baseline");
    EXPECT_DOUBLE_EQ(a["sustained"][0]["steady_decode_tps"].get<double>(), 60.0);
}

TEST(Advise, AWrongShapedDocumentIsOneInputErrorNamingTheField) {
    // Advise takes documents read typed: whole, by the typed document's from_json, whose message
    // names the source and the field (here through advised(), as load_compare_inputs reads the
    // operands of `stagebench advise`).
    const json ok_test = test_of("CPU", 64, 16, {1000, 1000}, {80, 80});
    json bad_config = ok_test, bad_prompt = ok_test, bad_samples = ok_test;
    bad_config["config"] = "CPU";
    bad_prompt["config"]["n_prompt"] = "64";
    bad_samples["prefill"]["tokens_per_s"] = "fast";
    auto result = [](json members) {
        members["schema"] = "stagebench.result";
        return members;
    };
    auto sustained = [&](json section) {
        return result({{"command", "sustained"}, {"sustained", std::move(section)}});
    };
    const std::vector<std::pair<json, std::string>> cases = {
        {json::array({1, 2}), "the document: expected a JSON object, found an array"},
        {json("run"), "the document: expected a JSON object, found a string"},
        {result({{"command", 5}}), "command: expected a string, found an integer"},
        {result({{"tests", {{"a", 1}}}}), "tests: expected an array, found an object"},
        {result({{"tests", {ok_test, nullptr}}}), "tests[1]: expected an object, found null"},
        {result({{"tests", {bad_config}}}), "tests[0].config: expected an object, found a string"},
        {result({{"tests", {bad_prompt}}}),
         "tests[0].config.n_prompt: expected an integer, found a string"},
        {result({{"tests", {bad_samples}}}),
         "tests[0].prefill.tokens_per_s: expected an array, found a string"},
        {sustained("yes"), "sustained: expected an object, found a string"},
        {sustained({{"phases", {nullptr}}}), "sustained.phases[0]: expected an object, found null"},
        {sustained({{"phases", {{{"name", "rounds"}, {"across", 5}}}}}),
         "sustained.phases[0].across: expected an object, found an integer"},
        {sustained({{"phases", {{{"background", 0}, {"across", {{"steady_decode_tps", 1.0}}}}}}}),
         "sustained.phases[0].background: expected a string, found an integer"},
        {result(
             {{"hybrid", {{"points", {{{"n_prompt", 64}, {"transfer", {{"duration", {1}}}}}}}}}}),
         "hybrid.points[0].transfer.duration: expected an object, found an array"},
        {result({{"ops",
                  {{"stages",
                    {{{"stage", "decode"},
                      {"ops", {{{"op", "ADD"}, {"call_ns", "x"}, {"op_ns", 1}}}}}}}}}}),
         "ops.stages[0].ops[0].call_ns: expected a number, found a string"},
        {json{{"command", "run"}, {"tests", {ok_test}}},
         "bad.json is not a stagebench result document (no \"schema\": \"stagebench.result\")"},
    };
    for (const auto& [doc, want] : cases) {
        SCOPED_TRACE(doc.dump());
        try {
            advised({{"ok.json", result({{"command", "run"}, {"tests", {ok_test}}})},
                     {"bad.json", doc}},
                    {});
            ADD_FAILURE() << "no error";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            const std::string what = e.what();
            EXPECT_EQ(what, want.rfind("bad.json", 0) == 0 ? want : "bad.json: " + want);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not an sb::Error: " << e.what();
        }
    }
}

TEST(Advise, TelemetryItCannotReadIsLeftOutNotRefused) {
    // from_json keeps a test's telemetry it cannot read as an unknown member: the test is
    // advised on, without energy.
    json t = test_of("CPU", 64, 16, {1000, 1000}, {80, 80});
    t["telemetry"] = {{"summary", {{"decode", {{"j_per_token", 0.5}}}}}};
    const json a = advised(
        {{"r.json", json{{"schema", "stagebench.result"}, {"command", "run"}, {"tests", {t}}}}},
        {});
    ASSERT_EQ(a["stages"].size(), 2u);
    EXPECT_EQ(a["stages"][1]["stage"], "decode");
    EXPECT_EQ(a["stages"][1]["most_efficient"], nullptr);
}

TEST(Advise, NothingUsableIsAnInputError) {
    EXPECT_THROW(
        advised({{"x.json", json{{"schema", "stagebench.result"}, {"command", "sensors"}}}}, {}),
        Error);
}

}  // namespace
}  // namespace sb
