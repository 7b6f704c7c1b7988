#include "cli/commands.hpp"

namespace sb::cli {

void build_agent_app(CLI::App& app, Context& ctx) {
    app.description(
        "stagebench-agent: stagebench's measuring commands in one static executable for a phone "
        "or board (adb push). Reports, comparisons and the results store are the host's "
        "stagebench's: copy the documents back and `stagebench db import` them.");
    app.require_subcommand(1);
    add_version_command(app, ctx);
    add_synth_command(app, ctx);
    add_devices_command(app, ctx);
    add_run_command(app, ctx);
    add_sensors_command(app, ctx);
    add_sustained_command(app, ctx);
    add_ops_command(app, ctx);
    add_logits_command(app, ctx);
}

int run_agent_cli(int argc, const char* const* argv, Context& ctx) {
    return run_app(argc, argv, ctx, "stagebench-agent", build_agent_app);
}

}  // namespace sb::cli
