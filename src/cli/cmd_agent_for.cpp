#include <iostream>
#include <iterator>

#include "cli/commands.hpp"
#include "core/arm_level.hpp"
#include "core/file_io.hpp"

namespace sb::cli {

void add_agent_for_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "agent-for",
        "Name the static phone agent (stagebench-agent-<level>) a device's CPU runs, from its "
        "/proc/cpuinfo (adb shell cat /proc/cpuinfo | stagebench agent-for -)");
    auto path = std::make_shared<std::string>();
    cmd->add_option("cpuinfo", *path, "the device's /proc/cpuinfo, or - for stdin")->required();
    cmd->callback([&ctx, path] {
        const std::string text = *path == "-"
                                     ? std::string(std::istreambuf_iterator<char>(std::cin), {})
                                     : read_input_file(*path, "cpuinfo");
        const auto features = cpuinfo_common_features(text);
        const ArmLevel level = best_arm_level(features);
        ctx.out << agent_file_name(level) << "\n";
        // Why not the level above: what the cores lack (on big.LITTLE, any of them).
        for (ArmLevel above : kArmLevels)
            if (above > level) {
                std::string missing;
                for (const auto& f : missing_arm_features(above, features))
                    missing += " " + f;
                ctx.err << "agent-for: not " << agent_file_name(above) << ": not every core has"
                        << missing << "\n";
                break;
            }
    });
}

}  // namespace sb::cli
