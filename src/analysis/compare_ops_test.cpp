#include <gtest/gtest.h>

#include "analysis/compare.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

using nlohmann::json;

OpRecord rec(const std::string& op, double op_us, std::optional<double> call_us,
             const std::string& backend) {
    OpRecord r;
    r.op = op;
    r.backend = backend;
    r.op_ns = op_us * 1e3;
    if (call_us)
        r.call_ns = *call_us * 1e3;
    return r;
}

// An ops document: per stage, n records of each op with the given times (µs).
struct OpTimes {
    std::string op;
    int n;
    double op_us;
    std::optional<double> call_us;
};

ResultDocument ops_doc(const std::string& devices,
                       const std::map<std::string, std::vector<OpTimes>>& st,
                       const std::string& source = "trace") {
    ResultDocument d;
    d.command = "ops";
    d.started_at = "2026-12-01T00:00:00Z";
    OpsProfile p;
    p.source = source;
    p.devices = devices;
    for (const auto& [name, ops] : st) {
        StageProfile s;
        s.stage = name;
        s.n_tokens = name == "prefill" ? 32 : 1;
        for (const auto& o : ops)
            for (int i = 0; i < o.n; ++i)
                s.ops.push_back(rec(o.op, o.op_us, o.call_us, devices));
        // A view never counts.
        OpRecord v = rec("VIEW", 0, 1, devices);
        v.no_compute = true;
        s.ops.push_back(v);
        p.stages.push_back(s);
    }
    d.ops = p;
    return d;
}

const CompareRow* row(const CompareResult& r, const std::string& stage, const std::string& op,
                      const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.stage == stage && x.test == op && x.metric == metric)
            return &x;
    return nullptr;
}

TEST(CompareOps, RatiosPerOpAndStage) {
    const ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", 4, 100, 110}, {"RMS_NORM", 3, 10, 20}}},
                        {"prefill", {{"MUL_MAT", 4, 1000, 1100}}}});
    const ResultDocument b = ops_doc(
        "RPC0",
        {{"decode", {{"MUL_MAT", 4, 155, 300}, {"RMS_NORM", 3, 10, 150}, {"GET_ROWS", 1, 5, 50}}},
         {"prefill", {{"MUL_MAT", 4, 1670, 2000}}}});
    const CompareResult r = compare_documents({{"A", "a.json", a}, {"B", "b.json", b}});
    EXPECT_EQ(r.match, (std::vector<std::string>{"stage", "op"}));
    // 2 stages: decode 2 ops x 3 metrics, prefill 1 op x 3 metrics.
    EXPECT_EQ(r.rows.size(), 9u);

    const CompareRow* mm = row(r, "decode", "MUL_MAT", "op_us");
    ASSERT_TRUE(mm);
    EXPECT_EQ(mm->key, "decode/MUL_MAT");
    EXPECT_DOUBLE_EQ(*mm->sides[0].median, 100.0);
    EXPECT_EQ(mm->sides[0].n, 4u);  // the view is left out
    EXPECT_DOUBLE_EQ(*mm->sides[1].median, 155.0);
    ASSERT_EQ(mm->ratios.size(), 1u);
    EXPECT_EQ(mm->ratios[0].label, "B/A");
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 1.55);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_low, 1.55);  // every sample equal: a point interval
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_high, 1.55);
    EXPECT_EQ(mm->ratios[0].verdict, "slower");
    EXPECT_EQ(mm->differs.at("devices"), (std::vector<CompareValue>{"CPU", "RPC0"}));

    const CompareRow* pf = row(r, "prefill", "MUL_MAT", "op_us");
    ASSERT_TRUE(pf);
    EXPECT_DOUBLE_EQ(*pf->ratios[0].median, 1.67);

    // The dispatch tax: RMS_NORM's call is 15x its op on B, 2x on A.
    const CompareRow* tax = row(r, "decode", "RMS_NORM", "call_per_op");
    ASSERT_TRUE(tax);
    EXPECT_DOUBLE_EQ(*tax->sides[0].median, 2.0);
    EXPECT_DOUBLE_EQ(*tax->sides[1].median, 15.0);
    EXPECT_DOUBLE_EQ(*tax->ratios[0].median, 7.5);
    EXPECT_EQ(tax->ratios[0].verdict, "higher");
    const CompareRow* same = row(r, "decode", "RMS_NORM", "op_us");
    ASSERT_TRUE(same);
    EXPECT_EQ(same->ratios[0].verdict, "no difference");

    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "B");
    EXPECT_EQ(r.unmatched[0].test, "decode GET_ROWS");
}

TEST(CompareOps, SpreadSamplesGiveTheBootstrapInterval) {
    // Op records of one type with different times: the CI is compare's ratio-of-medians
    // bootstrap over the records, with its seed.
    const ResultDocument a = ops_doc("CPU", {{"decode",
                                              {{"MUL_MAT", 1, 100, 200},
                                               {"MUL_MAT", 1, 120, 220},
                                               {"MUL_MAT", 1, 90, 190},
                                               {"MUL_MAT", 1, 110, 210}}}});
    const ResultDocument b = ops_doc("BLAS", {{"decode",
                                               {{"MUL_MAT", 1, 60, 150},
                                                {"MUL_MAT", 1, 70, 160},
                                                {"MUL_MAT", 1, 50, 140},
                                                {"MUL_MAT", 1, 65, 155}}}});
    CompareOptions o;
    o.resamples = 3000;
    o.seed = 7;
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, o);
    const CompareRow* mm = row(r, "decode", "MUL_MAT", "op_us");
    ASSERT_TRUE(mm);
    const std::vector<double> va{100, 120, 90, 110}, vb{60, 70, 50, 65};
    const RatioCi want = ratio_of_medians(vb, va, 3000, 7);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, want.ratio);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 62.5 / 105.0);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_low, want.lo);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_high, want.hi);
    EXPECT_EQ(mm->ratios[0].verdict, want.no_difference ? "no difference" : "faster");
}

TEST(CompareOps, ImportedLogWithoutCallTimesHasOnlyOpRows) {
    const ResultDocument a =
        ops_doc("HTP0", {{"decode", {{"MUL_MAT", 2, 100, std::nullopt}}}}, "hexagon-profile");
    const ResultDocument b =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", 2, 150, 160}}}, {"prefill", {}}});
    const CompareResult r = compare_documents({{"NPU", "n", a}, {"CPU", "c", b}});
    ASSERT_EQ(r.rows.size(), 1u);
    EXPECT_EQ(r.rows[0].metric, "op_us");
    EXPECT_DOUBLE_EQ(*r.rows[0].ratios[0].median, 1.5);
    EXPECT_EQ(r.rows[0].differs.at("source"),
              (std::vector<CompareValue>{"hexagon-profile", "trace"}));
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].test, "prefill (stage)");
}

TEST(CompareOps, MixingOpsAndRunDocumentsIsBadInput) {
    const ResultDocument a = ops_doc("CPU", {{"decode", {{"MUL_MAT", 2, 100, 110}}}});
    ResultDocument run;
    run.command = "run";
    try {
        compare_documents({{"A", "a.json", a}, {"B", "r.json", run}});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("B (r.json): not an ops document"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sb
