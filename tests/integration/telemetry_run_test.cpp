// `stagebench run` with telemetry from a fixture sysfs tree whose RAPL counters a writer thread
// advances at a known power while the benchmark runs: the per-stage energy the document
// reports must match what the writer produced.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
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
