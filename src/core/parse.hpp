#pragma once
// The one parser of the small text values the command line and the documents share: numbers,
// comma lists and durations. Locale-independent. Numbers are decimal only: strtol, strtod and
// CLI11 also read hex (0x10), octal (010 is 8), hex floats, "nan" and "inf", none of which a
// user means by a count or a duration.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// A decimal integer: an optional sign, then digits only, nothing around them ("+7", "-1", "010"
// is 10). nullopt for anything else (empty, hex, a fraction, an exponent) and outside int64.
std::optional<int64_t> parse_decimal_int(std::string_view text);
// The same for an unsigned value: digits only ("-1" and "+1" are refused), 0..2^64-1.
std::optional<uint64_t> parse_decimal_uint(std::string_view text);
// A finite decimal number: an optional sign, digits with an optional '.', an optional exponent
// ("2.5", "-.5", "1e-3"). nullopt for anything else (hex, "nan", "inf", trailing text) and for a
// value no double holds (1e999).
std::optional<double> parse_decimal(std::string_view text);

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
