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
#include <set>
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

// A phone's battery (the android-snapdragon fixture: charge_full 4800000 µAh) whose charge
// counter a writer thread lowers by 4800 µAh/s (0.1 % of a full charge per second, 360 %/h)
// while `run`, `sustained` and `compare` go through the CLI: each test's and round's drain is
// its counter's fall over its span against charge_full, the writer's rate within what the
// sampling can lag, and compare gives drain rows with ratios and names the offload level only
// one side ran.
TEST(TelemetryRun, BatteryDrainFromTheChargeCounterThroughRunSustainedAndCompare) {
    TempDir t;
    const fs::path root = t.path / "sys";
    fs::copy(fs::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/android-snapdragon/sys", root,
             fs::copy_options::recursive);
    const fs::path counter = root / "class/power_supply/battery/charge_counter";
    constexpr double kUahPerS = 4800;
    std::atomic<bool> stop{false};
    std::atomic<int64_t> max_gap_ns{0};
    const int64_t t0 = sb::now_ns();
    std::thread writer([&] {
        int64_t last = sb::now_ns();
        while (!stop) {
            const int64_t now = sb::now_ns();
            max_gap_ns = std::max<int64_t>(max_gap_ns, now - last);
            last = now;
            write_atomic(
                counter,
                std::to_string(static_cast<int64_t>(4'000'000 - kUahPerS * (now - t0) * 1e-9)));
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    const std::vector<std::string> tel = {"--sysfs-root",   root.string(), "--telemetry", "on",
                                          "--telemetry-hz", "100",         "--idle",      "0"};
    auto with_tel = [&](std::vector<std::string> args) {
        args.insert(args.end(), tel.begin(), tel.end());
        return args;
    };
    const std::string a = t.file("a.json"), b = t.file("b.json"), s = t.file("s.json");
    Proc pa = run_sb(with_tel({"run", "-m", tiny_model(), "-p", "64", "-n", "16", "-r", "3", "-t",
                               "1", "-ngl", "0,99", "--membw", "off", "--out", a}));
    Proc pb = run_sb(with_tel({"run", "-m", tiny_model(), "-p", "64", "-n", "16", "-r", "3", "-t",
                               "1", "-ngl", "0", "--membw", "off", "--out", b, "-q"}));
    Proc ps =
        run_sb(with_tel({"sustained", "-m", tiny_model(), "--rounds", "3", "--prompt-tokens", "64",
                         "--max-tokens", "16", "-t", "1", "--cooldown", "0", "--out", s, "-q"}));
    stop = true;
    writer.join();
    ASSERT_EQ(pa.exit_code, 0) << pa.err;
    ASSERT_EQ(pb.exit_code, 0) << pb.err;
    ASSERT_EQ(ps.exit_code, 0) << ps.err;
    // A reading lags the file by at most a sampling period (10 ms) and a writer's gap, at each
    // end.
    const double slack_uah = kUahPerS * 2 * (0.01 + max_gap_ns.load() * 1e-9) + 2;
    auto check = [&](const json& d, int64_t begin_ns, int64_t end_ns) {
        SCOPED_TRACE(d.dump());
        EXPECT_EQ(d["battery"], "battery.battery");
        EXPECT_EQ(d["from"], "charge_counter");
        EXPECT_EQ(d["counter"], "charge_counter");
        EXPECT_EQ(d["begin_ns"], begin_ns);
        EXPECT_EQ(d["end_ns"], end_ns);
        const double span_s = (end_ns - begin_ns) * 1e-9;
        EXPECT_DOUBLE_EQ(d["span_s"].get<double>(), span_s);
        EXPECT_EQ(d["counter_full"], 4800000.0);
        const double fell = d["counter_start"].get<double>() - d["counter_end"].get<double>();
        EXPECT_NEAR(fell, kUahPerS * span_s, slack_uah);
        const double pct = fell / 4800000 * 100;
        EXPECT_NEAR(d["drain_pct"].get<double>(), pct, 1e-12);
        EXPECT_NEAR(d["drain_pct_per_h"].get<double>(), pct / span_s * 3600, 1e-9);
        EXPECT_EQ(d["capacity_drain_pct"], 0.0);  // 76 throughout
    };
    const json da = json::parse(read_file(a));
    ASSERT_EQ(da["tests"].size(), 2u);
    for (const json& test : da["tests"]) {
        const json& tl = test["telemetry"];
        ASSERT_EQ(tl["prefill"].size(), 3u);
        ASSERT_EQ(tl["decode"].size(), 3u);
        check(tl["battery"], tl["prefill"][0]["begin_ns"].get<int64_t>(),
              tl["decode"][2]["end_ns"].get<int64_t>());
    }
    EXPECT_NE(pa.out.find("| test | devices | battery drain % | drain %/h | from | capacity % | "
                          "capacity %/h | s |"),
              std::string::npos)
        << pa.out;
    EXPECT_NE(pa.out.find(" | charge_counter | 76 → 76 | 0.00 | "), std::string::npos) << pa.out;

    const json ds = json::parse(read_file(s));
    const json& ph = ds["sustained"]["phases"][0];
    ASSERT_EQ(ph["rounds"].size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const json& tl = ds["tests"][i]["telemetry"];
        check(ph["rounds"][i]["battery"], tl["prefill"][0]["begin_ns"].get<int64_t>(),
              tl["decode"][0]["end_ns"].get<int64_t>());
    }
    check(ph["across"]["battery"], ph["rounds"][0]["battery"]["begin_ns"].get<int64_t>(),
          ph["rounds"][2]["battery"]["end_ns"].get<int64_t>());
    EXPECT_EQ(ph["across"]["battery_drain_pct_per_h"]["n"], 3);
    EXPECT_NE(ps.out.find(" battery % | drain %/h |"), std::string::npos) << ps.out;
    EXPECT_NE(ps.out.find("battery drain over the phase (first round's start to last round's end"),
              std::string::npos)
        << ps.out;

    // compare: -ngl 0 meets -ngl 0; A's -ngl 99 is named, with why; the drain has its rows.
    Proc pc = run_sb({"compare", a, b, "-o", "json"});
    ASSERT_EQ(pc.exit_code, 0) << pc.err;
    const json c = json::parse(pc.out);
    ASSERT_EQ(c["unmatched"].size(), 1u) << c["unmatched"].dump();
    EXPECT_EQ(c["unmatched"][0]["label"], "A");
    EXPECT_EQ(c["unmatched"][0]["test"], "pp64+tg16 [n_gpu_layers=99]");
    EXPECT_EQ(c["unmatched"][0]["why"], "-ngl 99 only in A (B: -ngl 0)");
    int drain_rows = 0;
    for (const json& row : c["rows"]) {
        if (row["stage"] != "battery")
            continue;
        ++drain_rows;
        EXPECT_EQ(row["test"], "pp64+tg16 [n_gpu_layers=0]");
        ASSERT_EQ(row["sides"].size(), 2u);
        EXPECT_EQ(row["sides"][0]["n"], 3);
        EXPECT_EQ(row["sides"][1]["n"], 3);
        const json& q = row["ratios"][0];
        if (row["sides"][0]["median"].get<double>() > 0 &&
            row["sides"][1]["median"].get<double>() > 0) {
            EXPECT_NEAR(
                q["median"].get<double>(),
                row["sides"][1]["median"].get<double>() / row["sides"][0]["median"].get<double>(),
                1e-12);
            EXPECT_LE(q["ci_low"].get<double>(), q["ci_high"].get<double>());
        }
    }
    EXPECT_EQ(drain_rows, 2);
    Proc pm = run_sb({"compare", a, b});
    ASSERT_EQ(pm.exit_code, 0) << pm.err;
    EXPECT_NE(pm.out.find("| battery drain %/h |"), std::string::npos) << pm.out;
    EXPECT_NE(
        pm.out.find("Unmatched: A pp64+tg16 [n_gpu_layers=99] (-ngl 99 only in A (B: -ngl 0))"),
        std::string::npos)
        << pm.out;

    // Sustained against itself: E2E, combined tokens/s and the drain per round, ratio 1.
    Proc pss = run_sb({"compare", s, s, "-o", "json"});
    ASSERT_EQ(pss.exit_code, 0) << pss.err;
    std::set<std::string> metrics;
    const json cs = json::parse(pss.out);
    for (const json& row : cs["rows"]) {
        metrics.insert(row["metric"].get<std::string>());
        if (!row["ratios"][0]["median"].is_null()) {
            EXPECT_DOUBLE_EQ(row["ratios"][0]["median"].get<double>(), 1.0) << row.dump();
        }
    }
    for (const char* m : {"e2e_s", "combined_tps", "drain_pct", "drain_pct_per_h", "energy_j"})
        EXPECT_TRUE(metrics.count(m)) << m;
}

namespace {

// stagebench with the NVML stand-in (tests/fixtures/nvml/nvml_standin.c, configured by conf)
// where the real binary finds libnvidia-ml.so.1: on the loader's path.
Proc run_with_nvml(const std::string& conf, const std::vector<std::string>& args, int timeout_s) {
    std::vector<std::string> argv = {
        "/usr/bin/env", std::string("LD_LIBRARY_PATH=") + SB_BINARY_DIR + "/nvml-standin",
        "SB_NVML_STANDIN=" + conf, stagebench_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, timeout_s);
}

}  // namespace

// A crash in a library stagebench loaded, on a thread of its own (as a GPU driver's bug does):
// here the NVML stand-in writes through a null pointer on the sampler's thread once told to,
// during the second test. The run ends with one line that names the crash and the library, exit
// 1, and --out holds the first test measured and the second one failed with that reason.
TEST(TelemetryRun, ACrashInALoadedLibraryIsOneLineAndKeepsTheTestsBeforeIt) {
    TempDir t;
    const std::string conf = t.file("nvml.conf"), crash = t.file("crash"), out = t.file("o.json");
    std::ofstream(conf) << "power_mw=50000\nenergy_base_mj=1000000\ncrash_file=" << crash << "\n";
    const pid_t pid = spawn_bg({"/usr/bin/env",
                                std::string("LD_LIBRARY_PATH=") + SB_BINARY_DIR + "/nvml-standin",
                                "SB_NVML_STANDIN=" + conf,
                                stagebench_bin(),
                                "run",
                                "-m",
                                tiny_model(),
                                "-p",
                                "32",
                                "-n",
                                "8,4096",
                                "-r",
                                "3",
                                "--membw",
                                "off",
                                "--telemetry",
                                "on",
                                "--idle",
                                "0",
                                "--out",
                                out},
                               t.file("log"));
    const auto start = std::chrono::steady_clock::now();
    while (read_file(t.file("log.err")).find("pp32+tg4096 on CPU") == std::string::npos &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(120))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ofstream(crash) << "now\n";
    const int rc = wait_exit(pid, 300);
    const std::string err = read_file(t.file("log.err"));
    EXPECT_EQ(rc, 1) << err;
    const std::string reason = "segmentation fault (SIGSEGV) in libnvidia-ml.so.1";
    EXPECT_NE(err.find("stagebench: error: test pp32+tg4096 on CPU failed: crashed during "),
              std::string::npos)
        << err;
    EXPECT_NE(err.find(reason + "; 1 earlier test(s) kept in"), std::string::npos) << err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 2u) << doc.dump();
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_EQ(doc["tests"][1]["status"], "failed");
    const std::string error = doc["tests"][1]["error"];
    EXPECT_EQ(error.rfind("crashed during ", 0), 0u) << error;
    EXPECT_NE(error.find(reason), std::string::npos) << error;

    // Outside any test (sensors finding its sources): the crash alone, one line.
    Proc sensors = run_with_nvml(conf, {"sensors", "--duration", "0.2s"}, 120);
    EXPECT_EQ(sensors.exit_code, 1) << sensors.err;
    EXPECT_NE(sensors.err.find("stagebench: error: crashed: " + reason + "\n"), std::string::npos)
        << sensors.err;
}

// An NVIDIA GPU's meters through NVML, as the real binary finds libnvidia-ml.so.1 (on the
// loader's path): here tests/fixtures/nvml/nvml_standin.c, whose energy counter grows at 50 W on
// the monotonic clock stagebench stamps with (no NVIDIA GPU or driver on this machine). `run`
// puts the GPU's energy in every stage window and per token, with the power limit and driver
// read once; `sustained` puts the GPU's watts and temperature in every round.
TEST(TelemetryRun, NvmlGpuEnergyPerStageAndPerTokenAndInEverySustainedRound) {
    TempDir t;
    const std::string conf = t.file("nvml.conf");
    std::ofstream(conf) << "name=NVIDIA H100 80GB HBM3\ndriver=580.65.06\npower_limit_mw=700000\n"
                           "power_mw=50000\nenergy_base_mj=1000000\ntemp_c=67\nsm_mhz=1980\n"
                           "mem_mhz=2619\nutil_gpu=93\nreasons=4\n";
    auto sb = [&](std::vector<std::string> args) { return run_with_nvml(conf, args, 600); };
    Proc p = sb({"run", "-m", tiny_model(), "-p", "256", "-n", "64", "-r", "2", "--membw", "off",
                 "--telemetry", "on", "--idle", "0.3", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    const json* gpu = nullptr;
    for (const auto& s : doc["telemetry"]["sources"])
        if (s["name"] == "nvml.gpu0")
            gpu = &s;
    ASSERT_NE(gpu, nullptr) << doc["telemetry"].dump();
    EXPECT_EQ((*gpu)["properties"]["model"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ((*gpu)["properties"]["power_limit_mw"], "700000");
    EXPECT_EQ((*gpu)["properties"]["driver"], "580.65.06");
    const json& tel = doc["tests"][0]["telemetry"];
    for (const char* stage : {"prefill", "decode"}) {
        ASSERT_EQ(tel[stage].size(), 2u) << stage;
        for (const json& occ : tel[stage]) {
            const double dur_s = occ["duration_ns"].get<double>() * 1e-9;
            const json* e = nullptr;
            for (const auto& x : occ["energy"])
                if (x["metric"] == "nvml.gpu0.energy_uj")
                    e = &x;
            ASSERT_NE(e, nullptr) << occ.dump();
            // The counter is read at the stage's edges, within each edge's read time after its
            // mark (the window records both): 50 W over the stage, within 50 W over those read
            // times and the counter's 1 mJ steps, whatever the load.
            const double reads_s =
                (occ["begin_read_ns"].get<double>() + occ["end_read_ns"].get<double>()) * 1e-9;
            EXPECT_NEAR((*e)["energy_j"].get<double>(), 50.0 * dur_s, 50.0 * reads_s + 0.002)
                << stage << " " << occ.dump();
            const double tokens = std::string(stage) == "prefill" ? 256 : 64;
            EXPECT_NEAR((*e)["j_per_token"].get<double>(), (*e)["energy_j"].get<double>() / tokens,
                        1e-9)
                << stage;
        }
    }

    const std::string out = t.file("s.json");
    Proc s = sb({"sustained", "-m", tiny_model(), "--rounds", "2", "--cooldown", "0",
                 "--prompt-tokens", "64", "--max-tokens", "16", "--out", out, "-q"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json sdoc = json::parse(read_file(out));
    const json& rounds = sdoc["sustained"]["phases"][0]["rounds"];
    ASSERT_EQ(rounds.size(), 2u);
    for (const auto& r : rounds) {
        // A round's GPU watts: the counter over its prefill and decode windows, over their
        // time; 50 W within what those windows' edge reads and the counter's steps allow.
        const std::string prefix = "p0/r" + std::to_string(r["round"].get<int>()) + "/";
        double dur_s = 0, slack_j = 0;
        int windows = 0;
        for (const auto& w : sdoc["telemetry"]["stages"]) {
            const std::string name = w["stage"].get<std::string>();
            if (name != prefix + "prefill" && name != prefix + "decode")
                continue;
            ++windows;
            dur_s += w["duration_ns"].get<double>() * 1e-9;
            slack_j +=
                50.0 * (w["begin_read_ns"].get<double>() + w["end_read_ns"].get<double>()) * 1e-9 +
                0.002;
        }
        ASSERT_EQ(windows, 2) << prefix;
        ASSERT_TRUE(r["power_gpu_w"].is_number()) << r.dump();
        EXPECT_NEAR(r["power_gpu_w"].get<double>(), 50.0, slack_j / dur_s) << r.dump();
        EXPECT_EQ(r["temp_gpu_c"], 67.0) << r.dump();
    }
}

// `devices` on a machine whose NVIDIA GPU NVML sees (the stand-in) while the build has no CUDA
// module: a line names the GPU and the driver and says `make cuda`. Without NVML, nothing.
TEST(Devices, AnNvidiaGpuWithoutTheCudaModuleIsNamedWithMakeCuda) {
    TempDir t;
    const std::string conf = t.file("nvml.conf");
    std::ofstream(conf) << "name=NVIDIA GeForce RTX 4050 Laptop GPU\ndriver=580.65.06\n";
    Proc with = run_with_nvml(conf, {"devices"}, 120);
    ASSERT_EQ(with.exit_code, 0) << with.err;
    const std::string line =
        "NVIDIA GPU(s) that NVML sees (driver 580.65.06): NVIDIA GeForce RTX 4050 Laptop GPU; "
        "this build's llama.cpp has no CUDA module: `make cuda` builds it where nvcc exists "
        "(docs/gpu.md)\n";
    if (std::filesystem::exists(std::string(SB_LLAMA_BUILD_DIR) + "/bin/libggml-cuda.so"))
        EXPECT_EQ(with.out.find("NVIDIA GPU(s) that NVML sees"), std::string::npos) << with.out;
    else
        EXPECT_NE(with.out.find(line), std::string::npos) << with.out;
    Proc without = run_sb({"devices"}, 120);
    ASSERT_EQ(without.exit_code, 0) << without.err;
    EXPECT_EQ(without.out.find("NVIDIA GPU(s)"), std::string::npos) << without.out;
}
