#include "scenario/serve_workload.hpp"

#include <cctype>
#include <charconv>
#include <optional>
#include <random>
#include <sstream>
#include <string_view>

#include "core/error.hpp"

namespace sb {

namespace {

std::string_view trim_space(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

// A whole decimal count, nothing else.
std::optional<int64_t> count_of(std::string_view s) {
    s = trim_space(s);
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
        return std::nullopt;
    return v;
}

// Unbiased draw in [lo, hi] from the raw generator (the standard distributions differ between
// standard libraries).
int64_t draw(std::mt19937_64& rng, int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;
    const uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
    uint64_t x;
    do {
        x = rng();
    } while (x >= limit);
    return lo + static_cast<int64_t>(x % range);
}

}  // namespace

LengthRange parse_length_range(const std::string& text, const std::string& flag,
                               int64_t max_tokens) {
    const auto dash = text.find('-');
    const auto lo = count_of(std::string_view(text).substr(0, dash));
    const auto hi =
        dash == std::string::npos ? lo : count_of(std::string_view(text).substr(dash + 1));
    const std::string want =
        "expected a token count or a range LO-HI, each 1.." + std::to_string(max_tokens);
    if (!lo || !hi)
        throw usage_error(flag + " '" + text + "': " + want + " (e.g. 128 or 64-256)");
    if (*lo < 1 || *hi < 1 || *lo > max_tokens || *hi > max_tokens)
        throw usage_error(flag + " '" + text + "': " + want);
    if (*lo > *hi)
        throw usage_error(flag + " '" + text + "': the range's low end is above its high end");
    return {*lo, *hi};
}

std::vector<std::pair<int64_t, int64_t>> parse_lengths_csv(const std::string& text,
                                                           const std::string& file,
                                                           int64_t max_tokens) {
    std::vector<std::pair<int64_t, int64_t>> out;
    // A UTF-8 byte order mark (what some editors and spreadsheets save first) is no part of the
    // first line: left in, it made a first pair look like a header, dropped.
    std::istringstream in(text.rfind("\xEF\xBB\xBF", 0) == 0 ? text.substr(3) : text);
    std::string line;
    int no = 0;
    bool first = true;
    while (std::getline(in, line)) {
        ++no;
        const std::string_view l = trim_space(line);
        if (l.empty() || l.front() == '#')
            continue;
        const auto comma = l.find(',');
        const auto p =
            comma == std::string_view::npos ? std::nullopt : count_of(l.substr(0, comma));
        const auto n =
            comma == std::string_view::npos ? std::nullopt : count_of(l.substr(comma + 1));
        const bool was_first = first;
        first = false;
        if (!p || !n) {
            if (was_first)
                continue;  // a header
            throw usage_error(file + ":" + std::to_string(no) +
                              ": expected two token counts 'prompt,output', got '" +
                              std::string(l.substr(0, 60)) + "'");
        }
        if (*p < 1 || *n < 1 || *p > max_tokens || *n > max_tokens)
            throw usage_error(file + ":" + std::to_string(no) + ": token counts must be 1.." +
                              std::to_string(max_tokens) + ", got '" +
                              std::string(l.substr(0, 60)) + "'");
        out.emplace_back(*p, *n);
    }
    if (out.empty())
        throw usage_error(file + ": no 'prompt,output' pairs");
    return out;
}

std::vector<std::pair<int64_t, int64_t>> request_lengths(
    int n, const LengthRange& prompt, const LengthRange& output,
    const std::vector<std::pair<int64_t, int64_t>>& pairs, uint64_t seed) {
    std::vector<std::pair<int64_t, int64_t>> out;
    std::mt19937_64 rng(seed);
    for (int i = 0; i < n; ++i) {
        if (!pairs.empty()) {
            out.push_back(pairs[static_cast<size_t>(i) % pairs.size()]);
            continue;
        }
        const int64_t p = draw(rng, prompt.lo, prompt.hi);
        out.emplace_back(p, draw(rng, output.lo, output.hi));
    }
    return out;
}

}  // namespace sb
