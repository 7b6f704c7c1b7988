// `stagebench run` with telemetry from a fixture sysfs tree whose RAPL counters a writer thread
// advances at a known power while the benchmark runs: the per-stage energy the document
// reports must match what the writer produced. `stagebench sensors` on a fixture tree (values
// as its files say) and on this machine's real /sys.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"
#include "core/clock.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

void write_atomic(const fs::path& p, const std::string& v) {
    const fs::path tmp = p.string() + ".tmp";
    std::ofstream(tmp) << v << "\n";
    fs::rename(tmp, p);
}

}  // namespace

TEST(TelemetryRun, StageEnergyMatchesTheCounterWriter) {
    TempDir t;
    const fs::path root = t.path / "sys";
    fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/x86-laptop-rapl/sys", root,
             fs::copy_options::recursive);
    const fs::path pkg = root / "class/powercap/intel-rapl:0/energy_uj";
    const fs::path psys = root / "class/powercap/intel-rapl:1/energy_uj";
    // Package at 12 W and psys at 20 W, on the same monotonic clock as stagebench's markers;
    // psys wraps (max_energy_range_uj of the fixture) during the run.
    const double max_psys =
        std::stod(read_file((root / "class/powercap/intel-rapl:1/max_energy_range_uj").string()));
    std::atomic<bool> stop{false};
    // The counters stand still between two writes, so a boundary read can lag the true value
    // by at most the longest gap between writes: that gap bounds the error (on a busy machine
    // the writer thread can be descheduled for a while).
    std::atomic<int64_t> max_gap_ns{0};
    const int64_t t0 = sb::now_ns();
    std::thread writer([&] {
        int64_t last = sb::now_ns();
        while (!stop) {
            const int64_t now = sb::now_ns();
            if (now - last > max_gap_ns)
                max_gap_ns = now - last;
            last = now;
            const double s = (now - t0) * 1e-9;
            write_atomic(pkg, std::to_string(static_cast<uint64_t>(1e9 + 12e6 * s)));
            write_atomic(psys, std::to_string(static_cast<uint64_t>(
                                   std::fmod(max_psys - 5e6 + 20e6 * s, max_psys))));
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    Proc p = sbtest::run_sb(
        {"run",         "-m",          tiny_model(), "-p",      "256", "-n",
         "64",          "-r",          "3",          "--membw", "off", "--sysfs-root",
         root.string(), "--telemetry", "on",         "--idle",  "0.3", "--telemetry-hz",
         "50",          "-o",          "json",       "-q"});
    stop = true;
    writer.join();
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const double slack_s = 2 * (max_gap_ns.load() * 1e-9) + 1e-6;
    json doc = json::parse(p.out);
    const json& tel = doc["tests"][0]["telemetry"];
    ASSERT_EQ(tel["decode"].size(), 3u);
    for (const char* stage : {"prefill", "decode"}) {
        for (const json& occ : tel[stage]) {
            const double dur_s = occ["duration_ns"].get<double>() * 1e-9;
            bool saw_pkg = false;
            for (const json& e : occ["energy"]) {
                if (e["metric"] == "rapl.package-0.energy_uj") {
                    saw_pkg = true;
                    EXPECT_NEAR(e["energy_j"].get<double>(), 12.0 * dur_s,
                                12.0 * slack_s + 0.01 * 12.0 * dur_s)
                        << stage;
                }
            }
            EXPECT_TRUE(saw_pkg) << occ.dump();
            // psys is the whole-system total; across its wraparound it stays at 20 W.
            ASSERT_FALSE(occ["total"]["energy_j"].is_null()) << occ.dump();
            EXPECT_NEAR(occ["total"]["energy_j"].get<double>(), 20.0 * dur_s,
                        20.0 * slack_s + 0.01 * 20.0 * dur_s);
            EXPECT_NEAR(occ["total"]["j_per_token"].get<double>(),
                        occ["total"]["energy_j"].get<double>() / occ["tokens"].get<double>(), 1e-9);
        }
    }
    EXPECT_FALSE(tel["summary"]["decode"]["j_per_token"]["median"].is_null());
    EXPECT_FALSE(doc["telemetry"]["series"].empty());
    EXPECT_FALSE(doc["telemetry"]["idle"].is_null());
}

TEST(TelemetryRun, StatesWhichSourcesAreAbsentOnThisMachine) {
    Proc p = sbtest::run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "--membw",
                             "off", "--idle", "0", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    ASSERT_TRUE(doc["telemetry"].contains("classes")) << doc["telemetry"].dump();
    EXPECT_FALSE(doc["telemetry"]["classes"].empty());
}

// `stagebench sensors` on a fixture tree: every thermal zone and CPU clock of the tree is
// found, read as the files say, and summarised over the window (the files do not change, so
// min = max = the file's value).
TEST(Sensors, ReadsAFixtureTreeAsItsFilesSay) {
    const fs::path root =
        fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/android-snapdragon/sys";
    Proc p = sbtest::run_sb({"sensors", "--sysfs-root", root.string(), "--duration", "300ms",
                             "--hz", "20", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json r = json::parse(p.out);
    std::map<std::string, json> current;
    for (const auto& c : r["current"])
        current[c["metric"].get<std::string>()] = c;
    std::map<std::string, json> window;
    for (const auto& w : r["window"])
        window[w["sensor"].get<std::string>()] = w;

    int zones = 0, unreadable = 0;
    for (const auto& z : fs::directory_iterator(root / "class/thermal")) {
        if (!fs::exists(z.path() / "temp"))
            continue;
        std::string type = read_file((z.path() / "type").string());
        type.erase(type.find_last_not_of("\n") + 1);
        const std::string text = read_file((z.path() / "temp").string());
        const std::string metric = "thermal." + type + ".temp_mc";
        SCOPED_TRACE(metric);
        ++zones;
        ASSERT_TRUE(current.count(metric)) << p.out;
        const std::string sensor = "thermal." + type;
        if (text.find_first_of("0123456789") == std::string::npos) {
            // A zone that gives no reading (a sensor powered down) is missing, not zero.
            ++unreadable;
            EXPECT_TRUE(current[metric]["value"].is_null()) << current[metric];
            EXPECT_TRUE(!window.count(sensor) || window[sensor]["temp_max_mc"].is_null());
            continue;
        }
        const double temp = std::stod(text);
        EXPECT_EQ(current[metric]["value"].get<double>(), temp);
        ASSERT_TRUE(window.count(sensor)) << p.out;
        EXPECT_EQ(window[sensor]["temp_min_mc"].get<double>(), temp);
        EXPECT_EQ(window[sensor]["temp_max_mc"].get<double>(), temp);
    }
    EXPECT_EQ(zones, 6);
    EXPECT_EQ(unreadable, 1);
    int policies = 0;
    for (const auto& pol : fs::directory_iterator(root / "devices/system/cpu/cpufreq")) {
        const double khz = std::stod(read_file((pol.path() / "scaling_cur_freq").string()));
        const std::string metric = "cpufreq." + pol.path().filename().string() + ".cur_freq_khz";
        SCOPED_TRACE(metric);
        ++policies;
        ASSERT_TRUE(current.count(metric)) << p.out;
        EXPECT_EQ(current[metric]["value"].get<double>(), khz);
    }
    EXPECT_EQ(policies, 3);
    // The battery: voltage_now (uV) x current_now (uA, negative while discharging) is the
    // power drawn, and over the window that power is integrated into energy.
    const fs::path bat = root / "class/power_supply/battery";
    const double volts = std::stod(read_file((bat / "voltage_now").string())) * 1e-6;
    const double amps = -std::stod(read_file((bat / "current_now").string())) * 1e-6;
    ASSERT_TRUE(current.count("battery.battery.power_mw")) << p.out;
    EXPECT_NEAR(current["battery.battery.power_mw"]["value"].get<double>(), volts * amps * 1e3,
                1e-9);
    ASSERT_TRUE(window.count("battery.battery")) << p.out;
    const json& b = window["battery.battery"];
    EXPECT_EQ(b["energy_method"], "power_integral");
    EXPECT_NEAR(b["mean_power_mw"].get<double>(), volts * amps * 1e3, 1e-6);
    // A constant power over the measured window (300 ms asked for).
    const double window_s = r["duration_ns"].get<double>() * 1e-9;
    EXPECT_GE(window_s, 0.3);
    EXPECT_NEAR(b["energy_j"].get<double>(), volts * amps * window_s, 1e-6);
}

// On this machine's real /sys: whatever it has (a VM may have no thermal zone at all), the
// command succeeds and says which families it found and which it did not.
TEST(Sensors, RunsOnTheRealSysfs) {
    Proc p = sbtest::run_sb({"sensors", "--duration", "200ms", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json r = json::parse(p.out);
    ASSERT_TRUE(r["classes"].is_array());
    EXPECT_FALSE(r["classes"].empty());
    for (const auto& c : r["classes"]) {
        SCOPED_TRACE(c.dump());
        EXPECT_TRUE(c["found"].is_number());
        if (c["found"].get<int>() == 0) {
            EXPECT_FALSE(c["note"].get<std::string>().empty());  // says why it is absent
        }
    }
    Proc md = sbtest::run_sb({"sensors", "--duration", "0"});
    EXPECT_EQ(md.exit_code, 0) << md.err;
    EXPECT_FALSE(md.out.empty());
    Proc bad = sbtest::run_sb({"sensors", "--sysfs-root", "/nonexistent-root", "--duration", "0"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}
