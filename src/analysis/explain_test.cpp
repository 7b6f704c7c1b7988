#include "analysis/explain.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace sb {
namespace {

using Opt = std::optional<double>;

// A measure with one run per round: prefill[i] and decode[i] in ms (nullopt: failed run).
ExplainMeasure measure(const std::string& id, const std::string& level,
                       const std::vector<Opt>& prefill_ms, const std::vector<Opt>& decode_ms) {
    ExplainMeasure m;
    m.id = id;
    m.level = level;
    for (std::size_t i = 0; i < prefill_ms.size(); ++i) {
        ExplainRun r;
        r.round = static_cast<int>(i);
        if (!prefill_ms[i] && !decode_ms[i]) {
            r.error = "boom " + std::to_string(i);
        } else {
            if (prefill_ms[i])
                r.prefill_ns = *prefill_ms[i] * 1e6;
            if (decode_ms[i])
                r.decode_ns = *decode_ms[i] * 1e6;
        }
        m.runs.push_back(r);
    }
    return m;
}

const ExplainPart& part(const ExplainSection& s, const std::string& stage,
                        const std::string& name) {
    for (const auto& p : s.parts)
        if (p.stage == stage && p.name == name)
            return p;
    ADD_FAILURE() << "no part " << stage << " " << name;
    static ExplainPart none;
    return none;
}

const ExplainPart& step(const ExplainSection& s, const std::string& stage,
                        const std::string& name) {
    for (const auto& p : s.steps)
        if (p.stage == stage && p.name == name)
            return p;
    ADD_FAILURE() << "no step " << stage << " " << name;
    static ExplainPart none;
    return none;
}

// Five rounds; a constant drift per round that every measure shares (the paired rounds cancel
// it in differences).
ExplainSection explain_section() {
    ExplainSection s;
    s.n_prompt = 512;
    s.n_gen = 16;
    s.rounds = 5;
    const double drift[] = {0, 1, 0.5, 2, 1.5};
    auto v = [&](double base) {
        std::vector<Opt> out;
        for (double d : drift)
            out.push_back(base + d);
        return out;
    };
    s.measures.push_back(measure("ops", "ops", v(8), v(0.5)));
    s.measures.push_back(measure("graph", "graph", v(10), v(1)));
    s.measures.push_back(measure("graph+n_ubatch", "graph", v(40), v(1)));
    s.measures.push_back(measure("graph+threads", "graph", v(12), v(3)));
    s.measures.push_back(measure("graph+all", "graph", v(43), v(3.5)));
    s.measures.push_back(measure("generation", "generation", v(11), v(1.25)));
    s.measures.push_back(measure("server", "server", v(46), v(4.25)));
    s.measures.push_back(measure("served@4", "served", v(150), v(5)));
    s.measures[2].setting = "n_ubatch";
    s.measures[3].setting = "threads";
    s.measures[4].setting = "all";
    s.measures[7].concurrency = 4;
    ExplainSetting ub;
    ub.name = "n_ubatch";
    ub.label = "micro-batch (-ub)";
    ub.bench = "512";
    ub.server = "32";
    ub.differs = true;
    ub.measure = "graph+n_ubatch";
    ExplainSetting th;
    th.name = "threads";
    th.label = "threads (-t)";
    th.bench = "2";
    th.server = "1";
    th.differs = true;
    th.measure = "graph+threads";
    s.settings = {ub, th};
    return s;
}

TEST(PairedSum, DifferenceOfMediansOverTheRoundsEveryMeasureHas) {
    const std::vector<std::vector<Opt>> x{{10, 11, std::nullopt, 13, 14}, {1, 2, 3, 4}};
    const PairedSum p = paired_sum_of_medians(x, {1, -1});
    // Rounds 0, 1, 3 have both: medians 11 and 2.
    EXPECT_EQ(p.n_rounds, 3);
    ASSERT_TRUE(p.value);
    EXPECT_DOUBLE_EQ(*p.value, 9.0);
    ASSERT_TRUE(p.ci95_lo && p.ci95_hi);
    EXPECT_LE(*p.ci95_lo, *p.value);
    EXPECT_GE(*p.ci95_hi, *p.value);
    EXPECT_FALSE(p.no_difference);
    // Seeded: the same input gives the same interval.
    const PairedSum q = paired_sum_of_medians(x, {1, -1});
    EXPECT_EQ(*q.ci95_lo, *p.ci95_lo);
    EXPECT_EQ(*q.ci95_hi, *p.ci95_hi);
}

TEST(PairedSum, APairedDriftCancels) {
    // b = a + 5 in every round, a drifting widely: the paired interval is the point.
    const std::vector<std::vector<Opt>> x{{5, 105, 15, 205, 35}, {0, 100, 10, 200, 30}};
    const PairedSum p = paired_sum_of_medians(x, {1, -1});
    EXPECT_DOUBLE_EQ(*p.value, 5.0);
    EXPECT_DOUBLE_EQ(*p.ci95_lo, 5.0);
    EXPECT_DOUBLE_EQ(*p.ci95_hi, 5.0);
}

TEST(PairedSum, FewRoundsAndBadArguments) {
    const PairedSum one = paired_sum_of_medians({{3}, {1}}, {1, -1});
    EXPECT_DOUBLE_EQ(*one.value, 2.0);
    EXPECT_FALSE(one.ci95_lo);
    const PairedSum none = paired_sum_of_medians({{std::nullopt}, {1}}, {1, -1});
    EXPECT_FALSE(none.value);
    EXPECT_EQ(none.n_rounds, 0);
    EXPECT_THROW(paired_sum_of_medians({{1}}, {1, 2}), Error);
    EXPECT_THROW(paired_sum_of_medians({{1}}, {1}, 0), Error);
}

TEST(SummarizeExplain, LevelsStepsAndTheGapAddUp) {
    ExplainSection s = explain_section();
    summarize_explain(s);
    const ExplainMeasure& graph = s.measures[1];
    EXPECT_EQ(graph.prefill.n, 5);
    EXPECT_DOUBLE_EQ(*graph.prefill.median_ns, 11e6);
    EXPECT_DOUBLE_EQ(*graph.decode.median_ns, 2e6);

    EXPECT_DOUBLE_EQ(*step(s, "prefill", "graph-ops").ns, 2e6);
    EXPECT_DOUBLE_EQ(*step(s, "prefill", "generation-graph").ns, 1e6);
    EXPECT_DOUBLE_EQ(*step(s, "prefill", "server-generation").ns, 35e6);
    EXPECT_DOUBLE_EQ(*step(s, "decode", "served@4-server").ns, 0.75e6);
    // The drift is shared by every measure of a round: the paired intervals are points.
    EXPECT_DOUBLE_EQ(*step(s, "prefill", "graph-ops").ci95_lo_ns, 2e6);

    const ExplainPart& gap = part(s, "prefill", "gap");
    EXPECT_DOUBLE_EQ(*gap.ns, 36e6);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "n_ubatch").ns, 30e6);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "threads").ns, 2e6);
    // all - graph = 33; less 30 + 2 = 1.
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "interaction").ns, 1e6);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "application").ns, 1e6);
    // 36 - 30 - 2 - 1 - 1.
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "remainder").ns, 2e6);
    double sum = 0;
    for (const auto& p : s.parts)
        if (p.stage == "prefill" && p.kind != "gap")
            sum += *p.ns;
    EXPECT_DOUBLE_EQ(sum, *gap.ns);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "n_ubatch").share, 30.0 / 36.0);
    EXPECT_EQ(part(s, "prefill", "n_ubatch").label,
              "micro-batch (-ub): 32 on the server against 512");

    ASSERT_EQ(s.verdicts.size(), 2u);
    EXPECT_NE(s.verdicts[0].find("prefill: the server is 36.0 ms slower than the bench"),
              std::string::npos)
        << s.verdicts[0];
    EXPECT_NE(s.verdicts[0].find("83 % of the gap is micro-batch (-ub)"), std::string::npos)
        << s.verdicts[0];
    // decode: gap 3.25, threads 2 is the largest part.
    EXPECT_NE(s.verdicts[1].find("of the gap is threads (-t)"), std::string::npos) << s.verdicts[1];
    EXPECT_TRUE(s.findings.empty());
}

TEST(SummarizeExplain, OrderViolationsAndFailuresAreFindings) {
    ExplainSection s = explain_section();
    // ops above graph in every round: a finding, never hidden.
    s.measures[0] = measure("ops", "ops", {20, 21, 20.5, 22, 21.5}, {0.5, 1.5, 1, 2.5, 2});
    // One failed server run: the other levels and rounds stand.
    s.measures[6].runs[2].error = "HTTP 500";
    summarize_explain(s);
    bool order = false, failed = false;
    for (const auto& f : s.findings) {
        if (f.kind == "order" && f.stage == "prefill") {
            order = true;
            EXPECT_NE(f.message.find("ops (21.0 ms) is above graph (11.0 ms)"), std::string::npos)
                << f.message;
        }
        if (f.kind == "failed") {
            failed = true;
            EXPECT_NE(f.message.find("server (server): 1 of 5 run(s) failed (first: HTTP 500)"),
                      std::string::npos)
                << f.message;
        }
    }
    EXPECT_TRUE(order);
    EXPECT_TRUE(failed);
    EXPECT_EQ(s.measures[6].prefill.n, 4);
    EXPECT_EQ(part(s, "prefill", "gap").n_rounds, 4);
}

TEST(SummarizeExplain, WithoutASettingMeasuredTheGapIsApplicationAndRemainder) {
    ExplainSection s = explain_section();
    s.settings.clear();
    s.measures.erase(s.measures.begin() + 2, s.measures.begin() + 5);
    summarize_explain(s);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "application").ns, 1e6);
    EXPECT_DOUBLE_EQ(*part(s, "prefill", "remainder").ns, 35e6);
    EXPECT_NE(s.verdicts[0].find("of the gap is the server's own overhead"), std::string::npos)
        << s.verdicts[0];
}

TEST(SummarizeExplain, AGapInsideTheNoiseSaysSo) {
    ExplainSection s;
    s.measures.push_back(measure("graph", "graph", {10, 12, 11, 13}, {1, 1, 1, 1}));
    s.measures.push_back(measure("server", "server", {12, 10, 13, 11}, {1, 1, 1, 1}));
    summarize_explain(s);
    EXPECT_NE(s.verdicts[0].find("as fast as the bench"), std::string::npos) << s.verdicts[0];
}

TEST(SummarizeExplain, NoShareOfAGapInsideTheNoise) {
    // The full rig's levels, with the server as fast as the bench within the noise: the parts
    // keep their times and intervals, and none is given a share of a gap that may be zero.
    ExplainSection s = explain_section();
    s.measures[6] = measure("server", "server", {9, 12, 10, 13, 11}, {1.2, 1.8, 1.6, 2.6, 2.7});
    summarize_explain(s);
    int parts = 0;
    for (const auto& p : s.parts) {
        if (p.kind == "gap") {
            EXPECT_TRUE(p.no_difference) << p.stage;
            continue;
        }
        ++parts;
        EXPECT_TRUE(p.ns) << p.stage << " " << p.name;
        EXPECT_FALSE(p.share) << p.stage << " " << p.name << " " << *p.share;
    }
    EXPECT_GT(parts, 0);
    // Where the gap is real, the parts have their shares.
    ExplainSection real = explain_section();
    summarize_explain(real);
    bool shared = false;
    for (const auto& p : real.parts)
        shared = shared || (p.kind != "gap" && p.share);
    EXPECT_TRUE(shared);
}

TEST(SummarizeExplain, PartsThatOvershootTheGapAreAFinding) {
    ExplainSection s = explain_section();
    // The server only 5 ms above the bench while -ub 32 alone costs 30 ms in-process.
    s.measures[6] = measure("server", "server", {15, 16, 15.5, 17, 16.5}, {4, 5, 4.5, 6, 5.5});
    summarize_explain(s);
    bool overshoot = false;
    for (const auto& f : s.findings)
        overshoot = overshoot || (f.kind == "overshoot" && f.stage == "prefill");
    EXPECT_TRUE(overshoot);
}

TEST(SummarizeExplain, TheServersOwnTimingsAreANote) {
    ExplainSection s = explain_section();
    for (auto& r : s.measures[6].runs) {
        ExplainServerTimes t;
        t.prompt_ns = *r.prefill_ns - 3e6;  // 3 ms outside the prompt's compute
        t.predicted_n = 16;
        t.predicted_ns = (*r.decode_ns - 0.5e6) * 15;
        r.server = t;
    }
    summarize_explain(s);
    int n = 0;
    for (const auto& note : s.notes)
        if (note.rfind("server timings: ", 0) == 0) {
            ++n;
            EXPECT_TRUE(note.find("3.00 ms") != std::string::npos ||
                        note.find("0.500 ms") != std::string::npos)
                << note;
        }
    EXPECT_EQ(n, 2);
    // Idempotent.
    summarize_explain(s);
    int again = 0;
    for (const auto& note : s.notes)
        again += note.rfind("server timings: ", 0) == 0;
    EXPECT_EQ(again, 2);
}

TEST(FormatMs, ThreeSignificantDigits) {
    EXPECT_EQ(format_ms(12.34e6), "12.3 ms");
    EXPECT_EQ(format_ms(0.8456e6), "0.846 ms");
    EXPECT_EQ(format_ms(-1.2e6), "-1.20 ms");
    EXPECT_EQ(format_ms(512e6), "512 ms");
}

}  // namespace
}  // namespace sb
