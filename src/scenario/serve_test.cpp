#include "scenario/serve.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

ServeRequest req(int i, double ttft_ms, double tpot_ms, double e2e_ms, int out, int prompt = 10) {
    ServeRequest r;
    r.index = i;
    r.send_ns = i * 1'000'000;
    r.ttft_ns = static_cast<int64_t>(ttft_ms * 1e6);
    r.tpot_ns = static_cast<int64_t>(tpot_ms * 1e6);
    r.e2e_ns = static_cast<int64_t>(e2e_ms * 1e6);
    r.output_tokens = out;
    r.prompt_tokens = prompt;
    r.itl_ns = {static_cast<int64_t>(tpot_ms * 1e6)};
    return r;
}

// The point's percentiles are core/stats.hpp's: linear between order statistics, as numpy.
TEST(Serve, PercentilesInterpolateLikeNumpy) {
    EXPECT_FALSE(percentile(std::vector<double>{}, 0.5));
    EXPECT_EQ(*percentile(std::vector<double>{7}, 0.99), 7.0);
    const std::vector<double> v = {1, 2, 3, 4};  // positions 0..3
    EXPECT_DOUBLE_EQ(*percentile(v, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(*percentile(v, 0.9), 3.7);
    EXPECT_DOUBLE_EQ(*percentile(v, 0), 1.0);
    EXPECT_DOUBLE_EQ(*percentile(v, 1), 4.0);
    EXPECT_DOUBLE_EQ(*percentile(std::vector<double>{4, 1, 3, 2}, 0.5), 2.5);  // unsorted input
}

// Scripted records, no clock: throughput, percentiles, goodput and errors exactly.
TEST(Serve, PointStatisticsAndGoodputFromRecords) {
    ServePoint p;
    p.duration_ns = 2'000'000'000;  // 2 s
    p.requests = {req(0, 100, 20, 400, 16), req(1, 300, 40, 900, 16), req(2, 700, 30, 1200, 16),
                  req(3, 200, 60, 1100, 16)};
    ServeRequest failed;
    failed.index = 4;
    failed.error = "HTTP 500";
    p.requests.push_back(failed);
    summarize_point(p, {{"ttft", 500}, {"tpot", 50}});
    EXPECT_EQ(p.ok, 4);
    EXPECT_EQ(p.errors, 1);
    EXPECT_DOUBLE_EQ(p.request_per_s, 2.0);
    EXPECT_DOUBLE_EQ(p.output_tokens_per_s, 32.0);
    EXPECT_DOUBLE_EQ(p.total_tokens_per_s, 52.0);
    // TTFT 100, 200, 300, 700: median 250, p90 = 300 + 0.7 * 400 = 580, mean 325.
    EXPECT_DOUBLE_EQ(*p.ttft.median, 250.0);
    EXPECT_DOUBLE_EQ(*p.ttft.p90, 580.0);
    EXPECT_DOUBLE_EQ(*p.ttft.mean, 325.0);
    EXPECT_EQ(p.ttft.n, 4u);
    // Within ttft 500 and tpot 50: requests 0 and 1 (2 has TTFT 700, 3 has TPOT 60).
    EXPECT_EQ(p.meeting_slo, 2);
    EXPECT_DOUBLE_EQ(*p.goodput_per_s, 1.0);
    // Without SLOs there is no goodput.
    summarize_point(p, {});
    EXPECT_FALSE(p.goodput_per_s);
    // e2e alone.
    summarize_point(p, {{"e2e", 1000}});
    EXPECT_EQ(p.meeting_slo, 2);
}

// Seeded arrivals have the requested mean gap and the CV of their shape.
TEST(Serve, ArrivalGapsHaveTheRequestedMeanAndCv) {
    for (double shape : {1.0, 4.0, 0.25}) {
        const auto g = arrival_gaps(20000, 2.0, shape, 7);
        const double mean = std::accumulate(g.begin(), g.end(), 0.0) / g.size();
        double var = 0;
        for (double x : g)
            var += (x - mean) * (x - mean);
        const double cv = std::sqrt(var / (g.size() - 1)) / mean;
        EXPECT_NEAR(mean, 0.5, 0.5 * 0.03) << shape;
        EXPECT_NEAR(cv, 1 / std::sqrt(shape), 0.05 / std::sqrt(shape)) << shape;
    }
    EXPECT_EQ(arrival_gaps(3, INFINITY, 1, 1), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(arrival_gaps(5, 2.0, 1.0, 9), arrival_gaps(5, 2.0, 1.0, 9));  // seeded
}

TEST(Serve, SloParsing) {
    auto s = parse_slo("ttft=500ms,tpot=50ms,e2e=2s");
    EXPECT_DOUBLE_EQ(s.at("ttft"), 500.0);
    EXPECT_DOUBLE_EQ(s.at("tpot"), 50.0);
    EXPECT_DOUBLE_EQ(s.at("e2e"), 2000.0);
    for (const char* bad : {"ttft", "foo=1s", "ttft=fast", "ttft=0ms", ""})
        EXPECT_THROW(parse_slo(bad), Error) << bad;
}

}  // namespace
}  // namespace sb
