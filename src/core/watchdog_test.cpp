#include "core/watchdog.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "core/interrupt.hpp"

namespace sb {
namespace {

constexpr int64_t kS = 1'000'000'000;

// Marks a stage the way StageGuard does, without the global mark and thread.
void begin(StageMark& m, const char* name, double factor = 1) {
    m.factor.store(factor);
    m.generation.fetch_add(1);
    m.name.store(name);
}
void end(StageMark& m) {
    m.name.store(nullptr);
    m.generation.fetch_add(1);
}

TEST(StageDeadlines, AStageOverItsBudgetEndsTheRunAndNothingElseDoes) {
    StageDeadlines d(10);  // --stage-timeout 10
    StageMark m;
    EXPECT_EQ(d.poll(m, 0, 0), std::nullopt);  // nothing runs
    begin(m, "decode");
    EXPECT_EQ(d.poll(m, 1 * kS, 0), std::nullopt);   // first seen at 1 s
    EXPECT_EQ(d.poll(m, 11 * kS, 0), std::nullopt);  // exactly at the budget: still fine
    auto why = d.poll(m, 11 * kS + 1, 0);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "decode did not finish within 10 s (--stage-timeout; it ran 10 s)");
}

TEST(StageDeadlines, TheBudgetGrowsToTenTimesTheLongestStageOfTheSameName) {
    StageDeadlines d(10);
    StageMark m;
    begin(m, "prefill");
    d.poll(m, 0, 0);
    end(m);
    d.poll(m, 3 * kS, 0);  // a prefill of 3 s: prefill budget 30 s, decode stays 10 s
    EXPECT_EQ(d.longest_ns().at("prefill"), 3 * kS);
    EXPECT_EQ(d.budget_ns("prefill", 1), 30 * kS);
    EXPECT_EQ(d.budget_ns("decode", 1), 10 * kS);
    EXPECT_EQ(d.budget_ns("load", 10), 100 * kS);  // the factor multiplies
    begin(m, "prefill");
    d.poll(m, 100 * kS, 0);
    EXPECT_EQ(d.poll(m, 125 * kS, 0), std::nullopt);
    EXPECT_TRUE(d.poll(m, 131 * kS, 0));
}

TEST(StageDeadlines, ANewStageUnderTheSameNameStartsItsOwnClock) {
    StageDeadlines d(10);
    StageMark m;
    begin(m, "decode");
    d.poll(m, 0, 0);
    // Many short decode steps, each a new guard, between two polls: never one long stage.
    for (int step = 1; step <= 30; ++step) {
        end(m);
        begin(m, "decode");
        EXPECT_EQ(d.poll(m, step * kS, 0), std::nullopt) << step;
    }
}

TEST(StageDeadlines, CtrlCEndsAStageThatDoesNotEndWithinTheGrace) {
    StageDeadlines d(1000);
    StageMark m;
    begin(m, "prefill");
    d.poll(m, 0, 0);
    EXPECT_EQ(d.poll(m, 2 * kS, 1), std::nullopt);  // Ctrl-C seen at 2 s
    EXPECT_EQ(d.poll(m, 6 * kS, 1), std::nullopt);
    auto why = d.poll(m, 7 * kS, 1);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "interrupted (Ctrl-C) while prefill ran, and it did not end within 5 s");
    // A stage that ends in time is left to the loop, which stops after it.
    StageDeadlines d2(1000);
    StageMark m2;
    begin(m2, "prefill");
    d2.poll(m2, 0, 1);
    end(m2);
    EXPECT_EQ(d2.poll(m2, 10 * kS, 1), std::nullopt);
}

TEST(StageDeadlines, ASecondCtrlCEndsTheRunAtOnce) {
    StageDeadlines d(1000);
    StageMark m;
    begin(m, "decode");
    d.poll(m, 0, 1);
    auto why = d.poll(m, 1, 2);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "interrupted twice (Ctrl-C) while decode ran");
}

// The real thread: a guard that outlives a short --stage-timeout makes the watchdog call the
// overrun action once, from its own thread, with the line that says why.
TEST(StageGuard, TheWatchdogCallsTheOverrunActionForAStageThatHangs) {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<std::string> got;
    set_overrun_action([&](const Overrun& o) {
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_FALSE(o.setup);
        got = o.why;
        cv.notify_all();
    });
    set_stage_timeout(0.3);
    {
        StageGuard guard("rpc wait");
        std::unique_lock<std::mutex> lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return got.has_value(); }));
    }
    EXPECT_EQ(got->rfind("rpc wait did not finish within 0.3 s", 0), 0u) << *got;
    set_overrun_action(nullptr);
}

// A setup step has its own fixed budget, whatever --stage-timeout says, and its overrun says so
// (main makes it bad input). A measured stage nested inside it is not a setup step.
TEST(StageGuard, ASetupStepHasAFixedBudgetAndItsOverrunIsMarked) {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Overrun> got;
    set_overrun_action([&](const Overrun& o) {
        std::lock_guard<std::mutex> lock(mu);
        got = o;
        cv.notify_all();
    });
    set_stage_timeout(1000);
    {
        StageGuard guard("connecting to the RPC server", SetupBudget{0.3});
        std::unique_lock<std::mutex> lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return got.has_value(); }));
    }
    EXPECT_TRUE(got->setup);
    EXPECT_EQ(got->why,
              "connecting to the RPC server did not finish within 0.3 s: the device stopped "
              "answering");
    set_overrun_action(nullptr);
    set_stage_timeout(kDefaultStageTimeoutS);
}

}  // namespace
}  // namespace sb
