#include "core/arm_level.hpp"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <iterator>

#include "core/error.hpp"

namespace sb {
namespace {

// Per level, what it adds to the one below.
const std::vector<std::string>& added_features(ArmLevel level) {
    static const std::vector<std::string> v8_0 = {"asimd", "fp"};
    static const std::vector<std::string> v8_2 = {"asimddp", "asimdhp", "asimdrdm",
                                                  "atomics", "crc32",   "fphp"};
    static const std::vector<std::string> v8_6 = {"asimdfhm", "bf16",   "fcma",  "flagm", "frint",
                                                  "i8mm",     "ilrcpc", "jscvt", "lrcpc"};
    switch (level) {
        case ArmLevel::armv8_0:
            return v8_0;
        case ArmLevel::armv8_2:
            return v8_2;
        case ArmLevel::armv8_6:
            return v8_6;
    }
    return v8_0;
}

std::string_view trim_blanks(std::string_view s) {
    const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!s.empty() && ws(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && ws(s.back()))
        s.remove_suffix(1);
    return s;
}

std::set<std::string> words(std::string_view s) {
    std::set<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t')
            ++j;
        if (j > i)
            out.emplace(s.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : " ") + s;
    return out;
}

}  // namespace

std::string arm_level_name(ArmLevel level) {
    switch (level) {
        case ArmLevel::armv8_0:
            return "armv8.0";
        case ArmLevel::armv8_2:
            return "armv8.2";
        case ArmLevel::armv8_6:
            return "armv8.6";
    }
    return "armv8.0";
}

std::optional<ArmLevel> parse_arm_level(std::string_view name) {
    for (ArmLevel l : kArmLevels)
        if (arm_level_name(l) == name)
            return l;
    return std::nullopt;
}

std::string agent_file_name(ArmLevel level) {
    return "stagebench-agent-" + arm_level_name(level);
}

std::vector<std::string> arm_level_features(ArmLevel level) {
    std::vector<std::string> out;
    for (ArmLevel l : kArmLevels) {
        const auto& add = added_features(l);
        out.insert(out.end(), add.begin(), add.end());
        if (l == level)
            break;
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> missing_arm_features(ArmLevel level,
                                              const std::set<std::string>& cpu_features) {
    std::vector<std::string> out;
    for (const auto& f : arm_level_features(level))
        if (!cpu_features.count(f))
            out.push_back(f);
    return out;
}

ArmLevel best_arm_level(const std::set<std::string>& cpu_features) {
    ArmLevel best = ArmLevel::armv8_0;
    for (ArmLevel l : kArmLevels)
        if (missing_arm_features(l, cpu_features).empty())
            best = l;
    return best;
}

std::set<std::string> cpuinfo_common_features(std::string_view cpuinfo) {
    std::optional<std::set<std::string>> common;
    size_t pos = 0;
    while (pos < cpuinfo.size()) {
        size_t end = cpuinfo.find('\n', pos);
        if (end == std::string_view::npos)
            end = cpuinfo.size();
        const std::string_view line = cpuinfo.substr(pos, end - pos);
        pos = end + 1;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || trim_blanks(line.substr(0, colon)) != "Features")
            continue;
        std::set<std::string> these = words(trim_blanks(line.substr(colon + 1)));
        if (!common) {
            common = std::move(these);
        } else {
            std::set<std::string> both;
            std::set_intersection(common->begin(), common->end(), these.begin(), these.end(),
                                  std::inserter(both, both.end()));
            common = std::move(both);
        }
    }
    if (!common)
        throw input_error(
            "no 'Features' line: not the /proc/cpuinfo of a 64-bit ARM Linux or Android device "
            "(read it with `adb shell cat /proc/cpuinfo`)");
    return *common;
}

std::optional<std::set<std::string>> this_cpu_arm_features() {
#if defined(__aarch64__) && defined(__linux__)
    // The hwcap bits of the features arm_level_features names (glibc's bits/hwcap.h, from the
    // kernel's uapi asm/hwcap.h).
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    const std::pair<bool, const char*> bits[] = {
        {(hw & HWCAP_FP) != 0, "fp"},
        {(hw & HWCAP_ASIMD) != 0, "asimd"},
        {(hw & HWCAP_CRC32) != 0, "crc32"},
        {(hw & HWCAP_ATOMICS) != 0, "atomics"},
        {(hw & HWCAP_FPHP) != 0, "fphp"},
        {(hw & HWCAP_ASIMDHP) != 0, "asimdhp"},
        {(hw & HWCAP_ASIMDRDM) != 0, "asimdrdm"},
        {(hw & HWCAP_JSCVT) != 0, "jscvt"},
        {(hw & HWCAP_FCMA) != 0, "fcma"},
        {(hw & HWCAP_LRCPC) != 0, "lrcpc"},
        {(hw & HWCAP_ASIMDDP) != 0, "asimddp"},
        {(hw & HWCAP_SVE) != 0, "sve"},
        {(hw & HWCAP_ASIMDFHM) != 0, "asimdfhm"},
        {(hw & HWCAP_ILRCPC) != 0, "ilrcpc"},
        {(hw & HWCAP_FLAGM) != 0, "flagm"},
        {(hw2 & HWCAP2_FRINT) != 0, "frint"},
        {(hw2 & HWCAP2_I8MM) != 0, "i8mm"},
        {(hw2 & HWCAP2_BF16) != 0, "bf16"},
        // Not a level's, but named in documents (engine/backends.cpp): bits from the kernel's
        // uapi, which this glibc's header may not know yet.
        {(hw2 & (1UL << 1)) != 0, "sve2"},  // HWCAP2_SVE2
        {(hw2 & (1UL << 23)) != 0, "sme"},  // HWCAP2_SME
    };
    std::set<std::string> out;
    for (const auto& [on, name] : bits)
        if (on)
            out.insert(name);
    return out;
#else
    return std::nullopt;
#endif
}

std::optional<std::string> arm_level_refusal(ArmLevel level,
                                             const std::set<std::string>& cpu_features) {
    const auto missing = missing_arm_features(level, cpu_features);
    if (missing.empty())
        return std::nullopt;
    return agent_file_name(level) + " needs CPU features this CPU lacks (" + join(missing) +
           "): its kernels would stop on an illegal instruction; use " +
           agent_file_name(best_arm_level(cpu_features)) +
           " (on the host: adb shell cat /proc/cpuinfo | stagebench agent-for -)";
}

}  // namespace sb
