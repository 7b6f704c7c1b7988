#include "core/json_file.hpp"

#include <filesystem>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"

namespace sb {

nlohmann::json read_json_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw input_error("'" + path + "' is a directory, not a JSON file");
    return parse_document_text(read_input_file(path, "document"), "'" + path + "'");
}

void write_text_file(const std::string& path, const std::string& text, const std::string& what) {
    write_output_file(path, text, what);
}

}  // namespace sb
