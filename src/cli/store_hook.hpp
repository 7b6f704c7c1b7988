#pragma once
// `--db FILE` on the commands that produce a result document (run, demo, sustained, ops,
// decompose, import hexagon-profile, ...): each adds the option with add_db_option() and calls
// store_document() once its document is final, also when some test failed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>

#include "cli/commands.hpp"
#include "core/last_word.hpp"

namespace sb::cli {

// Adds `--db FILE` to cmd, bound to ctx.db_path. The store is opened (created or migrated)
// while the command line is parsed, so an unusable file is a usage error before anything is
// measured.
void add_db_option(CLI::App* cmd, Context& ctx);

// Appends doc to the store at ctx.db_path and notes "stored as #ID in FILE" on ctx.err; does
// nothing when ctx.db_path is empty. Never writes to ctx.out. Throws sb::Error(input) when the
// store cannot be opened (not SQLite, newer schema) or the document cannot be stored.
void store_document(Context& ctx, const nlohmann::json& doc);

// A last word (core/last_word.hpp) for the command's lifetime: when llama.cpp stops the
// process mid-run, the documents docs() returns (the running scenario's last word has already
// recorded the failed test in them) are appended to the store at ctx.db_path, without the
// "stored as" note: the stop prints one line. Nothing when ctx.db_path is empty.
LastWordScope store_on_stop(Context& ctx, std::function<std::vector<nlohmann::json>()> docs);

}  // namespace sb::cli
