#pragma once
// The one monotonic clock shared by engines, scenarios and telemetry samplers, so that stage
// markers and sensor samples are on the same time axis. Values are nanoseconds since an
// arbitrary epoch (CLOCK_MONOTONIC); only differences are meaningful.
// Code that reads or waits on time takes a Clock and a Pause (the run's: scenario/run_context.hpp
// RunEnv), so that tests drive it on a simulated timeline; sb::now_ns and sb::sleep_ns are the
// real ones.
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <functional>

namespace sb {

// A clock: nanoseconds on its time axis (sb::now_ns, or a simulated one in tests:
// engine/fake_engine.hpp's FakeTimeline), so a loop that reads only its injected clock is exact
// in tests.
using Clock = std::function<int64_t()>;
// How time passes on a clock while one waits: at least ns nanoseconds (sb::sleep_ns, or a
// simulated timeline moved on by ns in tests). None for ns <= 0.
using Pause = std::function<void(int64_t ns)>;

inline int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Lets at least ns pass on that clock (a sleep; none for ns <= 0).
inline void sleep_ns(int64_t ns) {
    if (ns <= 0)
        return;
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}

// The wall clock (CLOCK_REALTIME): nanoseconds since the Unix epoch. Only for placing what
// others stamped with it (a sensor log's lines) on the monotonic axis; it jumps when the
// system time is set, so nothing is timed with it.
inline int64_t wall_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace sb
