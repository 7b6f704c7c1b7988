#include "report/advise_report.hpp"
#include "core/json_util.hpp"

#include <fmt/format.h>

namespace sb {
namespace {

using nlohmann::json;

std::string n(const json& v, const char* spec = "{:.2f}", double scale = 1) {
    return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>() * scale)
                         : std::string("-");
}

std::string s(const json& v) {
    return v.is_string() ? v.get<std::string>() : (v.is_null() ? "-" : dump_json(v));
}

}  // namespace

void write_advice_markdown(const json& a, std::ostream& out) {
    out << "## Advice\n\n";
    for (const auto& x : a.value("sentences", json::array()))
        out << "- " << x.get<std::string>() << "\n";
    out << "\n";
    for (const auto& st : a.value("stages", json::array())) {
        out << "### " << s(st["stage"]) << " at " << s(st["workload"]) << "\n\n"
            << "| devices | median tokens/s | 95% CI | n | J/token |\n"
            << "| --- | ---: | --- | ---: | ---: |\n";
        for (const auto& c : st["candidates"])
            out << "| " << s(c["devices"]) << " | " << n(c["median_tokens_per_s"]) << " | "
                << n(c["ci95_lo"]) << "–" << n(c["ci95_hi"]) << " | " << n(c["n"], "{:.0f}")
                << " | " << n(c["j_per_token"], "{:.4f}") << " |\n";
        out << "\n";
    }
    for (const auto& p : a.value("predictions", json::array())) {
        out << "### Predicted end to end, pp" << p["n_prompt"].get<int>() << "+tg"
            << p["n_gen"].get<int>() << "\n\n"
            << "| prefill | decode | prefill ms | transfer ms | decode ms | E2E ms |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: |\n";
        for (const auto& x : p["assignments"])
            out << "| " << s(x["prefill"]) << " | " << s(x["decode"]) << " | "
                << n(x["prefill_ns"], "{:.3f}", 1e-6) << " | "
                << n(x["transfer_ns"], "{:.3f}", 1e-6) << " | " << n(x["decode_ns"], "{:.3f}", 1e-6)
                << " | " << n(x["e2e_ns"], "{:.3f}", 1e-6) << " |\n";
        out << "\n";
    }
    const json& v = a.value("validation", json::array());
    if (!v.empty()) {
        out << "### Predicted against measured hybrids\n\n"
            << "| prefill | decode | test | predicted ms | measured ms | error |\n"
            << "| --- | --- | --- | ---: | ---: | ---: |\n";
        for (const auto& x : v)
            out << "| " << s(x["prefill"]) << " | " << s(x["decode"]) << " | pp"
                << x["n_prompt"].get<int>() << "+tg" << x["n_gen"].get<int>() << " | "
                << n(x["predicted_ns"], "{:.3f}", 1e-6) << " | "
                << n(x["measured_ns"], "{:.3f}", 1e-6) << " | " << n(x["error"], "{:+.1f} %", 100)
                << " |\n";
        out << "\n";
    }
    const json& d = a.value("dispatch", json::array());
    if (!d.empty()) {
        out << "### Dispatch overhead above budget\n\n"
            << "| stage | op | backend | calls | median µs | total ms |\n"
            << "| --- | --- | --- | ---: | ---: | ---: |\n";
        for (const auto& x : d)
            out << "| " << s(x["stage"]) << " | " << s(x["op"]) << " | " << s(x["backend"]) << " | "
                << n(x["count"], "{:.0f}") << " | " << n(x["median_overhead_ns"], "{:.1f}", 1e-3)
                << " | " << n(x["total_overhead_ns"], "{:.3f}", 1e-6) << " |\n";
        out << "\n";
    }
    for (const auto& x : a.value("notes", json::array()))
        out << "note: " << x.get<std::string>() << "\n";
}

}  // namespace sb
