#include <fstream>
#include <memory>
#include <optional>

#include "analysis/advise.hpp"
#include "analysis/compare_inputs.hpp"
#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "report/advise_report.hpp"

namespace sb::cli {

namespace {

struct AdviseArgs {
    std::vector<std::string> inputs;
    std::optional<std::string> db_path;
    OutputFormat format = OutputFormat::md;
    std::optional<std::string> out_path;
    double budget_us = 10;
    std::optional<int> n_prompt, n_gen;
};

}  // namespace

void add_advise_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "advise", "Which backend should run which stage, from this device's result documents");
    auto a = std::make_shared<AdviseArgs>();
    cmd->add_option("documents", a->inputs,
                    "result documents (JSON files, or db:ID from --db) of run, hybrid, ops, "
                    "decompose, sustained")
        ->required();
    add_store_flag(cmd, a->db_path, "db:ID operands are read from");
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    add_out_flag(cmd, a->out_path, "advice");
    cmd->add_option("--dispatch-budget-us", a->budget_us,
                    "flag operators whose call overhead per call exceeds this")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--prompt", a->n_prompt, "prompt length to predict for")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--gen", a->n_gen, "generated tokens to predict for")
        ->check(CLI::PositiveNumber);
    cmd->callback([&ctx, a] {
        with_documents(a->inputs, [&] {
            std::vector<AdviseInput> in;
            for (auto& c : load_compare_inputs(a->inputs, a->db_path, {}))
                in.push_back({std::move(c.source), std::move(c.doc)});
            AdviseOptions o;
            o.dispatch_budget_ns = a->budget_us * 1e3;
            o.n_prompt = a->n_prompt;
            o.n_gen = a->n_gen;
            const Advice advice = advise(in, o);
            for (const auto& w : advice.warnings)
                ctx.err << "warning: " << w.message << "\n";
            if (a->out_path) {
                write_output_file(*a->out_path, dump_json(to_json(advice), 2) + "\n",
                                  "the advice (--out)");
            }
            if (a->format == OutputFormat::json)
                ctx.out << dump_json(to_json(advice), 2) << "\n";
            else
                write_advice_markdown(advice, ctx.out);
        });
    });
}

}  // namespace sb::cli
