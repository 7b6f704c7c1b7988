#pragma once
// The one parser of the small text values the command line and the documents share: comma
// lists and durations. Locale-independent.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// The items of a separated list, in order and as written: "a,,b" -> {"a", "", "b"}, "" -> {""}.
// Empty items are kept so that the caller can refuse them with its own message.
std::vector<std::string> split_list(std::string_view text, char sep = ',');

// A duration: a non-negative decimal number with an optional unit, s (the default), ms, us, ns,
// m or min, surrounding white space ignored: "5s", "500ms", "2.5", "1m". nullopt for anything
// else (no number, an unknown unit, a negative, infinite or nan value, or more than 1e18 ns).
std::optional<int64_t> parse_duration(std::string_view text);

// parse_duration(), or sb::Error(usage) "invalid duration 'TEXT': use e.g. 5s, 500ms, 1m or a
// number of seconds".
int64_t parse_duration_ns(std::string_view text);

}  // namespace sb
