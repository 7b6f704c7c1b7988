#pragma once
// Subcommand registration. Each subcommand lives in its own cmd_<name>.cpp and only parses
// arguments and calls the library; it holds no measuring logic. A command sets ctx.exit_code
// (0 ok, 1 some test failed) or throws sb::Error; main() maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace sb::cli {

struct Context {
    std::ostream& out;  // machine-readable or report output only
    std::ostream& err;  // progress, logs, warnings
    int exit_code = 0;
    std::vector<std::string> argv;  // the command line as given, for the result document
    std::string db_path;  // --db: the results store the result document goes to ("": none)
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
void add_hybrid_command(CLI::App& app, Context& ctx);
void add_advise_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);
void add_db_command(CLI::App& app, Context& ctx);
void add_compare_command(CLI::App& app, Context& ctx);
void add_trace_command(CLI::App& app, Context& ctx);
void add_rpc_server_command(CLI::App& app, Context& ctx);

// Builds the whole CLI; used by main() and by CLI tests.
void build_app(CLI::App& app, Context& ctx);

// Runs argv through the CLI and returns the process exit code; never throws.
int run_cli(int argc, const char* const* argv, Context& ctx);

}  // namespace sb::cli
