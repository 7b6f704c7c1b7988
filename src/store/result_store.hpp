#pragma once
// A SQLite store of result documents (`--db FILE`, `stagebench db`). Each document is kept as
// the exact JSON text it was appended with, beside a few columns for listing and an index of
// its tests. The file's schema is versioned (PRAGMA user_version) and migrated forward when an
// older store is opened; a store written by a newer stagebench is refused, never rewritten.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sb {

// The schema this build writes. v1: documents (JSON text + listing columns). v2: adds
// document_tests, one row per test of each document, filled from the stored JSON.
inline constexpr int kStoreSchemaVersion = 2;

// One document as `db list` shows it. Fields the document did not carry are nullopt.
struct StoredEntry {
    int64_t id = 0;
    std::string stored_at;  // UTC, ISO 8601, when it was appended
    std::optional<std::string> command, started_at, host, cpu, tool_version;
    std::vector<std::string> models;  // model names (GGUF name, else the file's basename)
    int64_t n_tests = 0;
};

// One test of a stored document (the v2 index table).
struct StoredTest {
    int64_t document_id = 0;
    int64_t index = 0;  // position in the document's "tests" array
    std::string test;   // e.g. "pp32+tg8"
    std::optional<std::string> model, devices, status;
    std::optional<int64_t> n_threads;
    std::optional<double> prefill_tps_median, decode_tps_median;  // tokens/s
};

class ResultStore {
  public:
    enum class Mode { create, existing };

    // Opens the store at path and migrates it to kStoreSchemaVersion. Mode::create makes the
    // file when absent; Mode::existing requires it. Throws sb::Error(input), one line, when the
    // file is missing (existing), cannot be opened, is not a SQLite database, is a SQLite
    // database that is not a stagebench store, or was written by a newer schema version.
    static ResultStore open(const std::string& path, Mode mode = Mode::create);

    ResultStore(ResultStore&&) noexcept;
    ResultStore& operator=(ResultStore&&) noexcept;
    ~ResultStore();

    // Appends doc (a JSON object) and returns its id (1, 2, ... in order of appends). The text
    // stored is dump_json(doc, 2), so get() returns a document equal to doc, except that bytes
    // that are not UTF-8 are stored as U+FFFD (a measurement is never lost to its text).
    // Throws sb::Error(input) for a non-object, sb::Error(runtime) when SQLite fails.
    int64_t append(const nlohmann::json& doc);

    // Every document, oldest first.
    std::vector<StoredEntry> list() const;

    // The stored JSON text of document id, exactly as appended; get() parses it. Both throw
    // sb::Error(input) when there is no such id.
    std::string get_text(int64_t id) const;
    nlohmann::json get(int64_t id) const;

    // The indexed tests of document id (empty when it has none or does not exist).
    std::vector<StoredTest> tests(int64_t id) const;

    // The schema version of the open file (kStoreSchemaVersion after open()).
    int schema_version() const;
    const std::string& path() const { return path_; }

  private:
    struct Db;
    ResultStore(std::string path, std::unique_ptr<Db> db);
    std::string path_;
    std::unique_ptr<Db> db_;
};

// Parses "db:ID" into ID; nullopt when s does not start with "db:". Throws sb::Error(usage)
// when the part after "db:" is not a positive integer.
std::optional<int64_t> parse_db_operand(const std::string& s);

}  // namespace sb
