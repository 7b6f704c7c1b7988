// Discovery and reading on the fixture trees: names, units, calibration, malformed values.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include "core/utf8.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

using sb::testing::FixtureCopy;
using sb::testing::write_atomic;

DiscoverOptions fixture_options(const FixtureCopy& fx) {
    DiscoverOptions o = discover_options_for_root(fx.root());
    return o;
}

// Reads every source once: metric name -> value.
std::map<std::string, std::optional<double>> read_all(Discovery& d) {
    std::map<std::string, std::optional<double>> out;
    for (auto& s : d.sources) {
        auto ms = s->describe();
        std::vector<std::optional<double>> v(ms.size());
        s->read(0, v);
        for (std::size_t i = 0; i < ms.size(); ++i)
            out[ms[i].name] = v[i];
    }
    return out;
}

Source* find_source(Discovery& d, const std::string& name) {
    for (auto& s : d.sources) {
        if (s->name() == name)
            return s.get();
    }
    return nullptr;
}

std::optional<Metric> find_metric(const Discovery& d, const std::string& name) {
    for (const auto& s : d.sources) {
        for (const auto& m : s->describe()) {
            if (m.name == name)
                return m;
        }
    }
    return std::nullopt;
}

int found(const Discovery& d, const std::string& cls) {
    for (const auto& c : d.classes) {
        if (c.source_class == cls)
            return c.found;
    }
    return -1;
}

TEST(Discover, SnapdragonPhone) {
    FixtureCopy fx("android-snapdragon");
    Discovery d = discover_sources(fixture_options(fx));
    EXPECT_GT(found(d, "thermal"), 0);
    EXPECT_GT(found(d, "cpufreq"), 0);
    EXPECT_GT(found(d, "gpu_devfreq"), 0);
    EXPECT_EQ(found(d, "battery"), 1);  // the usb supply is not a battery
    EXPECT_EQ(found(d, "rapl"), 0);
    EXPECT_EQ(found(d, "nvml"), 0);
    // kgsl's devfreq node is not listed a second time as generic devfreq.
    EXPECT_EQ(find_source(d, "devfreq.3d00000_qcom_kgsl-3d0"), nullptr);
    auto v = read_all(d);
    EXPECT_EQ(v["thermal.cpu-0-0-usr.temp_mc"], 41200.0);
    EXPECT_EQ(v["gpu.kgsl-3d0.cur_freq_khz"], 680000.0);
    EXPECT_EQ(v["gpu.kgsl-3d0.busy_pct"], 37.0);
    EXPECT_EQ(v["gpu.kgsl-3d0.min_freq_khz"], 257000.0);  // the floor, for time at it
    EXPECT_EQ(v["cpufreq.policy7.cur_freq_khz"], 3187200.0);
    // µA, negative while discharging -> 450 mA discharge, 450 mA * 3.87 V.
    EXPECT_EQ(v["battery.battery.current_ma"], 450.0);
    EXPECT_DOUBLE_EQ(*v["battery.battery.power_mw"], 1741.5);
    EXPECT_EQ(v["battery.battery.temp_mc"], 31200.0);  // tenths of °C
    EXPECT_EQ(v["battery.battery.charge_counter_uah"], 3012000.0);
    EXPECT_EQ(v["battery.battery.charge_full_uah"], 4800000.0);
    // An empty temp file is a missing sample with a warning, not an error.
    EXPECT_FALSE(v["thermal.pm8550b-ibat-lvl0.temp_mc"].has_value());
    auto w = find_source(d, "thermal")->warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].code, "telemetry_malformed_value");
    auto p = find_metric(d, "battery.battery.power_mw");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->system_total);
    EXPECT_EQ(std::string(p->unit()), "mW");
}

TEST(Discover, TimeInStateIsBoundaryOnlyResidency) {
    FixtureCopy fx("android-snapdragon");
    Discovery d = discover_sources(fixture_options(fx));
    Source* tis = find_source(d, "cpufreq_time_in_state");
    ASSERT_NE(tis, nullptr);
    EXPECT_TRUE(tis->boundary_only());
    auto v = read_all(d);
    EXPECT_EQ(v["cpufreq.policy0.residency_1804800khz_ms"], 8500.0);  // 850 * 10 ms
    auto m = find_metric(d, "cpufreq.policy0.residency_1804800khz_ms");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, MetricKind::counter);
    EXPECT_EQ(m->bin_khz, 1804800.0);
}

TEST(Battery, SamsungMilliampsPositiveWhileDischarging) {
    FixtureCopy fx("samsung-ma-battery");
    Discovery d = discover_sources(fixture_options(fx));
    auto v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], 450.0);
    EXPECT_DOUBLE_EQ(*v["battery.battery.power_mw"], 1741.5);
    auto props = find_source(d, "battery.battery")->properties();
    EXPECT_NE(props["current_unit"].find("mA"), std::string::npos);
    EXPECT_NE(props["current_sign"].find("positive"), std::string::npos);
    // Mali through misc/mali0, not twice.
    EXPECT_EQ(v["gpu.mali0.cur_freq_khz"], 546000.0);
    EXPECT_EQ(v["gpu.mali0.min_freq_khz"], 151000.0);
    EXPECT_EQ(find_source(d, "devfreq.13000000_mali"), nullptr);
}

TEST(Battery, ProvisionalMilliampsCorrectedByLargeReading) {
    FixtureCopy fx("samsung-ma-battery");
    const std::string b = fx.path("class/power_supply/battery/");
    write_atomic(b + "current_now", "-15000\n");  // 15 mA in µA, or 15 A in mA?
    Discovery d = discover_sources(fixture_options(fx));
    auto v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], 15000.0);  // provisional mA
    write_atomic(b + "current_now", "-600000\n");         // only µA can be this large
    v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], 600.0);
    write_atomic(b + "current_now", "-15000\n");  // µA is now settled
    v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], 15.0);
}

TEST(Battery, SignFollowsStatus) {
    FixtureCopy fx("android-snapdragon");
    const std::string b = fx.path("class/power_supply/battery/");
    Discovery d = discover_sources(fixture_options(fx));
    read_all(d);  // learns: negative while discharging
    write_atomic(b + "status", "Charging\n");
    write_atomic(b + "current_now", "1000000\n");
    auto v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], -1000.0);
    EXPECT_DOUBLE_EQ(*v["battery.battery.power_mw"], -3870.0);
    EXPECT_EQ(v["battery.battery.discharging_flag"], 0.0);
    // "Not charging" uses the learned convention: negative = discharging.
    write_atomic(b + "status", "Not charging\n");
    write_atomic(b + "current_now", "-200000\n");
    v = read_all(d);
    EXPECT_EQ(v["battery.battery.current_ma"], 200.0);
}

TEST(Battery, ExplicitCalibrationOverrides) {
    FixtureCopy fx("samsung-ma-battery");
    DiscoverOptions o = fixture_options(fx);
    o.battery.unit = CurrentUnit::microamp;
    o.battery.sign = CurrentSign::negative_discharge;
    Discovery d = discover_sources(o);
    auto v = read_all(d);
    // 450 read as µA with the kernel sign: 0.45 mA of charge.
    EXPECT_DOUBLE_EQ(*v["battery.battery.current_ma"], -0.45);
}

TEST(Battery, VoltageInMillivolts) {
    FixtureCopy fx("samsung-ma-battery");
    write_atomic(fx.path("class/power_supply/battery/voltage_now"), "3870\n");
    Discovery d = discover_sources(fixture_options(fx));
    auto v = read_all(d);
    EXPECT_EQ(v["battery.battery.voltage_mv"], 3870.0);
    EXPECT_DOUBLE_EQ(*v["battery.battery.power_mw"], 1741.5);
}

TEST(Discover, PixelOdpmRails) {
    FixtureCopy fx("pixel-odpm");
    Discovery d = discover_sources(fixture_options(fx));
    EXPECT_EQ(found(d, "odpm"), 2);
    auto v = read_all(d);
    EXPECT_EQ(v["odpm.S2M_VDD_CPUCL2.energy_uj"], 1500000000.0);
    EXPECT_EQ(v["odpm.VSYS_PWR_DISPLAY.energy_uj"], 900000000.0);
    auto m = find_metric(d, "odpm.S2S_VDD_G3D.energy_uj");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, MetricKind::counter);
    EXPECT_EQ(m->refresh_ns, 50'000'000);
    // A garbled file gives missing rails and a warning.
    write_atomic(fx.path("bus/iio/devices/iio:device0/energy_value"), "t=1\ngarbage\n");
    v = read_all(d);
    EXPECT_FALSE(v["odpm.S2M_VDD_CPUCL2.energy_uj"].has_value());
    EXPECT_EQ(v["odpm.S2S_VDD_G3D.energy_uj"], 600000000.0);
    EXPECT_FALSE(find_source(d, "odpm.s2mpg14-odpm")->warnings().empty());
}

TEST(Discover, RaspberryPi5WithVcgencmd) {
    FixtureCopy fx("rpi5");
    DiscoverOptions o = fixture_options(fx);
    EXPECT_TRUE(o.try_vcgencmd);
    EXPECT_EQ(o.vcgencmd_path, fx.dir() + "/bin/vcgencmd");
    Discovery d = discover_sources(o);
    EXPECT_EQ(found(d, "rpi_throttle"), 1);
    auto v = read_all(d);
    EXPECT_EQ(v["rpi.throttled_flags"], static_cast<double>(0x50005));
    EXPECT_EQ(v["thermal.cpu-thermal.temp_mc"], 52650.0);
    EXPECT_EQ(v["hwmon.cpu_thermal.temp1.temp_mc"], 52650.0);
}

TEST(Discover, VcgencmdAbsentOrBroken) {
    Discovery d;
    discover_vcgencmd("/nonexistent/vcgencmd", d);
    EXPECT_EQ(found(d, "rpi_throttle"), 0);
    Discovery d2;
    discover_vcgencmd("/bin/false", d2);
    EXPECT_EQ(found(d2, "rpi_throttle"), 0);
}

// A vcgencmd that misbehaves: it has a deadline (2 s) and is killed with its group after it.
// One that closes its output and keeps running, or floods it ignoring SIGPIPE, hung discovery
// (`sensors`, `run --telemetry on`) for ever before.
void write_script(const std::string& path, const std::string& body) {
    { std::ofstream(path) << "#!/bin/sh\n" << body << "\n"; }
    ::chmod(path.c_str(), 0755);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(Discover, AVcgencmdThatHangsOrFloodsIsAbsentWithAWarning) {
    for (const char* body : {"echo throttled=0x0; exec >&- 2>&-; sleep 60",
                             "trap '' PIPE; yes throttled=0x0", "sleep 60 & wait"}) {
        SCOPED_TRACE(body);
        FixtureCopy fx("rpi5");
        write_script(fx.dir() + "/bin/vcgencmd", body);
        const auto t0 = std::chrono::steady_clock::now();
        Discovery d = discover_sources(fixture_options(fx));
        EXPECT_LT(seconds_since(t0), 8.0);
        EXPECT_EQ(found(d, "rpi_throttle"), 0);
        bool warned = false;
        for (const auto& w : d.warnings)
            warned = warned || (w.code == "telemetry_command_failed" &&
                                w.message.find("within 2 s") != std::string::npos);
        EXPECT_TRUE(warned);
        // The other sensors of the tree are there as always.
        EXPECT_EQ(read_all(d)["thermal.cpu-thermal.temp_mc"], 52650.0);
    }
}

// One that answers discovery and hangs later: that read is killed at the deadline, the flags
// are absent from then on (not asked again, so the sampler is not stalled every second), and
// the source's warning says why.
TEST(Discover, AVcgencmdThatHangsLaterIsGivenUpWithAWarning) {
    FixtureCopy fx("rpi5");
    const std::string flag = fx.dir() + "/answered";
    write_script(fx.dir() + "/bin/vcgencmd", "if [ -e " + flag +
                                                 " ]; then exec >&- 2>&-; sleep 60; fi\n"
                                                 "touch " +
                                                 flag + "; echo throttled=0x50005");
    Discovery d = discover_sources(fixture_options(fx));
    ASSERT_EQ(found(d, "rpi_throttle"), 1);
    Source* s = find_source(d, "rpi_throttle");
    ASSERT_NE(s, nullptr);
    std::vector<std::optional<double>> v(1);
    auto t0 = std::chrono::steady_clock::now();
    s->read(0, v);
    EXPECT_FALSE(v[0]);
    EXPECT_LT(seconds_since(t0), 8.0);
    t0 = std::chrono::steady_clock::now();
    s->read(int64_t{5'000'000'000}, v);  // a later refresh: not run again
    EXPECT_FALSE(v[0]);
    EXPECT_LT(seconds_since(t0), 0.5);
    const Warnings w = s->warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].code, "telemetry_read_failed");
    EXPECT_NE(w[0].message.find("did not finish within 2 s and was killed; not run again"),
              std::string::npos)
        << w[0].message;
}

TEST(Discover, JetsonIna3221Rails) {
    FixtureCopy fx("jetson-ina3221");
    Discovery d = discover_sources(fixture_options(fx));
    auto v = read_all(d);
    EXPECT_EQ(v["hwmon.ina3221.VDD_IN.voltage_mv"], 5080.0);
    EXPECT_EQ(v["hwmon.ina3221.VDD_IN.current_ma"], 1400.0);
    EXPECT_DOUBLE_EQ(*v["hwmon.ina3221.VDD_IN.power_mw"], 7112.0);
    EXPECT_DOUBLE_EQ(*v["hwmon.ina3221.VDD_SOC.power_mw"], 5076.0 * 310 / 1000);
    auto in = find_metric(d, "hwmon.ina3221.VDD_IN.power_mw");
    ASSERT_TRUE(in);
    EXPECT_TRUE(in->system_total);
    EXPECT_FALSE(find_metric(d, "hwmon.ina3221.VDD_SOC.power_mw")->system_total);
    EXPECT_EQ(v["devfreq.17000000_ga10b.cur_freq_khz"], 306000.0);
}

TEST(Discover, X86LaptopRaplNesting) {
    FixtureCopy fx("x86-laptop-rapl");
    Discovery d = discover_sources(fixture_options(fx));
    EXPECT_EQ(found(d, "rapl"), 1);
    auto pkg = find_metric(d, "rapl.package-0.energy_uj");
    auto core = find_metric(d, "rapl.package-0.core.energy_uj");
    auto psys = find_metric(d, "rapl.psys.energy_uj");
    ASSERT_TRUE(pkg && core && psys);
    EXPECT_EQ(pkg->wrap_range, 262143328850.0);
    EXPECT_EQ(core->within, "rapl.package-0");
    EXPECT_EQ(pkg->within, "rapl.psys");
    EXPECT_TRUE(psys->system_total);
    EXPECT_FALSE(pkg->system_total);
    auto v = read_all(d);
    EXPECT_EQ(v["rapl.package-0.energy_uj"], 123456789.0);
    EXPECT_EQ(v["battery.BAT0.power_mw"], 12500.0);  // power_now, µW
    EXPECT_EQ(found(d, "battery"), 1);               // not the wireless mouse (scope Device)
    // Duplicate zone types are numbered; "N/A" is missing.
    EXPECT_EQ(v["thermal.acpitz-0.temp_mc"], 45000.0);
    EXPECT_EQ(v["thermal.acpitz-1.temp_mc"], 47000.0);
    EXPECT_FALSE(v["hwmon.coretemp.Core_1.temp_mc"].has_value());
    EXPECT_EQ(v["hwmon.coretemp.Package_id_0.temp_mc"], 52000.0);
}

// Desktop GPUs through their DRM drivers (amdgpu, i915, xe) and amdgpu's hwmon: busy, clocks,
// power and temperature; connectors and render nodes are not cards.
TEST(Discover, DesktopGpusThroughDrmAndHwmon) {
    FixtureCopy fx("x86-desktop-gpus");
    Discovery d = discover_sources(fixture_options(fx));
    EXPECT_EQ(found(d, "gpu_drm"), 3);
    auto v = read_all(d);
    EXPECT_EQ(v["gpu.drm-card0.busy_pct"], 37.0);
    EXPECT_EQ(v["gpu.drm-card0.mem_busy_pct"], 12.0);
    ASSERT_TRUE(v["gpu.drm-card0.mem_used_mb"] && v["gpu.drm-card0.mem_total_mb"]);
    EXPECT_DOUBLE_EQ(*v["gpu.drm-card0.mem_used_mb"], 4950.327296);  // bytes / 10^6
    EXPECT_DOUBLE_EQ(*v["gpu.drm-card0.mem_total_mb"], 17163.091968);
    const auto vram = find_metric(d, "gpu.drm-card0.mem_used_mb");
    ASSERT_TRUE(vram);
    EXPECT_EQ(vram->quantity, Quantity::memory);
    // i915: the hardware's frequency, not the requested one.
    EXPECT_EQ(v["gpu.drm-card1.cur_freq_khz"], 1150000.0);
    EXPECT_EQ(v["gpu.drm-card1.min_freq_khz"], 300000.0);
    EXPECT_EQ(v["gpu.drm-card1.max_freq_khz"], 1450000.0);
    EXPECT_EQ(v["gpu.drm-card2.cur_freq_khz"], 2050000.0);
    EXPECT_EQ(v["gpu.drm-card2.max_freq_khz"], 2450000.0);
    EXPECT_FALSE(find_source(d, "gpu.drm-card0-DP-1"));
    EXPECT_FALSE(find_source(d, "gpu.drm-renderD128"));
    EXPECT_EQ(v["hwmon.amdgpu.PPT.power_mw"], 153000.0);
    EXPECT_EQ(v["hwmon.amdgpu.edge.temp_mc"], 61000.0);
    EXPECT_EQ(v["hwmon.amdgpu.sclk.freq_khz"], 2154000.0);
    EXPECT_EQ(v["hwmon.amdgpu.mclk.freq_khz"], 1000000.0);
    auto freq = find_metric(d, "gpu.drm-card1.cur_freq_khz");
    ASSERT_TRUE(freq);
    EXPECT_EQ(freq->quantity, Quantity::frequency);
}

TEST(Discover, MalformedValuesAreMissingNeverThrow) {
    FixtureCopy fx("x86-laptop-rapl");
    Discovery d = discover_sources(fixture_options(fx));
    const std::string e = fx.path("class/powercap/intel-rapl:0/energy_uj");
    const std::string t = fx.path("class/thermal/thermal_zone2/temp");
    for (const char* bad : {"N/A", "", "-5", "1e30", "999999999999999", "12 34", "\n"}) {
        write_atomic(e, bad);
        write_atomic(t, std::string(bad) == "-5" ? "-300000" : bad);
        std::map<std::string, std::optional<double>> v;
        ASSERT_NO_THROW(v = read_all(d)) << bad;
        EXPECT_FALSE(v["rapl.package-0.energy_uj"].has_value()) << bad;
        EXPECT_FALSE(v["thermal.x86_pkg_temp.temp_mc"].has_value()) << bad;
    }
    auto w = find_source(d, "rapl")->warnings();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].message.find("7 malformed"), std::string::npos) << w[0].message;
    // A file that disappears is a failed read.
    std::filesystem::remove(t);
    auto v = read_all(d);
    EXPECT_FALSE(v["thermal.x86_pkg_temp.temp_mc"].has_value());
}

// Bytes that are not UTF-8 (a name, a value cut in the middle of a character) and FIFOs in
// place of sensor files: every read ends at once, and names and warnings stay valid UTF-8.
TEST(Discover, BadBytesAndFifosNeverBlockOrLeakIntoText) {
    FixtureCopy fx("x86-laptop-rapl");
    write_atomic(fx.path("class/thermal/thermal_zone3/type"), "zone\xff\xfe\n");
    write_atomic(fx.path("class/hwmon/hwmon3/temp1_label"), "Core \xE2\x82\n");
    const std::string in0 = fx.path("class/hwmon/hwmon1/in0_input");
    std::filesystem::remove(in0);
    ASSERT_EQ(::mkfifo(in0.c_str(), 0600), 0);
    const auto start = std::chrono::steady_clock::now();
    Discovery d = discover_sources(fixture_options(fx));
    // After discovery: 63 bytes and a 2-byte character (a quote cut at 64 bytes would split
    // it), and a FIFO where a counter was.
    write_atomic(fx.path("class/thermal/thermal_zone2/temp"), std::string(63, 'x') + "\xC3\xA9\n");
    const std::string e = fx.path("class/powercap/intel-rapl:0/energy_uj");
    std::filesystem::remove(e);
    ASSERT_EQ(::mkfifo(e.c_str(), 0600), 0);
    std::map<std::string, std::optional<double>> v;
    for (int i = 0; i < 3; ++i)
        ASSERT_NO_THROW(v = read_all(d));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
    EXPECT_FALSE(v["rapl.package-0.energy_uj"].has_value());
    EXPECT_FALSE(v["thermal.x86_pkg_temp.temp_mc"].has_value());
    int warnings = 0;
    for (const auto& s : d.sources) {
        for (const auto& m : s->describe()) {
            EXPECT_TRUE(is_valid_utf8(m.name)) << m.name;
            (void)to_json(metric_record(m)).dump();  // strict: throws on bytes that are not UTF-8
        }
        for (const auto& w : s->warnings()) {
            ++warnings;
            EXPECT_TRUE(is_valid_utf8(w.message)) << w.message;
        }
    }
    EXPECT_GE(warnings, 2);  // the malformed temperature and the counter that became a FIFO
}

TEST(Discover, EmptyRootHasNothingAndSaysWhy) {
    FixtureCopy fx("x86-laptop-rapl");
    std::filesystem::remove_all(fx.root());
    std::filesystem::create_directories(fx.root());
    Discovery d = discover_sources(fixture_options(fx));
    EXPECT_TRUE(d.sources.empty());
    EXPECT_EQ(d.classes.size(), 10u);  // gpu_drm among them
    for (const auto& c : d.classes) {
        EXPECT_EQ(c.found, 0) << c.source_class;
        EXPECT_FALSE(c.note.empty()) << c.source_class;
    }
}

TEST(Discover, NvmlAbsentLibraryIsAbsentSource) {
    Discovery d;
    discover_nvml("libnvidia-ml-does-not-exist.so.1", d);
    EXPECT_TRUE(d.sources.empty());
    ASSERT_EQ(d.classes.size(), 1u);
    EXPECT_EQ(d.classes[0].found, 0);
    EXPECT_NE(d.classes[0].note.find("not found"), std::string::npos);
}

TEST(Discover, HostRootKeepsHostSources) {
    DiscoverOptions o = discover_options_for_root("/sys/");
    EXPECT_EQ(o.sysfs_root, "/sys");
    EXPECT_TRUE(o.try_nvml);
    EXPECT_TRUE(o.try_vcgencmd);
}

TEST(Discover, MetricNamesUniqueAndUnitSuffixed) {
    for (const char* dev : {"android-snapdragon", "samsung-ma-battery", "pixel-odpm", "rpi5",
                            "jetson-ina3221", "x86-laptop-rapl", "x86-desktop-gpus"}) {
        FixtureCopy fx(dev);
        Discovery d = discover_sources(fixture_options(fx));
        std::set<std::string> names;
        for (const auto& s : d.sources) {
            for (const auto& m : s->describe()) {
                EXPECT_TRUE(names.insert(m.name).second) << dev << ": " << m.name;
                EXPECT_EQ(m.name.rfind(m.sensor + ".", 0), 0u) << m.name;
            }
        }
        EXPECT_FALSE(names.empty()) << dev;
    }
}

}  // namespace
}  // namespace sb
