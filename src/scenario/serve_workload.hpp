#pragma once
// `stagebench serve`'s request shapes: prompt and output lengths fixed (-p 128), uniform ranges
// (-p 64-256, every length in the range equally likely, seeded), or (prompt, output) pairs read
// from a CSV file (--lengths), taken in the file's order and repeated when a point sends more
// requests than the file has rows.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sb {

struct LengthRange {
    int64_t lo = 1, hi = 1;  // inclusive; lo == hi: fixed
};

// "128" or "64-256" (white space around the numbers ignored); both ends in 1..max_tokens and
// lo <= hi. Throws sb::Error(usage), one line naming the flag.
LengthRange parse_length_range(const std::string& text, const std::string& flag,
                               int64_t max_tokens);

// (prompt, output) token pairs from CSV text, one pair a line: "prompt,output". Blank lines
// and lines starting with '#' are skipped, as is a leading UTF-8 byte order mark; a first line
// that is not two numbers is a header.
// Throws sb::Error(usage) "FILE:LINE: ..." for anything else, a count outside 1..max_tokens,
// or a file without pairs.
std::vector<std::pair<int64_t, int64_t>> parse_lengths_csv(const std::string& text,
                                                           const std::string& file,
                                                           int64_t max_tokens);

// The (prompt, output) lengths of n requests: the CSV pairs in order (cycled) when given,
// otherwise uniform draws from the two ranges with a seeded generator (the same seed gives the
// same lengths on every platform).
std::vector<std::pair<int64_t, int64_t>> request_lengths(
    int n, const LengthRange& prompt, const LengthRange& output,
    const std::vector<std::pair<int64_t, int64_t>>& pairs, uint64_t seed);

}  // namespace sb
