#include "telemetry/sensors.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

using sb::testing::FixtureCopy;

TEST(ParseDuration, AcceptsUnits) {
    EXPECT_EQ(parse_duration_ns("5s"), 5'000'000'000);
    EXPECT_EQ(parse_duration_ns("500ms"), 500'000'000);
    EXPECT_EQ(parse_duration_ns("5"), 5'000'000'000);
    EXPECT_EQ(parse_duration_ns("2.5s"), 2'500'000'000);
    EXPECT_EQ(parse_duration_ns("1m"), 60'000'000'000);
    EXPECT_EQ(parse_duration_ns("250us"), 250'000);
    EXPECT_EQ(parse_duration_ns("0"), 0);
}

TEST(ParseDuration, RejectsGarbage) {
    for (const char* s : {"", "abc", "-1s", "5h", "s", "5 s s", "1e30s"}) {
        EXPECT_THROW(parse_duration_ns(s), sb::Error) << s;
    }
}

TEST(Sensors, RejectsBadRate) {
    SensorsOptions o;
    o.discover = discover_options_for_root("/nonexistent");
    o.hz = 0;
    std::ostringstream log;
    EXPECT_THROW(run_sensors(o, log), sb::Error);
}

// What `stagebench sensors --sysfs-root` is checked with: a tree whose RAPL counter a writer
// advances in place (readers may see the file empty) and wraps, and a battery whose power
// changes; the report must be what the writer's log allows.
TEST(Sensors, ReportsWriterPowerAndEnergyAcrossWraps) {
    FixtureCopy fx("x86-laptop-rapl");
    const std::string pkg = fx.path("class/powercap/intel-rapl:0/energy_uj");
    sb::testing::write_atomic(fx.path("class/powercap/intel-rapl:0/max_energy_range_uj"),
                              "5000000\n");
    const double rate = 12e6;  // µJ/s: 12 W, wrapping every 0.42 s
    sb::testing::WriteLog wlog;
    sb::testing::Writer w(
        [&](double t) {
            const double v = 4e6 + rate * t;
            const int64_t b = now_ns();
            sb::testing::write_in_place(
                pkg, std::to_string(static_cast<int64_t>(std::fmod(v, 5e6))) + "\n");
            wlog.add(b, now_ns(), v);
        },
        std::chrono::microseconds(1000));
    SensorsOptions o;
    o.discover = discover_options_for_root(fx.root());
    o.duration_ns = 1'000'000'000;
    o.hz = 20;
    std::ostringstream log;
    SensorsReport r = run_sensors(o, log);
    w.stop();  // the log is complete only now
    EXPECT_GE(r.duration_ns, 1'000'000'000);
    const SensorWindow* pk = nullptr;
    const SensorWindow* bat = nullptr;
    for (const auto& s : r.window) {
        if (s.sensor == "rapl.package-0")
            pk = &s;
        if (s.sensor == "battery.BAT0")
            bat = &s;
    }
    ASSERT_NE(pk, nullptr);
    ASSERT_TRUE(pk->energy_j && pk->mean_power_mw && r.stage);
    // What the file held while the window's ends were read, from the writer's own log.
    const auto& st = *r.stage;
    // Exactly that range, less whole wraps a stalled reader could not see.
    auto [lo, hi] = wlog.delta(st.begin_ns, st.begin_read_ns, st.end_ns, st.end_read_ns);
    EXPECT_TRUE(sb::testing::within_less_whole_wraps(*pk->energy_j * 1e6, lo, hi, 5e6, 1.0))
        << *pk->energy_j << " J; the log allows [" << lo << ", " << hi << "] µJ";
    const double dur_s = static_cast<double>(r.duration_ns) * 1e-9;
    EXPECT_NEAR(*pk->mean_power_mw, *pk->energy_j * 1e3 / dur_s, 1e-6 * *pk->mean_power_mw);
    EXPECT_EQ(pk->energy_method, "counter");
    ASSERT_NE(bat, nullptr);
    EXPECT_NEAR(*bat->mean_power_mw, 12500.0, 1e-6);
    EXPECT_NE(log.str().find("sampling"), std::string::npos);

    nlohmann::json j = to_json(r);
    EXPECT_EQ(j["hz"], 20.0);
    EXPECT_FALSE(j["window"].empty());
    EXPECT_FALSE(j["current"].empty());
    EXPECT_TRUE(j["stage"].is_object());
    // The families not found are listed (the Markdown's "Absent", report/sensors_report.hpp).
    EXPECT_NE(std::find(j["absent"].begin(), j["absent"].end(), "nvml"), j["absent"].end());
}

TEST(Sensors, ZeroDurationListsCurrentValuesOnly) {
    FixtureCopy fx("rpi5");
    SensorsOptions o;
    o.discover = discover_options_for_root(fx.root());
    o.duration_ns = 0;
    std::ostringstream log;
    SensorsReport r = run_sensors(o, log);
    EXPECT_TRUE(r.window.empty());
    EXPECT_EQ(r.duration_ns, 0);
    bool throttled = false;
    for (const auto& c : r.current) {
        if (c.metric == "rpi.throttled_flags")
            throttled = c.value == 0x50005;
    }
    EXPECT_TRUE(throttled);
}

TEST(Sensors, EmptyTreeSaysNothingFound) {
    FixtureCopy fx("rpi5");
    std::filesystem::remove_all(fx.root());
    std::filesystem::create_directories(fx.root());
    SensorsOptions o;
    o.discover = discover_options_for_root(fx.root());
    o.discover.try_vcgencmd = false;
    o.duration_ns = 100'000'000;
    std::ostringstream log;
    SensorsReport r = run_sensors(o, log);
    EXPECT_TRUE(r.sources.empty());
    EXPECT_NE(log.str().find("no telemetry sources found"), std::string::npos);
}

}  // namespace
}  // namespace sb
