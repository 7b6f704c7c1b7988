#include "report/sensors_report.hpp"

#include <fmt/format.h>

namespace sb {

namespace {

// Markdown table cells must not contain '|'.
std::string sensors_cell(std::string s) {
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += '\\';
        out += c;
    }
    return out;
}

std::string sensors_num(const std::optional<double>& v, double scale, int decimals) {
    if (!v)
        return "-";
    return fmt::format("{:.{}f}", *v * scale, decimals);
}

}  // namespace

void write_sensors_markdown(std::ostream& out, const SensorsReport& r) {
    out << "# Sensors\n\n";
    if (r.sources.empty()) {
        out << "No telemetry sources found.\n\n";
    } else {
        out << "| source | class | metrics | properties |\n| --- | --- | ---: | --- |\n";
        for (const auto& s : r.sources) {
            std::string props;
            for (const auto& [k, v] : s.properties)
                props += (props.empty() ? "" : "; ") + k + ": " + v;
            out << "| " << sensors_cell(s.name) << " | " << s.source_class << " | "
                << s.metrics.size() << " | " << (props.empty() ? "-" : sensors_cell(props))
                << " |\n";
        }
        out << "\n";
    }
    bool any_absent = false;
    for (const auto& c : r.classes) {
        if (c.found > 0)
            continue;
        if (!any_absent)
            out << "Absent:\n\n";
        any_absent = true;
        out << "- " << c.source_class << ": " << c.note << "\n";
    }
    if (any_absent)
        out << "\n";
    if (!r.current.empty()) {
        out << "## Current values\n\n| metric | value | unit |\n| --- | ---: | --- |\n";
        for (const auto& c : r.current) {
            out << "| " << c.metric << " | " << sensors_num(c.value, 1, c.unit == "bits" ? 0 : 1)
                << " | " << c.unit << " |\n";
        }
        out << "\n";
    }
    if (!r.window.empty()) {
        out << fmt::format("## Over {:.3f} s at {:g} Hz\n\n",
                           static_cast<double>(r.duration_ns) * 1e-9, r.hz);
        out << "| sensor | energy (J) | mean power (mW) | max power (mW) | temp min (°C) | "
               "temp max (°C) | freq min (MHz) | freq max (MHz) | freq mean (MHz) |\n"
            << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
        for (const auto& w : r.window) {
            out << "| " << w.sensor << " | " << sensors_num(w.energy_j, 1, 4) << " | "
                << sensors_num(w.mean_power_mw, 1, 1) << " | " << sensors_num(w.max_power_mw, 1, 1)
                << " | " << sensors_num(w.temp_min_mc, 1e-3, 1) << " | "
                << sensors_num(w.temp_max_mc, 1e-3, 1) << " | "
                << sensors_num(w.freq_min_khz, 1e-3, 0) << " | "
                << sensors_num(w.freq_max_khz, 1e-3, 0) << " | "
                << sensors_num(w.freq_mean_khz, 1e-3, 0) << " |\n";
        }
        out << "\nEnergy from counters read at the window's ends where a sensor has one, else "
               "integrated power. Nested RAPL domains overlap: do not add them.\n\n";
    }
    if (!r.warnings.empty()) {
        out << "## Warnings\n\n";
        for (const auto& w : r.warnings) {
            out << "- **" << w.code << "**: " << w.message << " — " << w.hint << "\n";
        }
    }
}

}  // namespace sb
