// `stagebench fidelity`: speed and numerical fidelity of every variant (model x device set x KV
// cache types) against a reference, from the same run (scenario/fidelity.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/run_options.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/interrupt.hpp"
#include "core/result.hpp"
#include "core/utf8.hpp"
#include "report/reporter.hpp"
#include "scenario/fidelity.hpp"
#include "scenario/run_command.hpp"

namespace sb::cli {

void add_fidelity_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "fidelity",
        "Does the faster choice compute the same? Teacher-forced logits of every model, device "
        "set and KV cache type against a reference (KL, top-1, top-k, logit error) beside their "
        "tokens/s");
    struct Args {
        FidelityOptions o;
        std::optional<std::string> text_path;
        OutputFormat format = OutputFormat::md;
        std::vector<std::string> devices{"CPU"}, type_k{"f16"}, type_v{"f16"};
        std::optional<std::string> reference;
    };
    auto a = std::make_shared<Args>();
    add_model_flag(cmd, a->o.models, "e.g. f16,q8_0,q4_0 of one model")->required();
    add_device_flag(cmd, a->devices);
    cmd->add_option("--reference", a->reference,
                    "the reference device set, one of --device (default: the first)");
    cmd->add_option("--reference-model", a->o.reference_model,
                    "the reference model file (same shape and vocabulary; default: the first -m)");
    add_cache_type_flags(cmd, a->type_k, a->type_v);
    add_prompt_flag(cmd, a->o.n_prompt);
    add_gen_flag(cmd, a->o.n_gen, 0, "the decode positions compared (teacher-forced)");
    cmd->add_option("--top-k", a->o.top_k, "k of the top-k overlap")
        ->check(int_range(1, 1000, "1..1000"))
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", a->o.reps, "timed repetitions of the speed pass")
        ->check(reps_check())
        ->capture_default_str();
    add_threads_flag(cmd, a->o.base.n_threads);
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
    cmd->add_option("--rpc", a->o.rpc_servers, "RPC servers host:port (comma list)")
        ->delimiter(',');
    add_out_flag(cmd, a->o.out_path, "result document", "after every variant");
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    add_db_option(cmd, ctx);
    cmd->callback([&ctx, a] {
        a->o.device_sets = device_sets_of(a->devices);
        a->o.type_k = enums_of<KvType>(a->type_k, "--cache-type-k");
        a->o.type_v = enums_of<KvType>(a->type_v, "--cache-type-v");
        if (a->reference && !a->reference->empty())
            a->o.reference_devices = DeviceSet(*a->reference);
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
        if (a->o.out_path)
            check_output_path(*a->o.out_path, "fidelity document");
        // A result document like any other command's (system, llama.cpp build, models), its
        // measurement in the fidelity section.
        const RunResult r = run_fidelity(a->o, RunEnv(new_document("fidelity", ctx.argv), ctx.err));
        print_document(a->format, r.doc, ctx.out);
        finish_run(ctx, r);  // --db
    });
}

}  // namespace sb::cli
