#include "report/advise_report.hpp"

#include <fmt/format.h>

namespace sb {
namespace {

// A number as the tables show it, times scale; "-" when absent.
std::string n(const std::optional<double>& v, const char* spec = "{:.2f}", double scale = 1) {
    return v ? fmt::format(fmt::runtime(spec), *v * scale) : std::string("-");
}

std::string count_text(std::size_t v) {
    return fmt::format("{}", v);
}

std::string ms_text(double ns) {
    return fmt::format("{:.3f}", ns * 1e-6);
}

}  // namespace

void write_advice_markdown(const Advice& a, std::ostream& out) {
    out << "## Advice\n\n";
    // What may spoil the conclusions comes before them.
    for (const auto& w : a.warnings)
        out << "**Warning (" << w.code << "):** " << w.message << ". " << w.hint << "\n\n";
    for (const auto& x : a.sentences)
        out << "- " << x << "\n";
    out << "\n";
    for (const auto& st : a.stages) {
        out << "### " << st.stage << " at " << st.workload << "\n\n"
            << "| devices | median tokens/s | 95% CI | n | J/token | from |\n"
            << "| --- | ---: | --- | ---: | ---: | --- |\n";
        for (const auto& c : st.candidates) {
            std::string from;
            for (const auto& d : c.documents)
                from += (from.empty() ? "" : ", ") + d;
            out << "| " << c.devices << " | " << n(c.median_tokens_per_s) << " | " << n(c.ci95_lo)
                << "–" << n(c.ci95_hi) << " | " << count_text(c.n) << " | "
                << n(c.j_per_token, "{:.4f}") << " | " << (from.empty() ? "-" : from) << " |\n";
        }
        out << "\n";
    }
    for (const auto& p : a.predictions) {
        out << "### Predicted end to end, pp" << p.n_prompt << "+tg" << p.n_gen << "\n\n"
            << "| prefill | decode | prefill ms | transfer ms | decode ms | E2E ms | "
               "extrapolated |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: | --- |\n";
        for (const auto& x : p.assignments) {
            std::string ex;
            for (const auto& e : x.extrapolated)
                ex += (ex.empty() ? "" : "; ") + e;
            out << "| " << x.prefill << " | " << x.decode << " | " << ms_text(x.prefill_ns) << " | "
                << ms_text(x.transfer_ns) << " | " << ms_text(x.decode_ns) << " | "
                << ms_text(x.e2e_ns) << " | " << (ex.empty() ? "no" : ex) << " |\n";
        }
        out << "\n";
    }
    if (!a.validation.empty()) {
        out << "### Predicted against measured hybrids\n\n"
            << "| prefill | decode | test | predicted ms | measured ms | error |\n"
            << "| --- | --- | --- | ---: | ---: | ---: |\n";
        for (const auto& x : a.validation)
            out << "| " << x.prefill << " | " << x.decode << " | pp" << x.n_prompt << "+tg"
                << x.n_gen << " | " << ms_text(x.predicted_ns) << " | " << ms_text(x.measured_ns)
                << " | " << fmt::format("{:+.1f} %", x.error * 100) << " |\n";
        out << "\n";
    }
    if (!a.dispatch.empty()) {
        out << "### Dispatch overhead above budget\n\n"
            << "| stage | op | backend | calls | median µs | total ms |\n"
            << "| --- | --- | --- | ---: | ---: | ---: |\n";
        for (const auto& x : a.dispatch)
            out << "| " << x.stage << " | " << x.op << " | " << x.backend << " | "
                << count_text(x.count) << " | "
                << fmt::format("{:.1f}", x.median_overhead_ns * 1e-3) << " | "
                << ms_text(x.total_overhead_ns) << " |\n";
        out << "\n";
    }
    if (!a.conditions.empty()) {
        out << "### Conditions of the documents combined\n\n"
            << "| source | host | load | governor | threads | llama.cpp |\n"
            << "| --- | --- | --- | --- | --- | --- |\n";
        auto cell = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
        for (const auto& c : a.conditions)
            out << "| " << c.source << " | " << cell(c.host) << " | " << cell(c.load) << " | "
                << cell(c.governor) << " | " << cell(c.threads) << " | " << cell(c.llama) << " |\n";
        out << "\n";
    }
    for (const auto& x : a.notes)
        out << "note: " << x << "\n";
}

}  // namespace sb
