#pragma once
// `--db FILE` on the commands that produce a result document (run, demo, sustained, ops,
// decompose, import hexagon-profile, ...): each adds the option with add_db_option() and calls
// store_document() once its document is final, also when some test failed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"

namespace sb::cli {

// Adds `--db FILE` to cmd, bound to ctx.db_path. The store is opened (created or migrated)
// while the command line is parsed, so an unusable file is a usage error before anything is
// measured.
void add_db_option(CLI::App* cmd, Context& ctx);

// Appends doc to the store at ctx.db_path and notes "stored as #ID in FILE" on ctx.err; does
// nothing when ctx.db_path is empty. Never writes to ctx.out. Throws sb::Error(input) when the
// store cannot be opened (not SQLite, newer schema) or the document cannot be stored.
void store_document(Context& ctx, const nlohmann::json& doc);

}  // namespace sb::cli
