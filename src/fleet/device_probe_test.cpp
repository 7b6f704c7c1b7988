#include "fleet/device_probe.hpp"

#include <gtest/gtest.h>

#include "core/subprocess.hpp"

namespace sb {
namespace {

TEST(DeviceProbe, RaspberryPiIdentityFromDeviceTreeAndCpuinfo) {
    const DeviceIdentity id = parse_identity(
        "arch=aarch64\nkernel=6.6.31+rpt-rpi-2712\nhostname=pi5\n"
        "dt_model=Raspberry Pi 5 Model B Rev 1.0\n--cpuinfo--\n"
        "processor\t: 0\nBogoMIPS\t: 108.00\n"
        "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid "
        "asimdrdm lrcpc dcpop asimddp\n"
        "processor\t: 1\n"
        "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid "
        "asimdrdm lrcpc dcpop asimddp\n");
    EXPECT_EQ(id.arch, "aarch64");
    EXPECT_EQ(id.kernel, "6.6.31+rpt-rpi-2712");
    EXPECT_EQ(id.model, "Raspberry Pi 5 Model B Rev 1.0");
    EXPECT_FALSE(id.android);
    EXPECT_EQ(id.cpu_features.size(), 16u);
    EXPECT_EQ(dist_arch(id.arch), "arm64");
}

TEST(DeviceProbe, AndroidIdentityFromGetpropAndFeaturesOfEveryCore) {
    const DeviceIdentity id = parse_identity(
        "arch=aarch64\nkernel=5.15.123-android14\nhostname=localhost\nandroid=14\n"
        "android_model=SM-S921B\nsoc_model=SM8650\nboard_platform=pineapple\n--cpuinfo--\n"
        "Features\t: fp asimd asimddp i8mm\nFeatures\t: fp asimd asimddp\n"
        "Hardware\t: Qualcomm\n");
    EXPECT_EQ(id.android, "14");
    EXPECT_EQ(id.model, "SM-S921B");
    EXPECT_EQ(id.soc, "SM8650");
    // A thread may run on any core: only what every core has.
    EXPECT_EQ(id.cpu_features, (std::vector<std::string>{"asimd", "asimddp", "fp"}));
}

TEST(DeviceProbe, EmptyOrJunkOutputGivesEmptyFieldsNeverThrows) {
    EXPECT_NO_THROW(parse_identity(""));
    const DeviceIdentity id = parse_identity("arch=\nandroid=\nandroid_model=\n\x01\x02=\xff\n");
    EXPECT_EQ(id.arch, "");
    EXPECT_FALSE(id.android);
    EXPECT_FALSE(id.model);
    EXPECT_EQ(dist_arch("riscv64"), "");
    EXPECT_EQ(dist_arch("x86_64"), "amd64");
}

TEST(DeviceProbe, GateStateTakesTheHottestZoneAndIgnoresNonsense) {
    const GateState s = parse_gate_state(
        "zone=cpu-thermal 52350\nzone=gpu 48000\nzone=bogus -273000\nzone=broken abc\n"
        "zone=sensor 999999\ngovernor=schedutil\ngovernor=performance\ngovernor=schedutil\n"
        "battery=Discharging 37\nload=0.42\n");
    EXPECT_DOUBLE_EQ(*s.hottest_c, 52.35);
    EXPECT_EQ(s.hottest_zone, "cpu-thermal");
    EXPECT_EQ(s.governors, (std::vector<std::string>{"performance", "schedutil"}));
    EXPECT_EQ(s.on_battery, true);
    EXPECT_EQ(s.battery_pct, 37.0);
    EXPECT_EQ(s.load_1m, 0.42);
    const GateState none = parse_gate_state("load=\n");
    EXPECT_FALSE(none.hottest_c);
    EXPECT_FALSE(none.load_1m);
}

TEST(DeviceProbe, GatesRefuseWarnOrWait) {
    GateState s;
    s.hottest_c = 50;
    s.governors = {"schedutil"};
    s.on_battery = true;
    s.battery_pct = 20;
    s.load_1m = 3;
    Gates g;
    GateVerdict v = judge_gates(g, s);  // only the governor's default warning
    EXPECT_FALSE(v.refusal);
    EXPECT_FALSE(v.hot);
    ASSERT_EQ(v.warnings.size(), 1u);
    EXPECT_NE(v.warnings[0].find("schedutil"), std::string::npos);
    g.cool_to_c = 45;
    EXPECT_TRUE(judge_gates(g, s).hot);
    g.cool_to_c = 55;
    EXPECT_FALSE(judge_gates(g, s).hot);
    g.governor = "refuse";
    EXPECT_NE(judge_gates(g, s).refusal.value_or("").find("not performance"), std::string::npos);
    g.governor = "ignore";
    EXPECT_TRUE(judge_gates(g, s).warnings.empty());
    g.min_battery_pct = 30;
    EXPECT_NE(judge_gates(g, s).refusal.value_or("").find("20 %"), std::string::npos);
    s.on_battery = false;  // charging: the level does not matter
    EXPECT_FALSE(judge_gates(g, s).refusal);
    g.max_load = 1;
    EXPECT_NE(judge_gates(g, s).refusal.value_or("").find("load 3"), std::string::npos);
    // No thermal zone: cool_to cannot be checked, which is said, never waited on.
    s.hottest_c.reset();
    g.max_load.reset();
    g.cool_to_c = 45;
    v = judge_gates(g, s);
    EXPECT_FALSE(v.hot);
    ASSERT_EQ(v.warnings.size(), 1u);
    EXPECT_NE(v.warnings[0].find("no thermal zone"), std::string::npos);
}

// The scripts run with this machine's sh and parse into what its /proc says.
TEST(DeviceProbe, ScriptsRunWithThisShell) {
    ProcessResult r = run_process({"sh", "-c", identity_script()});
    ASSERT_TRUE(r.ok()) << r.err;
    const DeviceIdentity id = parse_identity(r.out);
    EXPECT_FALSE(id.arch.empty());
    EXPECT_FALSE(id.kernel.empty());
    ProcessResult g = run_process({"sh", "-c", gate_script()});
    ASSERT_TRUE(g.ok()) << g.err;
    EXPECT_TRUE(parse_gate_state(g.out).load_1m.has_value());
}

}  // namespace
}  // namespace sb
