#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/document.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "report/store_report.hpp"
#include "store/result_store.hpp"

namespace sb::cli {

void add_db_command(CLI::App& app, Context& ctx) {
    auto* db =
        app.add_subcommand("db", "List, show, export and import the documents of a results store");
    db->require_subcommand(1);
    struct Args {
        std::string path;
        OutputFormat format = OutputFormat::md;
        int64_t id = 0;
        std::optional<std::string> out_path;
        std::vector<std::string> files;
        double wait_s = 60;
    };
    auto a = std::make_shared<Args>();
    auto add_db = [&](CLI::App* cmd) {
        cmd->add_option("--db", a->path, "the SQLite results store")->required();
        cmd->add_option("--db-wait", a->wait_s,
                        "seconds to wait while another writer holds the store")
            ->check(seconds_check(true))
            ->capture_default_str();
    };
    // Waits while another writer holds the store, saying so every few seconds.
    auto open = [&ctx, a](ResultStore::Mode mode) {
        StoreWait w;
        w.timeout_s = a->wait_s;
        w.on_wait = [&ctx, a](double s) {
            ctx.err << "stagebench: results store '" << a->path
                    << "' is locked by another writer; waited " << static_cast<int>(s)
                    << " s (--db-wait)\n";
        };
        return ResultStore::open(a->path, mode, w);
    };

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
        with_documents({"db:" + std::to_string(a->id) + " in " + a->path}, [&] {
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
        "import", "Append result documents (JSON files, e.g. one a run wrote beside a busy store)");
    add_db(imp);
    imp->add_option("FILES", a->files, "result documents (JSON)")->required();
    imp->callback([&ctx, a, open] {
        // Every file is read and checked before anything is stored: one bad file stores none.
        std::vector<ResultDocument> docs;
        for (const auto& f : a->files)
            docs.push_back(load_result_document(f));
        ResultStore store = open(ResultStore::Mode::create);
        for (std::size_t i = 0; i < docs.size(); ++i) {
            int64_t id = 0;
            try {
                id = store.append(docs[i]);
            } catch (const Error& e) {
                // The note of each stored file is a line of its own; this is the error line.
                throw Error(e.kind(),
                            a->files[i] + " was not stored" +
                                (i > 0 ? " (the " + std::to_string(i) + " file(s) before it were)"
                                       : std::string()) +
                                ": " + e.what());
            }
            ctx.err << "stagebench: stored " << a->files[i] << " as #" << id << " in " << a->path
                    << "\n";
        }
    });
}

}  // namespace sb::cli
