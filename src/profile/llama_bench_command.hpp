#pragma once
// `stagebench import llama-bench FILE...`: llama-bench's results (any printer, any version:
// profile/llama_bench_import.hpp) as one result document, a run document like any other, so
// that compare, report, advise and db import take it. Each file's complete rows become tests:
//  - a pp row (prefill only) and a tg row (decode only) of one configuration (the same model,
//    backend, devices, threads, layers, batch sizes, KV types, flash attention, depth and every
//    other column) make one test "ppP+tgN", as stagebench's run measures it (several of each:
//    every pair); the prefill stage from the pp row, the decode stage from the tg row (whose
//    decode began at depth n_depth, not after the prompt: a note says so);
//  - a pp or tg row with no partner is a test of that stage alone (n_gen or n_prompt 0);
//  - a pp+tg row (llama-bench -pg) is one rate over both stages: a test with no stage result,
//    the rate kept in its import rows.
// Per-repetition samples (json, jsonl) are the stage's samples; a file with only the mean and
// standard deviation (markdown, csv, sql) gives one value, the mean (its stddev kept), and a
// note says so. The system section holds the CPU and GPU the file names, the llama section its
// build commit and number; the top-level "import" section the tool and the files, each test's
// "import" its rows as the file said them (core/doc/import_section.hpp).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace sb {

struct LlamaBenchImportOptions {
    std::vector<std::string> files;
    std::optional<std::string> out_path;
};

// Fills doc (from new_document("import", argv)) with the files' tests and writes it with
// out_path. A row that cannot be imported (cut off, damaged, values that cannot be true) is
// skipped with one line on err naming the file, its line and why ("stagebench: warning: ...")
// and the document warning "import_rows_skipped". A file that cannot be read, is larger than
// kLlamaBenchMaxBytes, is binary, or holds no complete llama-bench row is bad input
// (sb::Error(input), one line); nothing is written then. Returns the exit code (0).
int run_import_llama_bench(const LlamaBenchImportOptions& o, ResultDocument& doc,
                           std::ostream& err);

}  // namespace sb
