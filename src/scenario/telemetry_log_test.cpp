// The telemetry log's waits (its first line at the start, a line past a test's end at sync) on
// the clocks it is given: a simulated run clock and a wall clock at a fixed offset from it, so
// that every wait ends at its deadline, or when the log grows, exactly, without real waiting.
#include "scenario/telemetry_log.hpp"
#include "scenario/test_util.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "temp_dir.hpp"

using namespace sb;

namespace {

using sb::test::kS;
// The wall clock at the run clock's 0: 2026-01-15 12:00:00 UTC, far from a change of daylight
// saving time in any zone.
constexpr int64_t kWallAtZero = 1'768'478'400 * kS;

// A tegrastats line (Orin, R36) stamped with the local time of unix_ns, as tegrastats prints it.
std::string line_at(int64_t unix_ns) {
    const std::time_t t = static_cast<std::time_t>(unix_ns / kS);
    std::tm tm{};
    localtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%m-%d-%Y %H:%M:%S", &tm);
    return std::string(stamp) +
           " RAM 2448/15656MB (lfb 15008x4MB) SWAP 0/7828MB (cached 0MB) CPU "
           "[0%@729,0%@729,1%@729,0%@729,off,off,off,off] EMC_FREQ 0%@2133 GR3D_FREQ 0%@305 "
           "VIC_FREQ 729 APE 174 CPU@46.5C GPU@41.25C tj@46.5C VDD_IN 4046mW/4046mW "
           "VDD_CPU_GPU_CV 402mW/402mW VDD_SOC 1207mW/1207mW\n";
}

// The run's clock (a simulated timeline), its pause and the wall clock beside it. A pause may
// append lines to the log once the timeline reaches a time (a tegrastats writing meanwhile).
struct Timeline {
    int64_t now = 100 * kS;
    std::string path;
    int64_t append_at = -1;  // run clock; -1: nothing to append
    std::string append;
    int pauses = 0;

    LogClocks clocks() {
        return {[this] { return now; },
                [this](int64_t ns) {
                    ++pauses;
                    now += std::max<int64_t>(0, ns);
                    if (append_at >= 0 && now >= append_at) {
                        std::ofstream(path, std::ios::app) << append;
                        append_at = -1;
                    }
                },
                [this] { return now + kWallAtZero; }};
    }
};

TelemetryLogChoice choice_of(const std::string& path) {
    TelemetryLogChoice c;
    c.kind = "tegrastats";
    c.path = path;
    c.interval_ns = kS;  // given: the deadline of the wait at sync is 2 intervals and 1 s
    return c;
}

// Lines stamped at the run clock's seconds [from, to).
std::string lines(int from_s, int to_s) {
    std::string out;
    for (int s = from_s; s < to_s; ++s)
        out += line_at(kWallAtZero + s * kS);
    return out;
}

}  // namespace

TEST(TelemetryLogFeed, ALogWithoutLinesFailsAtTheFirstLinesDeadlineOnTheRunsClock) {
    sbtest::TempDir dir;
    Timeline tl;
    tl.path = dir.file("tegrastats.log");
    std::ofstream(tl.path) << "";
    const int64_t start = tl.now;
    try {
        TelemetryLogFeed feed(choice_of(tl.path), tl.clocks(), 5 * kS);
        FAIL() << "a log without lines was taken";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_EQ(std::string(e.what()),
                  "--telemetry-log: no tegrastats line in " + tl.path +
                      " within 5 s of the start (start `tegrastats --interval MS --logfile " +
                      tl.path + "` before the run)");
    }
    // Read every 100 ms until exactly the deadline.
    EXPECT_EQ(tl.now, start + 5 * kS);
    EXPECT_EQ(tl.pauses, 50);
}

TEST(TelemetryLogFeed, TheFirstLinesWaitEndsWhenTheLogHasOne) {
    sbtest::TempDir dir;
    Timeline tl;
    tl.path = dir.file("tegrastats.log");
    std::ofstream(tl.path) << "";
    const int64_t start = tl.now;
    tl.append_at = start + 1'300'000'000;
    tl.append = lines(99, 101);
    TelemetryLogFeed feed(choice_of(tl.path), tl.clocks(), 5 * kS);
    EXPECT_EQ(tl.now, start + 1'300'000'000);
    EXPECT_EQ(tl.pauses, 13);
}

TEST(TelemetryLogFeed, SyncWaitsForALinePastTheTestUntilItsDeadline) {
    sbtest::TempDir dir;
    Timeline tl;
    tl.path = dir.file("tegrastats.log");
    std::ofstream(tl.path) << lines(95, 100);  // the run clock's 95 s to 99 s
    TelemetryLogFeed feed(choice_of(tl.path), tl.clocks());
    EXPECT_EQ(tl.pauses, 0);
    Discovery d;
    d.sources.push_back(feed.take_source());
    SamplerOptions so;
    so.clock = [&tl] { return tl.now; };
    Sampler tel(std::move(d), so);

    // A line at or after 100.5 s never comes: the wait ends at 2 intervals and 1 s.
    tl.now = 100 * kS;
    feed.sync(tel, 100 * kS + 500'000'000);
    EXPECT_EQ(tl.now, 103 * kS);
    EXPECT_EQ(tl.pauses, 60);  // every 50 ms
    const auto rec = tel.record();
    // Every row as read, on the run's clock: the wall clock's offset from it as given.
    EXPECT_EQ(rec.sources.at(0).properties.at("wall_minus_monotonic_ns"),
              std::to_string(kWallAtZero));
    EXPECT_EQ(rec.sources.at(0).properties.at("rows"), "5");

    // A moment the log has passed: no wait.
    tl.pauses = 0;
    feed.sync(tel, 96 * kS);
    EXPECT_EQ(tl.now, 103 * kS);
    EXPECT_EQ(tl.pauses, 0);
    // Without a moment to wait for: none either.
    feed.sync(tel, std::nullopt);
    EXPECT_EQ(tl.pauses, 0);
}

TEST(TelemetryLogFeed, SyncsWaitEndsWhenTheLogPassesTheMoment) {
    sbtest::TempDir dir;
    Timeline tl;
    tl.path = dir.file("tegrastats.log");
    std::ofstream(tl.path) << lines(95, 100);
    TelemetryLogFeed feed(choice_of(tl.path), tl.clocks());
    Discovery d;
    d.sources.push_back(feed.take_source());
    SamplerOptions so;
    so.clock = [&tl] { return tl.now; };
    Sampler tel(std::move(d), so);

    // tegrastats writes the lines of 100 s and 101 s at 101.2 s; the wait for a line at or
    // after 100.5 s ends with the read after it.
    tl.now = 100 * kS;
    tl.append_at = 101 * kS + 200'000'000;
    tl.append = lines(100, 102);
    feed.sync(tel, 100 * kS + 500'000'000);
    EXPECT_EQ(tl.now, 101 * kS + 200'000'000);
    EXPECT_EQ(tl.pauses, 24);
    EXPECT_EQ(tel.record().sources.at(0).properties.at("rows"), "7");
}

// The wall clock's offset from the run's is read as (run's clock, wall, run's clock), five
// times: here each triple takes a scripted time, the wall read a scripted lag after its first
// reading. The closest pair (1 ms and 1 ns apart, the wall read at its start) gives the offset,
// its midpoint 500 us off the true offset, and the document says it may be off by half that gap.
TEST(TelemetryLogFeed, TheClockOffsetComesFromTheClosestReadingsAndSaysHowFarItCanBeOff) {
    sbtest::TempDir dir;
    const std::string path = dir.file("tegrastats.log");
    std::ofstream(path) << lines(95, 100);
    // {the wall read's lag after the first reading, the second reading's}, per triple.
    const std::vector<std::pair<int64_t, int64_t>> triples = {{4'000'000, 8'000'000},
                                                              {1'000'000, 3'000'000},
                                                              {0, 1'000'001},
                                                              {1'000'000, 2'000'000},
                                                              {3'000'000, 5'000'000}};
    int64_t now = 100 * kS;
    std::size_t triple = 0;
    bool first_read_done = false;
    LogClocks clocks{[&]() -> int64_t {
                         if (triple >= triples.size())
                             return now;
                         if (!first_read_done) {
                             first_read_done = true;
                             return now;
                         }
                         first_read_done = false;
                         const int64_t second = now + triples[triple++].second;
                         now = second + 10'000'000;  // the next triple starts later
                         return second;
                     },
                     [&](int64_t ns) { now += std::max<int64_t>(0, ns); },
                     [&] { return now + triples.at(triple).first + kWallAtZero; }};
    TelemetryLogFeed feed(choice_of(path), clocks);
    EXPECT_EQ(triple, 5u);
    Discovery d;
    d.sources.push_back(feed.take_source());
    SamplerOptions so;
    so.clock = [&now] { return now; };
    Sampler tel(std::move(d), so);
    feed.sync(tel, std::nullopt);
    const auto rec = tel.record();
    const auto& props = rec.sources.at(0).properties;
    EXPECT_EQ(props.at("wall_minus_monotonic_ns"), std::to_string(kWallAtZero - 500'000));
    EXPECT_EQ(props.at("wall_minus_monotonic_uncertainty_ns"), "500001");
}
