#include "report/html_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "report/html_assets.hpp"

namespace sb {
namespace {

using nlohmann::json;

std::size_t count(const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1))
        ++n;
    return n;
}

TEST(HtmlReport, ScriptSafeJsonCannotCloseItsElementAndReadsBackTheSame) {
    json j{{"note", "</script><script>alert(1)</script> <!-- x"}, {"n", 1.5}, {"bad", "\xff"}};
    const std::string s = script_safe_json(j);
    EXPECT_EQ(s.find('<'), std::string::npos) << s;
    json back = json::parse(s);
    EXPECT_EQ(back["note"], j["note"]);
    EXPECT_EQ(back["n"], 1.5);
    EXPECT_EQ(back["bad"], "\xEF\xBF\xBD") << "invalid UTF-8 is replaced, not thrown on";
}

TEST(HtmlReport, ScriptSafeJsEscapesEveryClosingTagAndCommentOpener) {
    EXPECT_EQ(script_safe_js("a='</script>';b='</SCRIPT >';c='<!--';d='</div>'"),
              "a='<\\/script>';b='<\\/SCRIPT >';c='<\\x21--';d='</div>'");
    EXPECT_EQ(script_safe_js("x < y"), "x < y");
    EXPECT_EQ(script_safe_js("<"), "<");
}

TEST(HtmlReport, HtmlEscape) {
    EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(HtmlReport, EmbedsTheLibrariesThePageAndTheData) {
    ASSERT_NE(embedded_file("chart.umd.js").version, "");
    const EmbeddedFile& chart = embedded_file("chart.umd.js");
    EXPECT_EQ(chart.library, "chart.js");
    EXPECT_GT(chart.content.size(), 100'000u);
    EXPECT_EQ(embedded_file("chartjs-plugin-annotation.min.js").library,
              "chartjs-plugin-annotation");
    EXPECT_FALSE(embedded_file("report.js").content.empty());
    EXPECT_THROW(embedded_file("nope.js"), Error);

    json doc{{"schema", "stagebench.result"},
             {"command", "run"},
             {"argv", {"stagebench", "run", "</script><b>x</b>"}}};
    HtmlOptions o;
    o.title = "A <title> & more";
    o.tool_version = "9.9.9";
    o.generated_at = "2026-11-29T10:00:00Z";
    std::ostringstream out;
    write_html_report({ReportInput::of("</script>.json", doc)}, o, out);
    const std::string html = out.str();
    EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
    EXPECT_NE(html.find("<title>A &lt;title&gt; &amp; more</title>"), std::string::npos);
    EXPECT_EQ(html.find("{{"), std::string::npos) << "every placeholder is filled";
    // Page script, two libraries, the data: the data cannot add or close a script element.
    EXPECT_EQ(count(html, "<script"), 4u);
    EXPECT_EQ(count(html, "</script>"), 4u);
    EXPECT_NE(html.find(std::string(chart.content.substr(0, 200))), std::string::npos);

    const std::string open = "<script type=\"application/json\" id=\"sb-data\">";
    const auto b = html.find(open);
    ASSERT_NE(b, std::string::npos);
    const auto e = html.find("</script>", b);
    json data = json::parse(html.substr(b + open.size(), e - b - open.size()));
    EXPECT_EQ(data["tool_version"], "9.9.9");
    EXPECT_EQ(data["generated_at"], "2026-11-29T10:00:00Z");
    ASSERT_EQ(data["libraries"].size(), 2u);
    EXPECT_EQ(data["libraries"][0]["name"], "chart.js");
    EXPECT_EQ(data["documents"][0]["source"], "</script>.json");
    EXPECT_EQ(data["documents"][0]["header"]["command_line"], "stagebench run </script><b>x</b>");
}

}  // namespace
}  // namespace sb
