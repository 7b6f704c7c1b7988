// The host's `agent-for` command and the agent's command set (build_agent_app), run in
// process; the static agent itself is tested under qemu by tests/dist/agent_qemu.sh.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_cli_test_util.hpp"

namespace sb::cli {
namespace {

std::string cpuinfo(const std::string& name) {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures/cpuinfo/" + name;
}

Outcome run_agent(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"stagebench-agent"};
    for (const auto& a : args)
        argv.push_back(a.c_str());
    std::ostringstream out, err;
    Context ctx{out, err, 0, {}, {}};
    Outcome o;
    o.code = run_agent_cli(static_cast<int>(argv.size()), argv.data(), ctx);
    o.out = out.str();
    o.err = err.str();
    return o;
}

TEST(AgentFor, PrintsTheAgentFileNameAndWhyNotTheLevelAbove) {
    const Outcome o = run_captured({"agent-for", cpuinfo("raspberry_pi_5.txt")});
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.out, "stagebench-agent-armv8.2\n");
    EXPECT_EQ(o.err,
              "agent-for: not stagebench-agent-armv8.6: not every core has asimdfhm bf16 fcma "
              "flagm frint i8mm ilrcpc jscvt\n");
}

TEST(AgentFor, TheHighestLevelSaysNothingMore) {
    const Outcome o = run_captured({"agent-for", cpuinfo("snapdragon_8_gen_2_phone.txt")});
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(o.out, "stagebench-agent-armv8.6\n");
    EXPECT_EQ(o.err, "");
}

TEST(AgentFor, NotAnArmCpuinfoOrNoFileIsExit2) {
    Outcome o = run_captured({"agent-for", cpuinfo("x86_laptop.txt")});
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(o.out, "");
    EXPECT_NE(o.err.find("no 'Features' line"), std::string::npos) << o.err;
    o = run_captured({"agent-for", cpuinfo("no_such_file.txt")});
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(o.out, "");
}

TEST(AgentApp, RegistersOnlyTheMeasuringCommands) {
    const Outcome help = run_agent({"--help"});
    EXPECT_EQ(help.code, 0);
    for (const char* c : {"version", "synth", "devices", "run", "sensors", "sustained", "ops"})
        EXPECT_NE(help.out.find(std::string("\n  ") + c + " "), std::string::npos) << c;
    for (const char* c : {"report", "db", "compare", "demo", "agent-for"}) {
        const Outcome o = run_agent({c});
        // Not a command here (a registered one would complain about its own arguments).
        EXPECT_EQ(o.code, 2) << c;
        EXPECT_EQ(o.err,
                  "stagebench: error: A subcommand is required (see stagebench-agent --help)\n")
            << c;
    }
}

}  // namespace
}  // namespace sb::cli
