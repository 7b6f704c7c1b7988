#include "report/fidelity_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace sb {

void write_fidelity_markdown(std::ostream& out, const FidelitySection& r) {
    out << fmt::format(
        "Reference: {}; pp{} + tg{} teacher-forced, KL(reference || variant) in "
        "nats, top-{} overlap; * marks the frontier (no variant both faster in "
        "decode and closer).\n\n",
        r.reference, r.n_prompt, r.n_gen, r.top_k);
    out << "| model | devices | ctk/ctv | pp t/s | tg t/s | KL pp | KL tg mean | KL tg p99 | KL tg "
           "max | top-1 tg | top-k tg | max abs | RMS | |\n"
        << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
           "---: | --- |\n";
    auto num = [](const std::optional<double>& v) {
        return v ? fmt::format("{:.2f}", *v) : std::string("-");
    };
    for (const auto& v : r.variants) {
        if (v.error) {
            out << fmt::format("| {} | {} | {}/{} | failed: {} | | | | | | | | | | |\n",
                               v.model_name, v.devices, to_string(v.type_k), to_string(v.type_v),
                               *v.error);
            continue;
        }
        out << fmt::format(
            "| {} | {} | {}/{} | {} | {} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.1f} % | {:.1f} % "
            "| "
            "{:.3g} | {:.3g} | {}{} |\n",
            v.model_name, v.devices, to_string(v.type_k), to_string(v.type_v), num(v.prefill_tps),
            num(v.decode_tps), v.prefill.kl_mean, v.decode.kl_mean, v.decode.kl_p99,
            v.decode.kl_max, 100 * v.decode.top1_agreement, 100 * v.decode.topk_overlap,
            std::max(v.prefill.max_abs, v.decode.max_abs), v.decode.rms, v.frontier ? "*" : "",
            v.reference ? " reference" : "");
    }
    if (r.prompt_logits) {
        out << fmt::format("\nEvery prompt position ({} per variant), against the reference:\n\n",
                           r.n_prompt);
        out << "| model | devices | ctk/ctv | KL mean | KL p99 | KL max | top-1 | top-k | max abs "
               "| RMS |\n"
            << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (const auto& v : r.variants)
            if (v.prompt)
                out << fmt::format(
                    "| {} | {} | {}/{} | {:.3g} | {:.3g} | {:.3g} | {:.1f} % | {:.1f} % | {:.3g} "
                    "| {:.3g} |\n",
                    v.model_name, v.devices, to_string(v.type_k), to_string(v.type_v),
                    v.prompt->kl_mean, v.prompt->kl_p99, v.prompt->kl_max,
                    100 * v.prompt->top1_agreement, 100 * v.prompt->topk_overlap, v.prompt->max_abs,
                    v.prompt->rms);
    }
    if (r.text) {
        const FidelityText& t = *r.text;
        out << fmt::format(
            "\nText {}: {} tokens, {} windows of {} (llama-perplexity's windows), {} tokens "
            "scored; reference perplexity {:.4f} +/- {:.5f}:\n\n",
            t.path, t.tokens, t.chunks, t.n_ctx, t.scored, t.reference_perplexity.value_or(0),
            t.reference_perplexity_error.value_or(0));
        out << "| model | devices | ctk/ctv | PPL | +/- | KL text mean | KL text p99 | KL text max "
               "| top-1 text | top-k text |\n"
            << "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (const auto& v : r.variants)
            if (v.text && v.perplexity)
                out << fmt::format(
                    "| {} | {} | {}/{} | {:.4f} | {:.5f} | {:.3g} | {:.3g} | {:.3g} | {:.1f} % | "
                    "{:.1f} % |\n",
                    v.model_name, v.devices, to_string(v.type_k), to_string(v.type_v),
                    *v.perplexity, v.perplexity_error.value_or(0), v.text->kl_mean, v.text->kl_p99,
                    v.text->kl_max, 100 * v.text->top1_agreement, 100 * v.text->topk_overlap);
    }
}

}  // namespace sb
