#include "cli/commands.hpp"

namespace sb::cli {

void build_app(CLI::App& app, Context& ctx) {
    app.description(
        "stagebench: where the time and the energy of on-device LLM inference go.\n"
        "Prefill and decode measured separately, per backend, with statistics you can trust.");
    app.require_subcommand(1);
    add_version_command(app, ctx);
    add_synth_command(app, ctx);
    add_devices_command(app, ctx);
    add_run_command(app, ctx);
    add_membw_command(app, ctx);
    add_demo_command(app, ctx);
    add_sensors_command(app, ctx);
    add_sustained_command(app, ctx);
    add_ops_command(app, ctx);
    add_decompose_command(app, ctx);
    add_import_command(app, ctx);
    add_hybrid_command(app, ctx);
    add_advise_command(app, ctx);
    add_report_command(app, ctx);
    add_db_command(app, ctx);
    add_compare_command(app, ctx);
    add_trace_command(app, ctx);
    add_rpc_server_command(app, ctx);
    add_logits_command(app, ctx);
    add_agent_for_command(app, ctx);
    add_fleet_command(app, ctx);
    add_bundle_command(app, ctx);
    add_ingest_command(app, ctx);
    add_fidelity_command(app, ctx);
    add_serve_command(app, ctx);
    add_explain_command(app, ctx);
}

int run_cli(int argc, const char* const* argv, Context& ctx) {
    return run_app(argc, argv, ctx, "stagebench", build_app);
}

}  // namespace sb::cli
