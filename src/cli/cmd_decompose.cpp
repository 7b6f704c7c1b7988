#include "cli/commands.hpp"

namespace sb::cli {

// Defined in cmd_ops.cpp: `ops` and `decompose` share their options and their run.
void add_ops_like_command(CLI::App& app, Context& ctx, bool decompose);

void add_decompose_command(CLI::App& app, Context& ctx) {
    add_ops_like_command(app, ctx, true);
}

}  // namespace sb::cli
