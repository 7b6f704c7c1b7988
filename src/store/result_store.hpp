#pragma once
// A SQLite store of result documents (`--db FILE`, `stagebench db`). Each document is kept as
// the JSON text to_json wrote for it (core/result.hpp), beside a few columns for listing and an
// index of its tests, and read back with from_json: documents stored by earlier builds load as
// any older document does (absent fields stay absent). The file's schema is versioned (PRAGMA
// user_version) and migrated forward when an older store is opened; a store written by a newer
// stagebench is refused, never rewritten.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {

// The schema this build writes. v1: documents (JSON text + listing columns). v2: adds
// document_tests, one row per test of each document, filled from the stored JSON. v3: adds
// fleet_runs, one row per command a `fleet run` ran (or failed to run) on a device.
inline constexpr int kStoreSchemaVersion = 3;

// One command of a `fleet run` on one device: what ran where, with which versions, and how it
// ended. A failure is data too: its error is kept, with the partial document when there was one.
struct FleetRun {
    int64_t id = 0;
    std::string fleet;      // the inventory's name
    std::string device;     // the device's name in it
    std::string transport;  // ssh://user@host:port, adb://SERIAL, local, exec
    std::string command;    // the measuring command line (JSON array of its arguments)
    std::string status;     // "ok" or "failed"
    std::optional<std::string> error, error_kind;  // a failure's one line and its kind
    std::optional<int64_t> document_id;            // the document it produced, if any
    std::string started_at, finished_at;           // UTC, ISO 8601
    std::optional<std::string> tool_version, llama_commit, arch;
};

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

// The store stayed locked by another writer longer than its StoreWait (an sb::Error(runtime)).
class StoreLocked : public Error {
  public:
    explicit StoreLocked(const std::string& message) : Error(ErrorKind::runtime, message) {}
};

// How long an operation waits while another writer holds the store's lock, and whom it tells.
struct StoreWait {
    double timeout_s = 60;
    // Called about every progress_s seconds of one wait with the seconds waited so far.
    std::function<void(double waited_s)> on_wait;
    double progress_s = 5;
};

class ResultStore {
  public:
    enum class Mode { create, existing };

    // Opens the store at path and migrates it to kStoreSchemaVersion. Mode::create makes the
    // file when absent; Mode::existing requires it. Every statement waits for another writer's
    // lock as wait says, and no longer once Ctrl-C came (interrupt_requested()). Throws
    // sb::Error(input), one line, when path is not a file SQLite would keep ("", ":memory:", a
    // "file:" URI), the file is missing (existing), cannot be opened, is not a SQLite
    // database, fails SQLite's integrity check (a damaged page anywhere in the file), is a
    // SQLite database that is not a stagebench store, or was written by a newer schema
    // version; StoreLocked (runtime) when it stayed locked longer than wait.timeout_s or the
    // wait was interrupted.
    static ResultStore open(const std::string& path, Mode mode = Mode::create, StoreWait wait = {});

    // True when appending cannot work: the file or its folder is not writable (SQLite opens
    // such a file read-only).
    bool read_only() const;

    ResultStore(ResultStore&&) noexcept;
    ResultStore& operator=(ResultStore&&) noexcept;
    ~ResultStore();

    // Appends doc and returns its id (1, 2, ... in order of appends). The text stored is
    // dump_json(to_json(doc), 2), so get() returns a document equal to doc, except that bytes
    // that are not UTF-8 are stored as U+FFFD (a measurement is never lost to its text).
    // Throws sb::Error(input) for a damaged store, StoreLocked when the store stays locked (or
    // the wait is interrupted), sb::Error(runtime) when it is read-only, full or SQLite fails
    // otherwise; the store is then as it was.
    int64_t append(const ResultDocument& doc);

    // The largest document id (0 when empty). It reads only the end of the documents table:
    // a cheap sign that the data an append touches is readable (throws sb::Error(input) when
    // the store is damaged there).
    int64_t last_id() const;

    // Every document, oldest first.
    std::vector<StoredEntry> list() const;

    // The stored JSON text of document id, exactly as appended; get() parses it and reads it
    // with from_json, naming it "document #ID in results store 'PATH'" in errors. Both throw
    // sb::Error(input) when there is no such id, get() also when the text is not a usable
    // result document.
    std::string get_text(int64_t id) const;
    ResultDocument get(int64_t id) const;

    // The indexed tests of document id (empty when it has none or does not exist).
    std::vector<StoredTest> tests(int64_t id) const;

    // Appends one fleet run and returns its id.
    int64_t append_fleet_run(const FleetRun& run);
    // The fleet runs, oldest first; only those of fleet when given.
    std::vector<FleetRun> fleet_runs(const std::optional<std::string>& fleet = {}) const;

    // The schema version of the open file (kStoreSchemaVersion after open()).
    int schema_version() const;
    const std::string& path() const { return path_; }

    struct Db;  // the connection and its wait; defined in result_store.cpp

  private:
    ResultStore(std::string path, std::unique_ptr<Db> db);
    std::string path_;
    std::unique_ptr<Db> db_;
};

// Parses "db:ID" into ID; nullopt when s does not start with "db:". Throws sb::Error(usage)
// when the part after "db:" is not a positive integer.
std::optional<int64_t> parse_db_operand(const std::string& s);

}  // namespace sb
