// Seeded fuzz of the telemetry readers: every fixture tree (the devices of the studies), with
// sensor files replaced by what a broken driver, a hostile user or a race gives (bytes that
// are not UTF-8, numbers out of range, nan, junk after a number, empty files, huge files,
// directories, FIFOs, vanished files, dangling links). Discovery, sampling and the sensors
// report must never throw, never block, and always serialise strictly (valid UTF-8, no
// non-finite number).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/utf8.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/sensors.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;
using testing::FixtureCopy;

const std::vector<std::string> kDevices = {"android-snapdragon", "samsung-ma-battery",
                                           "pixel-odpm",         "rpi5",
                                           "jetson-ina3221",     "x86-laptop-rapl"};

std::vector<std::string> regular_files(const std::string& root) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file() && !e.is_symlink())
            out.push_back(e.path().string());
    std::sort(out.begin(), out.end());  // the directory order is not the seed's
    return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
    fs::remove(path);
    std::ofstream(path, std::ios::binary) << bytes;
}

// One damage to the file at path; returns what was done (for the failure message).
std::string damage(const std::string& path, std::mt19937_64& rng) {
    static const std::vector<std::string> kContents = {
        "",
        "\n",
        "\xff\xfe\n",
        "42\xff\n",
        "nan\n",
        "-nan\n",
        "inf\n",
        "-inf\n",
        "1e999\n",
        "-1e999\n",
        "99999999999999999999999999999\n",
        "-99999999999999999999999999999\n",
        "18446744073709551615\n",
        "-1\n",
        "-2147483648\n",
        "0x1f\n",
        "12abc\n",
        "  7  \n",
        "1 2 3\n",
        std::string(63, 'x') + "\xC3\xA9\n",
        std::string("4\0"
                    "2\n",
                    3),
        "Discharging\xe2\x82\n",
        std::string(200000, '9'),
    };
    switch (rng() % 6) {
        case 0:
        case 1:
        case 2: {
            const std::string& c = kContents[rng() % kContents.size()];
            write_bytes(path, c);
            return "content #" + std::to_string(&c - kContents.data());
        }
        case 3:
            fs::remove(path);
            return "removed";
        case 4:
            fs::remove(path);
            fs::create_directory(path);
            return "a directory";
        default:
            fs::remove(path);
            if (rng() % 2 == 0) {
                EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
                return "a FIFO";
            }
            fs::create_symlink(path + ".nowhere", path);
            return "a dangling link";
    }
}

// Fails the test when j holds text that is not UTF-8 (dump throws) or a non-finite number.
void expect_strict_json(const nlohmann::json& j, const std::string& what) {
    std::string text;
    ASSERT_NO_THROW(text = j.dump()) << what;
    EXPECT_EQ(text.find("NaN"), std::string::npos) << what;
    EXPECT_TRUE(is_valid_utf8(text)) << what;
}

TEST(SysfsFuzz, DamagedTreesNeverThrowBlockOrBreakTheReport) {
    std::mt19937_64 rng(20261201);
    int rounds = 0;
    for (const auto& device : kDevices) {
        for (int round = 0; round < 12; ++round, ++rounds) {
            FixtureCopy fx(device);
            const auto files = regular_files(fx.root());
            ASSERT_FALSE(files.empty()) << device;
            std::string done;
            const int n = 1 + static_cast<int>(rng() % 6);
            for (int i = 0; i < n; ++i) {
                const std::string& f = files[rng() % files.size()];
                if (!fs::exists(fs::symlink_status(f)) ||
                    !fs::is_regular_file(fs::symlink_status(f)))
                    continue;
                done += " " + f.substr(fx.root().size()) + ": " + damage(f, rng) + ";";
            }
            const std::string what = device + " round " + std::to_string(round) + ":" + done;
            SensorsOptions o;
            o.discover = discover_options_for_root(fx.root());
            o.duration_ns = 60'000'000;  // a few samples at 100 Hz
            o.hz = 100;
            std::ostringstream log;
            const auto start = std::chrono::steady_clock::now();
            SensorsReport r;
            ASSERT_NO_THROW(r = run_sensors(o, log)) << what;
            // A FIFO or a huge file must not hold the reader: a generous bound far below a hang.
            EXPECT_LT(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10)
                << what;
            // Every text of the report (what the Markdown of report/sensors_report.hpp prints
            // too) is in its JSON: valid UTF-8, no NaN.
            expect_strict_json(to_json(r), what);
            for (const auto& c : r.current) {
                if (c.value) {
                    EXPECT_TRUE(std::isfinite(*c.value)) << what << " " << c.metric;
                }
            }
        }
    }
    EXPECT_EQ(rounds, 72);
}

}  // namespace
}  // namespace sb
