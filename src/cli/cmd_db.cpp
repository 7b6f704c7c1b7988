#include "cli/commands.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "report/store_report.hpp"
#include "store/result_store.hpp"

namespace sb::cli {

void add_db_command(CLI::App& app, Context& ctx) {
    auto* db = app.add_subcommand("db", "List, show and export the documents of a results store");
    db->require_subcommand(1);
    struct Args {
        std::string path, format = "md";
        int64_t id = 0;
        std::optional<std::string> out_path;
    };
    auto a = std::make_shared<Args>();
    auto add_db = [&](CLI::App* cmd) {
        cmd->add_option("--db", a->path, "the SQLite results store")->required();
    };

    auto* list = db->add_subcommand("list", "One row per stored document");
    add_db(list);
    list->add_option("-o,--output", a->format, "md or json")
        ->check(CLI::IsMember({"md", "json"}))
        ->capture_default_str();
    list->callback([&ctx, a] {
        const auto entries = ResultStore::open(a->path, ResultStore::Mode::existing).list();
        if (a->format == "json")
            ctx.out << dump_json(store_list_json(entries), 2) << "\n";
        else
            write_store_list_markdown(ctx.out, entries);
    });

    auto* show = db->add_subcommand("show", "A stored document's summary: system and tests");
    add_db(show);
    show->add_option("ID", a->id, "document id (see db list)")->required();
    show->callback([&ctx, a] {
        const auto doc = ResultStore::open(a->path, ResultStore::Mode::existing).get(a->id);
        write_document_summary_markdown(ctx.out, a->id, doc);
    });

    auto* exp = db->add_subcommand("export", "A stored document's JSON exactly as it was stored");
    add_db(exp);
    exp->add_option("ID", a->id, "document id (see db list)")->required();
    exp->add_option("--out", a->out_path, "write it to this file instead of stdout");
    exp->callback([&ctx, a] {
        const std::string text =
            ResultStore::open(a->path, ResultStore::Mode::existing).get_text(a->id) + "\n";
        if (a->out_path)
            write_text_file(*a->out_path, text, "the exported document (--out)");
        else
            ctx.out << text;
    });
}

}  // namespace sb::cli
