#pragma once
// The ARM levels of the static phone agent (stagebench-agent-<level>): which level a device's
// CPU runs, from its /proc/cpuinfo (on the host, before adb push) or from the kernel's hwcaps
// (in the agent, before it runs a kernel the CPU may not have). Pure functions over text and
// feature sets, except this_cpu_arm_features().
//
// Features are named as the Linux kernel names them in /proc/cpuinfo's "Features" line and in
// the hwcaps (arch/arm64 cpuinfo.c): asimddp is the dot product (dotprod), asimdhp/fphp half
// precision arithmetic (fp16), i8mm the int8 matrix multiply.
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// Lowest first. Each agent's CPU kernels are built with one -march (scripts/llama.sh):
//   armv8_0  armv8-a                       any 64-bit ARM (Cortex-A53, A72)
//   armv8_2  armv8.2-a+dotprod+fp16        Cortex-A55/A75/A76 and later (Raspberry Pi 5)
//   armv8_6  armv8.6-a+dotprod+fp16+i8mm   Cortex-A510/A710/X2 and later, Apple M2
enum class ArmLevel { armv8_0, armv8_2, armv8_6 };
inline constexpr ArmLevel kArmLevels[] = {ArmLevel::armv8_0, ArmLevel::armv8_2, ArmLevel::armv8_6};

// "armv8.0", "armv8.2", "armv8.6": the suffix of the agent's file name.
std::string arm_level_name(ArmLevel level);
// The inverse of arm_level_name; nullopt for anything else.
std::optional<ArmLevel> parse_arm_level(std::string_view name);
// "stagebench-agent-armv8.2".
std::string agent_file_name(ArmLevel level);

// The CPU features a level's code may use, sorted: the extensions its -march names and the
// architecture features that -march makes mandatory and the compiler may emit (LSE atomics
// and RDM from v8.1, RCpc, FCMA and JSCVT from v8.3, FlagM and FHM from v8.4, FRINT from
// v8.5, BF16 from v8.6). Every level includes the one below it.
std::vector<std::string> arm_level_features(ArmLevel level);

// The highest level whose every feature is in cpu_features (armv8_0 when none above fits).
ArmLevel best_arm_level(const std::set<std::string>& cpu_features);

// The features of arm_level_features(level) missing from cpu_features, sorted; empty when the
// CPU runs level.
std::vector<std::string> missing_arm_features(ArmLevel level,
                                              const std::set<std::string>& cpu_features);

// The features every processor of a /proc/cpuinfo text has: the intersection of its
// "Features" lines (a big.LITTLE device lists every core, and a thread may run on any of
// them). Throws sb::Error(input) when the text has no "Features" line, e.g. an x86 cpuinfo
// (whose "flags" lines name other things) or an empty file.
std::set<std::string> cpuinfo_common_features(std::string_view cpuinfo);

// The features this process's CPU has, from the kernel's hwcaps (getauxval): those that
// arm_level_features of any level names, plus sve, sve2 and sme. Under qemu-user they are the
// emulated CPU's (its /proc/cpuinfo is the host's). nullopt when not on aarch64 Linux.
std::optional<std::set<std::string>> this_cpu_arm_features();

// What an agent built for level says when the CPU lacks a feature of it, one line: the missing
// features and the agent that runs here; nullopt when the CPU runs level.
std::optional<std::string> arm_level_refusal(ArmLevel level,
                                             const std::set<std::string>& cpu_features);

}  // namespace sb
