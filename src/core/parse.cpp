#include "core/parse.hpp"

#include <charconv>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace sb {

std::optional<int64_t> parse_decimal_int(std::string_view text) {
    std::string_view s = text;
    if (s.size() > 1 && s.front() == '+' && s[1] != '-')
        s.remove_prefix(1);
    const std::string_view digits = !s.empty() && s.front() == '-' ? s.substr(1) : s;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<uint64_t> parse_decimal_uint(std::string_view s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<double> parse_decimal(std::string_view text) {
    std::string_view s = text;
    if (s.size() > 1 && s.front() == '+' && s[1] != '-')
        s.remove_prefix(1);
    // Only these characters, and a digit among them: from_chars would also read "inf", "nan"
    // (and, asked to, hex).
    if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string_view::npos ||
        s.find_first_of("0123456789") == std::string_view::npos || s.front() == 'e' ||
        s.front() == 'E')
        return std::nullopt;
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::vector<std::string> split_list(std::string_view text, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t at; (at = text.find(sep, start)) != std::string_view::npos; start = at + 1)
        out.emplace_back(text.substr(start, at - start));
    out.emplace_back(text.substr(start));
    return out;
}

std::optional<int64_t> parse_duration(std::string_view text) {
    std::string_view s = trim(text);
    std::size_t n = 0;
    while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) || s[n] == '.' ||
                            s[n] == '-' || s[n] == '+'))
        ++n;
    std::string_view number = s.substr(0, n);
    if (!number.empty() && number.front() == '+')
        number.remove_prefix(1);
    // from_chars reads "inf" and "nan" too: a digit, '.' or '-' must come first.
    if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number.front())) ||
                            number.front() == '.' || number.front() == '-'))
        return std::nullopt;
    double v = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(v))
        return std::nullopt;
    static const std::map<std::string_view, double> kScale = {
        {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"m", 60e9}, {"min", 60e9}};
    const auto unit = kScale.find(s.substr(n));
    if (unit == kScale.end() || v < 0 || v * unit->second > 1e18)
        return std::nullopt;
    return static_cast<int64_t>(std::llround(v * unit->second));
}

int64_t parse_duration_ns(std::string_view text) {
    const auto ns = parse_duration(text);
    if (!ns)
        throw usage_error("invalid duration '" + std::string(text) +
                          "': use e.g. 5s, 500ms, 1m or a number of seconds");
    return *ns;
}

}  // namespace sb
