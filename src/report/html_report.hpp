#pragma once
// The HTML report: one self-contained page (styles, scripts, chart library and data inline; it
// requests nothing) from any number of result documents (run, demo, ops, decompose, sustained,
// import) and compare documents. The data is prepared by report_view (html_data.hpp); the page
// (src/report/html/) draws it with the embedded Chart.js.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/html_data.hpp"

namespace sb {

struct HtmlOptions {
    std::string title = "stagebench report";
    std::string tool_version;  // shown in the footer
    std::string generated_at;  // UTC ISO 8601 for the footer; empty: now
};

// Writes the page to out. Documents of unknown shape become notes on the page; throws only
// sb::Error(runtime) for a build without the embedded assets.
void write_html_report(const std::vector<ReportInput>& docs, const HtmlOptions& options,
                       std::ostream& out);

// j as JSON text that cannot end or alter a <script> element: every '<' is written \u003c
// (it can only occur inside strings). Invalid UTF-8 is replaced, never thrown on.
std::string script_safe_json(const nlohmann::json& j);

// Script text safe to inline in a <script> element: "</script" (any case) becomes "<\/script"
// and "<!--" becomes "<\x21--": the same program wherever they can legally appear (strings,
// template literals, regular expressions, comments).
std::string script_safe_js(std::string_view js);

// Text with &, <, >, " and ' escaped for HTML.
std::string html_escape(std::string_view s);

}  // namespace sb
