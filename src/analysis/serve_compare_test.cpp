// compare of serve documents on scripted sections: points meet by mode and value, throughput
// ratios without a CI, latency medians with the bootstrap CI of the per-request records,
// refusals in one line.
#include "analysis/serve_compare.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

// A point whose successful requests have TTFT ttft_ms[i] * k (TPOT a tenth of it, E2E ten
// times), one failed request with no latency, throughput tps and p99s scaled by k.
ServePoint serve_point(const std::string& mode, double value, double k, double tps,
                       std::optional<double> goodput = std::nullopt) {
    ServePoint p;
    p.mode = mode;
    p.value = value;
    const std::vector<double> ttft = {100, 102, 98, 101, 99, 100.5, 99.5, 100.2};
    int i = 0;
    for (double t : ttft) {
        ServeRequest r;
        r.index = i++;
        r.ttft_ns = static_cast<int64_t>(t * k * 1e6);
        r.tpot_ns = static_cast<int64_t>(t * k * 1e5);
        r.e2e_ns = static_cast<int64_t>(t * k * 1e7);
        r.output_tokens = 8;
        p.requests.push_back(r);
    }
    ServeRequest failed;
    failed.index = i;
    failed.error = "HTTP 500";
    p.requests.push_back(failed);
    p.ok = 8;
    p.errors = 1;
    p.output_tokens_per_s = tps;
    p.request_per_s = tps / 8;
    p.goodput_per_s = goodput;
    p.ttft.p99 = 120 * k;
    p.tpot.p99 = 12 * k;
    p.e2e.p99 = 1200 * k;
    return p;
}

CompareInput serve_input(const std::string& label, std::vector<ServePoint> points, int slots,
                         const std::string& server = "llama-server") {
    ResultDocument d;
    d.command = "serve";
    d.system = {{"hostname", "h"}, {"cpu_model", "c"}};
    ServeSection s;
    s.slots = slots;
    s.n_prompt = 16;
    s.n_gen = 8;
    s.server = {{"server", server}};
    s.points = std::move(points);
    d.serve = s;
    return {label, label + ".json", std::move(d)};
}

const CompareRow* serve_row(const CompareResult& r, const std::string& test,
                            const std::string& stage, const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.test == test && x.stage == stage && x.metric == metric)
            return &x;
    return nullptr;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(ServeCompare, MatchingPointsSideBySide) {
    const CompareResult r = compare_serve_documents(
        {serve_input(
             "A", {serve_point("concurrency", 1, 1, 50), serve_point("concurrency", 4, 1, 100)}, 4),
         serve_input("B",
                     {serve_point("concurrency", 4, 2, 150), serve_point("concurrency", 8, 3, 160)},
                     2)});
    EXPECT_EQ(r.match, (std::vector<std::string>{"mode", "value"}));
    // concurrency 4 only: 2 throughput rows (no goodput without SLOs), median and p99 of 3.
    ASSERT_EQ(r.rows.size(), 8u);
    const CompareRow* tps = serve_row(r, "concurrency 4", "throughput", "output_tokens_per_s");
    ASSERT_TRUE(tps);
    EXPECT_EQ(tps->key, "mode=concurrency,value=4");
    EXPECT_EQ(*tps->sides[0].median, 100.0);
    EXPECT_EQ(*tps->sides[1].median, 150.0);
    EXPECT_EQ(tps->sides[1].n, 8u);
    EXPECT_DOUBLE_EQ(*tps->ratios[0].median, 1.5);
    EXPECT_EQ(tps->ratios[0].label, "B/A");
    EXPECT_FALSE(tps->ratios[0].ci_low);
    EXPECT_EQ(tps->ratios[0].verdict, "no CI: one value");
    EXPECT_TRUE(tps->higher_is_better);
    // TTFT median: the failed request left out, every latency of B twice A's.
    const CompareRow* ttft = serve_row(r, "concurrency 4", "ttft", "median_ms");
    ASSERT_TRUE(ttft);
    EXPECT_EQ(ttft->sides[0].n, 8u);
    EXPECT_DOUBLE_EQ(*ttft->sides[0].median, 100.1);
    EXPECT_DOUBLE_EQ(*ttft->ratios[0].median, 2.0);
    ASSERT_TRUE(ttft->ratios[0].ci_low);
    EXPECT_GT(*ttft->ratios[0].ci_low, 1.9);
    EXPECT_LT(*ttft->ratios[0].ci_high, 2.1);
    EXPECT_EQ(ttft->ratios[0].verdict, "slower");
    EXPECT_FALSE(ttft->higher_is_better);
    const CompareRow* p99 = serve_row(r, "concurrency 4", "e2e", "p99_ms");
    ASSERT_TRUE(p99);
    EXPECT_DOUBLE_EQ(*p99->ratios[0].median, 2.0);
    EXPECT_EQ(p99->ratios[0].verdict, "no CI: tail");
    EXPECT_TRUE(serve_row(r, "concurrency 4", "tpot", "median_ms"));
    // What differs between the two servers: their slots.
    EXPECT_EQ(ttft->differs, (CompareDiffers{{"slots", {int64_t{4}, int64_t{2}}}}));
    ASSERT_EQ(r.unmatched.size(), 2u);
    EXPECT_EQ(r.unmatched[0].label, "A");
    EXPECT_EQ(r.unmatched[0].test, "concurrency 1");
    EXPECT_EQ(r.unmatched[1].label, "B");
    EXPECT_EQ(r.unmatched[1].test, "concurrency 8");
    // The same inputs give the same intervals.
    const CompareResult again = compare_serve_documents(
        {serve_input(
             "A", {serve_point("concurrency", 1, 1, 50), serve_point("concurrency", 4, 1, 100)}, 4),
         serve_input("B",
                     {serve_point("concurrency", 4, 2, 150), serve_point("concurrency", 8, 3, 160)},
                     2)});
    EXPECT_EQ(to_json(again)["rows"], to_json(r)["rows"]);
}

TEST(ServeCompare, GoodputWhereEverySideHadSlosAndUnboundedRatesMeet) {
    const double inf = std::numeric_limits<double>::infinity();
    const CompareResult r = compare_serve_documents(
        {serve_input("A", {serve_point("rate", inf, 1, 100, 2.0)}, 4, "llama-server"),
         serve_input("B", {serve_point("rate", inf, 1, 100, 3.0)}, 4, "ollama")});
    const CompareRow* g = serve_row(r, "rate inf", "throughput", "goodput_per_s");
    ASSERT_TRUE(g);
    EXPECT_DOUBLE_EQ(*g->ratios[0].median, 1.5);
    EXPECT_EQ(g->differs, (CompareDiffers{{"server", {"llama-server", "ollama"}}}));
    // The same latencies: no difference.
    EXPECT_EQ(serve_row(r, "rate inf", "ttft", "median_ms")->ratios[0].verdict, "no difference");
    EXPECT_TRUE(r.unmatched.empty());
}

TEST(ServeCompare, RefusalsAreOneLine) {
    EXPECT_EQ(
        error_of([] {
            compare_serve_documents({serve_input("A", {serve_point("concurrency", 1, 1, 50)}, 4),
                                     serve_input("B", {serve_point("rate", 2, 1, 50)}, 4)});
        }),
        "no serve point is in two inputs (points meet by mode and value): A (A.json): "
        "concurrency 1; B (B.json): rate 2");
    ResultDocument run;
    run.command = "run";
    EXPECT_EQ(
        error_of([&] {
            compare_serve_documents({serve_input("A", {serve_point("concurrency", 1, 1, 50)}, 4),
                                     {"B", "r.json", run}});
        }),
        "B (r.json): the `run` document has no serve section; serve documents compare "
        "only with serve documents");
    EXPECT_TRUE(is_serve_input(serve_input("A", {}, 1)));
    EXPECT_FALSE(is_serve_input({"B", "r.json", run}));
}

// The client that drove the requests (serve --client) is named where the sides differ; a
// document without it (before the choice existed) used threads.
TEST(ServeCompare, TheClientDiffersWhereTheSidesUsedDifferentOnes) {
    CompareInput a = serve_input("A", {serve_point("concurrency", 4, 1, 100)}, 4);
    CompareInput b = serve_input("B", {serve_point("concurrency", 4, 1, 100)}, 4);
    b.doc.serve->client = "loop";
    ASSERT_FALSE(a.doc.serve->client);
    const CompareResult r = compare_serve_documents({a, b});
    const CompareRow* ttft = serve_row(r, "concurrency 4", "ttft", "median_ms");
    ASSERT_TRUE(ttft);
    EXPECT_EQ(ttft->differs, (CompareDiffers{{"client", {"thread", "loop"}}}));
}

}  // namespace
}  // namespace sb
