#include "core/document.hpp"

#include <cstdint>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/result.hpp"

namespace sb {

using nlohmann::json;

int max_readable_version(const std::string& version_field) {
    if (version_field == "schema_version")
        return kResultSchemaVersion;
    if (version_field == "compare_schema_version")
        return 1;
    if (version_field == "advise_schema_version")
        return 1;
    return 0;
}

void check_version_field(const JsonIn& doc, const char* field) {
    const auto it = doc.raw().find(field);
    if (it == doc.raw().end())
        return;
    const JsonIn v = doc.member(field, *it);
    if (!it->is_number_integer())
        v.fail_type("an integer");
    const int max = max_readable_version(field);
    if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(max)
                                 : it->get<int64_t>() > max)
        throw input_error(doc.source() + " was written by a newer stagebench (" + field + " " +
                          it->dump() + "; this build reads up to " + std::to_string(max) +
                          "): use a newer stagebench");
    if (it->is_number_unsigned() ? it->get<uint64_t>() < 1 : it->get<int64_t>() < 1)
        v.fail("expected a version of at least 1, found " + it->dump());
}

void check_json_depth(std::string_view text, const std::string& source, int max_depth,
                      std::string_view what) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // the escaped character, whatever it is
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                throw input_error(source + " nests arrays and objects more than " +
                                  std::to_string(max_depth) + " deep (at byte " +
                                  std::to_string(i) + "): not " + std::string(what));
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
}

json parse_document_text(const std::string& text, const std::string& source) {
    // Before parsing: the parser is iterative, but copying, comparing and writing a value back
    // recurse once per level (the unknown members a reader keeps are copies).
    check_json_depth(text, source);
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw input_error(source + " is not JSON (error at byte " + std::to_string(e.byte) + ")");
    } catch (const json::exception& e) {
        // 1e999 and the like: JSON's grammar, but no double holds them.
        std::string why = e.what();
        if (auto colon = why.rfind("] "); colon != std::string::npos)
            why = why.substr(colon + 2);
        throw input_error(source + " is not usable JSON: " + why);
    }
}

void check_document(const json& doc, const std::string& source) {
    const JsonIn in(doc, source);
    if (!doc.is_object())
        in.fail_type("a JSON object");
    for (const char* field : {"schema_version", "compare_schema_version", "advise_schema_version"})
        check_version_field(in, field);
    const auto schema = doc.find("schema");
    if (schema != doc.end() && !schema->is_string())
        in.member("schema", *schema).fail_type("a string");
}

json load_document(const std::string& path) {
    const std::string source = "'" + path + "'";
    // Regular files only (a FIFO or a device never blocks the reader), one error line.
    json doc = parse_document_text(read_input_file(path, "document"), source);
    check_document(doc, source);
    return doc;
}

ResultDocument load_result_document(const std::string& path) {
    const std::string source = "'" + path + "'";
    return from_json<ResultDocument>(parse_document_text(read_input_file(path, "document"), source),
                                     source);
}

}  // namespace sb
