#pragma once
// `--db FILE` on the commands that produce a result document (run, demo, sustained, ops,
// decompose, import hexagon-profile, ...): each adds the option with add_db_option() and calls
// store_document() (or finish_document()) once its document is final, also when some test
// failed.
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/last_word.hpp"
#include "core/result.hpp"
#include "scenario/run_context.hpp"

namespace sb::cli {

// Adds `--db STORE` (bound to ctx.db_path: a SQLite file, or a PostgreSQL URI
// postgresql://user@host:port/dbname, store/store_name.hpp) and `--db-wait SECONDS`
// (ctx.db_wait_s) to cmd. The store is opened (created or migrated) while the command line is
// parsed, so a file that is not a store, is damaged or cannot be written, and a server that
// cannot be reached or refuses the login, are a usage error before anything is measured. A URI
// with a password is taken (with a warning on ctx.err: PGPASSWORD, ~/.pgpass or a PGSERVICE
// entry keep it off the command line), and ctx.argv, which the result document records, keeps
// it without its password.
void add_db_option(CLI::App* cmd, Context& ctx);

// Appends doc to the store at ctx.db_path and notes "stored as #ID in STORE" on ctx.err (the
// store named without a password); does nothing when ctx.db_path is empty. Never writes to
// ctx.out. While another writer holds the store (a PostgreSQL server: until it answers) it
// waits up to ctx.db_wait_s, with a progress line every few seconds. When the store cannot take
// the document (still locked, the wait interrupted by Ctrl-C, read-only, damaged, full; a
// server that cannot be reached, refuses the login or goes away), the document is written to a
// new file (write_fallback_document(): beside a SQLite file, in the current folder for a
// PostgreSQL database, and in the current folder when beside fails), one error line says where
// and how `db import` adds it later, and ctx.exit_code becomes at least 1: what was measured is
// never lost. Throws sb::Error(runtime) only when no fallback file can be written either.
void store_document(Context& ctx, const ResultDocument& doc);

// The name of the files store_document() writes a document the store refused to, before their
// ".json" (or "-2.json", "-3.json", ...): store/store_name.hpp fallback_document_base() at the
// current UTC time ("results.sqlite.20261129T093000Z", "bench.20261129T093000Z").
std::string fallback_document_base(const std::string& db_path);

// store/store_name.hpp write_fallback_document().
std::string write_fallback_document(const std::string& base, const std::string& text);

// The end of a command that measured doc's tests: stores doc (store_document), then, when a
// test failed on bad input (a model llama.cpp refuses, found in the middle of a sweep), says
// so in one error line; ctx.exit_code is the command's code (exit_code_for()).
void finish_document(Context& ctx, const ResultDocument& doc);

// The end of a command whose runner returned r (scenario/run_context.hpp): ctx.exit_code from
// r.outcome (exit_code_of), then finish_document(r.doc); when the run stopped on an error
// after measuring (r.error: an --out that could not be written), that error is thrown last,
// after the document reached the store.
void finish_run(Context& ctx, const RunResult& r);

// What a measuring command's run context does with its document when llama.cpp stops the
// process (RunEnv::on_last_word): as keep_measured's last word, the document goes to stdout
// when json_stdout and is appended to the --db store.
std::function<void(const ResultDocument&)> keep_on_stop(Context& ctx, bool json_stdout);

// The last word (core/last_word.hpp) of a command whose measurement has no run context (ops,
// decompose), for the command's lifetime: when
// llama.cpp stops the process mid-run, the documents docs() returns (the running scenario's
// last word has already recorded the failed test in them) go to stdout when json_stdout (what
// -o json would have printed at the end) and are appended to the --db store once, without the
// "stored as" note: the stop prints one line (a store that refuses them still gets its fallback
// file and error line, as in store_document()). --out needs none: it is rewritten after every
// test. Keep it alive as `const auto last = keep_measured(ctx, doc, json);` before the run.
LastWordScope keep_measured(Context& ctx, std::function<std::vector<ResultDocument>()> docs,
                            bool json_stdout);
LastWordScope keep_measured(Context& ctx, const ResultDocument& doc, bool json_stdout);

}  // namespace sb::cli
