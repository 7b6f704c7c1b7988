#include <sstream>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/version.hpp"
#include "report/html_report.hpp"

namespace sb::cli {

void add_report_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "report",
        "One self-contained HTML page (charts inline, works offline) from result and "
        "compare documents");
    auto inputs = std::make_shared<std::vector<std::string>>();
    auto out_path = std::make_shared<std::string>();
    auto title = std::make_shared<std::string>("stagebench report");
    cmd->add_option("documents", *inputs, "result or compare documents (JSON)")->required();
    cmd->add_option("-o,--out", *out_path, "the HTML file to write")->required();
    cmd->add_option("--title", *title, "page title")->capture_default_str();
    cmd->callback([&ctx, inputs, out_path, title] {
        with_documents(*inputs, [&] {
            check_output_path(*out_path, "the report (-o)");  // before reading any document
            std::vector<ReportInput> docs;
            for (const auto& path : *inputs)
                docs.push_back(load_report_input(path));
            HtmlOptions o;
            o.title = *title;
            o.tool_version = tool_version();
            std::ostringstream page;
            write_html_report(docs, o, page);
            // Written beside the target and moved into place (a reader never sees half a page), or
            // in place for a FIFO or a device.
            write_output_file(*out_path, page.str(), "the report (-o)");
            ctx.err << "report: wrote " << *out_path << " (" << docs.size() << " document"
                    << (docs.size() == 1 ? "" : "s") << ")\n";
        });
    });
}

}  // namespace sb::cli
