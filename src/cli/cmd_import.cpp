#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "profile/llama_bench_command.hpp"
#include "profile/ops_command.hpp"
#include "profile/server_log_command.hpp"
#include "report/modes_report.hpp"
#include "report/ops_report.hpp"
#include "report/reporter.hpp"
#include "scenario/mode_experiment.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

void add_import_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "import",
        "Import others' measurements: a backend's own profile, llama-bench's output, a "
        "llama-server log's timings, a tegrastats log");
    cmd->require_subcommand(1);
    add_import_tegrastats(cmd, ctx);
    auto* hex = cmd->add_subcommand(
        "hexagon-profile",
        "Parse Hexagon profile logs (every llama.cpp format since the backend appeared, "
        "with llama.cpp or logcat line prefixes) into per-op records and tables");
    auto o = std::make_shared<ImportOptions>();
    hex->add_option("LOG", o->log_path, "log file with Hexagon profile lines (unless --mode)");
    auto modes = std::make_shared<std::vector<std::string>>();
    hex->add_option("--mode", *modes,
                    "NAME=LOG, one log per pipeline mode in pipeline order (two or more, e.g. "
                    "queue=a.log quant=b.log full=c.log): the parts are the differences between "
                    "consecutive modes' stage times")
        ->take_all()
        ->allow_extra_args(false);
    add_format_option(hex, o->format, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
    add_out_flag(hex, o->out_path);
    add_db_option(hex, ctx);
    hex->add_option("--top", o->top_n, "rows in the top-ops table")
        ->check(int_range(1, 100000, "1..100000"))
        ->capture_default_str();
    hex->add_option("--stage-of", o->stage_of,
                    "TEXT=STAGE: a log line containing TEXT puts the ops after it into STAGE "
                    "(repeatable; the others are split into prefill and decode by the mat-muls' "
                    "token count); with --mode, in every log");
    hex->add_flag("--one-stage", o->one_stage,
                  "keep every op in one stage, \"log\" (no prefill/decode split)");
    hex->callback([&ctx, o, modes] {
        ResultDocument doc = new_document("import", ctx.argv);
        if (!modes->empty()) {
            if (!o->log_path.empty())
                throw usage_error("give either LOG or --mode NAME=LOG ..., not both");
            check_ops_format(o->format);
            std::vector<std::pair<std::string, std::string>> logs;
            for (const auto& m : *modes)
                logs.push_back(parse_mode_log(m));
            ctx.exit_code = import_mode_logs(logs, doc, ctx.err, *o);
            if (o->out_path)
                write_document(doc, *o->out_path);
            print_modes_document(doc, o->format, ctx.out);
            store_document(ctx, doc);
            return;
        }
        if (o->log_path.empty())
            throw usage_error("import hexagon-profile: give a LOG (or --mode NAME=LOG ...)");
        ctx.exit_code = run_import_hexagon(*o, doc, ctx.err);
        print_ops_document(doc, o->format, ctx.out, o->top_n);
        store_document(ctx, doc);
    });

    auto* lb = cmd->add_subcommand(
        "llama-bench",
        "Read llama-bench's results (markdown, csv, json, jsonl, sql; every version's printer, "
        "pasted with prompts and notes around them) into a result document that compare, "
        "report, advise and db take like a run's");
    auto lo = std::make_shared<LlamaBenchImportOptions>();
    auto lformat = std::make_shared<OutputFormat>(OutputFormat::md);
    lb->add_option("FILE", lo->files, "llama-bench output files (one document from all)")
        ->required();
    add_format_option(lb, *lformat, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
    add_out_flag(lb, lo->out_path);
    add_db_option(lb, ctx);
    lb->callback([&ctx, lo, lformat] {
        ResultDocument doc = new_document("import", ctx.argv);
        ctx.exit_code = run_import_llama_bench(*lo, doc, ctx.err);
        print_document(*lformat, doc, ctx.out);
        store_document(ctx, doc);
    });

    auto* sl = cmd->add_subcommand(
        "llama-server-log",
        "Read the per-request timings a llama-server log printed (print_timing: prompt eval, "
        "eval and total time with their tokens; also llama_perf_context_print of llama-cli "
        "style logs) into a result document that compare, report and db take like a run's; "
        "its times are the server's claims");
    auto so = std::make_shared<ServerLogImportOptions>();
    auto sformat = std::make_shared<OutputFormat>(OutputFormat::md);
    sl->add_option("FILE", so->files,
                   "llama-server logs (its stderr; one document from all, requests in order)")
        ->required();
    add_format_option(sl, *sformat, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
    sl->add_option("--out", so->out_path, "write the result document (JSON) here");
    add_db_option(sl, ctx);
    sl->callback([&ctx, so, sformat] {
        ResultDocument doc = new_document("import", ctx.argv);
        ctx.exit_code = run_import_server_log(*so, doc, ctx.err);
        print_document(*sformat, doc, ctx.out);
        store_document(ctx, doc);
    });
}

}  // namespace sb::cli
