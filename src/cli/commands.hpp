#pragma once
// Subcommand registration. Each subcommand lives in its own cmd_<name>.cpp and only parses
// arguments and calls the library; it holds no measuring logic. A command sets ctx.exit_code
// (exit_code_for() in core/result.hpp: 0 ok, 1 a test failed or was interrupted, 2 a test
// failed on bad input) or throws sb::Error; run_cli() maps errors to exit codes (README, "Bad
// input and faults").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace sb::cli {

struct Context {
    std::ostream& out;  // machine-readable or report output only
    std::ostream& err;  // progress, logs, warnings
    int exit_code = 0;
    std::vector<std::string> argv;  // the command line as given, for the result document
    std::string db_path;    // --db: the results store the result document goes to ("": none)
    double db_wait_s = 60;  // --db-wait: seconds to wait while another writer holds the store
};

void add_version_command(CLI::App& app, Context& ctx);
void add_synth_command(CLI::App& app, Context& ctx);
void add_devices_command(CLI::App& app, Context& ctx);
void add_run_command(CLI::App& app, Context& ctx);
void add_membw_command(CLI::App& app, Context& ctx);
void add_demo_command(CLI::App& app, Context& ctx);
void add_sensors_command(CLI::App& app, Context& ctx);
void add_sustained_command(CLI::App& app, Context& ctx);
void add_ops_command(CLI::App& app, Context& ctx);
void add_decompose_command(CLI::App& app, Context& ctx);
void add_import_command(CLI::App& app, Context& ctx);
// `import tegrastats` (cmd_import_telemetry.cpp), under the import command.
void add_import_tegrastats(CLI::App* import, Context& ctx);
void add_hybrid_command(CLI::App& app, Context& ctx);
void add_advise_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);
void add_db_command(CLI::App& app, Context& ctx);
void add_compare_command(CLI::App& app, Context& ctx);
void add_trace_command(CLI::App& app, Context& ctx);
void add_rpc_server_command(CLI::App& app, Context& ctx);
void add_logits_command(CLI::App& app, Context& ctx);
void add_agent_for_command(CLI::App& app, Context& ctx);
void add_fleet_command(CLI::App& app, Context& ctx);
void add_bundle_command(CLI::App& app, Context& ctx);
void add_ingest_command(CLI::App& app, Context& ctx);
void add_fidelity_command(CLI::App& app, Context& ctx);
void add_serve_command(CLI::App& app, Context& ctx);
void add_explain_command(CLI::App& app, Context& ctx);

// --stage-timeout SECONDS for the commands that use RPC devices (core/watchdog.hpp).
void add_stage_timeout_option(CLI::App* cmd);

// Runs f, a command's work on the documents named in sources (report, compare, advise, trace,
// db show). Documents are checked when they are read (core/document.hpp); should a reader still
// meet a value it cannot use, that is the documents' fault: sb::Error(input) naming them, one
// line, not a library exception.
template <class F>
void with_documents(const std::vector<std::string>& sources, F&& f) {
    try {
        f();
    } catch (const nlohmann::json::exception& e) {
        std::string names;
        for (const auto& s : sources)
            names += (names.empty() ? "'" : ", '") + s + "'";
        throw Error(ErrorKind::input, "unusable value in " + names + ": " + e.what());
    }
}

// Builds the whole CLI; used by main() and by CLI tests.
void build_app(CLI::App& app, Context& ctx);

// Runs argv through the CLI and returns the process exit code; never throws.
int run_cli(int argc, const char* const* argv, Context& ctx);

// Registers a CLI's commands on app (build_app, build_agent_app).
using AppBuilder = void (*)(CLI::App& app, Context& ctx);

// Runs argv through the CLI that build registers, named name in its help and usage errors;
// returns the process exit code; never throws. run_cli is run_app(..., "stagebench", build_app).
int run_app(int argc, const char* const* argv, Context& ctx, const std::string& name,
            AppBuilder build);

// The static phone agent's CLI (stagebench-agent-<level>, STAGEBENCH_AGENT=ON): version,
// synth, devices, run, ops, sustained and sensors, which measure and write result documents;
// no HTTP engine and no --db store (those say "not in the agent build"), no reports: the host
// imports the documents (stagebench db import) and does the rest.
void build_agent_app(CLI::App& app, Context& ctx);

// run_app(..., "stagebench-agent", build_agent_app).
int run_agent_cli(int argc, const char* const* argv, Context& ctx);

}  // namespace sb::cli
