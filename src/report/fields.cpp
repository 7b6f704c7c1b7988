#include "report/fields.hpp"

#include <fmt/format.h>

namespace sb {

std::string csv_cell(const FieldValue& v, const char* real_format, CsvQuote quote) {
    if (const auto* text = std::get_if<std::string>(&v)) {
        if (quote == CsvQuote::as_needed && text->find_first_of(",\"\n\r") == std::string::npos)
            return *text;
        std::string q = "\"";
        for (char c : *text) {
            if (c == '"')
                q += '"';
            q += c;
        }
        return q + "\"";
    }
    if (const auto* n = std::get_if<int64_t>(&v))
        return fmt::format("{}", *n);
    if (const auto* x = std::get_if<double>(&v))
        return fmt::format(fmt::runtime(real_format), *x);
    if (const auto* b = std::get_if<bool>(&v))
        return *b ? "true" : "false";
    return quote == CsvQuote::always ? "\"\"" : "";
}

std::string markdown_cell(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n' || c == '\r')
            out += ' ';
        else
            out += c;
    }
    return out;
}

nlohmann::json field_json(const FieldValue& v) {
    if (const auto* text = std::get_if<std::string>(&v))
        return *text;
    if (const auto* n = std::get_if<int64_t>(&v))
        return *n;
    if (const auto* x = std::get_if<double>(&v))
        return *x;
    if (const auto* b = std::get_if<bool>(&v))
        return *b;
    return nullptr;
}

void write_markdown_cells(std::ostream& out, const std::vector<std::string>& cells) {
    out << '|';
    for (const auto& c : cells)
        out << ' ' << c << " |";
    out << '\n';
}

}  // namespace sb
