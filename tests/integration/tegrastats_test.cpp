// tegrastats logs with a real run: the Orin fixture's lines (tests/fixtures/tegrastats, written
// from NVIDIA's documented fields) written by a thread during `stagebench run` with their date
// stamps rewritten to the wall clock of the moment each is written, as tegrastats --logfile
// would; VDD_IN climbs by a known step per line, so a stage's mean power says where in time
// its window landed. And `import tegrastats` of the fixtures as a user runs it.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "core/clock.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

std::string fixture_path(const std::string& name) {
    return (fs::path(SB_SOURCE_DIR) / "tests/fixtures/tegrastats" / name).string();
}

// The fixture's data lines without their date stamps.
std::vector<std::string> orin_lines() {
    std::ifstream in(fixture_path("orin_r36.log"));
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#')
            out.push_back(line.substr(line.find("RAM ")));
    return out;
}

// The date stamp tegrastats prints for a line taken at unix_ns (local time, to the second).
std::string local_stamp(int64_t unix_ns) {
    const std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%m-%d-%Y %H:%M:%S", &tm);
    return buf;
}

constexpr int64_t kIntervalNs = 130'000'000;  // not a divisor of 1 s: the stamps pin the phase
constexpr double kStepMw = 40;                // VDD_IN rises this much per line

// Writes a line every kIntervalNs (absolute deadlines) until stopped; line k has VDD_IN
// 3000 + k * kStepMw mW and was written at times[k] on the monotonic clock.
class LogWriter {
  public:
    explicit LogWriter(std::string path) : path_(std::move(path)), lines_(orin_lines()) {
        thread_ = std::thread([this] { loop(); });
    }
    ~LogWriter() { stop(); }
    void stop() {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
    }
    // How far the writer's wall-clock stamps can be off the monotonic times it records: half the
    // gap of the clock readings its offset came from.
    int64_t offset_uncertainty_ns() const { return offset_uncertainty_ns_; }
    // VDD_IN as written, linear between lines, at monotonic time t.
    double power_at(int64_t t) const {
        std::lock_guard lk(mu_);
        if (t <= times_.front())
            return 3000;
        for (std::size_t k = 1; k < times_.size(); ++k)
            if (t <= times_[k]) {
                const double f = static_cast<double>(t - times_[k - 1]) /
                                 static_cast<double>(times_[k] - times_[k - 1]);
                return 3000 + kStepMw * (static_cast<double>(k - 1) + f);
            }
        return 3000 + kStepMw * static_cast<double>(times_.size() - 1);
    }

  private:
    void loop() {
        std::ofstream out(path_);
        // The wall clock's offset from the monotonic one, from the closest of several
        // back-to-back readings, and half their gap: how far it can be off.
        int64_t wall_minus_mono = 0, best_gap = INT64_MAX;
        for (int i = 0; i < 20; ++i) {
            timespec wall{};
            const int64_t a = sb::now_ns();
            clock_gettime(CLOCK_REALTIME, &wall);
            const int64_t b = sb::now_ns();
            if (b - a < best_gap) {
                best_gap = b - a;
                wall_minus_mono =
                    static_cast<int64_t>(wall.tv_sec) * 1'000'000'000 + wall.tv_nsec - (a + b) / 2;
            }
        }
        offset_uncertainty_ns_ = (best_gap + 1) / 2;
        const int64_t t0 = sb::now_ns();
        for (int k = 0; !stop_; ++k) {
            const int64_t due = t0 + k * kIntervalNs;
            std::this_thread::sleep_for(
                std::chrono::nanoseconds(std::max<int64_t>(0, due - sb::now_ns())));
            // Stamped with the time the line is due, as a tegrastats on time would: a write
            // this busy machine delays does not move the line in time, only makes it late.
            std::string line = local_stamp(due + wall_minus_mono) + " " + lines_[k % lines_.size()];
            line = std::regex_replace(
                line, std::regex("VDD_IN [0-9]+mW"),
                "VDD_IN " + std::to_string(static_cast<int>(3000 + kStepMw * k)) + "mW");
            out << line << "\n" << std::flush;
            std::lock_guard lk(mu_);
            times_.push_back(due);
        }
    }
    std::string path_;
    std::vector<std::string> lines_;
    std::atomic<int64_t> offset_uncertainty_ns_{0};
    std::thread thread_;
    std::atomic<bool> stop_{false};
    mutable std::mutex mu_;
    std::vector<int64_t> times_;
};

}  // namespace

TEST(Tegrastats, RunStagesGetTheLogsEnergyWhereTheyHappened) {
    TempDir t;
    const std::string log = t.file("tegrastats.log");
    LogWriter writer(log);
    // A few seconds of lines before the run, as a tegrastats started first gives: one-second
    // stamps pin the interval and phase only over several second boundaries, and a quick run
    // alone spans one or two. Over 30 lines of 130 ms they pin every line to within an
    // interval (src/telemetry/tegrastats_test.cpp).
    std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    const std::vector<std::string> args = {"run",
                                           "-m",
                                           tiny_model(),
                                           "-p",
                                           "64",
                                           "-n",
                                           "16",
                                           "-r",
                                           "3",
                                           "--membw",
                                           "off",
                                           "--telemetry",
                                           "off",
                                           "--idle",
                                           "0.5",
                                           "--telemetry-log",
                                           "tegrastats:" + log,
                                           "-o",
                                           "json",
                                           "-q"};
    Proc p = run_sb(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    writer.stop();
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    const json& src = doc["telemetry"]["sources"].at(0);
    EXPECT_EQ(src["class"], "tegrastats");
    EXPECT_EQ(src["properties"]["rail"], "VDD_IN");
    EXPECT_EQ(src["properties"]["interval_from"], "the date stamps");
    const double unc_s =
        std::stod(src["properties"]["time_uncertainty_ms"].get<std::string>()) / 1e3;
    // The stamps pin every line to within an interval, or the check below means little.
    EXPECT_LT(unc_s, kIntervalNs / 1e9) << src.dump();
    // What an error of the whole alignment does to a mean power: the ramp's slope times the
    // time error. The error is within the phase and interval estimated from the stamps
    // (time_uncertainty_ms) plus how far each side's wall-minus-monotonic offset can be off (the
    // run's, as its document says, and the writer's own).
    const double offset_unc_s =
        (std::stod(src["properties"]["wall_minus_monotonic_uncertainty_ns"].get<std::string>()) +
         static_cast<double>(writer.offset_uncertainty_ns())) /
        1e9;
    const double slope_mw_per_s = kStepMw / (kIntervalNs / 1e9);
    const double tol_mw = slope_mw_per_s * (unc_s + offset_unc_s) + 1e-6;
    int checked = 0;
    for (const char* stage : {"prefill", "decode"}) {
        const json& windows = doc["tests"][0]["telemetry"][stage];
        ASSERT_EQ(windows.size(), 3u) << stage;
        for (const json& w : windows) {
            const int64_t b = w["begin_ns"], e = w["end_ns"];
            // The writer's own record: the mean of its ramp over the window.
            double sum = 0;
            const int steps = 200;
            for (int i = 0; i < steps; ++i)
                sum += writer.power_at(b + (e - b) * (2 * i + 1) / (2 * steps));
            const double expected = sum / steps;
            const json* vdd = nullptr;
            for (const json& en : w["energy"])
                if (en["metric"] == "tegrastats.VDD_IN.power_mw")
                    vdd = &en;
            ASSERT_NE(vdd, nullptr) << w.dump();
            EXPECT_EQ((*vdd)["method"], "power_integral");
            EXPECT_NEAR((*vdd)["mean_power_mw"].get<double>(), expected, tol_mw)
                << stage << " window at " << b;
            // The whole-device total of the window is the log's VDD_IN.
            EXPECT_EQ(w["total"]["metric"], "tegrastats.VDD_IN.power_mw");
            EXPECT_NEAR(w["total"]["j_per_token"].get<double>(),
                        w["total"]["energy_j"].get<double>() / w["tokens"].get<double>(), 1e-12);
            ++checked;
        }
    }
    EXPECT_EQ(checked, 6);
    EXPECT_FALSE(
        doc["tests"][0]["telemetry"]["summary"]["decode"]["j_per_token"]["median"].is_null());
    // The idle baseline came from the log too: net energy is defined.
    EXPECT_FALSE(doc["tests"][0]["telemetry"]["decode"][0]["total"]["net_energy_j"].is_null());
    for (const json& w : doc["warnings"])
        EXPECT_NE(w["code"], "telemetry_log_short") << w.dump();
}

TEST(Tegrastats, RunRefusesLogsItCannotPlaceInTime) {
    TempDir t;
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "--membw", "off",
                     "--telemetry-log", "tegrastats:" + fixture_path("tx2_r32.log"), "-q"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("stagebench: error: --telemetry-log: " + fixture_path("tx2_r32.log") +
                         " has no date stamps"),
              std::string::npos)
        << p.err;
    p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "--membw", "off",
                "--telemetry-log", "tegrastats:" + fixture_path("orin_r36.log"),
                "--telemetry-log-rail", "VDD_GPU", "-q"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("no rail VDD_GPU in the tegrastats log (it has: VDD_IN, VDD_CPU_GPU_CV, "
                         "VDD_SOC)"),
              std::string::npos)
        << p.err;
    p = run_sb({"run", "-m", tiny_model(), "--telemetry-log", "nvml:x.log", "-q"});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("expected tegrastats:FILE"), std::string::npos) << p.err;
}

TEST(Tegrastats, ImportWritesTheSeries) {
    TempDir t;
    Proc p = run_sb({"import", "tegrastats", fixture_path("tx2_r32.log"), "--start",
                     "2026-12-06T17:56:41Z", "--interval", "500", "--out", t.file("d.json"), "-o",
                     "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(t.file("d.json")));
    EXPECT_EQ(doc["command"], "import");
    // The Jetson is not the machine that imports its log: no system section of this one.
    EXPECT_TRUE(doc["system"].is_null()) << doc["system"];
    EXPECT_TRUE(doc["llama"].is_null()) << doc["llama"];
    for (const json& se : doc["telemetry"]["series"]) {
        if (se["metric"] == "tegrastats.VDD_IN.power_mw") {
            EXPECT_EQ(se["t_ns"], json::array({1796579801'000'000'000, 1796579801'500'000'000}));
            EXPECT_EQ(se["values"], json::array({3055, 6421}));
        }
    }
    // Markdown: one row per metric in the units people read.
    p = run_sb({"import", "tegrastats", fixture_path("orin_r36.log")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| tegrastats.VDD_IN.power_mw | mW | 3 | 0 | 4046.0 | 7468.7 | 9240.0 | "
                         "4046.0 | 9240.0 |"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("| tegrastats.CPU.temp_mc | °C | 3 | 0 | 46.5 | 49.0 | 51.0 |"),
              std::string::npos)
        << p.out;
    // Bad input: one line, exit 2.
    std::ofstream(t.file("junk.log")) << "hello\nworld\n";
    p = run_sb({"import", "tegrastats", t.file("junk.log")});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_EQ(p.err, "stagebench: error: " + t.file("junk.log") +
                         ": no tegrastats line (2 line(s); a line begins with RAM, after the date "
                         "where tegrastats prints one)\n");
    p = run_sb(
        {"import", "tegrastats", fixture_path("orin_r36.log"), "--start", "2026-12-06T17:56:41"});
    EXPECT_EQ(p.exit_code, 2);
}
