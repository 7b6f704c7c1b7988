#include "core/json_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/document.hpp"
#include "core/error.hpp"

namespace sb {

nlohmann::json read_json_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw input_error("'" + path + "' is a directory, not a JSON file");
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw input_error("cannot read '" + path + "': " + std::strerror(errno));
    std::ostringstream text;
    text << f.rdbuf();
    return parse_document_text(text.str(), "'" + path + "'");
}

void write_text_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f)
            throw runtime_error("cannot write '" + path + "'");
        f << text;
        if (!f.flush())
            throw runtime_error("cannot write '" + path + "'");
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw runtime_error("cannot move '" + path + "' into place");
    }
}

}  // namespace sb
