#include "scenario/background_load.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"

using namespace sb;

TEST(BackgroundSpec, ParsesCpuDutyAndMemory) {
    auto s = parse_background("cpu:2@50%,mem:1");
    EXPECT_EQ(s.cpu_threads, 2);
    EXPECT_DOUBLE_EQ(s.cpu_duty, 0.5);
    EXPECT_EQ(s.mem_threads, 1);
    auto c = parse_background("cpu:3");
    EXPECT_EQ(c.cpu_threads, 3);
    EXPECT_DOUBLE_EQ(c.cpu_duty, 1.0);
}

TEST(BackgroundSpec, RejectsMalformedSpecs) {
    for (const char* bad : {"", "gpu:1", "cpu:", "cpu:x", "cpu:2@0%", "cpu:2@150%", "mem:0",
                            "cpu:2@half", "cpu:0x2", "cpu: 2", "cpu:2@0x32%", "cpu:2@nan%"})
        EXPECT_THROW(parse_background(bad), Error) << bad;
}

TEST(BackgroundLoad, RunsUntilStopped) {
    BackgroundLoad load(parse_background("cpu:1@50%,mem:1"), now_ns, sleep_ns);
    load.start();
    // Wait for both kinds of work to show (bounded: the machine may be busy).
    for (int i = 0; i < 500 && (load.cpu_periods() < 5 || load.mem_bytes() == 0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    load.stop();
    // What the wait above waited for (it gives up after 5 s on a starved machine).
    EXPECT_GE(load.cpu_periods(), 5u);
    EXPECT_GT(load.mem_bytes(), 0u);
    const auto periods = load.cpu_periods();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(load.cpu_periods(), periods);
}

namespace {

// A clock the load's threads share: every reading moves it on by 1 us (the time a reading
// takes), every pause by the time asked for, which it records.
struct SharedFakeClock {
    std::atomic<int64_t> now{1'000'000'000};
    std::atomic<int64_t> readings{0};
    std::mutex mu;
    std::vector<int64_t> pauses;
    Clock clock() {
        return [this] {
            ++readings;
            return now.fetch_add(1'000);
        };
    }
    Pause pause() {
        return [this](int64_t ns) {
            std::lock_guard lk(mu);
            pauses.push_back(ns);
            now += std::max<int64_t>(ns, 0);
        };
    }
    size_t n_pauses() {
        std::lock_guard lk(mu);
        return pauses.size();
    }
};

// Runs a one-thread CPU load at duty on the fake clock until it paused n times; the pauses.
std::vector<int64_t> pauses_at(const std::string& spec, size_t n) {
    SharedFakeClock c;
    BackgroundLoad load(parse_background(spec), c.clock(), c.pause());
    load.start();
    // Bounded: the machine may be busy (5 s of real time at most).
    for (int i = 0; i < 5000 && c.n_pauses() < n; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    load.stop();
    std::lock_guard lk(c.mu);
    EXPECT_GE(c.pauses.size(), n) << spec;
    EXPECT_GE(load.cpu_periods(), c.pauses.size());
    return c.pauses;
}

}  // namespace

// The duty cycle on the given clock: a spinner is busy for P % of a 10 ms period on that clock,
// then pauses until the period's end: 10 ms - busy less the 1 us of the reading after it.
TEST(BackgroundLoad, KeepsItsDutyCycleOnTheGivenClock) {
    for (const int64_t p : pauses_at("cpu:1@50%", 5))
        EXPECT_EQ(p, 5'000'000 - 1'000);
    for (const int64_t p : pauses_at("cpu:1@25%", 5))
        EXPECT_EQ(p, 7'500'000 - 1'000);
}

// Busy all the time (100 %): it never pauses.
TEST(BackgroundLoad, AFullDutyNeverPauses) {
    SharedFakeClock c;
    BackgroundLoad load(parse_background("cpu:1"), c.clock(), c.pause());
    load.start();
    for (int i = 0; i < 5000 && load.cpu_periods() < 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    load.stop();
    EXPECT_GE(load.cpu_periods(), 3u);
    EXPECT_EQ(c.n_pauses(), 0u);
}

// A clock that stands still keeps a spinner busy; stop() still ends it, without a pause.
TEST(BackgroundLoad, StopEndsABusyPartThatNeverEnds) {
    std::atomic<int64_t> readings{0};
    BackgroundLoad load(
        parse_background("cpu:1@50%"),
        [&] {
            ++readings;
            return int64_t{1'000'000'000};
        },
        [](int64_t) { ADD_FAILURE() << "paused"; });
    load.start();
    for (int i = 0; i < 5000 && readings < 100; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    load.stop();
    EXPECT_GE(readings.load(), 100);
    EXPECT_EQ(load.cpu_periods(), 0u);  // the period it cut short is not counted
}
