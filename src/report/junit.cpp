#include "report/junit.hpp"

#include <fmt/format.h>

#include "core/utf8.hpp"

namespace sb {

namespace {

// Appends s, valid UTF-8, escaped; in_attribute also escapes the white space that attribute
// value normalisation would turn into spaces.
void append_escaped(std::string& out, std::string_view raw, bool in_attribute) {
    const std::string s = valid_utf8(raw);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '&':
                out += "&amp;";
                continue;
            case '<':
                out += "&lt;";
                continue;
            case '>':
                out += "&gt;";
                continue;
            case '"':
                out += "&quot;";
                continue;
            case '\'':
                out += "&apos;";
                continue;
            case '\t':
            case '\n':
            case '\r':
                if (in_attribute)
                    out += fmt::format("&#{};", static_cast<int>(c));
                else
                    out += static_cast<char>(c);
                continue;
            default:
                break;
        }
        if (c < 0x20) {
            // XML 1.0 has no way to hold these, not even as a character reference.
            out += fmt::format("\\x{:02X}", static_cast<int>(c));
            continue;
        }
        // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters either.
        if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
            (static_cast<unsigned char>(s[i + 2]) == 0xBE ||
             static_cast<unsigned char>(s[i + 2]) == 0xBF)) {
            out += static_cast<unsigned char>(s[i + 2]) == 0xBE ? "\\uFFFE" : "\\uFFFF";
            i += 2;
            continue;
        }
        out += static_cast<char>(c);
    }
}

struct Counts {
    std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
    double time_s = 0;
    void add(const JunitCase& c) {
        ++tests;
        failures += c.outcome == JunitOutcome::failure;
        errors += c.outcome == JunitOutcome::error;
        skipped += c.outcome == JunitOutcome::skipped;
        time_s += c.time_s.value_or(0);
    }
    std::string attributes() const {
        return fmt::format(R"(tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3f}")",
                           tests, failures, errors, skipped, time_s);
    }
};

void write_properties(std::ostream& out, const std::vector<JunitProperty>& ps, const char* indent) {
    if (ps.empty())
        return;
    out << indent << "<properties>\n";
    for (const auto& p : ps)
        out << indent << "  <property name=\"" << xml_attribute(p.name) << "\" value=\""
            << xml_attribute(p.value) << "\"/>\n";
    out << indent << "</properties>\n";
}

const char* element_of(JunitOutcome o) {
    switch (o) {
        case JunitOutcome::failure:
            return "failure";
        case JunitOutcome::error:
            return "error";
        case JunitOutcome::skipped:
            return "skipped";
        case JunitOutcome::passed:
            break;
    }
    return "";
}

void write_case(std::ostream& out, const JunitCase& c) {
    out << "    <testcase name=\"" << xml_attribute(c.name) << "\" classname=\""
        << xml_attribute(c.classname) << "\"";
    if (c.time_s)
        out << fmt::format(" time=\"{:.3f}\"", *c.time_s);
    const bool body =
        !c.properties.empty() || c.outcome != JunitOutcome::passed || !c.system_out.empty();
    if (!body) {
        out << "/>\n";
        return;
    }
    out << ">\n";
    write_properties(out, c.properties, "      ");
    if (c.outcome != JunitOutcome::passed) {
        out << "      <" << element_of(c.outcome) << " message=\"" << xml_attribute(c.message)
            << "\"";
        if (!c.type.empty())
            out << " type=\"" << xml_attribute(c.type) << "\"";
        if (c.text.empty())
            out << "/>\n";
        else
            out << ">" << xml_text(c.text) << "</" << element_of(c.outcome) << ">\n";
    }
    if (!c.system_out.empty())
        out << "      <system-out>" << xml_text(c.system_out) << "</system-out>\n";
    out << "    </testcase>\n";
}

}  // namespace

std::string xml_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_escaped(out, s, false);
    return out;
}

std::string xml_attribute(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_escaped(out, s, true);
    return out;
}

JunitProperty junit_number(std::string name, double v) {
    return {std::move(name), fmt::format("{}", v)};
}

void write_junit(std::ostream& out, const JunitReport& r) {
    Counts all;
    for (const auto& s : r.suites)
        for (const auto& c : s.cases)
            all.add(c);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites name=\"" << xml_attribute(r.name) << "\" " << all.attributes() << ">\n";
    for (const auto& s : r.suites) {
        Counts n;
        for (const auto& c : s.cases)
            n.add(c);
        out << "  <testsuite name=\"" << xml_attribute(s.name) << "\" " << n.attributes();
        if (!s.timestamp.empty())
            out << " timestamp=\"" << xml_attribute(s.timestamp) << "\"";
        if (!s.hostname.empty())
            out << " hostname=\"" << xml_attribute(s.hostname) << "\"";
        out << ">\n";
        write_properties(out, s.properties, "    ");
        for (const auto& c : s.cases)
            write_case(out, c);
        if (!s.system_out.empty())
            out << "    <system-out>" << xml_text(s.system_out) << "</system-out>\n";
        out << "  </testsuite>\n";
    }
    out << "</testsuites>\n";
}

}  // namespace sb
