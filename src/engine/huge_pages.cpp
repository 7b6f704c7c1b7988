#include "engine/huge_pages.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace sb {
namespace {

#if defined(__linux__) && defined(MADV_HUGEPAGE)
constexpr bool kHaveMadvise = true;
#else
constexpr bool kHaveMadvise = false;
#endif

std::optional<std::string> read_all(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

bool parse_hex(std::string_view s, uintptr_t& out) {
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
    return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<MapRange> anonymous_rw_ranges(std::string_view maps) {
    std::vector<MapRange> out;
    while (!maps.empty()) {
        const size_t nl = maps.find('\n');
        std::string_view line = maps.substr(0, nl);
        maps = nl == std::string_view::npos ? std::string_view{} : maps.substr(nl + 1);
        // address perms offset dev inode [path]
        std::string_view f[6];
        int n = 0;
        size_t i = 0;
        while (n < 6 && i < line.size()) {
            while (i < line.size() && line[i] == ' ')
                ++i;
            if (i >= line.size())
                break;
            const size_t start = i;
            // The path (sixth field) may hold spaces: it is the rest of the line.
            if (n == 5) {
                f[n++] = line.substr(start);
                break;
            }
            while (i < line.size() && line[i] != ' ')
                ++i;
            f[n++] = line.substr(start, i - start);
        }
        if (n < 5 || n > 6 || (n == 6 && !f[5].empty()))
            continue;  // short lines, and mappings of a file or a named region
        if (f[1].size() != 4 || f[1][0] != 'r' || f[1][1] != 'w' || f[1][3] != 'p')
            continue;
        if (f[4] != "0")
            continue;  // an inode: a file
        const size_t dash = f[0].find('-');
        MapRange r;
        if (dash == std::string_view::npos || !parse_hex(f[0].substr(0, dash), r.begin) ||
            !parse_hex(f[0].substr(dash + 1), r.end) || r.end <= r.begin)
            continue;
        out.push_back(r);
    }
    return out;
}

std::vector<MapRange> new_ranges(const std::vector<MapRange>& before,
                                 const std::vector<MapRange>& now, uintptr_t min_bytes) {
    std::vector<MapRange> old = before;
    std::sort(old.begin(), old.end(),
              [](const MapRange& a, const MapRange& b) { return a.begin < b.begin; });
    std::vector<MapRange> out;
    for (const MapRange& r : now) {
        uintptr_t at = r.begin;
        for (const MapRange& o : old) {
            if (o.end <= at)
                continue;
            if (o.begin >= r.end)
                break;
            if (o.begin > at && o.begin - at >= min_bytes)
                out.push_back({at, o.begin});
            at = std::max(at, o.end);
            if (at >= r.end)
                break;
        }
        if (at < r.end && r.end - at >= min_bytes)
            out.push_back({at, r.end});
    }
    return out;
}

std::string thp_policy(std::string_view enabled_file) {
    const size_t open = enabled_file.find('[');
    if (open == std::string_view::npos)
        return "";
    const size_t close = enabled_file.find(']', open);
    if (close == std::string_view::npos)
        return "";
    return std::string(enabled_file.substr(open + 1, close - open - 1));
}

uint64_t advise_huge_pages(void* p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t page = 4096;
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    const uintptr_t b = (at + page - 1) & ~(page - 1), e = (at + n) & ~(page - 1);
    if (e <= b || madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE) != 0)
        return 0;
    return e - b;
#else
    (void)p;
    (void)n;
    return 0;
#endif
}

HugePageAdvisor::HugePageAdvisor(std::string maps_path, std::string enabled_path,
                                 uintptr_t min_bytes)
    : maps_path_(std::move(maps_path)),
      enabled_path_(std::move(enabled_path)),
      min_bytes_(min_bytes) {}

void HugePageAdvisor::snapshot() {
    advice_ = {};
    const auto enabled = read_all(enabled_path_);
    advice_.policy = enabled ? thp_policy(*enabled) : "";
    if (advice_.policy.empty())
        advice_.policy = "unknown";
    const auto maps = read_all(maps_path_);
    if (!maps) {
        advice_.error = "cannot read " + maps_path_;
        pending_ = false;
        return;
    }
    before_ = anonymous_rw_ranges(*maps);
    pending_ = true;
}

const HugePageAdvice& HugePageAdvisor::advise_new() {
    if (!pending_)
        return advice_;
    pending_ = false;
    if (advice_.policy == "never" || advice_.policy == "unknown")
        return advice_;
    const auto maps = read_all(maps_path_);
    if (!maps) {
        advice_.error = "cannot read " + maps_path_;
        return advice_;
    }
    // /proc/<pid>/maps ranges are page-aligned: every byte of one is advised, or none.
    for (const MapRange& r : new_ranges(before_, anonymous_rw_ranges(*maps), min_bytes_)) {
        const uint64_t n = advise_huge_pages(reinterpret_cast<void*>(r.begin), r.end - r.begin);
        if (n > 0) {
            advice_.advised_bytes += n;
            advice_.ranges.push_back(r);
        } else if (advice_.error.empty()) {
            advice_.error = kHaveMadvise
                                ? std::string("madvise(MADV_HUGEPAGE): ") + std::strerror(errno)
                                : std::string("no madvise(MADV_HUGEPAGE) on this system");
        }
    }
    return advice_;
}

}  // namespace sb
