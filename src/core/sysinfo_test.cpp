#include "core/sysinfo.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace sb {
namespace {

std::string sysinfo_fixture(const std::string& name) {
#ifdef SB_SOURCE_DIR
    const std::filesystem::path src = SB_SOURCE_DIR;
#else
    const std::filesystem::path src = std::filesystem::path(__FILE__).parent_path() / "../..";
#endif
    return (src / "tests/fixtures/sysinfo" / name).string();
}

bool has_code(const Warnings& w, const std::string& code) {
    return std::any_of(w.begin(), w.end(), [&](const Warning& x) { return x.code == code; });
}

TEST(SysInfo, X86Laptop) {
    const SystemInfo s = read_system_info(sysinfo_fixture("x86_laptop"));
    EXPECT_EQ(s.hostname, "lab-laptop");
    EXPECT_EQ(s.os, "Ubuntu 24.04.1 LTS");
    EXPECT_EQ(s.kernel, "6.8.0-45-generic");
    EXPECT_EQ(s.arch, "x86_64");
    EXPECT_EQ(s.cpu_model, "Intel(R) Core(TM) i7-1165G7 @ 2.80GHz");
    EXPECT_EQ(s.cores_logical, 8);
    EXPECT_EQ(s.cores_physical, 4);  // cpuinfo (physical id, core id) pairs
    EXPECT_EQ(s.mem_total_bytes, 16318412ull * 1024);
    EXPECT_EQ(s.mem_available_bytes, 8000000ull * 1024);
    // policy10 after policy2: numeric order.
    EXPECT_EQ(s.governors,
              (std::vector<std::string>{"powersave", "powersave", "performance", "schedutil"}));
    EXPECT_EQ(s.loadavg_1m, 3.5);
    EXPECT_TRUE(s.on_battery_known);
    EXPECT_EQ(s.on_battery, false);  // AC online; the mouse's discharging battery is ignored
}

TEST(SysInfo, AndroidPhone) {
    const SystemInfo s = read_system_info(sysinfo_fixture("android_phone"));
    EXPECT_EQ(s.os, "Android 14");
    EXPECT_EQ(s.kernel, "5.10.198-android12-9-g1234");
    EXPECT_EQ(s.arch, "");
    EXPECT_EQ(s.cpu_model,
              "Qualcomm Technologies, Inc SM8450 (Cortex-A510 + Cortex-A710 + Cortex-X2)");
    EXPECT_EQ(s.cores_logical, 8);
    EXPECT_EQ(s.cores_physical, 8);  // sysfs topology
    EXPECT_EQ(s.governors, (std::vector<std::string>{"schedutil", "schedutil", "schedutil"}));
    EXPECT_FALSE(s.loadavg_1m);
    EXPECT_EQ(s.on_battery, true);
}

TEST(SysInfo, EmptyRootIsAllMissing) {
    const SystemInfo s = read_system_info(sysinfo_fixture("empty"));
    EXPECT_EQ(s.hostname, "");
    EXPECT_EQ(s.os, "");
    EXPECT_EQ(s.kernel, "");
    EXPECT_EQ(s.cpu_model, "");
    EXPECT_EQ(s.cores_logical, 0);
    EXPECT_FALSE(s.cores_physical);
    EXPECT_FALSE(s.mem_total_bytes);
    EXPECT_FALSE(s.mem_available_bytes);
    EXPECT_TRUE(s.governors.empty());
    EXPECT_FALSE(s.loadavg_1m);
    EXPECT_FALSE(s.on_battery_known);
    EXPECT_FALSE(s.on_battery);
    EXPECT_NO_THROW(read_system_info(sysinfo_fixture("does_not_exist")));

    const nlohmann::json j = to_json(s);
    EXPECT_TRUE(j["hostname"].is_null());
    EXPECT_TRUE(j["cores_logical"].is_null());
    EXPECT_TRUE(j["mem_total_bytes"].is_null());
    EXPECT_TRUE(j["on_battery"].is_null());
    EXPECT_TRUE(j["governors"].is_array());
    EXPECT_TRUE(system_warnings(s, 64).empty());
}

TEST(SysInfo, LiveSystemReads) {
    const SystemInfo s = read_system_info();
    EXPECT_FALSE(s.kernel.empty());
    EXPECT_FALSE(s.arch.empty());
    EXPECT_GE(s.cores_logical, 1);
}

TEST(SysInfo, Json) {
    const nlohmann::json j = to_json(read_system_info(sysinfo_fixture("x86_laptop")));
    EXPECT_EQ(j["hostname"], "lab-laptop");
    EXPECT_EQ(j["cores_logical"], 8);
    EXPECT_EQ(j["cores_physical"], 4);
    EXPECT_EQ(j["mem_total_bytes"], 16318412ull * 1024);
    EXPECT_EQ(j["loadavg_1m"], 3.5);
    EXPECT_EQ(j["on_battery"], false);
    EXPECT_EQ(j["governors"].size(), 4u);
    EXPECT_FALSE(j.contains("on_battery_known"));
}

TEST(SysInfo, Warnings) {
    const SystemInfo laptop = read_system_info(sysinfo_fixture("x86_laptop"));
    const Warnings w = system_warnings(laptop, 4);
    EXPECT_TRUE(has_code(w, "governor_not_performance"));
    EXPECT_TRUE(has_code(w, "other_load"));  // 3.5 > 0.25 * 8
    EXPECT_FALSE(has_code(w, "on_battery"));
    EXPECT_FALSE(has_code(w, "oversubscribed"));
    for (const auto& x : w) {
        EXPECT_FALSE(x.message.empty()) << x.code;
        EXPECT_FALSE(x.hint.empty()) << x.code;
    }
    EXPECT_TRUE(has_code(system_warnings(laptop, 9), "oversubscribed"));
    EXPECT_FALSE(has_code(system_warnings(laptop, 8), "oversubscribed"));

    const SystemInfo phone = read_system_info(sysinfo_fixture("android_phone"));
    const Warnings pw = system_warnings(phone, 8);
    EXPECT_TRUE(has_code(pw, "on_battery"));
    EXPECT_TRUE(has_code(pw, "governor_not_performance"));
    EXPECT_FALSE(has_code(pw, "other_load"));  // load unknown: skipped

    SystemInfo quiet;
    quiet.cores_logical = 8;
    quiet.governors = {"performance", "performance"};
    quiet.loadavg_1m = 2.0;  // exactly 0.25 per CPU: not above
    quiet.on_battery = false;
    EXPECT_TRUE(system_warnings(quiet, 8).empty());
}

TEST(SysInfo, EmulationIsAnotherArchitecturesCpuinfo) {
    // qemu-aarch64 on an x86 machine: uname names aarch64, /proc/cpuinfo is the host's.
    const SystemInfo q = read_system_info(sysinfo_fixture("qemu_aarch64_on_x86"));
    EXPECT_EQ(q.arch, "aarch64");
    EXPECT_EQ(q.emulated, true);
    EXPECT_EQ(to_json(q)["emulated"], true);
    const Warnings w = system_warnings(q, 1);
    ASSERT_TRUE(has_code(w, "emulated"));
    for (const auto& x : w)
        if (x.code == "emulated") {
            EXPECT_NE(x.message.find("aarch64 program runs under user-mode emulation"),
                      std::string::npos)
                << x.message;
            EXPECT_FALSE(x.hint.empty());
        }

    const SystemInfo laptop =
        read_system_info(sysinfo_fixture("x86_laptop"));  // x86_64, x86 cpuinfo
    EXPECT_EQ(laptop.emulated, false);
    EXPECT_FALSE(has_code(system_warnings(laptop, 4), "emulated"));
    // Arm cpuinfo but no arch file: unknown, not emulated.
    const SystemInfo phone = read_system_info(sysinfo_fixture("android_phone"));
    EXPECT_FALSE(phone.emulated.has_value());
    EXPECT_TRUE(to_json(phone)["emulated"].is_null());
    EXPECT_FALSE(read_system_info(sysinfo_fixture("empty")).emulated.has_value());
}

TEST(SysInfo, DefaultThreadCountIsPhysicalCoresThatDoMath) {
    const std::vector<int> all;
    // One thread per core, not per online CPU: SMT siblings once; offline CPUs not at all.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_smt"), all), 4);
    // Intel hybrid: 6 P-cores with SMT, the 8 E-cores (cpu_atom) left out, as llama.cpp does.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_hybrid"), all), 6);
    // big.LITTLE: the cores below half the top capacity (2 little) out, prime and mid in.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("phone_3cluster"), all), 6);
    // Two clusters of similar strength: nothing is an efficiency core.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("phone_no_little"), all), 8);
    // Topology without capacities: every core.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("android_phone"), all), 8);
    // No topology files: /proc/cpuinfo's (physical id, core id) pairs.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_laptop"), all), 4);
    // Nothing known: llama.cpp's context default.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("empty"), all), 4);
    EXPECT_EQ(default_thread_count(sysinfo_fixture("does_not_exist"), all), 4);
}

TEST(SysInfo, DefaultThreadCountHonoursTheAffinityMask) {
    // Both SMT threads of one core: one thread.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_smt"), std::vector<int>{0, 4}), 1);
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_smt"), std::vector<int>{0, 1, 6, 7}), 2);
    // P-core threads 0-3 and two E-cores: the two P-cores.
    EXPECT_EQ(
        default_thread_count(sysinfo_fixture("x86_hybrid"), std::vector<int>{0, 1, 2, 3, 12, 13}),
        2);
    // Only E-cores allowed: they are what there is.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("x86_hybrid"), std::vector<int>{12, 13, 14}), 3);
    // Little cores and the prime core: the prime core; little cores alone: both of them.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("phone_3cluster"), std::vector<int>{0, 1, 7}),
              1);
    EXPECT_EQ(default_thread_count(sysinfo_fixture("phone_3cluster"), std::vector<int>{0, 1}), 2);
    // No sysfs: the mask's CPUs, with llama.cpp's guess for SMT above 4.
    EXPECT_EQ(default_thread_count(sysinfo_fixture("empty"), std::vector<int>{0, 1, 2}), 3);
    EXPECT_EQ(
        default_thread_count(sysinfo_fixture("empty"), std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}),
        4);
}

TEST(SysInfo, DefaultThreadCountLive) {
    const int n = default_thread_count();
    EXPECT_GE(n, 1);
    const SystemInfo s = read_system_info();
    EXPECT_LE(n, s.cores_logical);
    EXPECT_EQ(threads_or_default(0), n);
    EXPECT_EQ(threads_or_default(-1), n);
    EXPECT_EQ(threads_or_default(3), 3);
}

TEST(SysInfo, BuildWarnings) {
    EXPECT_TRUE(build_warnings(false, false).empty());
    const Warnings both = build_warnings(true, true);
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0].code, "debug_build");
    EXPECT_EQ(both[1].code, "debug_build");
    EXPECT_NE(both[0].message, both[1].message);
    EXPECT_EQ(build_warnings(false, true).size(), 1u);

    const nlohmann::json j = both;
    ASSERT_TRUE(j.is_array());
    EXPECT_EQ(j[0]["code"], "debug_build");
    EXPECT_TRUE(j[0].contains("hint"));
}

}  // namespace
}  // namespace sb

TEST(SysInfo, ProcessRss) {
    // The live process: resident memory grows by what is touched.
    auto before = sb::process_rss_bytes();
    ASSERT_TRUE(before.has_value());
    std::vector<char> block(64 << 20, 1);
    auto after = sb::process_rss_bytes();
    ASSERT_TRUE(after.has_value());
    EXPECT_GT(*after - *before, 32 << 20);
    EXPECT_EQ(block[12345], 1);
    // A missing or malformed statm is unknown, not zero.
    EXPECT_FALSE(sb::process_rss_bytes("/nonexistent").has_value());
}
