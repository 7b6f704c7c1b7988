#include "scenario/progress.hpp"
#include "scenario/test_util.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sb {
namespace {

using sb::test::kS;

struct FakeClock {
    int64_t now = 0;
    std::function<int64_t()> fn() {
        return [this] { return now; };
    }
};

TEST(Progress, PlainLinesOnlyWhenATestOrRepetitionChanges) {
    std::ostringstream err;
    FakeClock clock;
    Progress p(err, true, false, clock.fn());
    p.step("CPU", {"pp16+tg8", 0, 5, "loading the model"});
    p.step("CPU", {"pp16+tg8", 0, 5, "warmup"});
    p.step("CPU", {"pp16+tg8", 1, 5, "prefill"});
    p.step("CPU", {"pp16+tg8", 1, 5, "decode"});
    p.step("CPU", {"pp16+tg8", 2, 5, "prefill"});
    p.note("test pp16+tg8 on CPU failed: boom");
    EXPECT_EQ(err.str(),
              "stagebench: pp16+tg8 on CPU: loading the model\n"
              "stagebench: pp16+tg8 on CPU: repetition 1/5\n"
              "stagebench: pp16+tg8 on CPU: repetition 2/5\n"
              "stagebench: test pp16+tg8 on CPU failed: boom\n");
}

TEST(Progress, SustainedCountsRounds) {
    std::ostringstream err;
    FakeClock clock;
    Progress p(err, true, false, clock.fn());
    p.step("CPU", {"sustained baseline", 1, 4, "", "round"});
    p.step("CPU", {"sustained baseline", 1, 4, "prefill", "round"});
    p.step("CPU", {"sustained loaded", 1, 4, "", "round"});
    EXPECT_EQ(err.str(),
              "stagebench: sustained baseline on CPU: round 1/4\n"
              "stagebench: sustained loaded on CPU: round 1/4\n");
}

TEST(Progress, QuietPrintsNothing) {
    std::ostringstream err;
    FakeClock clock;
    {
        Progress p(err, false, true, clock.fn());
        p.set_total(4);
        p.step("CPU", {"pp16", 1, 2, "prefill"});
        p.advance();
        p.note("hello");
        p.done("CPU");
    }
    EXPECT_EQ(err.str(), "");
}

TEST(Progress, OnATerminalOneLinePerDeviceRewrittenInPlace) {
    std::ostringstream err;
    FakeClock clock;
    Progress p(err, true, true, clock.fn());
    p.step("CPU", {"pp16", 1, 2, "prefill"});
    EXPECT_EQ(err.str(), "stagebench: pp16 on CPU: repetition 1/2, prefill");
    err.str("");
    p.step("RPC0", {"pp16", 1, 2, "decode"});
    // Back to the start of the one line drawn, clear, and both lines in device order.
    EXPECT_EQ(err.str(),
              "\r\x1b[J"
              "stagebench: pp16 on CPU: repetition 1/2, prefill\n"
              "stagebench: pp16 on RPC0: repetition 1/2, decode");
    err.str("");
    p.note("measured");
    // Up one line to the first status line, clear, the note, the status lines again.
    EXPECT_EQ(err.str(),
              "\x1b[1A\r\x1b[J"
              "stagebench: measured\n"
              "stagebench: pp16 on CPU: repetition 1/2, prefill\n"
              "stagebench: pp16 on RPC0: repetition 1/2, decode");
    err.str("");
    p.done("CPU");
    EXPECT_EQ(err.str(), "\x1b[1A\r\x1b[Jstagebench: pp16 on RPC0: repetition 1/2, decode");
}

TEST(Progress, TheEstimateIsElapsedTimesWorkLeftOverWorkDone) {
    std::ostringstream err;
    FakeClock clock;
    Progress p(err, true, true, clock.fn());
    EXPECT_EQ(p.eta_s(), std::nullopt);  // no total
    p.set_total(10);
    EXPECT_EQ(p.eta_s(), std::nullopt);  // nothing done yet
    clock.now = 20 * kS;
    p.advance(4);  // 4 of 10 in 20 s: 6 more take 30 s
    EXPECT_DOUBLE_EQ(*p.eta_s(), 30.0);
    err.str("");
    p.step("CPU", {"tg128", 5, 10, "decode"});
    EXPECT_EQ(err.str(), "stagebench: tg128 on CPU: repetition 5/10, decode (about 30 s left)");
    clock.now = 200 * kS;
    p.advance(6);
    EXPECT_DOUBLE_EQ(*p.eta_s(), 0.0);
}

TEST(Progress, DurationsReadLikeAPersonWouldSayThem) {
    EXPECT_EQ(format_duration_s(0.4), "0 s");
    EXPECT_EQ(format_duration_s(42), "42 s");
    EXPECT_EQ(format_duration_s(185), "3 min 5 s");
    EXPECT_EQ(format_duration_s(4320), "1 h 12 min");
    EXPECT_EQ(format_duration_s(-1), "?");
}

}  // namespace
}  // namespace sb
