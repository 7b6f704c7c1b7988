#include "analysis/explain_compare.hpp"

#include <gtest/gtest.h>

#include "analysis/explain.hpp"
#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

// An explain document whose server is `factor` times slower than its bench in prefill.
ResultDocument explain_doc(double server_ms, const std::string& args) {
    ResultDocument d;
    d.command = "explain";
    ExplainSection s;
    s.model_path = "/m/tiny.gguf";
    s.n_prompt = 64;
    s.n_gen = 8;
    s.rounds = 4;
    s.server_kind = "llama-server";
    s.server_args = {args};
    const double jitter[] = {0, 0.2, -0.1, 0.1};
    for (const char* id : {"graph", "generation", "server"}) {
        ExplainMeasure m;
        m.id = id;
        m.level = id;
        for (int r = 0; r < 4; ++r) {
            ExplainRun run;
            run.round = r;
            const double base = std::string(id) == "server" ? server_ms : 10;
            run.prefill_ns = (base + jitter[r]) * 1e6;
            run.decode_ns = (1 + jitter[r] / 10) * 1e6;
            m.runs.push_back(run);
        }
        s.measures.push_back(m);
    }
    summarize_explain(s);
    d.explain = s;
    return d;
}

const CompareRow* explain_row(const CompareResult& r, const std::string& test,
                              const std::string& stage, const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.test == test && x.stage == stage && x.metric == metric)
            return &x;
    return nullptr;
}

TEST(ExplainCompare, LevelByLevelWithCis) {
    const std::vector<CompareInput> in{{"A", "a.json", explain_doc(40, "-ub 32")},
                                       {"B", "b.json", explain_doc(20, "-ub 128")}};
    ASSERT_TRUE(is_explain_input(in[0]));
    const CompareResult r = compare_documents(in, {});
    const CompareRow* server = explain_row(r, "server", "prefill", "median_ms");
    ASSERT_NE(server, nullptr);
    EXPECT_FALSE(server->higher_is_better);
    ASSERT_EQ(server->ratios.size(), 1u);
    EXPECT_NEAR(*server->ratios[0].median, 20.05 / 40.05, 1e-9);
    EXPECT_EQ(server->ratios[0].verdict, "faster");
    const CompareRow* graph = explain_row(r, "graph", "prefill", "median_ms");
    ASSERT_NE(graph, nullptr);
    EXPECT_EQ(graph->ratios[0].verdict, "no difference");
    const CompareRow* gap = explain_row(r, "gap", "prefill", "median_ms");
    ASSERT_NE(gap, nullptr);
    EXPECT_NEAR(*gap->ratios[0].median, 10.0 / 30.0, 1e-9);
    EXPECT_NE(explain_row(r, "part remainder", "prefill", "share"), nullptr);
    const CompareDiffers& differs = r.rows[0].differs;
    ASSERT_EQ(differs.count("server_args"), 1u);
    EXPECT_EQ(differs.at("server_args"),
              (std::vector<CompareValue>{std::string("-ub 32"), std::string("-ub 128")}));
    // decode: server and graph equal in every round: no gap to compare.
    EXPECT_EQ(explain_row(r, "gap", "decode", "median_ms"), nullptr);
}

TEST(ExplainCompare, AShareIsOneValuePerSideWithItsOwnRounds) {
    ResultDocument b = explain_doc(20, "-ub 128");
    for (auto& m : b.explain->measures)
        if (m.id == "server")
            m.runs[3].error = "connection closed";
    summarize_explain(*b.explain);
    const CompareResult r =
        compare_documents({{"A", "a.json", explain_doc(40, "-ub 32")}, {"B", "b.json", b}}, {});
    const CompareRow* share = explain_row(r, "part remainder", "prefill", "share");
    ASSERT_NE(share, nullptr);
    ASSERT_EQ(share->sides.size(), 2u);
    EXPECT_EQ(share->sides[0].n, 4u);
    EXPECT_EQ(share->sides[1].n, 3u);
    ASSERT_EQ(share->ratios.size(), 1u);
    EXPECT_FALSE(share->ratios[0].ci_low.has_value());
    EXPECT_EQ(share->ratios[0].verdict, "no CI: one value");
}

TEST(ExplainCompare, BesideAnotherKindIsOneLine) {
    ResultDocument run;
    run.command = "run";
    const std::vector<CompareInput> in{{"A", "a.json", explain_doc(40, "")},
                                       {"B", "run.json", run}};
    try {
        compare_documents(in, {});
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("B (run.json): the `run` document has no explain "
                                             "section"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sb
