#pragma once
// Small string helpers shared by the parsers (sysfs files, logs, /proc).
#include <string>
#include <string_view>

namespace sb {

// s without leading and trailing white space (space, tab, CR, LF, NUL); a view into s.
inline std::string_view trim(std::string_view s) {
    auto ws = [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0' || c == '\v' ||
               c == '\f';
    };
    while (!s.empty() && ws(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && ws(s.back()))
        s.remove_suffix(1);
    return s;
}

// trim(s) as a string of its own.
inline std::string trimmed(std::string_view s) {
    return std::string(trim(s));
}

}  // namespace sb
