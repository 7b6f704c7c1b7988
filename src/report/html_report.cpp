#include "report/html_report.hpp"

#include <cctype>

#include "core/error.hpp"
#include "core/result.hpp"
#include "report/html_assets.hpp"

namespace sb {

using nlohmann::json;

namespace {

bool starts_with_nocase(std::string_view s, std::size_t pos, std::string_view prefix) {
    if (s.size() - pos < prefix.size())
        return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[pos + i])) != prefix[i])
            return false;
    return true;
}

}  // namespace

std::string script_safe_json(const json& j) {
    const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '<')
            out += "\\u003c";
        else
            out += c;
    }
    return out;
}

std::string script_safe_js(std::string_view js) {
    std::string out;
    out.reserve(js.size());
    for (std::size_t i = 0; i < js.size(); ++i) {
        if (js[i] == '<' && starts_with_nocase(js, i, "</script")) {
            out += "<\\/";
            ++i;  // the '/' is written above
            continue;
        }
        if (js[i] == '<' && starts_with_nocase(js, i, "<!--")) {
            out += "<\\x21";
            ++i;  // the '!'
            continue;
        }
        out += js[i];
    }
    return out;
}

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

void write_html_report(const std::vector<ReportInput>& docs, const HtmlOptions& options,
                       std::ostream& out) {
    json view = report_view(docs);
    json libraries = json::array();
    std::string library_scripts;
    for (const auto& f : embedded_files()) {
        if (f.library.empty())
            continue;
        libraries.push_back({{"name", f.library}, {"version", f.version}});
        library_scripts += "<script>/* " + std::string(f.library) + " " + std::string(f.version) +
                           " */\n" + script_safe_js(f.content) + "\n</script>\n";
    }
    view["title"] = options.title;
    view["tool_version"] = options.tool_version;
    view["generated_at"] = options.generated_at.empty() ? utc_timestamp() : options.generated_at;
    view["libraries"] = libraries;

    // The page template holds {{NAME}} placeholders; what is put in is not scanned again.
    const std::string_view page = embedded_file("report.html").content;
    std::size_t pos = 0;
    while (pos < page.size()) {
        const std::size_t open = page.find("{{", pos);
        if (open == std::string_view::npos) {
            out << page.substr(pos);
            break;
        }
        const std::size_t close = page.find("}}", open);
        if (close == std::string_view::npos)
            throw runtime_error("report.html: unterminated placeholder");
        out << page.substr(pos, open - pos);
        const std::string_view name = page.substr(open + 2, close - open - 2);
        if (name == "TITLE")
            out << html_escape(options.title);
        else if (name == "STYLE")
            out << embedded_file("report.css").content;
        else if (name == "LIBRARIES")
            out << library_scripts;
        else if (name == "DATA")
            out << script_safe_json(view);
        else if (name == "SCRIPT")
            out << script_safe_js(embedded_file("report.js").content);
        else
            throw runtime_error("report.html: unknown placeholder {{" + std::string(name) + "}}");
        pos = close + 2;
    }
}

}  // namespace sb
