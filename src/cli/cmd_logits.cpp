#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "core/file_io.hpp"
#include "core/json_file.hpp"
#include "core/json_util.hpp"
#include "scenario/logits.hpp"

namespace sb::cli {

namespace {

struct LogitsArgs {
    LogitsOptions o;
    std::optional<std::string> out_path, against;
    double tolerance = 0.05;
    double max_kl = 1e-4;
    OutputFormat format = OutputFormat::md;
};

std::string where(const LogitsCapture& c) {
    return c.arch + (c.cpu_variant.empty() ? "" : " " + c.cpu_variant) +
           (c.emulated ? " (emulated)" : "") + ", " + c.devices;
}

}  // namespace

void add_logits_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "logits",
        "The next-token logits of one seeded prompt, and how far they are from a reference "
        "(another build, device or machine): does it compute the same model?");
    auto a = std::make_shared<LogitsArgs>();
    add_model_flag(cmd, a->o.workload.model_path);
    add_prompt_flag(cmd, a->o.n_prompt);
    cmd->add_option("--seed", a->o.seed, "seed of the prompt's random tokens")
        ->capture_default_str();
    add_device_flag(cmd, a->o.workload.devices);
    add_threads_flag(cmd, a->o.workload.n_threads);
    add_out_flag(cmd, a->out_path, "logits document");
    cmd->add_option("--against", a->against,
                    "a logits document (--out) of the same model and prompt to compare with");
    cmd->add_option("--tolerance", a->tolerance,
                    "largest |logit difference| accepted, relative to the reference's largest "
                    "|logit| (at least 1)")
        ->check(real_range(0, 1, true, false, "(0, 1]"))
        ->capture_default_str();
    cmd->add_option("--max-kl", a->max_kl,
                    "largest KL divergence (nats) of this softmax from the reference's accepted")
        ->check(real_range(0, 1e6, false, false, "0..1e6"))
        ->capture_default_str();
    add_format_option(cmd, a->format, {OutputFormat::md, OutputFormat::json});
    cmd->callback([&ctx, a] {
        if (a->out_path)
            check_output_path(*a->out_path, "logits document");
        std::optional<LogitsCapture> ref;
        if (a->against)
            ref = logits_from_json(read_json_file(*a->against), *a->against);
        const LogitsCapture c = capture_logits(a->o);
        const nlohmann::json doc = to_json(c);
        if (a->out_path)
            write_text_file(*a->out_path, dump_json(doc, 1) + "\n", "logits document");
        std::optional<LogitsDiff> d;
        if (ref)
            d = compare_logits(*ref, c);
        if (a->format == OutputFormat::json) {
            nlohmann::json j = doc;
            if (d)
                j["against"] = {
                    {"path", *a->against}, {"max_abs", d->max_abs},
                    {"rms", d->rms},       {"ref_scale", d->ref_scale},
                    {"kl", d->kl},         {"top1_ref", d->top1_ref},
                    {"top1", d->top1},     {"tolerance", a->tolerance},
                    {"max_kl", a->max_kl}, {"within", d->within(a->tolerance, a->max_kl)}};
            ctx.out << dump_json(j, 2) << "\n";
        } else {
            ctx.out << "| model | where | prompt | n_vocab | top-1 | its logit |\n"
                    << "| --- | --- | ---: | ---: | ---: | ---: |\n";
            const auto& top = doc["top"][0];
            ctx.out << fmt::format("| {} | {} | {} | {} | {} | {:.4f} |\n", c.model_name, where(c),
                                   c.tokens.size(), c.logits.size(), top["id"].get<int>(),
                                   top["logit"].get<double>());
            if (d) {
                ctx.out << "\n| against | max abs error | RMS | KL (nats) | top-1 | within "
                        << a->tolerance << ", KL " << a->max_kl << " |\n"
                        << "| --- | ---: | ---: | ---: | --- | --- |\n";
                ctx.out << fmt::format(
                    "| {} ({}) | {:.3g} (of {:.3g}) | {:.3g} | {:.3g} | {} | {} |\n", *a->against,
                    where(*ref), d->max_abs, d->ref_scale, d->rms, d->kl,
                    d->top1_agrees()
                        ? "same (" + std::to_string(d->top1) + ")"
                        : std::to_string(d->top1) + " vs " + std::to_string(d->top1_ref),
                    d->within(a->tolerance, a->max_kl) ? "yes" : "NO");
            }
        }
        if (d && !d->within(a->tolerance, a->max_kl)) {
            ctx.err << fmt::format(
                "stagebench: error: the logits differ from '{}' beyond the tolerance (max abs "
                "error {:.3g}, allowed {:.3g}; KL {:.3g}, allowed {:.3g}; top-1 {})\n",
                *a->against, d->max_abs, a->tolerance * std::max(1.0, d->ref_scale), d->kl,
                a->max_kl, d->top1_agrees() ? "the same" : "differs");
            ctx.exit_code = 1;
        }
    });
}

}  // namespace sb::cli
