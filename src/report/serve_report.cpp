#include "report/serve_report.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <utility>

namespace sb {

void write_serve_measures_markdown(const ServeSection& r, std::ostream& out) {
    auto ci = [](const std::optional<double>& v, const std::optional<Ci95>& c) {
        if (!v)
            return std::string("-");
        return c ? fmt::format("{:.1f} [{:.1f}, {:.1f}]", *v, c->lo, c->hi)
                 : fmt::format("{:.1f}", *v);
    };
    // The CI table where the points have intervals (a document of an earlier build has none).
    bool cis = false;
    for (const auto& p : r.points)
        for (const LatencyStats* s : {&p.ttft, &p.tpot, &p.itl, &p.e2e})
            cis = cis || s->mean_ci || s->median_ci || s->p90_ci || s->p99_ci;
    if (cis)
        out << "\nLatency in ms with seeded bootstrap 95 % CIs (whole requests resampled):\n\n"
            << "| point | metric | mean | median | p90 | p99 |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: |\n";
    for (const auto& p : r.points)
        if (cis)
            for (const auto& [name, s] :
                 std::initializer_list<std::pair<const char*, const LatencyStats*>>{
                     {"TTFT", &p.ttft}, {"TPOT", &p.tpot}, {"ITL", &p.itl}, {"E2E", &p.e2e}})
                out << fmt::format("| {} | {} | {} | {} | {} | {} |\n", p.label(), name,
                                   ci(s->mean, s->mean_ci), ci(s->median, s->median_ci),
                                   ci(s->p90, s->p90_ci), ci(s->p99, s->p99_ci));
    bool energy = false;
    for (const auto& p : r.points)
        energy = energy || p.energy;
    if (energy) {
        auto v = [](const std::optional<double>& x, const char* f) {
            return x ? fmt::format(fmt::runtime(f), *x) : std::string("-");
        };
        out << "\nEnergy (net: above the idle baseline):\n\n"
            << "| point | meter | J | net J | mean W | J/request | net J/request | J/output "
               "token | net J/output token |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (const auto& p : r.points) {
            if (!p.energy)
                continue;
            const ServeEnergy& e = *p.energy;
            out << fmt::format(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", p.label(), e.metric,
                v(e.energy_j, "{:.3f}"), v(e.net_energy_j, "{:.3f}"),
                e.mean_power_mw ? fmt::format("{:.2f}", *e.mean_power_mw * 1e-3) : "-",
                v(e.j_per_request, "{:.4f}"), v(e.net_j_per_request, "{:.4f}"),
                v(e.j_per_output_token, "{:.5f}"), v(e.net_j_per_output_token, "{:.5f}"));
        }
    }
    int interrupted = 0;
    for (const auto& p : r.points)
        interrupted += p.interrupted;
    if (r.interrupted)
        out << fmt::format(
            "\nInterrupted (Ctrl-C): {} request(s) in flight were kept as interrupted; the "
            "points measured are above.\n",
            interrupted);
    if (!r.saturation.verdict.empty())
        out << "\nSaturation: " << r.saturation.verdict << ".\n";
}

void write_server_claims_markdown(const ServeSection& s, std::ostream& out) {
    int with = 0, disagree = 0;
    std::string source, first;
    for (const auto& p : s.points)
        for (const auto& q : p.requests) {
            if (!q.server_claim)
                continue;
            ++with;
            if (source.empty())
                source = q.server_claim->said.source;
            if (q.server_claim->disagreements.empty())
                continue;
            ++disagree;
            if (first.empty())
                first = fmt::format("{} request {}: {}", p.label(), q.index,
                                    q.server_claim->disagreements.front());
        }
    if (with == 0)
        return;
    out << fmt::format(
        "\nServer timings ({}'s own claims, kept per request as server_claim beside the client's "
        "measurement): {} of {} request(s) agree with it (the same token counts, the prompt time "
        "within the client's TTFT, prompt and generation within its E2E, by at most {}){}.\n",
        source.empty() ? "the server" : source, with - disagree, with, kServerClaimSlackText,
        disagree == 0 ? std::string() : fmt::format("; {} disagree, e.g. {}", disagree, first));
}

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
    out << "\nTTFT: " << s.ttft_definition
        << "; each request also keeps the first byte of the stream and the first content token "
           "(ttft_first_byte_ns, ttft_first_content_ns) and the server's request id where the "
           "API returns one.\n";
    write_server_claims_markdown(s, out);
    for (const auto& p : s.points)
        if (p.stopped_by)
            out << fmt::format(
                "\n{} stopped early ({}): {} of its {} request(s) sent failed, more than "
                "--max-error-rate {:g}; the rest were not sent.\n",
                p.label(), *p.stopped_by, p.errors, p.requests.size(),
                s.max_error_rate.value_or(0));
    write_serve_measures_markdown(s, out);
    for (const auto& n : s.notes)
        out << "\nnote: " << n << "\n";
    for (const auto& w : warnings)
        out << "\nwarning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
}

}  // namespace sb
