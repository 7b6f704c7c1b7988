#pragma once
// Rows as tables of fields, the way llama-bench's get_fields() feeds every printer: one table
// per kind of row (a measured stage of a test, an op record, a run of a pipeline mode, a side of
// a comparison) names each field once, with how to get its value from a row and how each format
// writes it. write_csv_header/write_csv_row write every CSV field of a table, in its order;
// write_markdown_header/write_markdown_row the fields that have a Markdown column, in the same
// order; fields_json gives the HTML report the CSV fields as columns and rows. So a field added
// to a table reaches each format that prints that row, from that one place.
//
// CSV (RFC 4180, '\n' line ends): an absent value is an empty cell; text is written bare
// unless it holds a comma, a quote or a line break (then quoted, quotes doubled), or always
// quoted where the field says so; integers in decimal; real numbers with the field's fmt
// format ("{}": the shortest text that reads back as the same double); flags as true/false.
// Locale-independent.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace sb {

// A field's value: absent, text, an integer, a real number or a flag.
using FieldValue = std::variant<std::monostate, std::string, int64_t, double, bool>;

enum class CsvQuote { as_needed, always };

// A column of a Markdown table: its header, whether it aligns right (numbers), and the cell's
// text for a row ('|' in it is escaped by the writer).
template <class Row>
struct MarkdownColumn {
    std::string header;
    bool right = false;
    std::function<std::string(const Row&)> text;
};

template <class Row>
struct Field {
    using Getter = std::function<FieldValue(const Row&)>;
    Field(std::string name_, Getter get_, const char* real_format_ = "{}",
          CsvQuote quote_ = CsvQuote::as_needed, bool csv_ = true,
          std::optional<MarkdownColumn<Row>> markdown_ = std::nullopt)
        : name(std::move(name_)),
          get(std::move(get_)),
          real_format(real_format_),
          quote(quote_),
          csv(csv_),
          markdown(std::move(markdown_)) {}

    std::string name;  // the CSV header; the column's name in JSON views
    Getter get;
    const char* real_format;  // how CSV writes a real number (fmt)
    CsvQuote quote;
    bool csv;  // false: a Markdown column only (e.g. a model's size from the document)
    std::optional<MarkdownColumn<Row>> markdown;
};

template <class Row>
using FieldTable = std::vector<Field<Row>>;

// One CSV cell of v (see the top of this file).
std::string csv_cell(const FieldValue& v, const char* real_format = "{}",
                     CsvQuote quote = CsvQuote::as_needed);
// One Markdown cell's text with '|' escaped and line breaks as spaces.
std::string markdown_cell(const std::string& text);
// v as JSON: null, a string, a number or a boolean.
nlohmann::json field_json(const FieldValue& v);

template <class Row>
void write_csv_header(std::ostream& out, const FieldTable<Row>& table) {
    bool first = true;
    for (const auto& f : table) {
        if (!f.csv)
            continue;
        out << (first ? "" : ",") << f.name;
        first = false;
    }
    out << '\n';
}

template <class Row>
void write_csv_row(std::ostream& out, const FieldTable<Row>& table, const Row& row) {
    bool first = true;
    for (const auto& f : table) {
        if (!f.csv)
            continue;
        out << (first ? "" : ",") << csv_cell(f.get(row), f.real_format, f.quote);
        first = false;
    }
    out << '\n';
}

// "| a | b |\n| --- | ---: |\n" of the fields with a Markdown column.
template <class Row>
void write_markdown_header(std::ostream& out, const FieldTable<Row>& table) {
    std::string names = "|", align = "|";
    for (const auto& f : table) {
        if (!f.markdown)
            continue;
        names += " " + f.markdown->header + " |";
        align += f.markdown->right ? " ---: |" : " --- |";
    }
    out << names << '\n' << align << '\n';
}

// The Markdown cells of row for the fields with a Markdown column.
template <class Row>
std::vector<std::string> markdown_cells(const FieldTable<Row>& table, const Row& row) {
    std::vector<std::string> cells;
    for (const auto& f : table)
        if (f.markdown)
            cells.push_back(markdown_cell(f.markdown->text(row)));
    return cells;
}

// "| a | b |\n".
void write_markdown_cells(std::ostream& out, const std::vector<std::string>& cells);

template <class Row>
void write_markdown_row(std::ostream& out, const FieldTable<Row>& table, const Row& row) {
    write_markdown_cells(out, markdown_cells(table, row));
}

// {"columns": [CSV field names], "rows": [[value per column] per row]}: what the HTML report
// draws as a table of every field.
template <class Row>
nlohmann::json fields_json(const FieldTable<Row>& table, const std::vector<Row>& rows) {
    nlohmann::json columns = nlohmann::json::array(), out_rows = nlohmann::json::array();
    for (const auto& f : table)
        if (f.csv)
            columns.push_back(f.name);
    for (const auto& r : rows) {
        nlohmann::json values = nlohmann::json::array();
        for (const auto& f : table)
            if (f.csv)
                values.push_back(field_json(f.get(r)));
        out_rows.push_back(std::move(values));
    }
    return {{"columns", columns}, {"rows", out_rows}};
}

}  // namespace sb
