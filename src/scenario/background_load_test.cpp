#include "scenario/background_load.hpp"

#include <gtest/gtest.h>

#include <chrono>

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
    BackgroundLoad load(parse_background("cpu:1@50%,mem:1"));
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
