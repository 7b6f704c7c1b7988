#pragma once
// Reading llama-bench's output (tools/llama-bench/llama-bench.cpp), every printer in the
// versions people have: markdown (`-o md`, the default; tables pasted with shell prompts, code
// fences, headings and notes around them, several tables per file, columns that come and go,
// the test names "pp 512" of 2023, "pp512", "pp512+tg128", "tg128 @ d512", "± sd", the
// "build: COMMIT (NUMBER)" line after each table), csv, json (an array, stderr log lines before
// it when 2>&1 was used), jsonl (one object per line, logs between), and sql (`CREATE TABLE` and
// one `INSERT` per test: the old `test` table and the pinned tree's `llama_bench`). The JSON
// printers' samples_ns / samples_ts are kept where the file has them.
//
// Every number is a claim: bounded where it enters. A row cut off (a line that ends before the
// row does, a JSON object the file ends inside), damaged or holding a value that cannot be true
// (a negative or non-finite rate, a time over a day per repetition, samples that disagree with
// the mean they claim) is skipped and named (LlamaBenchSkip), never imported, never fatal here.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// One complete row (one llama-bench test) as the file gave it, checked.
struct LlamaBenchRow {
    int64_t line = 0;  // 1-based line where the row begins
    std::string test;  // llama-bench's name: "pp512", "tg128", "pp512+tg128 @ d512"
    int n_prompt = 0, n_gen = 0, n_depth = 0;
    std::optional<double> avg_ts, stddev_ts;   // tokens/s: mean and sd over repetitions
    std::optional<int64_t> avg_ns, stddev_ns;  // a repetition's time (not in markdown)
    std::vector<int64_t> samples_ns;           // json and jsonl only
    std::vector<double> samples_ts;
    // Every other column by llama-bench's field name (markdown's display names translated:
    // ngl -> n_gpu_layers, threads -> n_threads, fa -> flash_attn, dev -> devices, backend ->
    // backends, model -> model_type; markdown's "size" and "params" as printed, e.g. "2.52
    // MiB", "4.20 M"), as text (JSON booleans "true"/"false", numbers as written). The build
    // line of a markdown table gives build_commit and build_number.
    std::map<std::string, std::string> fields;
};

struct LlamaBenchSkip {
    int64_t line = 0;
    std::string reason;
};

struct LlamaBenchParse {
    std::string format;   // "md", "csv", "json", "jsonl", "sql"; "" when none was recognised
    std::string variant;  // the printer in words, e.g. "sql, the old `test` table"
    std::vector<LlamaBenchRow> rows;
    std::vector<LlamaBenchSkip> skipped;
    int64_t n_lines = 0;
    int n_tables = 0;  // markdown tables, csv headers, sql tables, json arrays seen
};

// The largest file read (bytes); the caller refuses a bigger one before reading it.
inline constexpr int64_t kLlamaBenchMaxBytes = 256ll << 20;

// Parses text as llama-bench output of whichever format it is (the first line that can only
// be one of them decides). Never throws: text with no recognisable output has format "".
LlamaBenchParse parse_llama_bench(std::string_view text);

// "pp512" -> {512, 0, 0}, "tg128 @ d512" -> {0, 128, 512}, "pp512+tg128", the 2023 spelling
// "pp 512"; nullopt for anything else.
struct LlamaBenchTestName {
    int n_prompt = 0, n_gen = 0, n_depth = 0;
};
std::optional<LlamaBenchTestName> parse_llama_bench_test(std::string_view name);

}  // namespace sb
