// The run context's saves of --out: the rate limit of progress saves on the run's clock.
#include "scenario/run_context.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/document.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

constexpr int64_t kMs = 1'000'000;

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

}  // namespace
}  // namespace sb
