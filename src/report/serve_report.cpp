#include "report/serve_report.hpp"

#include <fmt/format.h>

namespace sb {

void write_serve_markdown(const ServeSection& s, const Warnings& warnings, std::ostream& out) {
    const bool slo = !s.slo_ms.empty();
    out << "| point | ok | failed | req/s | output tok/s | TTFT median ms | TTFT p99 ms | TPOT "
           "median ms | ITL p99 ms | E2E p90 ms |"
        << (slo ? " goodput req/s |" : "") << " client CPU |\n"
        << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        << (slo ? " ---: |" : "") << " ---: |\n";
    auto ms = [](const std::optional<double>& v) {
        return v ? fmt::format("{:.1f}", *v) : std::string("-");
    };
    for (const auto& p : s.points) {
        out << fmt::format("| {} | {} | {} | {:.2f} | {:.1f} | {} | {} | {} | {} | {} |", p.label(),
                           p.ok, p.errors, p.request_per_s, p.output_tokens_per_s,
                           ms(p.ttft.median), ms(p.ttft.p99), ms(p.tpot.median), ms(p.itl.p99),
                           ms(p.e2e.p90));
        if (slo)
            out << fmt::format(" {:.2f} |", p.goodput_per_s.value_or(0));
        out << fmt::format(" {} |\n", p.client_cpu_pct ? fmt::format("{:.0f} %", *p.client_cpu_pct)
                                                       : std::string("-"));
    }
    for (const auto& w : warnings)
        out << "\nwarning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
}

}  // namespace sb
