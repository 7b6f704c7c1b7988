// The serve section of a result document against its JSON: written and read back exactly
// (an unbounded rate included), members of a newer build kept, refusals one line naming the
// field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

ResultDocument serve_document() {
    ResultDocument d;
    d.command = "serve";
    ServeSection s;
    s.api = "openai";
    s.slots = 4;
    s.server_args = {"-ngl", "99", "-dev", "Vulkan0"};
    s.n_prompt = 16;
    s.n_gen = 8;
    s.requests_per_point = 2;
    s.burstiness = 0.5;
    s.seed = 7;
    s.slo_ms = {{"ttft", 500.0}, {"tpot", 50.0}};
    s.server = {{"server", "llama-server"}, {"url", "http://127.0.0.1:8080"}};
    ServePoint p;
    p.mode = "concurrency";
    p.value = 2;
    p.start_ns = 5'000'000'000;
    p.duration_ns = 2'000'000'000;
    ServeRequest ok;
    ok.index = 0;
    ok.send_ns = 10;
    ok.ttft_ns = 100'000'000;
    ok.tpot_ns = 20'000'000;
    ok.e2e_ns = 240'000'000;
    ok.itl_ns = {20'000'000, 19'000'000};
    ok.prompt_tokens = 16;
    ok.output_tokens = 8;
    ServerClaim claim;
    claim.said = {"llama-server", 16, 0, 9, 120'000'000, 130'000'000, std::nullopt, std::nullopt};
    claim.disagreements = {
        "the llama-server timings claim 120.000 ms of prompt processing, longer than the "
        "client's TTFT of 100.000 ms: not believed",
        "the llama-server timings count 9 generated tokens, the client 8: not believed"};
    ok.server_claim = claim;
    ServeRequest failed;
    failed.index = 1;
    failed.send_ns = 20;
    failed.error = "HTTP 500";
    p.requests = {ok, failed};
    p.ok = 1;
    p.errors = 1;
    p.request_per_s = 0.5;
    p.output_tokens_per_s = 4;
    p.total_tokens_per_s = 12;
    p.ttft.n = 1;
    p.ttft.mean = p.ttft.median = p.ttft.p90 = p.ttft.p99 = 100.0;
    p.meeting_slo = 1;
    p.goodput_per_s = 0.5;
    p.client_cpu_pct = 3.5;
    ServePoint all_at_once = p;
    all_at_once.mode = "rate";
    all_at_once.value = std::numeric_limits<double>::infinity();
    all_at_once.goodput_per_s.reset();
    s.points = {p, all_at_once};
    d.serve = s;
    return d;
}

std::string read_error_of(const json& j) {
    try {
        from_json<ResultDocument>(j, "'s.json'");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        return e.what();
    }
    return "";
}

TEST(ServeSection, ComesBackExactly) {
    const json j = to_json(serve_document());
    EXPECT_EQ(j["serve"]["points"][0]["error_rate"], 0.5);
    EXPECT_EQ(j["serve"]["points"][1]["value"], "inf");  // JSON has no infinity
    EXPECT_TRUE(j["serve"]["url"].is_null());
    EXPECT_EQ(j["serve"]["points"][0]["requests"][1]["error"], "HTTP 500");
    const ResultDocument back = from_json<ResultDocument>(j, "'s.json'");
    ASSERT_TRUE(back.serve);
    EXPECT_EQ(to_json(back), j);
    EXPECT_TRUE(std::isinf(back.serve->points[1].value));
    EXPECT_EQ(back.serve->points[1].label(), "rate inf");
    EXPECT_EQ(back.serve->points[0].label(), "concurrency 2");
    EXPECT_EQ(back.serve->points[0].requests[0].itl_ns,
              (std::vector<int64_t>{20'000'000, 19'000'000}));
    EXPECT_EQ(back.serve->slots, 4);
    EXPECT_EQ(back.serve->server_args, (std::vector<std::string>{"-ngl", "99", "-dev", "Vulkan0"}));
    EXPECT_EQ(back.serve->points[0].start_ns, 5'000'000'000);
    EXPECT_EQ(back.serve->slo_ms.at("tpot"), 50.0);
    EXPECT_EQ(back.serve->server["server"], "llama-server");
    // The server's claim of a request, with its disagreements; none for a request without.
    const json& claim = j["serve"]["points"][0]["requests"][0]["server_claim"];
    EXPECT_EQ(claim["prompt_ns"], 120'000'000);
    EXPECT_EQ(claim["disagreements"].size(), 2u);
    EXPECT_TRUE(claim["queue_ns"].is_null()) << "missing is not zero";
    EXPECT_FALSE(j["serve"]["points"][0]["requests"][1].contains("server_claim"));
    ASSERT_TRUE(back.serve->points[0].requests[0].server_claim);
    EXPECT_EQ(back.serve->points[0].requests[0].server_claim->said.predicted_n, 9);
    EXPECT_EQ(back.serve->points[0].requests[0].server_claim->disagreements[1],
              "the llama-server timings count 9 generated tokens, the client 8: not believed");
    EXPECT_FALSE(back.serve->points[0].requests[1].server_claim);
    EXPECT_TRUE(back.unknown.empty());
    // A --url server's section (no flags of stagebench's) has none.
    ResultDocument url = serve_document();
    url.serve->server_args.clear();
    EXPECT_FALSE(to_json(url)["serve"].contains("server_args"));
    // Without a serve section there is none in the JSON, and none read back.
    EXPECT_FALSE(to_json(ResultDocument{}).contains("serve"));
    EXPECT_FALSE(from_json<ResultDocument>(to_json(ResultDocument{})).serve);
}

// The measurements (CIs, energy, windows, interrupted requests, workload shapes, the
// saturation test with an unbounded rate) are written and read back exactly.
TEST(ServeSection, MeasurementsComeBackExactly) {
    ResultDocument d = serve_document();
    ServeSection& s = *d.serve;
    ServePoint& p = s.points[0];
    p.ttft.median_ci = Ci95{90.0, 110.0};
    p.ttft.p99_ci = Ci95{95.5, 130.25};
    p.requests[1].interrupted = true;
    p.interrupted = 1;
    p.window_tokens_per_s = {10.0, 0.0, 2.5};
    p.slo_attainment = 0.5;
    ServeEnergy e;
    e.metric = "rapl.psys.energy_uj";
    e.method = "counter";
    e.duration_s = 2;
    e.energy_j = 30;
    e.net_energy_j = 20;
    e.j_per_request = 30;
    e.net_j_per_output_token = 2.5;
    p.energy = e;
    p.client_cpu_ms_per_request = 0.75;
    s.n_prompt_max = 32;
    s.n_gen_max = 16;
    s.lengths = {{64, 32}, {128, 16}};
    s.duration_s = 30;
    s.interrupted = true;
    SaturationStep st;
    st.from = 2;
    st.to = std::numeric_limits<double>::infinity();
    st.throughput = RatioCi{1.02, 0.97, 1.08, true};
    st.latency = RatioCi{3.0, 2.5, 3.5, false};
    st.latency_grew = true;
    s.saturation.steps = {st};
    s.saturation.saturated_at = 2;
    s.saturation.next = std::numeric_limits<double>::infinity();
    s.saturation.max_meeting_slo = 2;
    s.saturation.slo_given = true;
    s.saturation.verdict = "saturated at rate 2";
    const json j = to_json(d);
    const json& jp = j["serve"]["points"][0];
    EXPECT_EQ(jp["ttft"]["median_ci95_ms"], json::array({90.0, 110.0}));
    EXPECT_TRUE(jp["ttft"]["mean_ci95_ms"].is_null());
    EXPECT_EQ(jp["requests"][1]["interrupted"], true);
    EXPECT_EQ(jp["energy"]["net_j_per_output_token"], 2.5);
    EXPECT_EQ(j["serve"]["saturation"]["steps"][0]["to"], "inf");
    EXPECT_EQ(j["serve"]["saturation"]["next"], "inf");
    EXPECT_EQ(j["serve"]["saturation"]["steps"][0]["latency_ratio"]["ci95"],
              json::array({2.5, 3.5}));
    EXPECT_EQ(j["serve"]["lengths"], json::array({json::array({64, 32}), json::array({128, 16})}));
    const ResultDocument back = from_json<ResultDocument>(j, "'s.json'");
    EXPECT_EQ(to_json(back), j);
    EXPECT_TRUE(back.unknown.empty());
    EXPECT_TRUE(std::isinf(*back.serve->saturation.next));
    EXPECT_EQ(back.serve->points[0].energy->energy_j, 30.0);
    EXPECT_EQ(back.serve->points[0].ttft.p99_ci->hi, 130.25);
    EXPECT_TRUE(back.serve->saturation.steps[0].throughput->no_difference);
    json bad = j;
    bad["serve"]["points"][0]["ttft"]["median_ci95_ms"] = json::array({1.0});
    EXPECT_EQ(read_error_of(bad),
              "'s.json': serve.points[0].ttft.median_ci95_ms: expected an array [lo, hi], found "
              "an array");
}

TEST(ServeSection, MembersOfANewerBuildAreKept) {
    json j = to_json(serve_document());
    j["serve"]["points"][0]["energy_j_per_request"] = 1.5;
    j["serve"]["points"][0]["requests"][0]["server_timings"] = {{"prompt_n", 16}};
    const ResultDocument back = from_json<ResultDocument>(j, "'s.json'");
    EXPECT_EQ(back.unknown.size(), 2u);
    EXPECT_EQ(to_json(back), j);
}

TEST(ServeSection, RefusalsNameTheField) {
    const json base = to_json(serve_document());
    auto refuse = [&](const std::function<void(json&)>& mutate, const std::string& expected) {
        json j = base;
        mutate(j);
        EXPECT_EQ(read_error_of(j), expected);
    };
    refuse([](json& j) { j["serve"]["points"][0]["mode"] = "burst"; },
           "'s.json': serve.points[0].mode: expected concurrency or rate, found \"burst\"");
    refuse([](json& j) { j["serve"]["points"][1]["value"] = "infinite"; },
           "'s.json': serve.points[1].value: expected a number or \"inf\", found a string");
    refuse([](json& j) { j["serve"]["points"][0]["requests"][0]["ttft_ns"] = "fast"; },
           "'s.json': serve.points[0].requests[0].ttft_ns: expected an integer, found a string");
    refuse(
        [](json& j) { j["serve"]["points"][0]["requests"][0]["server_claim"]["prompt_ns"] = -1; },
        "'s.json': serve.points[0].requests[0].server_claim.prompt_ns: expected at least 0, "
        "found -1");
    refuse(
        [](json& j) {
            j["serve"]["points"][0]["requests"][0]["server_claim"]["disagreements"] = "none";
        },
        "'s.json': serve.points[0].requests[0].server_claim.disagreements: expected an array, "
        "found a string");
    refuse([](json& j) { j["serve"]["points"][0]["ttft"]["p99_ms"] = true; },
           "'s.json': serve.points[0].ttft.p99_ms: expected a number, found a boolean");
    refuse(
        [](json& j) {
            j["serve"]["slo_ms"] = {1, 2};
        },
        "'s.json': serve.slo_ms: expected an object, found an array");
    refuse([](json& j) { j["serve"]["points"] = json::object(); },
           "'s.json': serve.points: expected an array, found an object");
    refuse([](json& j) { j["serve"]["server"] = "llama"; },
           "'s.json': serve.server: expected an object, found a string");
}

}  // namespace
}  // namespace sb
