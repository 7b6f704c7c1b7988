#pragma once
// The sampler on a live clock and thread against a writer thread that changes fixture sensor
// files (header-only, not part of the library): the live tests in sampler_test.cpp assert what
// no scheduling can break, bench/sampler_accuracy.cpp measures how close it comes.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/test_util.hpp"

namespace sb::testing {

inline constexpr double kLiveRaplRangeUj = 3e6;  // the counter wraps every 0.2 s at 15 W

// What one live stage gave: the sampler's summary and record, and the writer's complete log
// (read after the writer stopped: a write can be visible in the file before it is logged).
struct LiveStage {
    std::optional<StageWindow> stage;
    TelemetrySection record;
};

// A RAPL package counter at 15 W from 1 J (unwrapped µJ in log, wrapped at kLiveRaplRangeUj in
// the file), sampled at 100 Hz; stage "decode" of 800 ms.
inline LiveStage live_rapl_stage(WriteLog& log) {
    FixtureCopy fx("x86-laptop-rapl");
    const std::string pkg = fx.path("class/powercap/intel-rapl:0/energy_uj");
    write_atomic(fx.path("class/powercap/intel-rapl:0/max_energy_range_uj"),
                 fmt::format("{:.0f}\n", kLiveRaplRangeUj));
    Discovery d;
    discover_rapl(fx.root(), d);
    Sampler s(std::move(d), {100, {}});
    Writer w(
        [&](double t) {
            const double v = 1e6 + 15e6 * t;
            const int64_t b = now_ns();
            write_atomic(pkg, fmt::format("{:.0f}\n", std::fmod(v, kLiveRaplRangeUj)));
            log.add(b, now_ns(), v);
        },
        std::chrono::microseconds(500));
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s.mark("decode", true);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    s.mark("decode", false);
    s.stop();
    w.stop();
    return {s.stage_summary("decode"), s.record()};
}

// A Jetson INA3221 VDD_IN rail at 5 V whose current ramps, I(t) = 1000 + 2000 t mA (power in mW
// in log), sampled at 100 Hz; stage "prefill" of 600 ms.
inline LiveStage live_ina3221_stage(WriteLog& log) {
    FixtureCopy fx("jetson-ina3221");
    const std::string curr = fx.path("class/hwmon/hwmon1/curr1_input");
    write_atomic(fx.path("class/hwmon/hwmon1/in1_input"), "5000\n");
    Discovery d;
    discover_hwmon(fx.root(), d);
    Sampler s(std::move(d), {100, {}});
    Writer w(
        [&](double t) {
            const double ma = std::round(1000 + 2000 * t);
            const int64_t b = now_ns();
            write_atomic(curr, fmt::format("{:.0f}\n", ma));
            log.add(b, now_ns(), ma * 5.0);
        },
        std::chrono::microseconds(500));
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s.mark("prefill", true);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    s.mark("prefill", false);
    s.stop();
    w.stop();
    return {s.stage_summary("prefill"), s.record()};
}

// The energy of metric in a stage, or nullptr.
inline const StageEnergy* energy_of(const StageWindow& s, const std::string& metric) {
    return s.energy_of(metric);
}

}  // namespace sb::testing
