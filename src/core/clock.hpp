#pragma once
// The one monotonic clock shared by engines, scenarios and telemetry samplers, so that stage
// markers and sensor samples are on the same time axis. Values are nanoseconds since an
// arbitrary epoch (CLOCK_MONOTONIC); only differences are meaningful.
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <functional>

namespace sb {

inline int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// A clock a measurement reads, in nanoseconds on one time axis: now_ns for real engines and
// runs, a simulated one in tests (engine/fake_engine.hpp's FakeTimeline), so a loop that reads
// only its injected clock is exact in tests.
using Clock = std::function<int64_t()>;

// Lets at least ns pass on that clock (a sleep; none for ns <= 0).
inline void sleep_ns(int64_t ns) {
    if (ns <= 0)
        return;
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}

}  // namespace sb
