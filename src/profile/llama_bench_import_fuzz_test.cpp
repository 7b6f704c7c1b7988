// llama-bench output damaged at random (bytes flipped, cut, lines dropped or doubled, numbers
// replaced by absurd ones) never crashes the reader, and every row it imports holds values
// within the bounds it promises (profile/llama_bench_import.hpp). Seeded: tests/fuzz_seed.hpp.
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "fuzz_seed.hpp"
#include "profile/llama_bench_import.hpp"

namespace sb {
namespace {

std::string read_fixture(const std::string& name) {
    std::ifstream f(std::string(SB_SOURCE_DIR) + "/tests/fixtures/llama-bench/" + name,
                    std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::string damage(std::string text, std::mt19937_64& rng) {
    static const char* absurd[] = {"-1",  "0",      "1e300", "nan", "-0.5", "99999999999999999999",
                                   "inf", "1e-300", "\"x\"", "[",   "{",    "'",
                                   "\"",  "|",      ","};
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !text.empty(); ++e) {
        const std::size_t at = rng() % text.size();
        switch (rng() % 6) {
            case 0:  // a byte flipped
                text[at] = static_cast<char>(rng() % 256);
                break;
            case 1:  // cut here
                text.resize(at);
                break;
            case 2: {  // a line dropped
                const std::size_t a = text.rfind('\n', at), b = text.find('\n', at);
                if (a != std::string::npos && b != std::string::npos)
                    text.erase(a, b - a);
                break;
            }
            case 3: {  // a line doubled
                const std::size_t a = text.rfind('\n', at), b = text.find('\n', at);
                if (a != std::string::npos && b != std::string::npos)
                    text.insert(b, text.substr(a, b - a));
                break;
            }
            default: {  // a number replaced
                std::size_t a = at;
                while (a < text.size() && !(text[a] >= '0' && text[a] <= '9'))
                    ++a;
                std::size_t b = a;
                while (b < text.size() && ((text[b] >= '0' && text[b] <= '9') || text[b] == '.'))
                    ++b;
                if (a < text.size())
                    text.replace(a, b - a, absurd[rng() % std::size(absurd)]);
                break;
            }
        }
    }
    return text;
}

TEST(LlamaBenchFuzz, DamagedOutputNeverCrashesAndRowsStayBounded) {
    sbtest::FuzzRun fuzz(20261206);
    std::mt19937_64 rng(fuzz.seed());
    const char* names[] = {"pinned.md",         "pinned-matrix.md", "pinned-stderr.json",
                           "pinned.csv",        "pinned.jsonl",     "pinned.sql",
                           "md-2023-08.md",     "md-2024-06.md",    "md-2025-05.md",
                           "json-2024-01.json", "csv-2024-06.csv",  "sql-2024-06.sql"};
    std::vector<std::string> texts;
    for (const char* n : names)
        texts.push_back(read_fixture(n));
    for (int i = 0; i < 3000; ++i) {
        fuzz.next_case();
        const std::string text = damage(texts[rng() % texts.size()], rng);
        const LlamaBenchParse p = parse_llama_bench(text);
        for (const auto& r : p.rows) {
            ASSERT_TRUE(r.avg_ts && *r.avg_ts > 0 && *r.avg_ts <= 1e8) << text;
            ASSERT_TRUE(!r.stddev_ts || (*r.stddev_ts >= 0 && std::isfinite(*r.stddev_ts)));
            ASSERT_GT(r.n_prompt + r.n_gen, 0);
            ASSERT_TRUE(r.n_prompt >= 0 && r.n_gen >= 0 && r.n_depth >= 0);
            ASSERT_EQ(r.samples_ns.size(), r.samples_ts.size());
            for (std::size_t k = 0; k < r.samples_ns.size(); ++k) {
                ASSERT_GT(r.samples_ns[k], 0);
                ASSERT_TRUE(std::isfinite(r.samples_ts[k]) && r.samples_ts[k] > 0);
            }
            ASSERT_GT(r.line, 0);
            ASSERT_LE(r.line, p.n_lines);
        }
        for (const auto& s : p.skipped) {
            ASSERT_GT(s.line, 0);
            ASSERT_FALSE(s.reason.empty());
        }
    }
}

}  // namespace
}  // namespace sb
