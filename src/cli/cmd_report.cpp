#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/shared_flags.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/version.hpp"
#include "report/html_report.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

namespace sb::cli {

void add_report_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "report",
        "One self-contained HTML page (charts inline, works offline) from result and "
        "compare documents");
    struct Args {
        std::vector<std::string> inputs;
        std::string out_path, title = "stagebench report";
        std::optional<std::string> db_path, latest;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("documents", a->inputs,
                    "result or compare documents (JSON), or db:ID of the --db store");
    cmd->add_option("-o,--out", a->out_path, "the HTML file to write")->required();
    cmd->add_option("--title", a->title, "page title")->capture_default_str();
    add_store_flag(cmd, a->db_path, "db:ID and --latest read from");
    cmd->add_option("--latest", a->latest,
                    "with --db: the latest document of this command (run, sustained, serve, "
                    "...) of every device in the store, after the documents given");
    cmd->callback([&ctx, a] {
        if (a->inputs.empty() && !a->latest)
            throw usage_error("report needs documents (files or db:ID) or --latest COMMAND");
        if (a->latest && !a->db_path)
            throw usage_error("--latest reads a results store: add --db STORE");
        std::vector<std::string> sources = a->inputs;
        if (a->db_path)
            sources.push_back(printable_store_name(*a->db_path));
        with_documents(sources, [&] {
            check_output_path(a->out_path, "the report (-o)");  // before reading any document
            std::optional<ResultStore> store;
            auto open = [&]() -> ResultStore& {
                if (!store)
                    store = ResultStore::open(*a->db_path, ResultStore::Mode::existing);
                return *store;
            };
            std::vector<ReportInput> docs;
            for (const auto& input : a->inputs) {
                if (const auto id = parse_db_operand(input)) {
                    if (!a->db_path)
                        throw usage_error("'" + input + "' reads a results store: add --db STORE");
                    docs.push_back(ReportInput::of(input, open().get(*id)));
                } else {
                    docs.push_back(load_report_input(input));
                }
            }
            if (a->latest) {
                ResultStore& s = open();
                const auto ids = s.latest_per_device(*a->latest);
                if (ids.empty())
                    throw input_error("no '" + *a->latest + "' document in results store '" +
                                      s.path() + "'");
                // Labelled by device, as the store's query found them.
                std::map<int64_t, std::string> device_of;
                for (const auto& e : s.list())
                    device_of[e.id] = e.device.value_or("?");
                for (const int64_t id : ids)
                    docs.push_back(ReportInput::of(
                        "db:" + std::to_string(id) + " (" + device_of[id] + ")", s.get(id)));
            }
            HtmlOptions o;
            o.title = a->title;
            o.tool_version = tool_version();
            std::ostringstream page;
            write_html_report(docs, o, page);
            // Written beside the target and moved into place (a reader never sees half a page), or
            // in place for a FIFO or a device.
            write_output_file(a->out_path, page.str(), "the report (-o)");
            ctx.err << "report: wrote " << a->out_path << " (" << docs.size() << " document"
                    << (docs.size() == 1 ? "" : "s") << ")\n";
        });
    });
}

}  // namespace sb::cli
