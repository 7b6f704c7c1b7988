// The sampler against analytic answers: counters at exact boundaries (with wraparound),
// trapezoid integration of power, idle baseline, flags; with a fake clock and with a writer
// thread changing the files while the sampler runs.
#include "telemetry/sampler.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cmath>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "telemetry/live_runs.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

using sb::testing::energy_of;
using sb::testing::FakeClock;
using sb::testing::FixtureCopy;
using sb::testing::write_atomic;

std::string sampled_num(double v) {
    return fmt::format("{:.0f}\n", v);
}

const StageGauge* gauge_of(const StageWindow& s, const std::string& metric) {
    for (const auto& g : s.gauges) {
        if (g.metric == metric)
            return &g;
    }
    return nullptr;
}

bool has_warning(const Warnings& ws, const std::string& code) {
    for (const auto& w : ws) {
        if (w.code == code)
            return true;
    }
    return false;
}

// x86 fixture with only the RAPL source; package-0 wraps at range_uj.
struct RaplRig {
    FixtureCopy fx{"x86-laptop-rapl"};
    FakeClock clock;
    std::string pkg = fx.path("class/powercap/intel-rapl:0/energy_uj");
    std::string psys = fx.path("class/powercap/intel-rapl:1/energy_uj");
    double range;
    std::unique_ptr<Sampler> sampler;

    explicit RaplRig(double range_uj, bool with_fake_clock = true) : range(range_uj) {
        write_atomic(fx.path("class/powercap/intel-rapl:0/max_energy_range_uj"),
                     sampled_num(range_uj));
        write_atomic(fx.path("class/powercap/intel-rapl:1/max_energy_range_uj"),
                     sampled_num(range_uj));
        Discovery d;
        discover_rapl(fx.root(), d);
        SamplerOptions o;
        o.hz = 10;
        if (with_fake_clock)
            o.clock = clock.fn();
        sampler = std::make_unique<Sampler>(std::move(d), o);
    }
    // Sets the time and both counters to energy_uj (wrapped).
    void at(double t_s, double energy_uj) {
        clock.set_s(t_s);
        write_atomic(pkg, sampled_num(std::fmod(energy_uj, range)));
        write_atomic(psys, sampled_num(std::fmod(energy_uj, range)));
    }
};

TEST(Sampler, CounterEnergyAtExactBoundariesAcrossWraps) {
    RaplRig rig(20e6);         // 20 J: wraps every 2 s at 10 W
    const double rate = 10e6;  // µJ/s = 10 W
    const double e0 = 17e6;
    for (int k = 0; k <= 50; ++k) {
        double t = k * 0.1;
        rig.at(t, e0 + rate * t);
        rig.sampler->sample_now();
        if (k == 5) {
            rig.at(0.55, e0 + rate * 0.55);
            rig.sampler->mark("decode", true);
        }
        if (k == 42) {
            rig.at(4.25, e0 + rate * 4.25);
            rig.sampler->mark("decode", false, 100);
        }
    }
    auto s = rig.sampler->stage_summary("decode");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->duration_ns, 3'700'000'000);
    const StageEnergy* e = energy_of(*s, "rapl.package-0.energy_uj");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->method, "counter");
    EXPECT_NEAR(*e->energy_j, 37.0, 1e-6);  // 10 W * 3.7 s, two wraps on the way
    EXPECT_NEAR(*e->mean_power_mw, 10000.0, 1e-3);
    EXPECT_NEAR(*e->max_power_mw, 10000.0, 1.0);
    EXPECT_NEAR(*e->j_per_token, 0.37, 1e-8);
    EXPECT_EQ(e->within, "rapl.psys");
    EXPECT_EQ(s->total.metric, "rapl.psys.energy_uj");
    EXPECT_NEAR(*s->total.energy_j, 37.0, 1e-6);
    EXPECT_NEAR(*s->total.j_per_token, 0.37, 1e-8);
    EXPECT_FALSE(s->total.net_energy_j.has_value());  // no idle baseline
    EXPECT_TRUE(s->warnings.empty());
}

TEST(Sampler, IdleBaselineGivesNetEnergy) {
    RaplRig rig(262143328850.0);
    auto energy = [](double t) { return t <= 1 ? 5e6 * t : 5e6 + 15e6 * (t - 1); };
    rig.at(0, energy(0));
    rig.sampler->mark("idle", true);
    for (double t : {0.25, 0.5, 0.75}) {
        rig.at(t, energy(t));
        rig.sampler->sample_now();
    }
    rig.at(1.0, energy(1.0));
    rig.sampler->mark("idle", false);
    ASSERT_TRUE(rig.sampler->set_idle_stage("idle"));
    rig.at(1.5, energy(1.5));
    rig.sampler->mark("decode", true);
    rig.at(2.0, energy(2.0));
    rig.sampler->sample_now();
    rig.at(2.5, energy(2.5));
    rig.sampler->mark("decode", false, 50);
    auto s = rig.sampler->stage_summary("decode");
    ASSERT_TRUE(s);
    const StageEnergy* e = energy_of(*s, "rapl.package-0.energy_uj");
    ASSERT_NE(e, nullptr);
    EXPECT_NEAR(*e->energy_j, 15.0, 1e-6);
    EXPECT_NEAR(*e->idle_power_mw, 5000.0, 1e-3);
    EXPECT_NEAR(*e->net_energy_j, 10.0, 1e-6);
    EXPECT_NEAR(*e->net_j_per_token, 0.2, 1e-8);
    EXPECT_NEAR(*s->total.net_energy_j, 10.0, 1e-6);
    auto rec = rig.sampler->record();
    ASSERT_TRUE(rec.idle);
    EXPECT_NEAR(rec.idle->power_mw.at("rapl.psys.energy_uj"), 5000.0, 1e-3);
    EXPECT_FALSE(rig.sampler->set_idle_stage("never-marked"));
}

TEST(Sampler, ConstantMeterGivesNoNetEnergy) {
    // The same 7.3 W idle and busy: the stage's energy minus the idle power over its duration
    // is float rounding (about 1e-15 J here), which is no energy at all.
    RaplRig rig(262143328850.0);
    auto energy = [](double t) { return 7.3e6 * t; };
    rig.at(0, energy(0));
    rig.sampler->mark("idle", true);
    for (double t : {0.1, 0.3, 0.7}) {
        rig.at(t, energy(t));
        rig.sampler->sample_now();
    }
    rig.at(1.0, energy(1.0));
    rig.sampler->mark("idle", false);
    ASSERT_TRUE(rig.sampler->set_idle_stage("idle"));
    rig.at(1.1, energy(1.1));
    rig.sampler->mark("decode", true);
    rig.at(1.7, energy(1.7));
    rig.sampler->sample_now();
    rig.at(2.3, energy(2.3));
    rig.sampler->mark("decode", false, 30);
    auto s = rig.sampler->stage_summary("decode");
    ASSERT_TRUE(s);
    const StageEnergy* e = energy_of(*s, "rapl.package-0.energy_uj");
    ASSERT_NE(e, nullptr);
    EXPECT_NEAR(*e->energy_j, 7.3 * 1.2, 1e-6);
    EXPECT_EQ(*e->net_energy_j, 0.0);
    EXPECT_EQ(*e->net_j_per_token, 0.0);
}

TEST(Sampler, TornCounterReadIsIgnored) {
    RaplRig rig(262143328850.0);
    const double rate = 8e6;
    rig.at(0, 1e9);
    rig.sampler->mark("s", true);
    for (int k = 1; k < 10; ++k) {
        double t = k * 0.1;
        rig.at(t, 1e9 + rate * t);
        if (k == 4)
            write_atomic(rig.pkg, "10\n");  // torn: looks like a wrap
        if (k == 6)
            write_atomic(rig.pkg, "9999999999\n");  // a jump of ~9 kJ in 0.1 s
        rig.sampler->sample_now();
    }
    rig.at(1.0, 1e9 + rate);
    rig.sampler->mark("s", false);
    auto s = rig.sampler->stage_summary("s");
    EXPECT_NEAR(*energy_of(*s, "rapl.package-0.energy_uj")->energy_j, 8.0, 1e-6);
    auto rec = rig.sampler->record();
    EXPECT_TRUE(has_warning(rec.warnings, "counter_glitch"));
}

TEST(Sampler, MissingBoundaryReadIsInterpolatedAndFlagged) {
    RaplRig rig(262143328850.0);
    const double rate = 4e6;
    for (int k = 0; k <= 10; ++k) {
        double t = k * 0.1;
        rig.at(t, rate * t);
        rig.sampler->sample_now();
        if (k == 2) {
            rig.at(0.25, rate * 0.25);
            rig.sampler->mark("s", true);
        }
        if (k == 7) {
            rig.at(0.75, rate * 0.75);
            write_atomic(rig.pkg, "N/A\n");
            rig.sampler->mark("s", false);
        }
    }
    auto s = rig.sampler->stage_summary("s");
    EXPECT_NEAR(*energy_of(*s, "rapl.package-0.energy_uj")->energy_j, 2.0, 1e-6);
    EXPECT_TRUE(has_warning(s->warnings, "boundary_read_missing"));
}

// Snapdragon battery only; discharge power p(t) mW written as µA at a fixed 4.0 V.
struct BatteryRig {
    FixtureCopy fx{"android-snapdragon"};
    FakeClock clock;
    std::string dir = fx.path("class/power_supply/battery/");
    std::unique_ptr<Sampler> sampler;
    explicit BatteryRig(bool fake = true) {
        write_atomic(dir + "voltage_now", "4000000\n");
        Discovery d;
        discover_battery(fx.root(), {}, d);
        SamplerOptions o;
        o.hz = 100;
        if (fake)
            o.clock = clock.fn();
        sampler = std::make_unique<Sampler>(std::move(d), o);
    }
    void power(double mw) { write_atomic(dir + "current_now", sampled_num(-mw * 250)); }
    void at(double t, double mw) {
        clock.set_s(t);
        power(mw);
    }
};

TEST(Sampler, PowerOnlySourceIsIntegratedWithTrapezoids) {
    BatteryRig rig;
    auto p = [](double t) { return 1000 + 500 * t; };
    for (int k = 0; k <= 30; ++k) {
        double t = k * 0.1;
        rig.at(t, p(t));
        rig.sampler->sample_now();
        if (k == 2) {
            rig.at(0.25, p(0.25));
            rig.sampler->mark("prefill", true);
        }
        if (k == 27) {
            rig.at(2.75, p(2.75));
            rig.sampler->mark("prefill", false);
        }
    }
    auto s = rig.sampler->stage_summary("prefill");
    const StageEnergy* e = energy_of(*s, "battery.battery.power_mw");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->method, "power_integral");
    // ∫ 1000 + 500 t dt over [0.25, 2.75] = 2500 + 250 * (2.75² - 0.25²) = 4375 mJ.
    EXPECT_NEAR(*e->energy_j, 4.375, 1e-9);
    EXPECT_NEAR(*e->max_power_mw, p(2.75), 1e-6);
    EXPECT_FALSE(e->below_refresh);
    EXPECT_EQ(s->total.metric, "battery.battery.power_mw");
    const StageGauge* v = gauge_of(*s, "battery.battery.voltage_mv");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->mean, 4000.0);
}

TEST(Sampler, WindowShorterThanRefreshIsFlagged) {
    BatteryRig rig;
    rig.at(0, 2000);
    rig.sampler->mark("decode", true);
    rig.at(0.1, 2000);
    rig.sampler->sample_now();
    rig.at(0.3, 2000);
    rig.sampler->mark("decode", false);
    auto s = rig.sampler->stage_summary("decode");
    EXPECT_TRUE(energy_of(*s, "battery.battery.power_mw")->below_refresh);
    EXPECT_NEAR(*energy_of(*s, "battery.battery.power_mw")->energy_j, 0.6, 1e-9);
    EXPECT_TRUE(has_warning(s->warnings, "window_shorter_than_refresh"));
}

TEST(Sampler, ChargingBatteryIsNotATotal) {
    BatteryRig rig;
    write_atomic(rig.dir + "status", "Charging\n");
    rig.at(0, -1500);
    rig.sampler->mark("s", true);
    rig.at(1.5, -1500);
    rig.sampler->sample_now();
    rig.at(2, -1500);
    rig.sampler->mark("s", false);
    auto s = rig.sampler->stage_summary("s");
    EXPECT_TRUE(has_warning(s->warnings, "battery_not_discharging"));
    EXPECT_FALSE(s->total.metric.has_value());
    EXPECT_NEAR(*energy_of(*s, "battery.battery.power_mw")->energy_j, -3.0, 1e-9);
}

TEST(Sampler, TemperatureStartMaxAndTimeWeightedMean) {
    FixtureCopy fx("android-snapdragon");
    FakeClock clock;
    Discovery d;
    discover_thermal(fx.root(), d);
    Sampler s(std::move(d), {10, clock.fn()});
    const std::string f = fx.path("class/thermal/thermal_zone0/temp");
    const double temps[] = {40000, 45000, 50000, 42000, 41000};
    for (int k = 0; k < 5; ++k) {
        clock.set_s(k * 0.1);
        write_atomic(f, sampled_num(temps[k]));
        s.sample_now();
        if (k == 1) {
            clock.set_s(0.15);
            s.mark("s", true);
        }
        if (k == 3) {
            clock.set_s(0.35);
            s.mark("s", false);
        }
    }
    auto st = s.stage_summary("s");
    const StageGauge* g = gauge_of(*st, "thermal.cpu-0-0-usr.temp_mc");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->start, 45000.0);
    EXPECT_EQ(g->max, 50000.0);
    EXPECT_EQ(g->min, 42000.0);
    EXPECT_EQ(g->end, 42000.0);
    EXPECT_NEAR(*g->mean, 46750.0, 1e-6);
    EXPECT_EQ(g->samples, 2u);
    // The empty zone in the fixture: missing samples, flagged.
    const StageGauge* bad = gauge_of(*st, "thermal.pm8550b-ibat-lvl0.temp_mc");
    ASSERT_NE(bad, nullptr);
    EXPECT_FALSE(bad->max.has_value());
    EXPECT_EQ(bad->missing, 2u);
    EXPECT_TRUE(has_warning(st->warnings, "missing_samples"));
}

TEST(Sampler, ResidencyFromTimeInState) {
    FixtureCopy fx("android-snapdragon");
    FakeClock clock;
    Discovery d;
    discover_cpufreq(fx.root(), d);
    Sampler s(std::move(d), {10, clock.fn()});
    s.mark("s", true);
    write_atomic(fx.path("devices/system/cpu/cpufreq/policy0/stats/time_in_state"),
                 "307200 1200\n1190400 300\n1804800 950\n2016000 390\n");
    clock.set_s(0.5);
    s.sample_now();
    clock.set_s(1.0);
    s.mark("s", false);
    auto st = s.stage_summary("s");
    const StageResidency* r = nullptr;
    for (const auto& x : st->residency) {
        if (x.sensor == "cpufreq.policy0")
            r = &x;
    }
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->method, "time_in_state");
    ASSERT_EQ(r->bins.size(), 4u);
    EXPECT_DOUBLE_EQ(r->bins[2].freq_khz, 1804800.0);
    EXPECT_DOUBLE_EQ(r->bins[2].fraction, 0.25);
    EXPECT_DOUBLE_EQ(r->bins[3].fraction, 0.75);
    // A policy whose counters did not move keeps the sampled estimate.
    bool sampled = false;
    for (const auto& x : st->residency) {
        if (x.sensor == "cpufreq.policy3")
            sampled = x.method == "sampled";
    }
    EXPECT_TRUE(sampled);
}

TEST(Sampler, RaspberryPiThrottlingIsAStageWarning) {
    FixtureCopy fx("rpi5");
    FakeClock clock;
    Discovery d;
    discover_vcgencmd(fx.dir() + "/bin/vcgencmd", d);
    Sampler s(std::move(d), {10, clock.fn()});
    s.sample_now();
    s.mark("s", true);
    clock.set_s(0.5);
    s.mark("s", false);
    auto st = s.stage_summary("s");
    EXPECT_TRUE(has_warning(st->warnings, "throttled"));
    EXPECT_EQ(gauge_of(*st, "rpi.throttled_flags")->max, static_cast<double>(0x50005));
}

TEST(Sampler, RepeatedStagesAreOccurrences) {
    RaplRig rig(262143328850.0);
    double t = 0;
    for (int rep = 0; rep < 3; ++rep) {
        rig.at(t, 1e6 * t);
        rig.sampler->mark("prefill", true);
        t += 0.5 + rep;
        rig.at(t, 1e6 * t);
        rig.sampler->mark("prefill", false, 10);
    }
    rig.sampler->mark("decode", true);  // never ended
    auto all = rig.sampler->stage_summaries("prefill");
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[2].occurrence, 2);
    EXPECT_NEAR(*energy_of(all[1], "rapl.package-0.energy_uj")->energy_j, 1.5, 1e-9);
    EXPECT_EQ(rig.sampler->stage_summary("prefill")->occurrence, 2);
    EXPECT_FALSE(rig.sampler->stage_summary("decode").has_value());
    EXPECT_FALSE(rig.sampler->stage_summary("nothing").has_value());
    EXPECT_EQ(rig.sampler->record().stages.size(), 3u);
}

TEST(Sampler, RejectsBadRate) {
    EXPECT_THROW(Sampler(Discovery{}, SamplerOptions{0, {}}), sb::Error);
    EXPECT_THROW(Sampler(Discovery{}, SamplerOptions{5000, {}}), sb::Error);
    EXPECT_THROW(Sampler(Discovery{}, SamplerOptions{std::nan(""), {}}), sb::Error);
}

TEST(Sampler, NoSourcesStillWorks) {
    Sampler s(Discovery{});
    s.start();
    s.mark("s", true);
    s.mark("s", false);
    s.stop();
    auto st = s.stage_summary("s");
    ASSERT_TRUE(st);
    EXPECT_TRUE(st->energy.empty());
    EXPECT_FALSE(st->total.energy_j.has_value());
}

// Real clock and thread: a writer advances RAPL at 15 W, wrapping every 0.2 s. Only what holds
// however the threads are scheduled is asserted: the energy lies in the range the writer's log
// allows for the increase between the two boundary reads, less whole wraps (a sampler stalled
// longer than a wrap period cannot see one), and never above it. How close it comes on a live
// clock is a benchmark (bench/sampler_accuracy.sh); the arithmetic is exact under a fake clock
// (CounterEnergyAtExactBoundariesAcrossWraps).
TEST(SamplerLive, RaplWriterWithWraparound) {
    sb::testing::WriteLog log;
    const auto run = sb::testing::live_rapl_stage(log);
    ASSERT_TRUE(run.stage);
    const StageWindow& st = *run.stage;
    const StageEnergy* e = energy_of(st, "rapl.package-0.energy_uj");
    ASSERT_NE(e, nullptr);
    ASSERT_TRUE(e->energy_j);
    auto [lo, hi] = log.delta(st.begin_ns, st.begin_read_ns, st.end_ns, st.end_read_ns);
    const double range_uj = sb::testing::kLiveRaplRangeUj;
    const double got_uj = *e->energy_j * 1e6, eps_uj = 1.0;
    EXPECT_GT(got_uj, 0.0);
    EXPECT_LE(got_uj, hi + eps_uj);
    EXPECT_TRUE(sb::testing::within_less_whole_wraps(got_uj, lo, hi, range_uj, eps_uj))
        << "got " << got_uj << " µJ, the log allows [" << lo << ", " << hi
        << "] less whole wraps of " << range_uj;
    EXPECT_FALSE(has_warning(run.record.warnings, "counter_glitch"));
    EXPECT_FALSE(has_warning(run.record.warnings, "counter_reset"));
}

// Real clock and thread: Jetson VDD_IN current ramps. Every reading the sampler integrates is a
// value the writer wrote, so the energy lies between the lowest and the highest power written,
// times the stage's duration, whatever the scheduler did.
// Its error against the log's exact integral is a benchmark (bench/sampler_accuracy.sh); the
// trapezoids are exact under a fake clock (PowerOnlySourceIsIntegratedWithTrapezoids).
TEST(SamplerLive, IntegratedPowerLiesWithinWhatTheWriterWrote) {
    sb::testing::WriteLog log;  // p(t) = 5000 + 10000 t mW, rising
    const auto run = sb::testing::live_ina3221_stage(log);
    ASSERT_TRUE(run.stage);
    const StageWindow& st = *run.stage;
    const StageEnergy* e = energy_of(st, "hwmon.ina3221.VDD_IN.power_mw");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->method, "power_integral");
    ASSERT_TRUE(e->energy_j);
    const double dur_s = static_cast<double>(st.end_ns - st.begin_ns) * 1e-9;
    // The integral may interpolate from a sample before the stage or to one after it: bound by
    // the first and the last power ever written (the ramp rises).
    const double p_lo = log.range(0, 0).first, p_hi = log.range(now_ns(), now_ns()).second;
    EXPECT_GE(*e->energy_j, p_lo * 1e-3 * dur_s * (1 - 1e-9));
    EXPECT_LE(*e->energy_j, p_hi * 1e-3 * dur_s * (1 + 1e-9));
    EXPECT_GE(dur_s, 0.6);
    EXPECT_EQ(st.total.metric, "hwmon.ina3221.VDD_IN.power_mw");
}

TEST(SamplerLive, MeasureIdleStartsAndStopsTheThread) {
    FixtureCopy fx("x86-laptop-rapl");
    Discovery d;
    discover_rapl(fx.root(), d);
    Sampler s(std::move(d), {50, {}});
    s.measure_idle(60'000'000);
    EXPECT_FALSE(s.running());
    auto rec = s.record();
    ASSERT_TRUE(rec.idle);
    EXPECT_EQ(rec.idle->power_mw.at("rapl.package-0.energy_uj"), 0.0);
    EXPECT_GE(rec.series->front().t_ns.size(), 3u);  // samples taken while idle
}

TEST(SamplerRecord, IsTheDocumentsSectionWithSeriesStagesAndAbsentClasses) {
    FixtureCopy fx("x86-laptop-rapl");
    FakeClock clock;
    Discovery d = discover_sources(discover_options_for_root(fx.root()));
    Sampler s(std::move(d), {10, clock.fn()});
    s.sample_now();
    s.mark("prefill", true);
    clock.set_s(1);
    s.sample_now();
    s.mark("prefill", false, 64);
    nlohmann::json j = to_json(s.record());
    EXPECT_EQ(j["hz"], 10.0);
    EXPECT_TRUE(j["absent"].is_array());
    EXPECT_NE(std::find(j["absent"].begin(), j["absent"].end(), "nvml"), j["absent"].end());
    ASSERT_EQ(j["stages"].size(), 1u);
    EXPECT_EQ(j["stages"][0]["stage"], "prefill");
    EXPECT_EQ(j["stages"][0]["tokens"], 64);
    EXPECT_EQ(j["stages"][0]["duration_ns"], 1'000'000'000);
    bool saw_null = false, saw_counter = false;
    for (const auto& se : j["series"]) {
        EXPECT_EQ(se["t_ns"].size(), se["values"].size());
        if (se["metric"] == "hwmon.coretemp.Core_1.temp_mc")
            saw_null = se["values"][0].is_null();
        if (se["metric"] == "rapl.package-0.energy_uj") {
            saw_counter = se.contains("cumulative") && se["cumulative"][0] == 0.0;
        }
    }
    EXPECT_TRUE(saw_null);
    EXPECT_TRUE(saw_counter);
    TelemetrySection without = s.record();
    without.series.reset();
    EXPECT_FALSE(to_json(without).contains("series"));
    EXPECT_EQ(j["sources"][0]["name"], "thermal");
}

}  // namespace
}  // namespace sb
