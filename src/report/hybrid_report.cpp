#include "report/hybrid_report.hpp"

#include <fmt/format.h>

namespace sb {
namespace {

using nlohmann::json;

std::string num(const json& v, const char* spec = "{:.2f}", double scale = 1) {
    return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>() * scale)
                         : std::string("-");
}

std::string opt(const std::optional<double>& v, const char* spec = "{:.2f}", double scale = 1) {
    return v ? fmt::format(fmt::runtime(spec), *v * scale) : std::string("-");
}

std::string mib(const json& v) {
    return v.is_number() ? fmt::format("{:.1f} MiB", v.get<double>() / (1 << 20))
                         : std::string("unknown");
}

std::string label(const std::string& mode, const json& h) {
    if (mode == "hybrid")
        return "hybrid " + h.value("prefill_device", "") + " → " + h.value("decode_device", "");
    if (mode == "prefill_alone")
        return h.value("prefill_device", "") + " alone";
    return h.value("decode_device", "") + " alone";
}

}  // namespace

void write_hybrid_markdown(const ResultDocument& doc, std::ostream& out) {
    const json& h = doc.extra.value("hybrid", json::object());
    if (h.empty())
        return;
    out << "## Hybrid: prefill on " << h.value("prefill_device", "") << ", decode on "
        << h.value("decode_device", "") << "\n\n"
        << "| test | mode | prefill t/s | transfer ms | transfer KiB | decode t/s | TTFT ms | "
           "E2E ms | E2E CV |\n"
        << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    const json& points = h.value("points", json::array());
    for (const auto& pt : points) {
        const std::string name = "pp" + std::to_string(pt.value("n_prompt", 0)) + "+tg" +
                                 std::to_string(pt.value("n_gen", 0));
        for (const std::string mode : {"hybrid", "prefill_alone", "decode_alone"}) {
            if (!pt.at("tests").contains(mode))
                continue;
            const TestResult& r = doc.tests.at(pt["tests"][mode].get<size_t>());
            const json& e2e = pt["e2e"].value(mode, json::object()).value("summary", json());
            const bool hybrid = mode == "hybrid";
            const json& tr = pt.value("transfer", json::object());
            out << "| " << name << " | " << label(mode, h);
            if (r.status != "ok")
                out << " (" << r.status << ")";
            out << " | " << (r.prefill ? opt(r.prefill->throughput.median) : "-") << " | "
                << (hybrid
                        ? num(tr.value("duration", json()).value("median", json()), "{:.3f}", 1e-6)
                        : "-")
                << " | "
                << (hybrid && !tr.value("bytes", json::array()).empty()
                        ? num(tr["bytes"].back(), "{:.1f}", 1.0 / 1024)
                        : "-")
                << " | " << (r.decode ? opt(r.decode->throughput.median) : "-") << " | "
                << opt(r.ttft.median, "{:.3f}", 1e-6) << " | "
                << (e2e.is_object() ? num(e2e.value("median", json()), "{:.3f}", 1e-6) : "-")
                << " | " << (e2e.is_object() ? num(e2e.value("cv", json()), "{:.1f} %", 100) : "-")
                << " |\n";
        }
    }
    out << "\n";
    for (const auto& pt : points) {
        const json& cmp = pt.value("comparison", json::object());
        if (cmp.empty())
            continue;
        out << "pp" << pt.value("n_prompt", 0) << "+tg" << pt.value("n_gen", 0) << ":";
        bool first = true;
        for (const std::string mode : {"prefill_alone", "decode_alone"}) {
            if (!cmp.contains(mode))
                continue;
            const json& c = cmp[mode];
            out << (first ? " " : "; ") << "against " << label(mode, h) << " the hybrid is "
                << fmt::format("{:.3f}× (95% CI {:.3f}–{:.3f}): ", c.value("speedup", 0.0),
                               c.value("ci95_lo", 0.0), c.value("ci95_hi", 0.0))
                << "**" << c.value("verdict", std::string()) << "**";
            first = false;
        }
        out << "\n";
    }
    const json& cross = h.value("crossover", json::object());
    if (cross.contains("by_n_gen")) {
        out << "\nCrossover (the hybrid faster than both alone, CIs excluding 1):";
        for (const auto& c : cross["by_n_gen"]) {
            out << " n=" << c.value("n_gen", 0) << ": ";
            const json& from = c["hybrid_wins_from_n_prompt"];
            out << (from.is_number() ? "from p=" + std::to_string(from.get<int>()) + " on"
                                     : std::string("not within the sweep"))
                << ";";
        }
        out << "\n";
    }
    const json& m = h.value("memory", json::object());
    auto grown = [&](const char* key) {
        return m.value(key, json()).is_number() ? mib(m[key]) : std::string("unknown");
    };
    out << "\nMemory: weights " << mib(m.value("weight_bytes_prefill_engine", json())) << " for "
        << h.value("prefill_device", "") << " and "
        << mib(m.value("weight_bytes_decode_engine", json())) << " for "
        << h.value("decode_device", "") << "; process RSS +"
        << grown("rss_growth_prefill_engine_bytes") << " (prefill engine), +"
        << grown("rss_growth_decode_engine_bytes") << " (decode engine). " << m.value("note", "")
        << ".\n";
    for (const auto& w : doc.warnings)
        out << "\nwarning: " << w.message;
    if (!doc.warnings.empty())
        out << "\n";
}

}  // namespace sb
