// The arithmetic of the pipeline modes on scripted stage times: medians, the parts as the
// differences between consecutive modes, their shares, and what a missing mode leaves.
#include "analysis/mode_parts.hpp"

#include <gtest/gtest.h>

#include "core/stats_difference.hpp"

namespace sb {
namespace {

Mode mode_with(const std::string& name, const std::vector<double>& prefill,
               const std::vector<double>& decode) {
    Mode m;
    m.name = name;
    for (size_t i = 0; i < prefill.size(); ++i) {
        ModeRun r;
        r.round = static_cast<int>(i);
        r.stage_ns["prefill"] = prefill[i];
        if (i < decode.size())
            r.stage_ns["decode"] = decode[i];
        m.runs.push_back(r);
    }
    return m;
}

TEST(ModeParts, ConsecutiveDifferencesAddUpToTheLastMode) {
    ModesSection s;
    s.stages = {"prefill", "decode"};
    s.modes = {mode_with("queue", {110, 90, 100}, {20, 30, 10}),
               mode_with("quant", {140, 150, 160}, {40, 50, 45}),
               mode_with("full", {420, 400, 380}, {100, 90, 95})};
    summarize_modes(s);
    ASSERT_EQ(s.modes[0].times.size(), 2u);
    EXPECT_EQ(*s.modes[0].times[0].median_ns, 100.0);
    EXPECT_EQ(*s.modes[1].times[0].median_ns, 150.0);
    EXPECT_EQ(*s.modes[2].times[0].median_ns, 400.0);
    EXPECT_EQ(*s.modes[2].times[1].median_ns, 95.0);
    EXPECT_EQ(s.modes[2].times[1].n, 3);
    ASSERT_EQ(s.parts.size(), 6u);  // 3 modes x 2 stages, stage by stage
    const ModePart& queue = s.parts[0];
    const ModePart& quant = s.parts[1];
    const ModePart& full = s.parts[2];
    EXPECT_EQ(queue.stage, "prefill");
    EXPECT_EQ(queue.name, "queue");
    EXPECT_FALSE(queue.from);
    EXPECT_EQ(*queue.ns, 100.0);
    EXPECT_EQ(*quant.from, "queue");
    EXPECT_EQ(*quant.ns, 50.0);
    EXPECT_EQ(*full.from, "quant");
    EXPECT_EQ(*full.ns, 250.0);
    EXPECT_EQ(*queue.ns + *quant.ns + *full.ns, *s.modes[2].times[0].median_ns);
    EXPECT_EQ(*queue.share, 0.25);
    EXPECT_EQ(*quant.share, 0.125);
    EXPECT_EQ(*full.share, 0.625);
    // Decode: 20, 45 - 20 = 25, 95 - 45 = 50.
    EXPECT_EQ(s.parts[3].stage, "decode");
    EXPECT_EQ(*s.parts[3].ns, 20.0);
    EXPECT_EQ(*s.parts[4].ns, 25.0);
    EXPECT_EQ(*s.parts[5].ns, 50.0);
    // Every part has a CI around it (3 runs each), the same each time (seeded).
    for (const auto& p : s.parts) {
        ASSERT_TRUE(p.ci95_lo_ns && p.ci95_hi_ns) << p.name;
        EXPECT_LE(*p.ci95_lo_ns, *p.ns) << p.name;
        EXPECT_GE(*p.ci95_hi_ns, *p.ns) << p.name;
    }
    // quant - queue in prefill: every resample of quant is within 140..160, of queue within
    // 90..110, so the difference lies within 30..70 and never crosses 0.
    EXPECT_GE(*quant.ci95_lo_ns, 30.0);
    EXPECT_LE(*quant.ci95_hi_ns, 70.0);
    EXPECT_FALSE(quant.no_difference);
    ModesSection again = s;
    summarize_modes(again);
    EXPECT_EQ(*again.parts[1].ci95_lo_ns, *quant.ci95_lo_ns);
    EXPECT_EQ(*again.parts[1].ci95_hi_ns, *quant.ci95_hi_ns);
}

TEST(ModeParts, AModeWithoutTimesLeavesItsPartsEmptyAndSaysWhy) {
    ModesSection s;
    s.stages = {"prefill"};
    Mode broken;
    broken.name = "broken";
    ModeRun failed;
    failed.error = "the child process exit 2: no CPU backend";
    broken.runs.push_back(failed);
    s.modes = {mode_with("a", {10, 12}, {}), broken, mode_with("c", {30}, {})};
    summarize_modes(s);
    EXPECT_EQ(s.modes[1].n_failed, 1);
    EXPECT_EQ(s.modes[1].times[0].n, 0);
    EXPECT_FALSE(s.modes[1].times[0].median_ns);
    ASSERT_EQ(s.parts.size(), 3u);
    EXPECT_EQ(*s.parts[0].ns, 11.0);
    EXPECT_FALSE(s.parts[1].ns);
    EXPECT_EQ(s.parts[1].note, "mode 'broken' has no prefill time");
    EXPECT_FALSE(s.parts[2].ns);
    EXPECT_EQ(s.parts[2].note, "mode 'broken' has no prefill time");
    // One run of c: a median, but no CI.
    EXPECT_EQ(*s.modes[2].times[0].median_ns, 30.0);
    EXPECT_FALSE(s.modes[2].times[0].ci95_lo_ns);
}

TEST(ModeParts, ANegativePartIsKeptAndExplained) {
    ModesSection s;
    s.stages = {"prefill"};
    s.modes = {mode_with("a", {50}, {}), mode_with("b", {40}, {})};
    summarize_modes(s);
    EXPECT_EQ(*s.parts[1].ns, -10.0);
    EXPECT_FALSE(s.parts[1].ci95_lo_ns) << "one run each: no interval";
    EXPECT_NE(s.parts[1].note.find("negative"), std::string::npos);
    EXPECT_EQ(*s.parts[1].share, -0.25);
}

TEST(DifferenceOfMedians, ExactOnConstantSamplesAndRefusesEmptyOnes) {
    const std::vector<double> a{5, 5, 5}, b{2, 2, 2};
    const DifferenceCi d = difference_of_medians(a, b);
    EXPECT_EQ(d.difference, 3.0);
    EXPECT_EQ(d.lo, 3.0);
    EXPECT_EQ(d.hi, 3.0);
    EXPECT_FALSE(d.no_difference);
    const DifferenceCi same = difference_of_medians(a, a);
    EXPECT_TRUE(same.no_difference);
    EXPECT_THROW(difference_of_medians({}, b), Error);
    EXPECT_THROW(difference_of_medians(a, b, 0), Error);
}

}  // namespace
}  // namespace sb
