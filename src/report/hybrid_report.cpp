#include "report/hybrid_report.hpp"

#include <fmt/format.h>

#include "report/memory_report.hpp"

namespace sb {
namespace {

std::string opt(const std::optional<double>& v, const char* spec = "{:.2f}", double scale = 1) {
    return v ? fmt::format(fmt::runtime(spec), *v * scale) : std::string("-");
}

template <class T>
std::string mib(const std::optional<T>& v) {
    return v ? fmt::format("{:.1f} MiB", static_cast<double>(*v) / (1 << 20))
             : std::string("unknown");
}

std::string label(const std::string& mode, const HybridSection& h) {
    if (mode == "hybrid")
        return "hybrid " + h.prefill_device.str() + " → " + h.decode_device.str();
    if (mode == "prefill_alone")
        return h.prefill_device.str() + " alone";
    return h.decode_device.str() + " alone";
}

}  // namespace

void write_hybrid_markdown(const ResultDocument& doc, std::ostream& out) {
    if (!doc.hybrid)
        return;
    const HybridSection& h = *doc.hybrid;
    out << "## Hybrid: prefill on " << h.prefill_device.str() << ", decode on "
        << h.decode_device.str() << "\n\n"
        << "| test | mode | prefill t/s | transfer ms | transfer KiB | decode t/s | TTFT ms | "
           "E2E ms | E2E CV |\n"
        << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& pt : h.points) {
        const std::string name =
            "pp" + std::to_string(pt.n_prompt) + "+tg" + std::to_string(pt.n_gen);
        for (const std::string mode : {"hybrid", "prefill_alone", "decode_alone"}) {
            const auto test = pt.tests.find(mode);
            if (test == pt.tests.end())
                continue;
            const TestResult& r = doc.tests.at(static_cast<size_t>(test->second));
            const auto e2e = pt.e2e.find(mode);
            const Summary* s = e2e != pt.e2e.end() ? &e2e->second.summary : nullptr;
            const bool hybrid = mode == "hybrid";
            out << "| " << name << " | " << label(mode, h);
            if (r.status != Status::ok)
                out << " (" << to_string(r.status) << ")";
            out << " | " << (r.prefill ? opt(r.prefill->throughput.median) : "-") << " | "
                << (hybrid ? opt(pt.transfer.duration.median, "{:.3f}", 1e-6) : "-") << " | "
                << (hybrid && !pt.transfer.bytes.empty()
                        ? opt(static_cast<double>(pt.transfer.bytes.back()), "{:.1f}", 1.0 / 1024)
                        : "-")
                << " | " << (r.decode ? opt(r.decode->throughput.median) : "-") << " | "
                << opt(r.ttft.median, "{:.3f}", 1e-6) << " | "
                << (s ? opt(s->median, "{:.3f}", 1e-6) : "-") << " | "
                << (s ? opt(s->cv, "{:.1f} %", 100) : "-") << " |\n";
        }
    }
    out << "\n";
    for (const auto& pt : h.points) {
        if (pt.comparison.empty())
            continue;
        out << "pp" << pt.n_prompt << "+tg" << pt.n_gen << ":";
        bool first = true;
        for (const std::string mode : {"prefill_alone", "decode_alone"}) {
            const auto c = pt.comparison.find(mode);
            if (c == pt.comparison.end())
                continue;
            out << (first ? " " : "; ") << "against " << label(mode, h) << " the hybrid is "
                << fmt::format("{:.3f}× (95% CI {:.3f}–{:.3f}): ", c->second.speedup.value_or(0),
                               c->second.ci95_lo.value_or(0), c->second.ci95_hi.value_or(0))
                << "**" << c->second.verdict << "**";
            first = false;
        }
        out << "\n";
    }
    if (h.crossover) {
        out << "\nCrossover (the hybrid faster than both alone, CIs excluding 1):";
        for (const auto& c : h.crossover->by_n_gen) {
            out << " n=" << c.n_gen << ": "
                << (c.hybrid_wins_from_n_prompt
                        ? "from p=" + std::to_string(*c.hybrid_wins_from_n_prompt) + " on"
                        : std::string("not within the sweep"))
                << ";";
        }
        out << "\n";
    }
    // --fidelity: each mode's logits against the reference; the hybrid's decode positions are
    // the decode engine's after the state transfer.
    bool any_fidelity = false;
    for (const auto& t : doc.tests)
        any_fidelity |= t.fidelity.has_value();
    if (any_fidelity) {
        out << "\n| test | mode | reference | prefill KL | decode KL mean | decode KL max | decode "
               "top-1 % |\n"
            << "| --- | --- | --- | ---: | ---: | ---: | ---: |\n";
        for (const auto& pt : h.points)
            for (const std::string mode : {"hybrid", "prefill_alone", "decode_alone"}) {
                const auto test = pt.tests.find(mode);
                if (test == pt.tests.end())
                    continue;
                const TestResult& r = doc.tests.at(static_cast<size_t>(test->second));
                if (!r.fidelity)
                    continue;
                const TestFidelity& f = *r.fidelity;
                out << "| pp" << pt.n_prompt << "+tg" << pt.n_gen << " | " << label(mode, h)
                    << " | " << f.reference << " | ";
                if (f.error) {
                    out << "FAILED: " << *f.error << " | | | |\n";
                    continue;
                }
                auto g = [](const std::optional<StageFidelity>& s, double StageFidelity::*m,
                            const char* spec, double scale) {
                    return s ? fmt::format(fmt::runtime(spec), (*s).*m * scale) : std::string("-");
                };
                out << g(f.prefill, &StageFidelity::kl_mean, "{:.3g}", 1) << " | "
                    << g(f.decode, &StageFidelity::kl_mean, "{:.3g}", 1) << " | "
                    << g(f.decode, &StageFidelity::kl_max, "{:.3g}", 1) << " | "
                    << g(f.decode, &StageFidelity::top1_agreement, "{:.1f}", 100) << " |\n";
            }
        out << "\nFidelity: KL(reference || mode) in nats over the teacher-forced sequence, "
               "captured untimed after each point; the hybrid's decode ran on the decode engine "
               "after the state transfer.\n";
    }
    const HybridMemory& m = h.memory;
    out << "\nMemory: weights " << mib(m.weight_bytes_prefill_engine) << " for "
        << h.prefill_device.str() << " and " << mib(m.weight_bytes_decode_engine) << " for "
        << h.decode_device.str() << "; process RSS +" << mib(m.rss_growth_prefill_engine_bytes)
        << " (prefill engine), +" << mib(m.rss_growth_decode_engine_bytes) << " (decode engine). "
        << m.note << ".\n";
    write_memory_markdown(doc, out);
    for (const auto& w : doc.warnings)
        out << "\nwarning: " << w.message;
    if (!doc.warnings.empty())
        out << "\n";
}

}  // namespace sb
