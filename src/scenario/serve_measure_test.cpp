// `serve`'s measurements from scripted records (no wall clock): latency CIs, token windows,
// the saturation test over a sweep, energy per request and per output token from a telemetry
// stage (the x86 RAPL fixture tree with a fake clock), and the workload shapes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "scenario/serve.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

ServeRequest measured_req(int i, double ttft_ms, double tpot_ms, double e2e_ms, int out) {
    ServeRequest r;
    r.index = i;
    r.send_ns = i * 1'000'000;
    r.ttft_ns = static_cast<int64_t>(ttft_ms * 1e6);
    r.tpot_ns = static_cast<int64_t>(tpot_ms * 1e6);
    r.e2e_ns = static_cast<int64_t>(e2e_ms * 1e6);
    r.output_tokens = out;
    r.prompt_tokens = 10;
    r.itl_ns = {static_cast<int64_t>(tpot_ms * 1e6)};
    return r;
}

// Two requests, TTFT 100 and 300 ms: resamples are {100,100}, {100,300}, {300,300} (chances
// 1/4, 1/2, 1/4), so every statistic's 95 % interval is exactly [100, 300].
TEST(ServeMeasure, LatencyCisFromTwoRequestsSpanThem) {
    ServePoint p;
    p.duration_ns = 1'000'000'000;
    p.requests = {measured_req(0, 100, 20, 400, 4), measured_req(1, 300, 20, 600, 4)};
    summarize_point(p, {});
    for (const auto* ci : {&p.ttft.mean_ci, &p.ttft.median_ci, &p.ttft.p90_ci, &p.ttft.p99_ci}) {
        ASSERT_TRUE(*ci);
        EXPECT_EQ((*ci)->lo, 100.0);
        EXPECT_EQ((*ci)->hi, 300.0);
    }
    // Equal TPOTs: a point interval.
    EXPECT_EQ(p.tpot.median_ci->lo, 20.0);
    EXPECT_EQ(p.tpot.median_ci->hi, 20.0);
    // One request has no interval; resamples 0 asks for none.
    ServePoint one;
    one.duration_ns = 1'000'000'000;
    one.requests = {measured_req(0, 100, 20, 400, 4)};
    summarize_point(one, {});
    EXPECT_TRUE(one.ttft.median);
    EXPECT_FALSE(one.ttft.median_ci);
    summarize_point(p, {}, 0);
    EXPECT_FALSE(p.ttft.median_ci);
}

// ITL gaps are resampled with their request: request A's gaps are all 10 ms, B's all 50 ms, so
// a resample of A twice has every gap 10 (chance 1/4) and the median's interval is [10, 50].
TEST(ServeMeasure, ItlGapsAreResampledWithTheirRequest) {
    ServePoint p;
    p.duration_ns = 1'000'000'000;
    ServeRequest a = measured_req(0, 100, 10, 400, 5), b = measured_req(1, 100, 50, 400, 5);
    a.itl_ns = {10'000'000, 10'000'000, 10'000'000, 10'000'000};
    b.itl_ns = {50'000'000, 50'000'000, 50'000'000, 50'000'000};
    p.requests = {a, b};
    summarize_point(p, {});
    EXPECT_EQ(p.itl.n, 8u);
    EXPECT_EQ(p.itl.median_ci->lo, 10.0);
    EXPECT_EQ(p.itl.median_ci->hi, 50.0);
    // The same records and seed give the same intervals; they hold the point estimates.
    ServePoint q = p;
    summarize_point(q, {});
    EXPECT_EQ(q.itl.p90_ci->lo, p.itl.p90_ci->lo);
    EXPECT_EQ(q.itl.p90_ci->hi, p.itl.p90_ci->hi);
}

// Interrupted requests are neither successes nor failures; the SLO attainment counts failures
// as misses.
TEST(ServeMeasure, InterruptedRequestsAndSloAttainment) {
    ServePoint p;
    p.duration_ns = 2'000'000'000;
    p.requests = {measured_req(0, 100, 20, 400, 16), measured_req(1, 700, 20, 900, 16),
                  measured_req(2, 100, 20, 400, 16)};
    ServeRequest failed;
    failed.index = 3;
    failed.error = "HTTP 500";
    ServeRequest cut;
    cut.index = 4;
    cut.error = "interrupted";
    cut.interrupted = true;
    p.requests.push_back(failed);
    p.requests.push_back(cut);
    summarize_point(p, {{"ttft", 500}});
    EXPECT_EQ(p.ok, 3);
    EXPECT_EQ(p.errors, 1);
    EXPECT_EQ(p.interrupted, 1);
    EXPECT_EQ(p.meeting_slo, 2);
    EXPECT_DOUBLE_EQ(*p.slo_attainment, 0.5);  // 2 of 4 (the interrupted one not counted)
    summarize_point(p, {});
    EXPECT_FALSE(p.slo_attainment);
}

TEST(ServeMeasure, TokenWindowRates) {
    TokenArrivals a;
    a.send_ns = 0;
    a.ttft_ns = 100'000'000;
    a.itl_ns = {100'000'000, 100'000'000};
    a.output_tokens = 6;  // three arrivals of 2 tokens: at 0.1, 0.2 and 0.3 s
    TokenArrivals b;      // no stream: all at send + E2E, past the end (the last window)
    b.send_ns = 50'000'000;
    b.e2e_ns = 500'000'000;
    b.output_tokens = 4;
    const auto w = window_token_rates({a, b}, 0, 400'000'000, 4);
    ASSERT_EQ(w.size(), 4u);
    EXPECT_DOUBLE_EQ(w[0], 0.0);
    EXPECT_DOUBLE_EQ(w[1], 20.0);  // 2 tokens in 0.1 s
    EXPECT_DOUBLE_EQ(w[2], 20.0);
    EXPECT_DOUBLE_EQ(w[3], 60.0);  // 2 + 4
    EXPECT_TRUE(window_token_rates({a}, 0, 0, 4).empty());
    // summarize_point cuts the point's span from its first send into kServeWindows.
    ServePoint p;
    p.duration_ns = 1'000'000'000;
    p.requests = {measured_req(0, 100, 20, 400, 4)};
    summarize_point(p, {});
    EXPECT_EQ(p.window_tokens_per_s.size(), static_cast<size_t>(kServeWindows));
    double tokens = 0;
    for (double x : p.window_tokens_per_s)
        tokens += x * 0.1;
    EXPECT_DOUBLE_EQ(tokens, 4.0);
}

SaturationInput point(double v, std::vector<double> windows, std::vector<double> lat,
                      std::optional<double> slo = {}) {
    return {v, std::move(windows), std::move(lat), slo};
}

// Throughput doubles from 1 to 2 at equal latency, then stays while latency doubles: the
// saturation is at 2. Constant windows make every ratio's interval a point.
TEST(ServeMeasure, SaturationWhereThroughputStopsAndLatencyGrows) {
    const std::vector<SaturationInput> pts = {
        point(8, {200, 200, 200}, {80, 80}), point(1, {100, 100, 100}, {10, 10}),
        point(4, {200, 200, 200}, {20, 20}), point(2, {200, 200, 200}, {10, 10})};
    const Saturation s = find_saturation(pts, "concurrency", false);
    ASSERT_EQ(s.steps.size(), 3u);
    EXPECT_EQ(s.steps[0].from, 1.0);  // sorted by value
    EXPECT_EQ(s.steps[0].to, 2.0);
    EXPECT_EQ(s.steps[0].throughput->ratio, 2.0);
    EXPECT_EQ(s.steps[0].throughput->lo, 2.0);
    EXPECT_TRUE(s.steps[0].throughput_grew);
    EXPECT_FALSE(s.steps[0].latency_grew);
    EXPECT_FALSE(s.steps[1].throughput_grew);
    EXPECT_TRUE(s.steps[1].latency_grew);
    EXPECT_EQ(s.steps[1].latency->ratio, 2.0);
    EXPECT_EQ(*s.saturated_at, 2.0);
    EXPECT_EQ(*s.next, 4.0);
    EXPECT_FALSE(s.max_meeting_slo);
    EXPECT_EQ(s.verdict,
              "saturated at concurrency 2: from 2 to 4 output tokens/s x1.00 [1.00, 1.00] did "
              "not grow while E2E median x2.00 [2.00, 2.00] did (95 % bootstrap CIs)");
}

// With noise: throughput 200 +- 10 against 200 +- 10 has an interval around 1; E2E about three
// times higher has one well above 1. Throughput that grows by half stays "grew".
TEST(ServeMeasure, SaturationWithNoisyPoints) {
    const std::vector<double> w1 = {190, 210, 200, 195, 205, 200, 198, 202};
    const std::vector<double> w2 = {200, 205, 195, 210, 190, 201, 199, 200};
    std::vector<double> w3;
    for (double x : w2)
        w3.push_back(1.5 * x);
    const Saturation s = find_saturation(
        {point(1, w1, {10, 11, 12, 10}), point(2, w2, {30, 31, 32, 33})}, "rate", false);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_LT(s.steps[0].throughput->lo, 1.0);
    EXPECT_GT(s.steps[0].throughput->hi, 1.0);
    EXPECT_GT(s.steps[0].latency->lo, 2.0);
    EXPECT_EQ(*s.saturated_at, 1.0);
    const Saturation t = find_saturation(
        {point(1, w1, {10, 11, 12, 10}), point(2, w3, {30, 31, 32, 33})}, "rate", false);
    EXPECT_TRUE(t.steps[0].throughput_grew);
    EXPECT_FALSE(t.saturated_at);
    EXPECT_EQ(t.verdict.rfind("not saturated within the sweep", 0), 0u) << t.verdict;
    // Latency that does not grow: not saturated either, whatever throughput does.
    const Saturation u = find_saturation(
        {point(1, w1, {10, 11, 12, 10}), point(2, w2, {10, 12, 11, 10})}, "rate", false);
    EXPECT_FALSE(u.steps[0].latency_grew);
    EXPECT_FALSE(u.saturated_at);
    EXPECT_EQ(find_saturation({point(1, w1, {10})}, "rate", false).verdict,
              "one point: no saturation test (it needs two or more)");
}

TEST(ServeMeasure, HighestValueMeetingTheSlos) {
    const std::vector<double> w = {100, 100};
    const Saturation s = find_saturation({point(0.5, w, {1}, 1.0), point(1, w, {1}, 0.95),
                                          point(2, w, {1}, 0.9), point(INFINITY, w, {1}, 0.5)},
                                         "rate", true);
    EXPECT_EQ(*s.max_meeting_slo, 2.0);  // 0.9 meets (>=), 0.5 does not
    EXPECT_NE(s.verdict.find("the highest rate meeting the SLOs (90 % of requests) is 2"),
              std::string::npos)
        << s.verdict;
    const Saturation none = find_saturation({point(1, w, {1}, 0.2)}, "rate", true);
    EXPECT_FALSE(none.max_meeting_slo);
    EXPECT_NE(none.verdict.find("no rate meets the SLOs"), std::string::npos) << none.verdict;
}

// saturation_of reads the points' windows, successful E2Es and attainment.
TEST(ServeMeasure, SaturationOfServePoints) {
    std::vector<ServePoint> pts(2);
    pts[0].mode = pts[1].mode = "concurrency";
    pts[0].value = 1;
    pts[1].value = 4;
    pts[0].window_tokens_per_s = {100, 100};
    pts[1].window_tokens_per_s = {100, 100};
    pts[0].requests = {measured_req(0, 1, 1, 10, 1), measured_req(1, 1, 1, 10, 1)};
    pts[1].requests = {measured_req(0, 1, 1, 40, 1), measured_req(1, 1, 1, 40, 1)};
    ServeRequest bad;
    bad.error = "HTTP 500";
    bad.e2e_ns = 1;  // a failed request's E2E is not a latency
    pts[1].requests.push_back(bad);
    const Saturation s = saturation_of(pts, false);
    EXPECT_EQ(s.steps[0].latency->ratio, 4.0);
    EXPECT_EQ(*s.saturated_at, 1.0);
}

const StageEnergy* meter(const StageWindow& s, const std::string& m) {
    for (const auto& e : s.energy)
        if (e.metric == m)
            return &e;
    return nullptr;
}

// The RAPL fixture with a fake clock: 5 W idle for 1 s, then a point of 2 s at 15 W serving 4
// requests and 100 output tokens: 30 J gross, 30 - 5 * 2 = 20 J net; 7.5 and 5 J per request,
// 0.3 and 0.2 J per output token. The meter is psys, the fixture's whole-system counter.
TEST(ServeMeasure, EnergyPerRequestAndPerOutputTokenNetOfIdle) {
    testing::FixtureCopy fx("x86-laptop-rapl");
    testing::FakeClock clock;
    Discovery d;
    discover_rapl(fx.root(), d);
    SamplerOptions so;
    so.clock = clock.fn();
    Sampler s(std::move(d), so);
    auto at = [&](double t, double uj) {
        clock.set_s(t);
        for (const char* z : {"intel-rapl:0", "intel-rapl:1"})
            testing::write_atomic(fx.path(std::string("class/powercap/") + z + "/energy_uj"),
                                  fmt::format("{:.0f}\n", uj));
    };
    at(0, 0);
    s.mark("idle", true);
    at(1, 5e6);
    s.mark("idle", false);
    ASSERT_TRUE(s.set_idle_stage("idle"));
    at(1.5, 7.5e6);
    s.mark("serve.concurrency.4", true);
    at(3.5, 37.5e6);
    s.mark("serve.concurrency.4", false, 100);
    const auto st = s.stage_summary("serve.concurrency.4");
    ASSERT_TRUE(st);
    const auto e = serve_energy(*st, 4, 100);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->metric, "rapl.psys.energy_uj");
    EXPECT_EQ(e->method, "counter");
    EXPECT_DOUBLE_EQ(e->duration_s, 2.0);
    EXPECT_NEAR(*e->energy_j, 30.0, 1e-9);
    EXPECT_NEAR(*e->net_energy_j, 20.0, 1e-9);
    EXPECT_NEAR(*e->idle_power_mw, 5000.0, 1e-6);
    EXPECT_NEAR(*e->mean_power_mw, 15000.0, 1e-6);
    EXPECT_NEAR(*e->j_per_request, 7.5, 1e-9);
    EXPECT_NEAR(*e->net_j_per_request, 5.0, 1e-9);
    EXPECT_NEAR(*e->j_per_output_token, 0.3, 1e-9);
    EXPECT_NEAR(*e->net_j_per_output_token, 0.2, 1e-9);
    // No successful request, no token: no per-request figure, the energy stays.
    const auto none = serve_energy(*st, 0, 0);
    EXPECT_NEAR(*none->energy_j, 30.0, 1e-9);
    EXPECT_FALSE(none->j_per_request);
    EXPECT_FALSE(none->j_per_output_token);
    ASSERT_NE(meter(*st, "rapl.package-0.energy_uj"), nullptr);
}

// Without a system-total meter the first meter not nested in another is used; no meter, none.
TEST(ServeMeasure, EnergyMeterChoiceWithoutASystemTotal) {
    StageWindow st;
    st.duration_ns = 2'000'000'000;
    EXPECT_FALSE(serve_energy(st, 1, 1));
    StageEnergy core, pkg;
    core.metric = "rapl.core.energy_uj";
    core.within = "rapl.package-0";
    core.energy_j = 2;
    pkg.metric = "rapl.package-0.energy_uj";
    pkg.energy_j = 5;
    pkg.method = "counter";
    st.energy = {core, pkg};
    const auto e = serve_energy(st, 2, 10);
    EXPECT_EQ(e->metric, "rapl.package-0.energy_uj");
    EXPECT_DOUBLE_EQ(*e->j_per_request, 2.5);
    EXPECT_DOUBLE_EQ(*e->j_per_output_token, 0.5);
    EXPECT_DOUBLE_EQ(*e->mean_power_mw, 2500.0);
    EXPECT_FALSE(e->net_energy_j);
}

TEST(ServeMeasure, LengthRanges) {
    EXPECT_EQ(parse_length_range("128", "-p", 1000).lo, 128);
    EXPECT_EQ(parse_length_range("128", "-p", 1000).hi, 128);
    const LengthRange r = parse_length_range(" 64 - 256 ", "-p", 1000);
    EXPECT_EQ(r.lo, 64);
    EXPECT_EQ(r.hi, 256);
    for (const char* bad :
         {"", "abc", "0", "256-64", "5-", "-5", "1.5", "64-256-512", "1001", "1-1001", "12x"}) {
        try {
            parse_length_range(bad, "-p", 1000);
            ADD_FAILURE() << bad;
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()).rfind("-p '", 0), 0u) << e.what();
        }
    }
}

TEST(ServeMeasure, LengthsCsv) {
    const auto pairs =
        parse_lengths_csv("prompt,output\n\n# a comment\n 64 , 32\n128,16\r\n", "l.csv", 1000);
    ASSERT_EQ(pairs.size(), 2u);
    EXPECT_EQ(pairs[0], (std::pair<int64_t, int64_t>{64, 32}));
    EXPECT_EQ(pairs[1], (std::pair<int64_t, int64_t>{128, 16}));
    // A file saved with a UTF-8 byte order mark (Windows editors, Excel's "CSV UTF-8"): the mark
    // is no part of the first line, which is a pair (not a header to drop), or still a header.
    const auto bom = parse_lengths_csv(
        "\xEF\xBB\xBF"
        "64,32\n128,16\n",
        "l.csv", 1000);
    ASSERT_EQ(bom.size(), 2u);
    EXPECT_EQ(bom[0], (std::pair<int64_t, int64_t>{64, 32}));
    EXPECT_EQ(parse_lengths_csv("\xEF\xBB\xBFprompt,output\n8,4\n", "l.csv", 1000),
              (std::vector<std::pair<int64_t, int64_t>>{{8, 4}}));
    auto error = [](const std::string& text) {
        try {
            parse_lengths_csv(text, "l.csv", 1000);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("1,2\nfoo\n"), "l.csv:2: expected two token counts 'prompt,output', got 'foo'");
    EXPECT_EQ(error("1,2,3\n4,5\n6,7,8\n"),
              "l.csv:3: expected two token counts 'prompt,output', got '6,7,8'");
    EXPECT_EQ(error("0,5\n"), "l.csv:1: token counts must be 1..1000, got '0,5'");
    EXPECT_EQ(error("prompt,output\n"), "l.csv: no 'prompt,output' pairs");
    EXPECT_EQ(error(""), "l.csv: no 'prompt,output' pairs");
}

TEST(ServeMeasure, RequestLengths) {
    const auto fixed = request_lengths(5, {8, 8}, {4, 4}, {}, 1);
    for (const auto& [p, n] : fixed) {
        EXPECT_EQ(p, 8);
        EXPECT_EQ(n, 4);
    }
    const auto a = request_lengths(400, {1, 4}, {10, 12}, {}, 3);
    EXPECT_EQ(a, request_lengths(400, {1, 4}, {10, 12}, {}, 3));  // seeded
    EXPECT_NE(a, request_lengths(400, {1, 4}, {10, 12}, {}, 4));
    std::set<int64_t> ps, ns;
    for (const auto& [p, n] : a) {
        ps.insert(p);
        ns.insert(n);
    }
    EXPECT_EQ(ps, (std::set<int64_t>{1, 2, 3, 4}));  // every length in the range, nothing else
    EXPECT_EQ(ns, (std::set<int64_t>{10, 11, 12}));
    const std::vector<std::pair<int64_t, int64_t>> csv = {{5, 1}, {6, 2}};
    EXPECT_EQ(request_lengths(5, {8, 8}, {4, 4}, csv, 1),
              (std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {6, 2}, {5, 1}, {6, 2}, {5, 1}}));
}

}  // namespace
}  // namespace sb
