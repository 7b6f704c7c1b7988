#pragma once
// Where an imported result document came from (`stagebench import llama-bench`,
// profile/llama_bench_import.hpp): the document's top-level "import" member
// (ResultDocument::imported) names the tool and every file read, and each test's "import"
// member (TestResult::imported) keeps the rows of the file it was made of, as the file said
// them: the tool's own test name, its mean and standard deviation, its samples where the file
// had them, and every other column. A document with an import section was measured elsewhere,
// by another tool; its system and llama members describe that machine and build as the file
// claimed them, never the machine that read it.
//
// Times are nanoseconds, rates tokens per second. Missing is not zero: a value the file did not
// have is null.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"

namespace sb {

// One file read by an import.
struct ImportedFile {
    std::string path;
    std::string format;   // "md", "csv", "json", "jsonl", "sql" (as detected)
    std::string variant;  // which printer wrote it, in words ("sql, the old `test` table")
    int rows = 0;         // rows imported
    int skipped = 0;      // rows skipped (cut off, damaged, absurd values), each a warning
};

struct ImportSection {
    std::string tool;  // "llama-bench"
    std::vector<ImportedFile> files;
    std::string method;  // what the numbers are and how they map to tests, in words
    std::vector<std::string> notes;
};

// One row of an imported file, as the file said it.
struct ImportedRow {
    std::string file;
    int64_t line = 0;   // where the row begins (1-based)
    std::string test;   // the tool's name: "pp512", "tg128", "pp512+tg128 @ d512"
    std::string stage;  // "pp" | "tg" | "pp+tg"
    std::optional<double> avg_ts, stddev_ts;   // tokens/s over every repetition
    std::optional<int64_t> avg_ns, stddev_ns;  // a repetition's time
    std::vector<int64_t> samples_ns;           // one per repetition, where the file had them
    std::vector<double> samples_ts;
    nlohmann::json fields = nlohmann::json::object();  // every other column, as text
};

struct TestImport {
    std::string tool;  // "llama-bench"
    std::vector<ImportedRow> rows;
};

nlohmann::json to_json(const ImportedFile&);
nlohmann::json to_json(const ImportSection&);
nlohmann::json to_json(const ImportedRow&);
nlohmann::json to_json(const TestImport&);
void read(const JsonIn&, ImportedFile&);
void read(const JsonIn&, ImportSection&);
void read(const JsonIn&, ImportedRow&);
void read(const JsonIn&, TestImport&);

}  // namespace sb
