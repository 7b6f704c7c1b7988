#include "fleet/fleet_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/interrupt.hpp"
#include "temp_dir.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

using sbtest::TempDir;

// Clears the process-wide interrupt however the test ends.
struct InterruptCleared {
    InterruptCleared() { clear_interrupt(); }
    ~InterruptCleared() { clear_interrupt(); }
};

// Two local devices whose stagebench is a script: `version` answers as a stagebench does, any
// other command leaves a mark (it would be the measuring command).
Inventory two_local_devices(const TempDir& t) {
    const std::string sb = t.file("sb.sh");
    std::ofstream(sb) << "#!/bin/sh\n"
                         "if [ \"$1\" = version ]; then\n"
                         "  echo 'stagebench 0.4.0'\n"
                         "  echo 'llama.cpp b1 (commit 0123456789ab)'\n"
                         "  exit 0\n"
                         "fi\n"
                         "touch '"
                      << t.file("ran") << "'\nexit 0\n";
    fs::permissions(sb, fs::perms::owner_all);
    std::ostringstream toml;
    toml << "name = \"lab\"\n";
    for (const char* name : {"one", "two"})
        toml << "[[device]]\nname = \"" << name << "\"\ntransport = \"local\"\nstagebench = \""
             << sb << "\"\n";
    return parse_inventory(toml.str(), "lab.toml");
}

// Ctrl-C after the devices were prepared and before the first one measured: the old summary
// had no row and no failure for them, so `fleet run` exited 0 as if everything asked for was
// done. Each device is now a failed row, interrupted before measuring, in the summary and the
// store, and nothing is measured.
TEST(FleetRun, CtrlCBetweenPreparingAndMeasuringLeavesEveryDeviceInterrupted) {
    InterruptCleared cleared;
    TempDir t;
    const Inventory inv = two_local_devices(t);
    FleetRunOptions o;
    o.db_path = t.file("f.sqlite");
    o.command = {"run", "-m", t.file("none.gguf"), "-p", "16"};
    std::vector<std::string> steps;
    o.before_step = [&](const std::string& step) {
        steps.push_back(step);
        if (step == "measuring")
            request_interrupt();
    };
    std::ostringstream log;
    const FleetRunSummary s = run_fleet(inv, o, log);
    EXPECT_EQ(steps, (std::vector<std::string>{"preparing the device", "measuring"}));
    EXPECT_EQ(s.ok, 0);
    EXPECT_EQ(s.failed, 2) << log.str();
    EXPECT_EQ(s.skipped, 0);
    ASSERT_EQ(s.runs.size(), 2u) << log.str();
    for (const auto& r : s.runs) {
        EXPECT_EQ(r.status, "failed");
        EXPECT_EQ(r.error, "interrupted (Ctrl-C) before measuring");
        EXPECT_EQ(r.error_kind, "interrupted");
        EXPECT_FALSE(r.document_id);
    }
    EXPECT_FALSE(fs::exists(t.file("ran"))) << "nothing is measured after Ctrl-C";
    EXPECT_NE(log.str().find("[one] failed: interrupted (Ctrl-C) before measuring"),
              std::string::npos)
        << log.str();
    const auto stored = ResultStore::open(o.db_path).fleet_runs("lab");
    ASSERT_EQ(stored.size(), 2u);
    for (const auto& r : stored)
        EXPECT_EQ(r.error_kind, "interrupted") << r.device;
}

// Without Ctrl-C the same two devices are prepared and measured (the script's `run` leaves its
// mark): the hook alone changes nothing.
TEST(FleetRun, WithoutCtrlCTheSameDevicesAreMeasured) {
    InterruptCleared cleared;
    TempDir t;
    const Inventory inv = two_local_devices(t);
    FleetRunOptions o;
    o.db_path = t.file("f.sqlite");
    o.command = {"run", "-m", t.file("none.gguf"), "-p", "16"};
    std::vector<std::string> steps;
    o.before_step = [&](const std::string& step) { steps.push_back(step); };
    std::ostringstream log;
    const FleetRunSummary s = run_fleet(inv, o, log);
    EXPECT_EQ(steps, (std::vector<std::string>{"preparing the device", "measuring"}));
    EXPECT_TRUE(fs::exists(t.file("ran"))) << log.str();
    EXPECT_EQ(s.runs.size(), 2u) << log.str();
    for (const auto& r : s.runs)
        EXPECT_NE(r.error_kind, "interrupted") << r.error.value_or("");
}

}  // namespace
}  // namespace sb
