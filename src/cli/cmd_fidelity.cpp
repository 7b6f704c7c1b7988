// `stagebench fidelity`: speed and numerical fidelity of every variant (model x device set x KV
// cache types) against a reference, from the same run (scenario/fidelity.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/store_hook.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/interrupt.hpp"
#include "core/result.hpp"
#include "core/utf8.hpp"
#include "engine/backends.hpp"
#include "model/inspect.hpp"
#include "report/reporter.hpp"
#include "scenario/fidelity.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

namespace {

// Ctrl-C while the reference is measured (its text windows stop with "interrupted"): nothing
// to compare with, but the run was interrupted, not given bad input: the document is kept
// with no variants, marked interrupted, exit 1. Bad input stays bad input.
FidelityResult run_fidelity_keeping_interrupt(const FidelityOptions& o, std::ostream& err) {
    try {
        return run_fidelity(o, err);
    } catch (const Error& e) {
        if (!interrupt_requested() || e.kind() != ErrorKind::runtime)
            throw;
        FidelityResult r;
        r.options = o;
        r.n_prompt = o.n_prompt;
        r.n_gen = o.n_gen;
        r.top_k = o.top_k;
        r.reps = o.reps;
        r.seed = o.seed;
        r.interrupted = true;
        return r;
    }
}

}  // namespace

void add_fidelity_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "fidelity",
        "Does the faster choice compute the same? Teacher-forced logits of every model, device "
        "set and KV cache type against a reference (KL, top-1, top-k, logit error) beside their "
        "tokens/s");
    struct Args {
        FidelityOptions o;
        std::vector<std::string> rpc;
        std::optional<std::string> out_path;
        std::optional<std::string> text_path;
        OutputFormat format = OutputFormat::md;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("-m,--model", a->o.models, "GGUF model files, comma list (e.g. f16,q8_0,q4_0)")
        ->required()
        ->delimiter(',');
    cmd->add_option("--device", a->o.device_sets,
                    "device sets, comma list; join with + to combine (e.g. CPU,BLAS,RPC0)")
        ->check(device_set_check())
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--reference", a->o.reference_devices,
                    "the reference device set, one of --device (default: the first)");
    cmd->add_option("--reference-model", a->o.reference_model,
                    "the reference model file (same shape and vocabulary; default: the first -m)");
    cmd->add_option("--cache-type-k", a->o.type_k, "K cache types (-ctk), comma list")
        ->check(cache_type_check())
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--cache-type-v", a->o.type_v, "V cache types (-ctv), comma list")
        ->check(cache_type_check())
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("-p,--n-prompt", a->o.n_prompt, "prompt tokens")
        ->check(tokens_check(1))
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", a->o.n_gen, "decode positions compared (teacher-forced)")
        ->check(tokens_check(0))
        ->capture_default_str();
    cmd->add_option("--top-k", a->o.top_k, "k of the top-k overlap")
        ->check(int_range(1, 1000, "1..1000"))
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", a->o.reps, "timed repetitions of the speed pass")
        ->check(reps_check())
        ->capture_default_str();
    cmd->add_option("-t,--threads", a->o.n_threads, "threads (0: the physical cores)")
        ->check(threads_check());
    cmd->add_option("--seed", a->o.seed, "seed of the token sequence")->capture_default_str();
    cmd->add_flag("--prompt-logits", a->o.prompt_logits,
                  "also compare the logits of every prompt position (the prompt stage)");
    cmd->add_option("--text", a->text_path,
                    "a text file: each variant's perplexity on it, in llama-perplexity's windows, "
                    "and its KL to the reference there");
    cmd->add_option("--ctx", a->o.ctx, "tokens per perplexity window (llama-perplexity's -c)")
        ->check(int_range(4, 1 << 20, "4..1048576"))
        ->capture_default_str();
    cmd->add_option("--chunks", a->o.chunks,
                    "at most this many perplexity windows (default: every whole window)")
        ->check(int_range(1, 1 << 30, "1..1073741824"));
    cmd->add_option("--rpc", a->rpc, "RPC servers host:port (comma list)")->delimiter(',');
    cmd->add_option("--out", a->out_path, "also write the result document (JSON) here");
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    add_db_option(cmd, ctx);
    cmd->callback([&ctx, a] {
        for (const auto& m : a->o.models)
            require_regular_file(m, "model");
        if (a->o.reference_model)
            require_regular_file(*a->o.reference_model, "reference model");
        check_context(a->o.n_prompt, 0, a->o.n_gen);
        if (a->text_path) {
            require_regular_file(*a->text_path, "text");
            a->o.text = read_input_file(*a->text_path, "text");
            // llama.cpp's tokenizers throw from inside on broken UTF-8.
            if (!is_valid_utf8(*a->o.text))
                throw input_error("--text " + *a->text_path + ": not valid UTF-8 text");
            a->o.text_path = *a->text_path;
        }
        if (a->out_path)
            check_output_path(*a->out_path, "fidelity document");
        for (const auto& ep : a->rpc)
            add_rpc_server(ep);
        // A result document like any other command's (system, llama.cpp build, models), its
        // measurement in the fidelity section.
        ResultDocument doc = new_document("fidelity", ctx.argv);
        std::vector<std::string> paths = a->o.models;
        if (a->o.reference_model &&
            std::find(paths.begin(), paths.end(), *a->o.reference_model) == paths.end())
            paths.push_back(*a->o.reference_model);
        for (const auto& m : paths)
            doc.models.push_back(to_json(inspect_model(m)));
        const FidelityResult r = run_fidelity_keeping_interrupt(a->o, ctx.err);
        doc.fidelity = static_cast<const FidelitySection&>(r);
        doc.finished_at = utc_timestamp();
        if (a->out_path)
            write_document(doc, *a->out_path);
        print_document(a->format, doc, ctx.out);
        bool failed = false;
        for (const auto& v : r.variants)
            failed = failed || v.error.has_value();
        if (r.interrupted)
            ctx.err << "stagebench: interrupted; " << r.variants.size()
                    << " variant(s) kept, marked interrupted\n";
        ctx.exit_code = failed || r.interrupted ? 1 : 0;
        store_document(ctx, doc);  // --db
    });
}

}  // namespace sb::cli
