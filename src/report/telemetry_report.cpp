#include "report/telemetry_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sb {
namespace {

// The unit a person reads and the factor from the stored one.
std::pair<std::string, double> display_unit(const std::string& unit) {
    if (unit == "mC")
        return {"°C", 1e-3};
    if (unit == "kHz")
        return {"MHz", 1e-3};
    return {unit, 1};
}

std::string telemetry_num(const std::optional<double>& v, double scale) {
    if (!v)
        return "-";
    return fmt::format("{:.1f}", *v * scale);
}

}  // namespace

void write_telemetry_markdown(const TelemetrySection& t, const Warnings& warnings,
                              std::ostream& out) {
    for (const auto& s : t.sources) {
        out << "# Telemetry: " << s.name << "\n\n";
        for (const auto& [k, v] : s.properties)
            out << "- " << k << ": " << v << "\n";
        out << "\n";
    }
    if (t.series && !t.series->empty()) {
        out << "| metric | unit | rows | missing | min | mean | max | first | last |\n"
            << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (const auto& se : *t.series) {
            const auto [unit, scale] = display_unit(se.unit);
            std::optional<double> lo, hi, first, last;
            double sum = 0;
            std::size_t n = 0, missing = 0;
            for (const auto& v : se.values) {
                if (!v) {
                    ++missing;
                    continue;
                }
                lo = std::min(lo.value_or(*v), *v);
                hi = std::max(hi.value_or(*v), *v);
                if (!first)
                    first = v;
                last = v;
                sum += *v;
                ++n;
            }
            std::optional<double> mean;  // assigned, not a conditional: GCC 12 took the
            if (n > 0)                   // latter's optional for maybe-uninitialised
                mean = sum / static_cast<double>(n);
            out << "| " << se.metric << " | " << unit << " | " << se.values.size() << " | "
                << missing << " | " << telemetry_num(lo, scale) << " | "
                << telemetry_num(mean, scale) << " | " << telemetry_num(hi, scale) << " | "
                << telemetry_num(first, scale) << " | " << telemetry_num(last, scale) << " |\n";
        }
        out << "\n";
    }
    if (!warnings.empty()) {
        out << "## Warnings\n\n";
        for (const auto& w : warnings)
            out << "- " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
        out << "\n";
    }
}

void print_telemetry_document(const ResultDocument& doc, OutputFormat format, std::ostream& out) {
    if (format == OutputFormat::json) {
        out << dump_json(to_json(doc), 2) << "\n";
    } else if (format == OutputFormat::md) {
        if (doc.telemetry)
            write_telemetry_markdown(*doc.telemetry, doc.warnings, out);
    } else {
        throw usage_error("this command writes md or json");
    }
    out.flush();
}

}  // namespace sb
