#pragma once
// The one monotonic clock shared by engines, scenarios and telemetry samplers, so that stage
// markers and sensor samples are on the same time axis. Values are nanoseconds since an
// arbitrary epoch (CLOCK_MONOTONIC); only differences are meaningful.
#include <cstdint>
#include <ctime>

namespace sb {

inline int64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace sb
