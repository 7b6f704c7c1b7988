#include "cli/store_hook.hpp"

#include "core/error.hpp"
#include "store/result_store.hpp"

namespace sb::cli {

void add_db_option(CLI::App* cmd, Context& ctx) {
    cmd->add_option("--db", ctx.db_path,
                    "append the result document to this SQLite results store (created when "
                    "absent)")
        ->check(CLI::Validator(
            [](std::string& path) -> std::string {
                try {
                    ResultStore::open(path);
                    return "";
                } catch (const Error& e) {
                    return e.what();
                }
            },
            "FILE", "results store"));
}

void store_document(Context& ctx, const nlohmann::json& doc) {
    if (ctx.db_path.empty())
        return;
    ResultStore store = ResultStore::open(ctx.db_path);
    const int64_t id = store.append(doc);
    ctx.err << "stagebench: stored as #" << id << " in " << ctx.db_path << "\n";
}

LastWordScope store_on_stop(Context& ctx, std::function<std::vector<nlohmann::json>()> docs) {
    return LastWordScope([&ctx, docs](const std::string&) -> std::optional<std::string> {
        if (ctx.db_path.empty())
            return std::nullopt;
        ResultStore store = ResultStore::open(ctx.db_path);
        for (const auto& d : docs())
            store.append(d);
        return std::nullopt;
    });
}

}  // namespace sb::cli
