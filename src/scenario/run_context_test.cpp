// The run context on the run's clock: the rate limit of progress saves of --out, and the
// sampler's samples, stage marks and idle baseline.
#include "scenario/run_context.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "core/document.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

using sb::test::kMs;

// A progress save waits until ten times the last one's cost has passed since it ended, both
// read on the run's clock: here every reading moves it on by 1 ms, so a save costs 1 ms.
TEST(RunContextSave, AProgressSaveWaitsTenTimesTheLastCostOnTheRunsClock) {
    test::TempDir dir;
    int64_t now = 1'000 * kMs;
    RunSetup setup;
    setup.clock = [&] { return now += kMs; };
    setup.telemetry.mode = TelemetryMode::off;
    setup.progress = false;
    setup.out_path = dir.file("r.json");
    ResultDocument doc;
    std::ostringstream err;
    RunContext run(doc, setup, err, nullptr);
    run.open(1);
    auto saved = [&] { return load_result_document(*setup.out_path).command; };
    doc.command = "first";
    run.save();  // the first progress save: written, in 1 ms
    EXPECT_EQ(saved(), "first");
    doc.command = "second";
    run.save();  // 1 ms after the last ended: held back
    EXPECT_EQ(saved(), "first");
    now += 8 * kMs;
    doc.command = "third";
    run.save();  // 10 ms after: written
    EXPECT_EQ(saved(), "third");
    doc.command = "final";
    run.save(DocumentSave::final);  // the final save always writes
    EXPECT_EQ(saved(), "final");
}

// The sampler stamps on the run's clock, so that its samples and stage windows share the axis of
// the tests' own times (a sustained phase's start, a traced pass's window), and its idle
// baseline lasts --idle on that clock, waited with the run's pause. The clock is atomic: the
// sampler's thread reads it while the idle baseline is measured.
TEST(RunContextTelemetry, TheSamplerIsOnTheRunsClockAndWaitsWithItsPause) {
    std::atomic<int64_t> now{1'000 * kMs};
    int64_t paused = 0;
    RunSetup setup;
    setup.clock = [&] { return now.load(); };
    setup.pause = [&](int64_t ns) {
        paused += ns;
        now += ns;
    };
    setup.telemetry.mode = TelemetryMode::on;
    setup.telemetry.sysfs_root =
        std::string(SB_SOURCE_DIR) + "/tests/fixtures/telemetry/x86-laptop-rapl/sys";
    setup.telemetry.idle_s = 2;
    setup.progress = false;
    ResultDocument doc;
    std::ostringstream err;
    RunContext run(doc, setup, err, nullptr);
    run.open(1);
    ASSERT_NE(run.sampler(), nullptr);
    run.start();
    EXPECT_EQ(paused, 2'000 * kMs);
    run.sampler()->stop();  // no reading of the clock from the sampler's thread from here

    now = 5'000 * kMs;
    run.sampler()->sample_now();
    TestConfig c;
    SweepHooks hooks = run.begin_test(c);
    hooks.stage_marker("decode", true, std::nullopt);
    now += 250 * kMs;
    hooks.stage_marker("decode", false, 16);

    const TelemetrySection rec = run.sampler()->record();
    ASSERT_TRUE(rec.series);
    size_t at_sample_now = 0;
    for (const auto& s : *rec.series)
        for (int64_t t : s.t_ns) {
            EXPECT_GE(t, 1'000 * kMs) << s.metric;
            EXPECT_LE(t, 5'250 * kMs) << s.metric;
            at_sample_now += t == 5'000 * kMs;
        }
    EXPECT_GT(at_sample_now, 0u);
    ASSERT_TRUE(rec.idle);
    EXPECT_EQ(rec.idle->duration_ns, 2'000 * kMs);
    const auto decode = run.sampler()->stage_summary("test0/decode");
    ASSERT_TRUE(decode);
    EXPECT_EQ(decode->begin_ns, 5'000 * kMs);
    EXPECT_EQ(decode->end_ns, 5'250 * kMs);
}

}  // namespace
}  // namespace sb
