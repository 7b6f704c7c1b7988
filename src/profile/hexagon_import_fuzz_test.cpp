// Generated Hexagon profile logs, good and bad: the parser must never throw, never accept a
// negative time, and whatever it returns must serialise (valid UTF-8 everywhere).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>

#include "core/utf8.hpp"
#include "profile/hexagon_import.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

struct GenLine {
    std::string text;
    bool negative = false;  // a time, count or clock that must be refused
};

std::string number(std::mt19937_64& rng, bool negative) {
    const int64_t v = static_cast<int64_t>(rng() % 100000);
    return negative ? "-" + std::to_string(v + 1) : std::to_string(v);
}

// A profile-op line in one of the three formats, with names that may hold any bytes.
GenLine make_line(std::mt19937_64& rng) {
    static const char* kOps[] = {"MUL_MAT", "ADD", "RMS_NORM", "ROPE", "SOFT_MAX", "CPY"};
    static const char* kNames[] = {
        "Qcur-0",   "blk.0.attn_q.weight", "\xff\xfe",    "na\xE2\x82",
        "\xC0\xAF", "\xED\xA0\x80x",       "caf\xC3\xA9", "\xF4\x90\x80\x80"};
    GenLine g;
    const std::string op = kOps[rng() % 6];
    const std::string a = kNames[rng() % 8], b = kNames[rng() % 8], out = kNames[rng() % 8];
    const int neg_field = rng() % 4 == 0 ? static_cast<int>(rng() % 4) : -1;
    g.negative = neg_field >= 0;
    const std::string usec = number(rng, neg_field == 0), cycles = number(rng, neg_field == 1);
    const std::string third = number(rng, neg_field == 2), fourth = number(rng, neg_field == 3);
    switch (rng() % 3) {
        case 0:
            g.text = "ggml-hex: HTP0 profile-op " + op + ": " + a + " x " + b + " -> " + out +
                     " : 64:64 x 64:1 -> 64:1 : q4_0 x f32 -> f32 : 1:1 : HTP0 : op-usec " + usec +
                     " op-cycles " + cycles + " op-pkts " + third + " (1.5) call-usec " + fourth;
            break;
        case 1:
            g.text = "ggml-hex: HTP0 profile-op " + op + ": " + a + " -> " + out +
                     " : 64:1 -> 64:1 : f32 -> f32 : 4:256 : usec " + usec + " cycles " + cycles +
                     " start " + third + " n-ops " + fourth;
            break;
        default:
            g.text = "ggml-hex: HTP1:0 profile-op " + op + "|" + a + " x " + b + " -> " + out +
                     "|64:64 x 64:1 -> 64:1|q4_0 x f32 -> f32|1:1||usec " + usec + " cycles " +
                     cycles + " start " + third + " mhz 1100.0";
            // n-ops is not part of this format: a negative 4th number does not appear.
            g.negative = neg_field >= 0 && neg_field <= 2;
            break;
    }
    return g;
}

// Damages a line the ways real logs get damaged: cut anywhere, random bytes, lost spaces.
std::string damage(std::string s, std::mt19937_64& rng) {
    switch (rng() % 4) {
        case 0:
            return s.substr(0, rng() % (s.size() + 1));
        case 1:
            for (int i = 0; i < 3 && !s.empty(); ++i)
                s[rng() % s.size()] = static_cast<char>(rng() % 256);
            return s;
        case 2:
            s.insert(rng() % (s.size() + 1), 1, static_cast<char>(0x80 + rng() % 0x80));
            return s;
        default:
            return s + " \xff";
    }
}

void expect_sane(const HexagonImport& imp) {
    for (const auto& r : imp.records) {
        ASSERT_TRUE(r.op_ns.has_value());
        ASSERT_GE(*r.op_ns, 0);
        if (r.call_ns) {
            ASSERT_GE(*r.call_ns, 0);
        }
        if (r.cycles) {
            ASSERT_GE(*r.cycles, 0);
        }
        ASSERT_TRUE(is_valid_utf8(r.out.name)) << r.out.name;
        ASSERT_TRUE(is_valid_utf8(r.backend));
        for (const auto& s : r.srcs)
            ASSERT_TRUE(is_valid_utf8(s.name));
        (void)to_json(r).dump();  // strict: throws on a string that is not UTF-8
    }
    for (const auto& b : imp.batches)
        ASSERT_GE(b.usec, 0);
    (void)to_json(imp).dump();
}

TEST(HexagonImportFuzz, NegativeTimesAreRefusedAndCounted) {
    std::mt19937_64 rng(7);
    std::string log;
    int negatives = 0, good = 0;
    double good_usec = 0;
    for (int i = 0; i < 400; ++i) {
        GenLine g = make_line(rng);
        log += g.text + "\n";
        if (g.negative) {
            ++negatives;
        } else {
            ++good;
            const auto pos = g.text.find("usec ");
            good_usec += std::stod(g.text.substr(pos + 5));
        }
    }
    ASSERT_GT(negatives, 20);
    std::istringstream in(log);
    const HexagonImport imp = parse_hexagon_profile(in);
    expect_sane(imp);
    EXPECT_EQ(static_cast<int>(imp.records.size()), good);
    EXPECT_EQ(imp.n_unparsed, negatives);
    ASSERT_FALSE(imp.unparsed.empty());
    EXPECT_NE(imp.unparsed[0].reason.find("negative"), std::string::npos) << imp.unparsed[0].reason;
    double sum_ns = 0;
    for (const auto& r : imp.records)
        sum_ns += *r.op_ns;
    EXPECT_DOUBLE_EQ(sum_ns, good_usec * 1000);
    StageProfile s;
    s.ops = imp.records;
    finalize_stage(s);
    for (const auto& a : s.by_op)
        EXPECT_GE(a.op_ns.value_or(0), 0);
}

TEST(HexagonImportFuzz, DamagedLogsNeverThrowAndAlwaysSerialise) {
    std::mt19937_64 rng(20240520);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    int logs = 0;
    while (logs < 50 || (std::chrono::steady_clock::now() < until && logs < 5000)) {
        std::string log;
        const int n = 1 + static_cast<int>(rng() % 30);
        for (int i = 0; i < n; ++i) {
            std::string line = make_line(rng).text;
            if (rng() % 2)
                line = damage(line, rng);
            log += line + (rng() % 8 == 0 ? "\r\n" : "\n");
        }
        std::istringstream in(log);
        HexagonImport imp;
        ASSERT_NO_THROW(imp = parse_hexagon_profile(in)) << log;
        expect_sane(imp);
        EXPECT_EQ(imp.n_ignored + imp.n_unparsed + static_cast<int>(imp.records.size()) +
                      static_cast<int>(imp.batches.size()),
                  imp.n_lines);
        for (const auto& u : imp.unparsed) {
            EXPECT_LE(u.text.size(), 200u);
            EXPECT_TRUE(is_valid_utf8(u.text));
        }
        ++logs;
    }
}

}  // namespace
}  // namespace sb
