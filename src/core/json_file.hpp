#pragma once
// Reading and writing JSON documents given on the command line.
#include <nlohmann/json.hpp>
#include <string>

namespace sb {

// Parses the file at path. Throws sb::Error(input), one line naming the file, when it cannot be
// read, is not a regular file (a FIFO, a device) or is not JSON (with the byte offset of the
// first error).
nlohmann::json read_json_file(const std::string& path);

// Writes text to path with write_output_file (core/file_io.hpp): atomically for a regular file,
// in place for a FIFO or a device. Throws sb::Error(input) for a path that cannot be an output
// (a directory), sb::Error(runtime) when the bytes cannot be written.
void write_text_file(const std::string& path, const std::string& text,
                     const std::string& what = "output file");

}  // namespace sb
