#include "core/arm_level.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"

namespace sb {
namespace {

std::string cpuinfo(const std::string& name) {
#ifdef SB_SOURCE_DIR
    const std::filesystem::path src = SB_SOURCE_DIR;
#else
    const std::filesystem::path src = std::filesystem::path(__FILE__).parent_path() / "../..";
#endif
    std::ifstream in(src / "tests/fixtures/cpuinfo" / name);
    EXPECT_TRUE(in) << name;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

ArmLevel level_of(const std::string& name) {
    return best_arm_level(cpuinfo_common_features(cpuinfo(name)));
}

TEST(ArmLevel, NamesRoundTrip) {
    for (ArmLevel l : kArmLevels)
        EXPECT_EQ(parse_arm_level(arm_level_name(l)), l);
    EXPECT_EQ(arm_level_name(ArmLevel::armv8_2), "armv8.2");
    EXPECT_EQ(agent_file_name(ArmLevel::armv8_6), "stagebench-agent-armv8.6");
    EXPECT_EQ(parse_arm_level("armv9.2"), std::nullopt);
    EXPECT_EQ(parse_arm_level("armv8"), std::nullopt);
}

TEST(ArmLevel, FeaturesOfEachLevelIncludeTheLevelBelow) {
    EXPECT_EQ(arm_level_features(ArmLevel::armv8_0), (std::vector<std::string>{"asimd", "fp"}));
    EXPECT_EQ(arm_level_features(ArmLevel::armv8_2),
              (std::vector<std::string>{"asimd", "asimddp", "asimdhp", "asimdrdm", "atomics",
                                        "crc32", "fp", "fphp"}));
    EXPECT_EQ(arm_level_features(ArmLevel::armv8_6),
              (std::vector<std::string>{"asimd", "asimddp", "asimdfhm", "asimdhp", "asimdrdm",
                                        "atomics", "bf16", "crc32", "fcma", "flagm", "fp", "fphp",
                                        "frint", "i8mm", "ilrcpc", "jscvt", "lrcpc"}));
}

TEST(ArmLevel, CortexA53BoardRunsTheBaselineAgent) {
    const auto f = cpuinfo_common_features(cpuinfo("cortex_a53_board.txt"));
    EXPECT_EQ(f, (std::set<std::string>{"fp", "asimd", "evtstrm", "crc32", "cpuid"}));
    EXPECT_EQ(best_arm_level(f), ArmLevel::armv8_0);
    EXPECT_EQ(missing_arm_features(ArmLevel::armv8_2, f),
              (std::vector<std::string>{"asimddp", "asimdhp", "asimdrdm", "atomics", "fphp"}));
}

TEST(ArmLevel, RaspberryPi5HasDotprodAndFp16ButNoI8mm) {
    const auto f = cpuinfo_common_features(cpuinfo("raspberry_pi_5.txt"));
    EXPECT_EQ(best_arm_level(f), ArmLevel::armv8_2);
    EXPECT_EQ(missing_arm_features(ArmLevel::armv8_6, f),
              (std::vector<std::string>{"asimdfhm", "bf16", "fcma", "flagm", "frint", "i8mm",
                                        "ilrcpc", "jscvt"}));
}

TEST(ArmLevel, Snapdragon8Gen2PhoneRunsTheI8mmAgent) {
    EXPECT_EQ(level_of("snapdragon_8_gen_2_phone.txt"), ArmLevel::armv8_6);
}

TEST(ArmLevel, BigLittleTakesTheFeaturesEveryCoreHas) {
    // The big cores come first and have i8mm; the LITTLE ones do not.
    const auto f = cpuinfo_common_features(cpuinfo("constructed_big_i8mm_little_a55.txt"));
    EXPECT_EQ(f.count("i8mm"), 0u);
    EXPECT_EQ(f.count("asimddp"), 1u);
    EXPECT_EQ(best_arm_level(f), ArmLevel::armv8_2);
}

TEST(ArmLevel, CrLfAndTrailingSpacesAreNotPartOfAFeature) {
    const auto f = cpuinfo_common_features("processor : 0\r\nFeatures  : fp asimd \r\n");
    EXPECT_EQ(f, (std::set<std::string>{"fp", "asimd"}));
}

TEST(ArmLevel, NotAnArmCpuinfoIsAnInputError) {
    for (const std::string& text : {cpuinfo("x86_laptop.txt"), std::string()}) {
        try {
            cpuinfo_common_features(text);
            FAIL() << "no error for: " << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            EXPECT_NE(std::string(e.what()).find("no 'Features' line"), std::string::npos);
        }
    }
}

TEST(ArmLevel, RefusalNamesTheMissingFeaturesAndTheAgentThatRuns) {
    const auto pi5 = cpuinfo_common_features(cpuinfo("raspberry_pi_5.txt"));
    EXPECT_EQ(arm_level_refusal(ArmLevel::armv8_2, pi5), std::nullopt);
    EXPECT_EQ(arm_level_refusal(ArmLevel::armv8_0, pi5), std::nullopt);
    const auto a53 = cpuinfo_common_features(cpuinfo("cortex_a53_board.txt"));
    EXPECT_EQ(arm_level_refusal(ArmLevel::armv8_2, a53),
              "stagebench-agent-armv8.2 needs CPU features this CPU lacks (asimddp asimdhp "
              "asimdrdm atomics fphp): its kernels would stop on an illegal instruction; use "
              "stagebench-agent-armv8.0 (on the host: adb shell cat /proc/cpuinfo | stagebench "
              "agent-for -)");
}

TEST(ArmLevel, ThisCpuFeaturesOnlyOnAarch64Linux) {
    const auto f = this_cpu_arm_features();
#if defined(__aarch64__) && defined(__linux__)
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->count("asimd"), 1u);
#else
    EXPECT_EQ(f, std::nullopt);
#endif
}

}  // namespace
}  // namespace sb
