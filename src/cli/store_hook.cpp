#include "cli/store_hook.hpp"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "cli/flag_checks.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

namespace sb::cli {

namespace {

StoreWait store_wait(Context& ctx) {
    StoreWait w;
    w.timeout_s = ctx.db_wait_s;
    std::ostream* err = &ctx.err;
    const std::string name = printable_store_name(ctx.db_path);
    const bool server = is_postgres_url(ctx.db_path);
    w.on_wait = [err, name, server](double waited_s) {
        *err << "stagebench: results store '" << name
             << (server ? "' has not answered yet; waited "
                        : "' is locked by another writer; waited ")
             << static_cast<int>(waited_s) << " s (--db-wait)\n";
        err->flush();
    };
    return w;
}

}  // namespace

void add_db_option(CLI::App* cmd, Context& ctx) {
    // Before --db: CLI11 checks options in the order they were added, so the wait is known
    // when the store is opened.
    cmd->add_option("--db-wait", ctx.db_wait_s,
                    "seconds to wait while another writer holds the --db store")
        ->check(seconds_check(true))
        ->capture_default_str();
    cmd->add_option("--db", ctx.db_path,
                    "append the result document to this results store: a SQLite file (created "
                    "when absent) or postgresql://user@host:port/dbname")
        ->check(CLI::Validator(
            [&ctx](std::string& path) -> std::string {
                if (store_name_has_password(path)) {
                    // The document records the command line: never with the password.
                    ctx.argv = printable_argv(ctx.argv);
                    ctx.err << "stagebench: warning: the password in --db is visible to other "
                               "users of this machine (ps) and in shell history; put it in "
                               "~/.pgpass, PGPASSWORD or a PGSERVICE entry instead\n";
                }
                const std::string name = printable_store_name(path);
                try {
                    // A short look at a SQLite file: one another writer holds now may be free
                    // by the end, where storing waits --db-wait. A server gets the whole wait.
                    StoreWait glance;
                    glance.timeout_s =
                        is_postgres_url(path) ? ctx.db_wait_s : std::min(1.0, ctx.db_wait_s);
                    const ResultStore s =
                        ResultStore::open(path, ResultStore::Mode::create, glance);
                    if (s.read_only())
                        return "results store '" + name +
                               (s.is_postgres() ? "' cannot be written (a read-only server or "
                                                  "session, or a login without INSERT on its "
                                                  "tables)"
                                                : "' cannot be written (read-only file or folder)");
                    s.last_id();
                    return "";
                } catch (const StoreLocked&) {
                    return "";
                } catch (const Error& e) {
                    return e.what();
                }
            },
            "STORE", "results store"));
}

std::string fallback_document_base(const std::string& db_path) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    return sb::fallback_document_base(db_path, stamp);
}

std::string write_fallback_document(const std::string& base, const std::string& text) {
    return sb::write_fallback_document(base, text);
}

void store_document(Context& ctx, const ResultDocument& doc) {
    if (ctx.db_path.empty())
        return;
    try {
        ResultStore store =
            ResultStore::open(ctx.db_path, ResultStore::Mode::create, store_wait(ctx));
        const int64_t id = store.append(doc);
        ctx.err << "stagebench: stored as #" << id << " in " << store.path() << "\n";
        return;
    } catch (const Error& e) {
        // The measurements must survive the store: beside it, else here.
        const std::string text = dump_json(to_json(doc), 2) + "\n";
        const std::string base = fallback_document_base(ctx.db_path);
        std::string where;
        try {
            where = write_fallback_document(base, text);
        } catch (const Error&) {
            where = write_fallback_document(std::filesystem::path(base).filename().string(), text);
        }
        ctx.err << "stagebench: error: " << e.what() << "; the result document was written to "
                << where << " instead (stagebench db import --db "
                << printable_store_name(ctx.db_path) << " " << where << " adds it later)\n";
        ctx.exit_code = std::max(ctx.exit_code, 1);
    }
}

void finish_document(Context& ctx, const ResultDocument& doc) {
    store_document(ctx, doc);
    if (ctx.exit_code != 2)
        return;
    const TestResult* first = nullptr;
    int n_bad = 0;
    for (const auto& t : doc.tests)
        if (failed_on_bad_input(t)) {
            if (!first)
                first = &t;
            ++n_bad;
        }
    if (!first)
        return;
    ctx.err << "stagebench: error: " << first->error.value_or("bad input") << " (" << n_bad
            << " of " << doc.tests.size() << " tests failed on it";
    if (n_bad < static_cast<int>(doc.tests.size()))
        ctx.err << "; the others ran and are kept";
    ctx.err << ")\n";
}

namespace {

// The process is going down: the documents to stdout (json_stdout) and the store, with a short
// wait, and only a refusal speaks.
void keep_stopped(Context& ctx, const std::vector<ResultDocument>& measured, bool json_stdout) {
    if (json_stdout) {
        for (const auto& d : measured)
            ctx.out << dump_json(to_json(d), 2) << "\n";
        ctx.out.flush();
    }
    if (!ctx.db_path.empty()) {
        std::ostringstream note;
        Context quiet{ctx.out, note, 0, ctx.argv, ctx.db_path, std::min(ctx.db_wait_s, 10.0)};
        for (const auto& d : measured)
            store_document(quiet, d);
        if (quiet.exit_code != 0) {
            ctx.err << note.str();
            ctx.err.flush();
        }
    }
}

}  // namespace

void finish_run(Context& ctx, const RunResult& r) {
    ctx.exit_code = exit_code_of(r.outcome);
    finish_document(ctx, r.doc);
    if (r.error)
        throw *r.error;
}

std::function<void(const ResultDocument&)> keep_on_stop(Context& ctx, bool json_stdout) {
    return [&ctx, json_stdout](const ResultDocument& doc) {
        if (json_stdout || !ctx.db_path.empty())
            keep_stopped(ctx, {doc}, json_stdout);
    };
}

LastWordScope keep_measured(Context& ctx, std::function<std::vector<ResultDocument>()> docs,
                            bool json_stdout) {
    return LastWordScope([&ctx, docs = std::move(docs),
                          json_stdout](const std::string&) -> std::optional<std::string> {
        if (json_stdout || !ctx.db_path.empty())
            keep_stopped(ctx, docs(), json_stdout);
        return std::nullopt;
    });
}

LastWordScope keep_measured(Context& ctx, const ResultDocument& doc, bool json_stdout) {
    return keep_measured(
        ctx, [&doc] { return std::vector<ResultDocument>{doc}; }, json_stdout);
}

}  // namespace sb::cli
