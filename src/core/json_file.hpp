#pragma once
// Reading and writing JSON documents given on the command line.
#include <nlohmann/json.hpp>
#include <string>

namespace sb {

// Parses the file at path. Throws sb::Error(input), one line naming the file, when it cannot be
// read or is not JSON (with the byte offset of the first error).
nlohmann::json read_json_file(const std::string& path);

// Writes text to path atomically (temporary file + rename). Throws sb::Error(runtime) when the
// file cannot be written.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace sb
