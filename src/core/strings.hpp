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

// n as an English ordinal: "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st".
inline std::string ordinal(long long n) {
    const long long t = (n < 0 ? -n : n) % 100, u = t % 10;
    const char* s = t >= 11 && t <= 13 ? "th"
                    : u == 1           ? "st"
                    : u == 2           ? "nd"
                    : u == 3           ? "rd"
                                       : "th";
    return std::to_string(n) + s;
}

}  // namespace sb
