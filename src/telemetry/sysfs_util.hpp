#pragma once
// Small file helpers for sysfs-style trees (one value per file). Locale-independent; never
// throw. Used by the telemetry sources and their tests.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb::sysfs {

struct ReadResult {
    std::optional<std::string> text;  // the file's content (at most 64 KiB) when readable
    int err = 0;                      // errno when not readable (ENOENT: absent)
};

// Reads a whole small file with open/read/close (every call sees the current content, also
// when a writer replaced the file).
ReadResult read_text(const std::string& path);

// The trimmed content, or nullopt when unreadable.
std::optional<std::string> read_trimmed(const std::string& path);

bool exists(const std::string& path);
bool is_dir(const std::string& path);
bool is_executable(const std::string& path);

// Names of the entries of dir starting with prefix, in natural order (zone2 before zone10).
// Empty when dir is absent.
std::vector<std::string> list_dir(const std::string& dir, std::string_view prefix = "");

std::string_view trim(std::string_view s);

// A decimal number: optional sign, digits, optional fraction and exponent, surrounding
// whitespace allowed. Anything else ("N/A", "", "12abc", "nan", "inf") is nullopt.
std::optional<double> parse_number(std::string_view s);

// Replaces every character outside [A-Za-z0-9_-] by '_' (so names never contain '.').
std::string sanitize(std::string_view s);

// The leading decimal number of s ("12 %" -> 12), nullopt when s does not start with one.
std::optional<double> parse_leading_number(std::string_view s);

}  // namespace sb::sysfs
