// The one loop's core on a scripted clock: which repetitions are due, and their exact times.
#include "core/repetitions.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace sb {
namespace {

// A clock that a repetition moves on by the next of its scripted durations.
struct ScriptedClock {
    std::vector<int64_t> durations;
    std::size_t next = 0;
    int64_t now = 1'000'000'000;
    int reads = 0;
    Clock clock() {
        return [this] {
            ++reads;
            return now;
        };
    }
    bool once() {
        now += durations.at(next++);
        return true;
    }
};

TEST(Repetitions, AFixedCountIsTheMinimumWithoutARule) {
    ScriptedClock c{{5, 7, 6, 9}};
    Repetitions reps(RepeatRule{3, 10, 0, std::nullopt, {}}, c.clock());
    while (reps.has_repeats_remaining())
        reps.time([&] { return c.once(); });
    EXPECT_EQ(reps.samples_ns(), (std::vector<int64_t>{5, 7, 6}));
    EXPECT_EQ(reps.spent_ns(), 18);
    EXPECT_EQ(reps.min_ns(), 5);
    EXPECT_EQ(c.reads, 6) << "the clock read just before and after each repetition";
}

// The rule is asked only between the minimums (count and time spent) and max_reps; the time
// bound ends it once the minimums are met.
TEST(Repetitions, TheRuleDecidesBetweenTheMinimumsAndTheBounds) {
    const auto settled = [](const std::vector<int64_t>& s) {
        return std::count(s.begin(), s.end(), 10) >= 2;
    };
    ScriptedClock a{{30, 10, 20, 10, 10, 10}};
    Repetitions until(RepeatRule{2, 10, 0, std::nullopt, settled}, a.clock());
    while (until.has_repeats_remaining())
        until.time([&] { return a.once(); });
    EXPECT_EQ(until.samples_ns(), (std::vector<int64_t>{30, 10, 20, 10}));

    ScriptedClock b{{10, 10, 10, 10, 10, 10}};
    Repetitions spend(RepeatRule{1, 10, 35, std::nullopt, settled}, b.clock());
    while (spend.has_repeats_remaining())
        spend.time([&] { return b.once(); });
    EXPECT_EQ(spend.reps(), 4) << "35 ns spent at least before the rule is asked";

    ScriptedClock d{{50, 60, 70, 80}};
    Repetitions bounded(RepeatRule{2, 10, 0, 100, settled}, d.clock());
    while (bounded.has_repeats_remaining())
        bounded.time([&] { return d.once(); });
    EXPECT_EQ(bounded.samples_ns(), (std::vector<int64_t>{50, 60})) << "110 ns >= 100";

    ScriptedClock e{{50, 60, 70, 80}};
    Repetitions capped(RepeatRule{1, 3, 0, std::nullopt, settled}, e.clock());
    while (capped.has_repeats_remaining())
        capped.time([&] { return e.once(); });
    EXPECT_EQ(capped.reps(), 3) << "max_reps";
}

TEST(Repetitions, AFailedRepetitionKeepsNothingAndStops) {
    ScriptedClock c{{5, 7}};
    Repetitions reps(RepeatRule{3, 10, 0, std::nullopt, {}}, c.clock());
    EXPECT_TRUE(reps.time([&] { return c.once(); }));
    EXPECT_FALSE(reps.time([&] {
        c.once();
        return false;
    }));
    EXPECT_EQ(reps.samples_ns(), (std::vector<int64_t>{5}));
    EXPECT_FALSE(reps.has_repeats_remaining());
    Repetitions other(RepeatRule{1, 5, 0, std::nullopt, {}});
    other.add(42);
    other.stop();
    EXPECT_FALSE(other.has_repeats_remaining());
    EXPECT_EQ(other.spent_ns(), 42);
}

}  // namespace
}  // namespace sb
