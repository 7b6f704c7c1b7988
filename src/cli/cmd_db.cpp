#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "core/document.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "report/store_report.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

namespace sb::cli {

void add_db_command(CLI::App& app, Context& ctx) {
    auto* db = app.add_subcommand(
        "db", "List, show, export, import and copy the documents of a results store");
    db->require_subcommand(1);
    struct Args {
        std::string path;
        OutputFormat format = OutputFormat::md;
        int64_t id = 0;
        std::optional<std::string> out_path;
        std::vector<std::string> files;
        double wait_s = 60;
        std::string from, to;
    };
    auto a = std::make_shared<Args>();
    auto add_db = [&](CLI::App* cmd) {
        add_store_flag(cmd, a->path)->required();
        cmd->add_option("--db-wait", a->wait_s,
                        "seconds to wait while another writer holds the store")
            ->check(seconds_check(true))
            ->capture_default_str();
    };
    // Waits while another writer holds the store (a server: until it answers), saying so
    // every few seconds.
    auto open_store = [&ctx, a](const std::string& name, ResultStore::Mode mode) {
        StoreWait w;
        w.timeout_s = a->wait_s;
        const std::string shown = printable_store_name(name);
        const bool server = is_postgres_url(name);
        w.on_wait = [&ctx, shown, server](double s) {
            ctx.err << "stagebench: results store '" << shown
                    << (server ? "' has not answered yet; waited "
                               : "' is locked by another writer; waited ")
                    << static_cast<int>(s) << " s (--db-wait)\n";
        };
        return ResultStore::open(name, mode, w);
    };
    auto open = [a, open_store](ResultStore::Mode mode) { return open_store(a->path, mode); };

    auto* list = db->add_subcommand("list", "One row per stored document");
    add_db(list);
    add_format_option(list, a->format, {OutputFormat::md, OutputFormat::json});
    list->callback([&ctx, a, open] {
        const auto entries = open(ResultStore::Mode::existing).list();
        if (a->format == OutputFormat::json)
            ctx.out << dump_json(store_list_json(entries), 2) << "\n";
        else
            write_store_list_markdown(ctx.out, entries);
    });

    auto* show = db->add_subcommand("show", "A stored document's summary: system and tests");
    add_db(show);
    show->add_option("ID", a->id, "document id (see db list)")->required();
    show->callback([&ctx, a, open] {
        with_documents({"db:" + std::to_string(a->id) + " in " + printable_store_name(a->path)},
                       [&] {
                           const auto doc = open(ResultStore::Mode::existing).get(a->id);
                           write_document_summary_markdown(ctx.out, a->id, doc);
                       });
    });

    auto* exp = db->add_subcommand("export", "A stored document's JSON exactly as it was stored");
    add_db(exp);
    exp->add_option("ID", a->id, "document id (see db list)")->required();
    exp->add_option("--out", a->out_path, "write it to this file instead of stdout");
    exp->callback([&ctx, a, open] {
        const std::string text = open(ResultStore::Mode::existing).get_text(a->id) + "\n";
        if (a->out_path)
            write_text_file(*a->out_path, text, "the exported document (--out)");
        else
            ctx.out << text;
    });

    auto* imp = db->add_subcommand(
        "import",
        "Append result documents (JSON files, e.g. one a run wrote beside a busy store); one "
        "already there is not stored again");
    add_db(imp);
    imp->add_option("FILES", a->files, "result documents (JSON)")->required();
    imp->callback([&ctx, a, open] {
        // Every file is read and checked before anything is stored: one bad file stores none.
        std::vector<ResultDocument> docs;
        for (const auto& f : a->files)
            docs.push_back(load_result_document(f));
        ResultStore store = open(ResultStore::Mode::create);
        for (std::size_t i = 0; i < docs.size(); ++i) {
            Appended done;
            try {
                // By content: a file imported twice, or a document a run stored though the
                // store's answer was lost (so it also wrote the file), is there once.
                done = store.append_once(docs[i]);
            } catch (const Error& e) {
                // The note of each stored file is a line of its own; this is the error line.
                throw Error(e.kind(),
                            a->files[i] + " was not stored" +
                                (i > 0 ? " (the " + std::to_string(i) + " file(s) before it were)"
                                       : std::string()) +
                                ": " + e.what());
            }
            if (done.added)
                ctx.err << "stagebench: stored " << a->files[i] << " as #" << done.id << " in "
                        << store.path() << "\n";
            else
                ctx.err << "stagebench: " << a->files[i] << " is already in " << store.path()
                        << " as #" << done.id << "\n";
        }
    });

    auto* copy = db->add_subcommand(
        "copy",
        "Copy every document and fleet run of one store into another (SQLite or PostgreSQL, "
        "either way); what is already there is not copied again");
    copy->add_option("--from", a->from, "the store to read (a SQLite file or postgresql://...)")
        ->required();
    copy->add_option("--to", a->to, "the store to add to (created when absent)")->required();
    copy->add_option("--db-wait", a->wait_s, "seconds to wait while another writer holds a store")
        ->check(seconds_check(true))
        ->capture_default_str();
    copy->callback([&ctx, a, open_store] {
        const ResultStore from = open_store(a->from, ResultStore::Mode::existing);
        ResultStore to = open_store(a->to, ResultStore::Mode::create);
        if (to.read_only())
            throw runtime_error("results store '" + to.path() + "' cannot be written");
        CopySummary last;
        try {
            last = copy_store(from, to, [&](const CopySummary& s) { last = s; });
        } catch (const Error& e) {
            // What was copied stays: each document is one transaction of the target.
            if (last.documents_added + last.fleet_runs_added > 0)
                ctx.err << "stagebench: copied " << last.documents_added << " document(s) and "
                        << last.fleet_runs_added << " fleet run(s) before this\n";
            throw;
        }
        ctx.err << "stagebench: copied " << from.path() << " to " << to.path() << ": "
                << last.documents_added << " document(s) added, " << last.documents_present
                << " already there";
        if (!last.skipped.empty())
            ctx.err << ", " << last.skipped.size() << " not copied";
        ctx.err << "; " << last.fleet_runs_added << " fleet run(s) added, "
                << last.fleet_runs_present << " already there\n";
        // The rest is copied; what `db show` refuses (null, [], a document of the wrong shape)
        // is not, and the copy ends as bad input.
        if (!last.skipped.empty())
            throw input_error((last.skipped.size() == 1 ? std::string()
                                                        : std::to_string(last.skipped.size()) +
                                                              " documents were not copied, the "
                                                              "first: ") +
                              last.skipped.front() + " (not copied)");
    });
}

}  // namespace sb::cli
