#pragma once
// Text from outside (sysfs files, logs, HTTP bodies, GGUF metadata, the command line) is bytes,
// not necessarily UTF-8; a JSON document holds only UTF-8. Such text is made valid where it
// enters with valid_utf8(), so a document built from it always serialises; dump_json() is the
// last line of defence where a document is written.
#include <cstddef>
#include <string>
#include <string_view>

namespace sb {

// True when s is well-formed UTF-8 (Unicode table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF, no truncated sequence).
bool is_valid_utf8(std::string_view s);

// s with every ill-formed sequence replaced by U+FFFD, one per maximal subpart (the Unicode
// recommended practice, also the WHATWG decoder's); valid input is returned unchanged.
std::string valid_utf8(std::string_view s);

// Makes s valid in place; copies nothing when it already is.
void make_valid_utf8(std::string& s);

// valid_utf8(s) cut to at most max_bytes without splitting a character.
std::string utf8_prefix(std::string_view s, std::size_t max_bytes);

}  // namespace sb
