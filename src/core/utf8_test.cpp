#include "core/utf8.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sb {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// The oracle: nlohmann's strict serialiser throws type_error.316 for exactly the strings that
// are not UTF-8 (an implementation independent of ours).
bool nlohmann_accepts(const std::string& s) {
    try {
        (void)nlohmann::json(s).dump();
        return true;
    } catch (const nlohmann::json::type_error&) {
        return false;
    }
}

std::string encode(uint32_t cp) {
    std::string o;
    if (cp < 0x80) {
        o += static_cast<char>(cp);
    } else if (cp < 0x800) {
        o += static_cast<char>(0xC0 | (cp >> 6));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        o += static_cast<char>(0xE0 | (cp >> 12));
        o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        o += static_cast<char>(0xF0 | (cp >> 18));
        o += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        o += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return o;
}

// Bytes the way bad input makes them: valid characters of every length, random bytes, cut
// sequences, overlong forms, surrogates, code points above U+10FFFF.
std::string generate(std::mt19937_64& rng) {
    std::uniform_int_distribution<int> kind(0, 8), len(0, 12), byte(0, 255);
    std::string s;
    for (int n = len(rng); n > 0; --n) {
        switch (kind(rng)) {
            case 0:
                s += static_cast<char>('a' + byte(rng) % 26);
                break;
            case 1:
                s += static_cast<char>(byte(rng));
                break;
            case 2:
                s += encode(0x80 + rng() % (0x800 - 0x80));
                break;
            case 3: {
                uint32_t cp = 0x800 + rng() % (0x10000 - 0x800);
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    cp = 0x20AC;
                s += encode(cp);
                break;
            }
            case 4:
                s += encode(0x10000 + rng() % (0x110000 - 0x10000));
                break;
            case 5: {  // a character cut short
                std::string c = encode(0x800 + rng() % (0x110000 - 0x800));
                s += c.substr(0, 1 + rng() % (c.size() - 1));
                break;
            }
            case 6: {  // overlong: an ASCII or 2-byte character in a longer form
                const uint32_t cp = rng() % 0x800;
                if (cp < 0x80 && rng() % 2) {
                    s += static_cast<char>(0xC0 | (cp >> 6));
                    s += static_cast<char>(0x80 | (cp & 0x3F));
                } else {
                    s += static_cast<char>(0xE0);
                    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                    s += static_cast<char>(0x80 | (cp & 0x3F));
                }
                break;
            }
            case 7: {  // a surrogate, encoded as if it were a character
                const uint32_t cp = 0xD800 + rng() % 0x800;
                s += static_cast<char>(0xE0 | (cp >> 12));
                s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                s += static_cast<char>(0x80 | (cp & 0x3F));
                break;
            }
            default: {  // above U+10FFFF
                const uint32_t cp = 0x110000 + rng() % 0x2F0000;
                s += static_cast<char>(0xF0 | ((cp >> 18) & 0x07));
                s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
                s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                s += static_cast<char>(0x80 | (cp & 0x3F));
                break;
            }
        }
    }
    return s;
}

TEST(Utf8, KnownSequences) {
    EXPECT_EQ(valid_utf8("\xff\xfe"), kFffd + kFffd);
    EXPECT_EQ(valid_utf8("abc"), "abc");
    EXPECT_EQ(valid_utf8(""), "");
    EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
    EXPECT_EQ(valid_utf8("\xE2\x82\xAC"), "\xE2\x82\xAC");  // €
    EXPECT_EQ(valid_utf8("x\xE2\x82"), "x" + kFffd);        // € cut after two bytes
    EXPECT_EQ(valid_utf8("\xC0\xAF"), kFffd + kFffd);       // overlong '/'
    EXPECT_EQ(valid_utf8("\xE0\x80\xAF"), kFffd + kFffd + kFffd);
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // U+D800
    EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
    EXPECT_EQ(valid_utf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // U+1F600
    // Unicode 15, table 3-8: one U+FFFD per maximal subpart.
    EXPECT_EQ(valid_utf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
              "a" + kFffd + kFffd + kFffd + "b" + kFffd + "c" + kFffd + kFffd + "d");
}

TEST(Utf8, PrefixNeverSplitsACharacter) {
    const std::string euro = "\xE2\x82\xAC";
    EXPECT_EQ(utf8_prefix("ab" + euro, 4), "ab");
    EXPECT_EQ(utf8_prefix("ab" + euro, 5), "ab" + euro);
    EXPECT_EQ(utf8_prefix("abc", 0), "");
    EXPECT_EQ(utf8_prefix("\xff", 1), "");  // its replacement takes 3 bytes
}

// Seeded and time-bounded: every generated string is judged like nlohmann judges it, and what
// valid_utf8 makes of it always serialises.
TEST(Utf8, FuzzAgreesWithNlohmannAndAlwaysSerialises) {
    std::mt19937_64 rng(20240520);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    int n = 0, invalid = 0;
    while (n < 2000 || std::chrono::steady_clock::now() < until) {
        if (n >= 200000)
            break;
        const std::string s = generate(rng);
        const bool valid = is_valid_utf8(s);
        ASSERT_EQ(valid, nlohmann_accepts(s))
            << nlohmann::json(s).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
        invalid += !valid;
        const std::string v = valid_utf8(s);
        ASSERT_TRUE(is_valid_utf8(v));
        ASSERT_TRUE(nlohmann_accepts(v));
        if (valid) {
            ASSERT_EQ(v, s);
        }
        ASSERT_EQ(valid_utf8(v), v);  // idempotent
        std::string in_place = s;
        make_valid_utf8(in_place);
        ASSERT_EQ(in_place, v);
        const std::size_t cut = rng() % (s.size() + 4);
        const std::string p = utf8_prefix(s, cut);
        ASSERT_LE(p.size(), cut);
        ASSERT_TRUE(is_valid_utf8(p));
        ASSERT_EQ(v.compare(0, p.size(), p), 0);
        ++n;
    }
    EXPECT_GT(invalid, n / 10);  // the generator really produces bad input
    EXPECT_LT(invalid, n);       // and good input
}

TEST(Utf8, ErrorsAndDumpsNeverCarryBadBytes) {
    const Error e = input_error("sensor said '\xff\xfe' and '\xE2\x82'");
    EXPECT_TRUE(is_valid_utf8(e.what()));
    EXPECT_NE(std::string(e.what()).find("sensor said"), std::string::npos);
    nlohmann::json doc{{"value", "cut \xE2\x82"}, {"ok", "fine"}};
    EXPECT_THROW((void)doc.dump(), nlohmann::json::type_error);
    const std::string text = dump_json(doc, 2);
    EXPECT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(nlohmann::json::parse(text)["ok"], "fine");
}

}  // namespace
}  // namespace sb
