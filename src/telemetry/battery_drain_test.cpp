// The battery's drain over stage windows, from fixture battery trees read by the real source and
// the sampler on a fake clock: a phone's charge counter against charge_full, a laptop's
// energy_now against energy_full, a battery with only its capacity, none at all.
#include "telemetry/battery_drain.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "telemetry/discover.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

using sb::testing::FakeClock;
using sb::testing::FixtureCopy;
using sb::testing::write_atomic;

std::string num(double v) {
    return fmt::format("{:.0f}\n", v);
}

// A fixture's batteries under the sampler, on a fake clock; `at` sets the time and files.
struct DrainRig {
    FixtureCopy fx;
    std::string dir;
    FakeClock clock;
    std::unique_ptr<Sampler> sampler;
    DrainRig(const std::string& device, const std::string& supply)
        : fx(device), dir(fx.path("class/power_supply/" + supply + "/")) {
        Discovery d;
        discover_battery(fx.root(), {}, d);
        SamplerOptions o;
        o.hz = 10;
        o.clock = clock.fn();
        sampler = std::make_unique<Sampler>(std::move(d), o);
    }
    void at(double t_s, const std::string& file, double value) {
        clock.set_s(t_s);
        write_atomic(dir + file, num(value));
    }
    // Two windows, "prefill" over [1, 2] s and "decode" over [2, 4] s, the battery's file
    // falling linearly from v0 at 0 s to v0 - per_s * t, sampled every 0.5 s.
    std::vector<StageWindow> run(const std::string& file, double v0, double per_s,
                                 const std::string& capacity_file = "", double cap0 = 0,
                                 double cap_per_s = 0) {
        for (int k = 0; k <= 10; ++k) {
            const double t = k * 0.5;
            at(t, file, v0 - per_s * t);
            if (!capacity_file.empty())
                write_atomic(dir + capacity_file, num(cap0 - cap_per_s * t));
            if (k == 2)
                sampler->mark("prefill", true);
            if (k == 4) {
                sampler->mark("prefill", false, 8);
                sampler->mark("decode", true);
            }
            if (k == 8)
                sampler->mark("decode", false, 8);
            sampler->sample_now();
        }
        return {*sampler->stage_summary("prefill"), *sampler->stage_summary("decode")};
    }
};

std::vector<const StageWindow*> ptrs(const std::vector<StageWindow>& ws) {
    std::vector<const StageWindow*> v;
    for (const auto& w : ws)
        v.push_back(&w);
    return v;
}

TEST(BatteryDrain, PhoneChargeCounterAgainstChargeFull) {
    // android-snapdragon: charge_full 4800000 µAh, capacity 76. 480 µAh/s is 0.01 %/s.
    DrainRig rig("android-snapdragon", "battery");
    const auto ws = rig.run("charge_counter", 3'012'000, 480, "capacity", 76, 0.5);
    const auto d = battery_drain(ptrs(ws));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->battery, "battery.battery");
    EXPECT_EQ(d->begin_ns, ws[0].begin_ns);
    EXPECT_EQ(d->end_ns, ws[1].end_ns);
    EXPECT_DOUBLE_EQ(d->span_s, 3.0);
    EXPECT_EQ(d->counter, "charge_counter");
    EXPECT_DOUBLE_EQ(*d->counter_start, 3'012'000 - 480);
    EXPECT_DOUBLE_EQ(*d->counter_end, 3'012'000 - 480 * 4);
    EXPECT_DOUBLE_EQ(*d->counter_full, 4'800'000);
    EXPECT_NEAR(*d->counter_drain_pct, 0.03, 1e-12);       // 1440 µAh of 4800000
    EXPECT_NEAR(*d->counter_drain_pct_per_h, 36.0, 1e-9);  // 0.03 % in 3 s
    EXPECT_EQ(d->capacity_start_pct, 76.0);                // 75.5 written as a whole number
    EXPECT_EQ(d->capacity_end_pct, 74.0);
    EXPECT_EQ(d->from, "charge_counter");  // the finer one
    EXPECT_EQ(d->drain_pct, d->counter_drain_pct);
    EXPECT_EQ(d->drain_pct_per_h, d->counter_drain_pct_per_h);
}

TEST(BatteryDrain, OneWindowAndTheCapacityAlone) {
    // samsung-ma-battery: a charge counter but no charge_full, so only the capacity gives %.
    DrainRig rig("samsung-ma-battery", "battery");
    const auto ws = rig.run("capacity", 64, 2);  // 2 % per second
    const auto d = battery_drain({&ws[1]});      // decode: 2 s .. 4 s
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->counter);
    EXPECT_FALSE(d->counter_drain_pct);
    EXPECT_EQ(d->capacity_start_pct, 60.0);
    EXPECT_EQ(d->capacity_end_pct, 56.0);
    EXPECT_EQ(d->capacity_drain_pct, 4.0);
    EXPECT_DOUBLE_EQ(*d->capacity_drain_pct_per_h, 4.0 / 2 * 3600);
    EXPECT_EQ(d->from, "capacity");
    EXPECT_EQ(d->drain_pct, 4.0);
}

TEST(BatteryDrain, LaptopEnergyNowAgainstEnergyFull) {
    // x86-laptop-rapl BAT0: energy_full 52000000 µWh; energy_now falls 5200 µWh/s (0.01 %/s).
    DrainRig rig("x86-laptop-rapl", "BAT0");
    const auto ws = rig.run("energy_now", 41'000'000, 5200);
    const auto d = battery_drain(ptrs(ws));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->battery, "battery.BAT0");
    EXPECT_EQ(d->counter, "energy_now");
    EXPECT_DOUBLE_EQ(*d->counter_full, 52'000'000.0 * 3600);  // µJ
    EXPECT_NEAR(*d->counter_drain_pct, 0.03, 1e-12);
    EXPECT_EQ(d->from, "energy_now");
    EXPECT_EQ(d->capacity_drain_pct, 0.0);  // 79 throughout
}

TEST(BatteryDrain, ChargingDrainsANegativeAmount) {
    DrainRig rig("android-snapdragon", "battery");
    const auto ws = rig.run("charge_counter", 3'000'000, -480);
    const auto d = battery_drain(ptrs(ws));
    ASSERT_TRUE(d);
    EXPECT_NEAR(*d->drain_pct, -0.03, 1e-12);
    EXPECT_NEAR(*d->drain_pct_per_h, -36.0, 1e-9);
}

TEST(BatteryDrain, NoBatteryNoDrain) {
    EXPECT_FALSE(battery_drain({}));
    StageWindow w;
    w.gauges.push_back({"thermal.cpu.temp_mc", "mC", 40000, 41000, 40000, 41000, 40500, 2, 0});
    EXPECT_FALSE(battery_drain({&w}));
    // A battery whose capacity was never read at an end gives nothing either.
    w.gauges.push_back({"battery.b.capacity_pct", "%", std::nullopt, 50, 50, 50, 50, 1, 1});
    EXPECT_FALSE(battery_drain({&w}));
}

TEST(BatteryDrain, AcrossRoundsFromTheFirstStartToTheLastEnd) {
    DrainRig rig("android-snapdragon", "battery");
    const auto ws = rig.run("charge_counter", 3'012'000, 480, "capacity", 76, 1);
    const auto first = battery_drain({&ws[0]});  // 1 .. 2 s
    const auto last = battery_drain({&ws[1]});   // 2 .. 4 s
    ASSERT_TRUE(first && last);
    const auto d = battery_drain_across(*first, *last);
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, *battery_drain(ptrs(ws)));
    BatteryDrain other = *last;
    other.battery = "battery.other";
    EXPECT_FALSE(battery_drain_across(*first, other));
}

}  // namespace
}  // namespace sb
