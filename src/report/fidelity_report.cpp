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
                               v.model_name, v.devices, v.type_k, v.type_v, *v.error);
            continue;
        }
        out << fmt::format(
            "| {} | {} | {}/{} | {} | {} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.1f} % | {:.1f} % "
            "| "
            "{:.3g} | {:.3g} | {}{} |\n",
            v.model_name, v.devices, v.type_k, v.type_v, num(v.prefill_tps), num(v.decode_tps),
            v.prefill.kl_mean, v.decode.kl_mean, v.decode.kl_p99, v.decode.kl_max,
            100 * v.decode.top1_agreement, 100 * v.decode.topk_overlap,
            std::max(v.prefill.max_abs, v.decode.max_abs), v.decode.rms, v.frontier ? "*" : "",
            v.reference ? " reference" : "");
    }
}

}  // namespace sb
