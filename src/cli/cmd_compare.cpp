#include "analysis/compare_inputs.hpp"
#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/junit_option.hpp"
#include "cli/shared_flags.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "core/version.hpp"
#include "report/compare_report.hpp"
#include "report/gate_report.hpp"
#include "report/html_report.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

#include <map>
#include <sstream>

namespace sb::cli {

namespace {

// The latest ok document of every device of fleet, in the order the devices first ran, as
// db:ID operands labelled by the device (after the labels given, which name earlier inputs).
void add_fleet_operands(const std::string& fleet, const std::optional<std::string>& db_path,
                        std::vector<std::string>& operands, std::vector<std::string>& labels) {
    if (!db_path)
        throw usage_error("--fleet needs --db, the fleet's results store");
    const auto runs = ResultStore::open(*db_path, ResultStore::Mode::existing).fleet_runs(fleet);
    std::vector<std::string> devices;
    std::map<std::string, int64_t> latest;
    for (const auto& r : runs) {
        if (r.status != "ok" || !r.document_id)
            continue;
        if (!latest.count(r.device))
            devices.push_back(r.device);
        latest[r.device] = *r.document_id;
    }
    if (devices.empty())
        throw input_error("no document of fleet '" + fleet + "' in results store '" +
                          printable_store_name(*db_path) + "' (fleet status lists what ran)");
    const auto defaults = default_compare_labels(operands.size());
    for (std::size_t i = labels.size(); i < operands.size(); ++i)
        labels.push_back(defaults[i]);
    for (const auto& d : devices) {
        operands.push_back("db:" + std::to_string(latest[d]));
        labels.push_back(d);
    }
}

}  // namespace

void add_compare_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "compare",
        "Compare result documents test by test against the first (the baseline): medians, CVs, "
        "ratios with bootstrap 95% CIs");
    struct Args {
        std::vector<std::string> operands, labels, aliases;
        std::optional<std::string> match;
        std::optional<std::string> db_path, out_path, html_path, fleet;
        std::optional<std::string> fail_if_slower, fail_if_energy;
        OutputFormat format = OutputFormat::md;
        CompareOptions opts;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("INPUTS", a->operands, "result documents (JSON files) or db:ID")
        ->expected(0, -1);
    add_store_flag(cmd, a->db_path, "db:ID operands are read from");
    cmd->add_option("--fleet", a->fleet,
                    "compare the devices of this fleet (the store's latest ok document of each "
                    "device, labelled by its name; after any INPUTS)");
    cmd->add_option("--label", a->labels, "name of each input in order (repeatable)")
        ->take_all()
        ->allow_extra_args(false);
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
    add_out_flag(cmd, a->out_path, "compare document");
    cmd->add_option("--html", a->html_path,
                    "also write an HTML page: the comparison, then every input's sections");
    cmd->add_option("--resamples", a->opts.resamples, "bootstrap resamples per ratio")
        ->check(CLI::Range(2000, 1000000))
        ->capture_default_str();
    cmd->add_option("--seed", a->opts.seed, "bootstrap seed")->capture_default_str();
    cmd->add_option("--match", a->match,
                    "configuration fields tests must agree on to be compared, comma list of "
                    "m(odel),p,n,d,b,ub,ctk,ctv,fa,engine,dev(ices),t,ngl (default: "
                    "m,p,n,d,b,ub,ctk,ctv,fa,engine); e.g. p,n,d compares across engines, "
                    "devices and models");
    cmd->add_option("--model-alias", a->aliases,
                    "NAME=ALIAS: match the model NAME (file name, path, or the name asked of a "
                    "server, e.g. an Ollama tag) as ALIAS (repeatable)")
        ->take_all()
        ->allow_extra_args(false);
    cmd->add_option("--fail-if-slower", a->fail_if_slower,
                    "PCT: exit 1 when a later input is slower than the baseline by more than "
                    "PCT (e.g. 5%) with the whole 95% CI of a ratio beyond it (rates, times)");
    cmd->add_option("--fail-if-energy", a->fail_if_energy,
                    "PCT: exit 1 when a later input takes more energy per token (J/token) than "
                    "the baseline by more than PCT with the whole 95% CI beyond it");
    auto junit = std::make_shared<JunitOutput>("compare");
    junit->add_option(cmd);
    cmd->callback(junit->wrap([&ctx, a, junit] {
        with_documents(a->operands, [&] {
            std::vector<GateSpec> gates;
            if (a->fail_if_slower)
                gates.push_back(
                    {"fail-if-slower", parse_gate_threshold("fail-if-slower", *a->fail_if_slower)});
            if (a->fail_if_energy)
                gates.push_back(
                    {"fail-if-energy", parse_gate_threshold("fail-if-energy", *a->fail_if_energy)});
            junit->check();
            a->opts.tool_version = tool_version();
            if (a->match)
                a->opts.match = parse_compare_match(*a->match);
            for (const auto& text : a->aliases) {
                auto [name, alias] = parse_model_alias(text);
                if (!a->opts.model_alias.emplace(name, alias).second)
                    throw usage_error("--model-alias: " + name + " is given two aliases");
            }
            if (a->fleet)
                add_fleet_operands(*a->fleet, a->db_path, a->operands, a->labels);
            if (a->operands.size() < 2)
                throw usage_error(
                    "compare needs two inputs or more (documents, db:ID, or "
                    "--fleet NAME with two devices or more)");
            auto inputs = load_compare_inputs(a->operands, a->db_path, a->labels);
            CompareResult r = compare_documents(inputs, a->opts);
            r.gates = evaluate_gates(r, gates);
            if (a->out_path)
                write_text_file(*a->out_path, dump_json(to_json(r), 2) + "\n",
                                "the compare document (--out)");
            if (a->html_path) {
                std::vector<ReportInput> docs{ReportInput::of("compare", r)};
                for (auto& in : inputs)
                    docs.push_back(ReportInput::of(in.label + ": " + in.source, std::move(in.doc)));
                HtmlOptions o;
                o.title = "stagebench compare";
                o.tool_version = tool_version();
                std::ostringstream page;
                write_html_report(docs, o, page);
                write_text_file(*a->html_path, page.str(), "the report (--html)");
            }
            write_compare(ctx.out, r, a->format);
            for (const auto& g : r.gates)
                ctx.err << "stagebench: gate " << gate_summary(g) << "\n";
            if (any_gate_failed(r.gates))
                ctx.exit_code = 1;
            junit->write(junit_of_compare(r));
        });
    }));
}

}  // namespace sb::cli
