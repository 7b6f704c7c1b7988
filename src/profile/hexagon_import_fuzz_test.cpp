// Generated Hexagon profile logs, good and bad, in every upstream format and behind every line
// prefix (hexagon_import.hpp): the parser must never throw, never accept a negative or absurd
// value, account for every line, and whatever it returns must serialise (valid UTF-8
// everywhere).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "core/utf8.hpp"
#include "profile/hexagon_import.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

struct GenLine {
    std::string text;
    bool negative = false;  // a time, count or clock that must be refused
    bool usable = true;     // a line that must become a record or a batch when not negative
    bool batch = false;
};

std::string number(std::mt19937_64& rng, bool negative) {
    const int64_t v = static_cast<int64_t>(rng() % 100000);
    return negative ? "-" + std::to_string(v + 1) : std::to_string(v);
}

// What users' logs put before a line: nothing, llama.cpp's prefix (with its colours), logcat's
// threadtime and brief prefixes.
std::string prefix(std::mt19937_64& rng) {
    switch (rng() % 5) {
        case 0:
            return "0.01.576.635 D ";
        case 1:
            return "\033[0m\033[34m0.01.576.700\033[0m \033[33mD ";
        case 2:
            return "06-18 12:34:56.789  8123  8150 D llama   : ";
        case 3:
            return "D/llama   ( 8123): ";
        default:
            return "";
    }
}

// A profile line in one of the upstream formats (hexagon_import.hpp), with names that may hold
// any bytes. Clocks agree with cycles/usec (upstream computes one from the others), or are 0.0
// where upstream prints that: an op under a microsecond.
GenLine make_line(std::mt19937_64& rng) {
    static const char* kOps[] = {"MUL_MAT", "ADD", "RMS_NORM", "ROPE", "SOFT_MAX", "MUL_MAT+ADD"};
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
    // A clock consistent with the numbers, as upstream prints it (mhz %.1f of cycles/usec; 0.0
    // for an op under a microsecond). The check refuses one that is not, a clock above 10 GHz,
    // and "mhz 0.0" for an op that took time (a clock under 50 kHz).
    const int64_t u = std::stoll(usec), c = std::stoll(cycles);
    const double clock = u > 0 ? static_cast<double>(c) / static_cast<double>(u) : 0;
    const bool clock_ok = u == 0 || (c >= 0 && clock <= 10000 && clock >= 0.05);
    const std::string mhz = u > 0 && clock_ok ? fmt::format("{:.1f}", clock) : "0.0";
    const std::string pre = prefix(rng);
    switch (rng() % 6) {
        case 0:  // PR 17500
            g.text = pre + "ggml-hex: HTP0 profile-op " + op + ": " + a + " x " + b + " -> " + out +
                     " : 64:64 x 64:1 -> 64:1 : q4_0 x f32 -> f32 : 1:1 : HTP0 : op-usec " + usec +
                     " op-cycles " + cycles + " op-pkts " + third + " (1.5) call-usec " + fourth;
            g.usable = u == 0 || c < 0 || static_cast<double>(c) / static_cast<double>(u) <= 20000;
            break;
        case 1:  // PR 22269 with n-ops (an OPBATCH-like count) where a clock would be
            g.text = pre + "ggml-hex: HTP0 profile-op " + op + ": " + a + " -> " + out +
                     " : 64:1 -> 64:1 : f32 -> f32 : 4:256 : usec " + usec + " cycles " + cycles +
                     " start " + third + " n-ops " + fourth;
            g.usable = u == 0 || c < 0 || static_cast<double>(c) / static_cast<double>(u) <= 20000;
            break;
        case 2:  // PR 24954 and later
            g.text = pre + "ggml-hex: HTP1:0 profile-op " + op + "|" + a + " x " + b + " -> " +
                     out + "|64:64 x 64:1 -> 64:1|q4_0 x f32 -> f32|1:1||usec " + usec +
                     " cycles " + cycles + " start " + third + " mhz " + mhz;
            // n-ops is not part of this format: a negative 4th number does not appear.
            g.negative = neg_field >= 0 && neg_field <= 2;
            g.usable = clock_ok;
            break;
        case 3:  // PR 16547, INFO, no "profile-op"
            g.text = pre + "ggml-hex: HTP0 " + op + " " + a + " 64:64:1:1 x " + b +
                     " 64:1:1:1 -> " + out + " 64:1:1:1 : op-usec " + usec + " op-cycles " +
                     cycles + " op-pkts " + third + " (nan) call-usec " + fourth;
            g.usable = u == 0 || c < 0 || static_cast<double>(c) / static_cast<double>(u) <= 20000;
            break;
        case 4:  // PR 22269 to 24954: a batch after its ops
            g.text = pre + "ggml-hex: HTP0 profile-batch n-ops " + third + " batch-dur-usec " +
                     usec + " htp-ops-usec " + fourth;
            g.negative = neg_field == 0 || neg_field >= 2;
            g.batch = true;
            break;
        default:  // PR 26049: a batch before its ops
            g.text = pre + "ggml-hex: HTP0 profile-op OPBATCH|----|n-ops " + fourth +
                     "|----|----|----|usec " + usec + " cycles " + cycles + " start " + third +
                     " mhz " + mhz;
            g.batch = true;
            g.usable = clock_ok;
            break;
    }
    return g;
}

// Damages a line the ways real logs get damaged: cut anywhere, random bytes, lost spaces.
std::string damage_log(std::string s, std::mt19937_64& rng) {
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
    for (const auto& r : imp.records) {
        // Nothing the parser refuses reaches a record.
        ASSERT_LE(*r.op_ns, kMaxHexagonUsec * 1000);
        if (r.call_ns) {
            ASSERT_LE(*r.call_ns, kMaxHexagonUsec * 1000);
        }
        if (r.mhz) {
            ASSERT_TRUE(*r.mhz >= 0 && *r.mhz <= kMaxHexagonMhz) << *r.mhz;
        }
    }
    for (const auto& b : imp.batches) {
        ASSERT_GE(b.usec, 0);
        ASSERT_LE(b.usec, kMaxHexagonUsec);
    }
    for (const auto& u : imp.refused) {
        EXPECT_LE(u.text.size(), 200u);
        EXPECT_TRUE(is_valid_utf8(u.text));
    }
    (void)to_json(imp).dump();
}

TEST(HexagonImportFuzz, NegativeTimesAreRefusedAndCounted) {
    std::mt19937_64 rng(7);
    std::string log;
    int negatives = 0, records = 0, batches = 0, absurd = 0;
    double good_usec = 0;
    for (int i = 0; i < 600; ++i) {
        GenLine g = make_line(rng);
        // One line in 20 gets a clock no Hexagon has (issue #33's "mhz 1e23").
        if (!g.negative && g.text.find(" mhz ") != std::string::npos && rng() % 20 == 0) {
            g.text = g.text.substr(0, g.text.rfind(" mhz ")) + " mhz 1e23";
            g.usable = false;
            ++absurd;
        }
        log += g.text + "\n";
        {
            // Each line on its own lands where it should.
            std::istringstream one(g.text);
            const HexagonImport li = parse_hexagon_profile(one);
            const bool kept = !g.negative && g.usable;
            EXPECT_EQ(li.n_refused, kept ? 0 : 1)
                << g.text << "\n"
                << (li.refused.empty() ? "" : li.refused[0].reason);
            EXPECT_EQ(li.batches.size() + li.records.size(), kept ? 1u : 0u) << g.text;
            EXPECT_EQ(li.n_unparsed, 0) << g.text;
        }
        if (g.negative) {
            ++negatives;
        } else if (g.usable && g.batch) {
            ++batches;
        } else if (g.usable) {
            ++records;
            const std::string text = strip_log_escapes(g.text);
            const auto pos = text.find("usec ", text.find("ggml-hex: "));
            good_usec += std::stod(text.substr(pos + 5));
        }
    }
    ASSERT_GT(negatives, 20);
    ASSERT_GT(absurd, 3);
    std::istringstream in(log);
    const HexagonImport imp = parse_hexagon_profile(in);
    expect_sane(imp);
    EXPECT_EQ(imp.n_unparsed, 0) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    EXPECT_EQ(static_cast<int>(imp.records.size()), records);
    EXPECT_EQ(static_cast<int>(imp.batches.size()), batches);
    EXPECT_EQ(imp.n_refused, 600 - records - batches);

    ASSERT_FALSE(imp.refused.empty());
    int neg_reasons = 0;
    for (const auto& u : imp.refused)
        neg_reasons += u.reason.find("negative") != std::string::npos;
    EXPECT_GT(neg_reasons, 0);
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
                line = damage_log(line, rng);
            log += line + (rng() % 8 == 0 ? "\r\n" : "\n");
        }
        std::istringstream in(log);
        HexagonImport imp;
        ASSERT_NO_THROW(imp = parse_hexagon_profile(in)) << log;
        expect_sane(imp);
        EXPECT_EQ(imp.n_ignored + imp.n_trace + imp.n_unparsed + imp.n_refused +
                      static_cast<int>(imp.records.size()) + static_cast<int>(imp.batches.size()),
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
