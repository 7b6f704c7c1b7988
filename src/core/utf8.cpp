#include "core/utf8.hpp"

namespace sb {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed sequence at s[i], or 0 when it is ill-formed; *subpart is then the
// number of bytes the maximal subpart covers (at least 1), all replaced by one U+FFFD.
std::size_t sequence_at(std::string_view s, std::size_t i, std::size_t* subpart) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    *subpart = 1;
    if (c < 0x80)
        return 1;
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;  // no overlong forms
        if (c == 0xED)
            hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;  // no overlong forms
        if (c == 0xF4)
            hi = 0x8F;  // nothing above U+10FFFF
    } else {
        return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
    }
    for (std::size_t k = 1; k < len; ++k) {
        if (i + k >= s.size())
            return 0;
        const unsigned char x = b(i + k);
        const bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
        if (!ok)
            return 0;
        *subpart = k + 1;
    }
    return len;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
    std::size_t i = 0, sub = 0;
    while (i < s.size()) {
        // ASCII runs are the common case: skip them a byte at a time without the table.
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        const std::size_t n = sequence_at(s, i, &sub);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

std::string valid_utf8(std::string_view s) {
    if (is_valid_utf8(s))
        return std::string(s);
    std::string out;
    out.reserve(s.size() + 8);
    std::size_t i = 0, sub = 0;
    while (i < s.size()) {
        const std::size_t n = sequence_at(s, i, &sub);
        if (n == 0) {
            out += kReplacement;
            i += sub;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

void make_valid_utf8(std::string& s) {
    if (!is_valid_utf8(s))
        s = valid_utf8(s);
}

std::string utf8_prefix(std::string_view s, std::size_t max_bytes) {
    std::string v = valid_utf8(s);
    if (v.size() <= max_bytes)
        return v;
    std::size_t n = max_bytes;
    // Back up over continuation bytes to the start of the character that would be cut.
    while (n > 0 && (static_cast<unsigned char>(v[n]) & 0xC0) == 0x80)
        --n;
    v.resize(n);
    return v;
}

}  // namespace sb
