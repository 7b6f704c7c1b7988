#pragma once
// A results store: result documents (`--db STORE`, `stagebench db`) and the records of fleet
// runs, in a SQLite file (the default, embedded: `--db results.sqlite`) or in a PostgreSQL
// database that a whole lab shares (`--db postgresql://user@host:port/dbname`, store/
// store_name.hpp). One interface (ResultStore), two implementations (store_backend.hpp:
// sqlite_store.cpp, pg/pg_store.cpp) that behave alike: what one stores the other gives back.
//
// Each document is kept whole as the JSON to_json wrote for it (core/result.hpp; SQLite: its
// text, PostgreSQL: JSONB), beside columns for listing and querying (command, host, device,
// llama.cpp commit, models, times) and an index of its tests, and read back with from_json:
// documents stored by earlier builds load as any older document does (absent fields stay
// absent). A document is identified by its content hash (content_hash()): `db copy` and
// `db import` never store a document that is already there. The schema is versioned (SQLite:
// PRAGMA user_version; PostgreSQL: the table stagebench_schema) and migrated forward by the
// same steps on both when an older store is opened; a store written by a newer stagebench is
// refused, never rewritten.
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

// The schema this build writes. v1: documents (JSON + listing columns). v2: adds
// document_tests, one row per test of each document, filled from the stored JSON. v3: adds
// fleet_runs, one row per command a `fleet run` ran (or failed to run) on a device. v4: adds
// the columns device, llama_commit and content_hash to documents and content_hash to
// fleet_runs (filled from what is stored), and indexes for the queries of README "A store for
// a whole lab".
inline constexpr int kStoreSchemaVersion = 4;

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
    std::string stored_at;  // UTC, ISO 8601, when it was first appended (kept by db copy)
    std::optional<std::string> command, started_at, host, cpu, tool_version;
    // The device it ran on: the fleet's name for it (document "fleet"), else the host name.
    std::optional<std::string> device;
    std::optional<std::string> llama_commit;  // document "llama" "commit"
    std::vector<std::string> models;          // model names (GGUF name, else the file's basename)
    int64_t n_tests = 0;
    std::string content_hash;  // content_hash() of the document (64 hex digits)
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

// The store did not answer within its StoreWait: SQLite, another writer held its lock;
// PostgreSQL, the server did not answer a statement (one waiting on another writer's lock, or
// a server that stopped answering); or the wait was interrupted by Ctrl-C. An
// sb::Error(runtime).
class StoreLocked : public Error {
  public:
    explicit StoreLocked(const std::string& message) : Error(ErrorKind::runtime, message) {}
};

// How long an operation waits for the store, and whom it tells. SQLite: while another writer
// holds the lock. PostgreSQL: for the server's answer to each statement (at least 1 s); the
// connection itself waits libpq's connect_timeout (10 s when neither the URI nor
// PGCONNECT_TIMEOUT sets it).
struct StoreWait {
    double timeout_s = 60;
    // Called about every progress_s seconds of one wait with the seconds waited so far.
    std::function<void(double waited_s)> on_wait;
    double progress_s = 5;
};

// What an idempotent append did.
struct Appended {
    int64_t id = 0;     // the document (or fleet run) in the store
    bool added = true;  // false: one of the same content hash was there already (id is it)
};

// What copy_store() did.
struct CopySummary {
    int64_t documents_added = 0, documents_present = 0;
    int64_t fleet_runs_added = 0, fleet_runs_present = 0;
    // The documents of from not copied, as get() refuses them (null, [], a document of the
    // wrong shape, text that is not JSON): each "document #ID in results store 'NAME': why".
    std::vector<std::string> skipped;
};

class StoreBackend;  // store_backend.hpp

class ResultStore {
  public:
    enum class Mode { create, existing };

    // Opens the store that name names (is_postgres_url(): a PostgreSQL database, else a SQLite
    // file) and migrates it to kStoreSchemaVersion. Mode::create makes the file (the tables)
    // when absent; Mode::existing requires them. Every statement waits as wait says, and no
    // longer once Ctrl-C came (interrupt_requested()). Messages name the store by
    // printable_store_name(name), never with a password. Throws, one line:
    // - sb::Error(input) when name starts with a PostgreSQL scheme but is no URI
    //   ("postgresql:", "postgresql:/") or is a libpq key=value string (unusable_store_name());
    // - sb::Error(input) when a SQLite path is not a file SQLite would keep ("", ":memory:", a
    //   "file:" URI), the file is missing, empty or an empty database (existing: a reading
    //   open never makes a store, nor changes a file that is none), cannot be opened, is not a
    //   SQLite database, fails SQLite's integrity check (a damaged page anywhere in the file),
    //   or is a SQLite database that is not a stagebench store;
    // - sb::Error(input) when a PostgreSQL server cannot be reached or refuses the login (the
    //   connection's deadline included), is older than PostgreSQL 10, or the database holds
    //   other tables but no stagebench store (or, existing, no store at all);
    // - sb::Error(input) for a store written by a newer schema version;
    // - sb::Error(usage) for a PostgreSQL URI in a build without libpq (and for any store in
    //   the static agent, which keeps none);
    // - StoreLocked (runtime) when it stayed locked (did not answer) longer than wait.timeout_s
    //   or the wait was interrupted; sb::Error(runtime) when a migration cannot be written.
    // Two processes creating (or migrating) one store at once: one does it, the other waits
    // for it (as for any writer) and finds it done. Every member below throws
    // sb::Error(input) when the store's tables are not as stagebench made them (altered or
    // dropped by another program, a schema that is not there) or, PostgreSQL, the login may
    // not read them: "results store 'NAME' is not usable ..." / "cannot be read by this login".
    static ResultStore open(const std::string& name, Mode mode = Mode::create, StoreWait wait = {});

    // True when appending cannot work: SQLite, the file or its folder is not writable (SQLite
    // opens such a file read-only); PostgreSQL, the server is a read-only standby, the session
    // is read-only, or the login may not insert into the store's tables.
    bool read_only() const;

    ResultStore(ResultStore&&) noexcept;
    ResultStore& operator=(ResultStore&&) noexcept;
    ~ResultStore();

    // Appends doc and returns its id (ids grow with every append; SQLite: 1, 2, ... in order).
    // The JSON stored is to_json(doc), so get() returns a document equal to doc, except that
    // bytes that are not UTF-8 are stored as U+FFFD (a measurement is never lost to its text),
    // and, in PostgreSQL (whose JSONB cannot hold it), the character U+0000 too. Throws
    // sb::Error(input) for a damaged store, StoreLocked when the store stays locked (or the
    // wait is interrupted), sb::Error(runtime) when it is read-only, full, the connection is
    // lost, or the database fails otherwise; the store is then as it was (a PostgreSQL
    // connection lost while committing may have committed: the document is then there, and
    // appending it again with append_once() finds it).
    int64_t append(const ResultDocument& doc);

    // As append(), but when a document of the same content hash is already stored, returns
    // it instead of storing doc again (`db import`). The look and the append are one
    // transaction: two processes importing one document at once store it once.
    Appended append_once(const ResultDocument& doc);

    // The largest document id (0 when empty). It reads only the end of the documents table:
    // a cheap sign that the data an append touches is readable (throws sb::Error(input) when
    // the store is damaged there).
    int64_t last_id() const;

    // Every document, oldest first.
    std::vector<StoredEntry> list() const;

    // The stored JSON text of document id, indented by 2 (SQLite: exactly as appended;
    // PostgreSQL: the stored JSONB written out, the same JSON value). get() parses it and
    // reads it with from_json, naming it "document #ID in results store 'NAME'" in errors.
    // Both throw sb::Error(input) when there is no such id, get() also when the text is not a
    // usable result document.
    std::string get_text(int64_t id) const;
    ResultDocument get(int64_t id) const;

    // The indexed tests of document id (empty when it has none or does not exist).
    std::vector<StoredTest> tests(int64_t id) const;

    // The latest document of command (by started_at, then id) of every device (StoredEntry::
    // device), in the order of the device names: the query `report --db --latest` draws.
    std::vector<int64_t> latest_per_device(const std::string& command) const;

    // Appends one fleet run and returns its id.
    int64_t append_fleet_run(const FleetRun& run);
    // The fleet runs, oldest first; only those of fleet when given.
    std::vector<FleetRun> fleet_runs(const std::optional<std::string>& fleet = {}) const;

    // The schema version of the open store (kStoreSchemaVersion after open()).
    int schema_version() const;
    // The store's name as given to open(), without a password (printable_store_name()).
    const std::string& path() const { return name_; }
    // True for a PostgreSQL store.
    bool is_postgres() const;

  private:
    ResultStore(std::string name, std::unique_ptr<StoreBackend> backend);
    std::string name_;
    std::unique_ptr<StoreBackend> backend_;
    friend CopySummary copy_store(const ResultStore&, ResultStore&,
                                  const std::function<void(const CopySummary&)>&);
};

// Copies every document of from, then every fleet run, into to, in the order they were
// stored, skipping what to already has (documents by content hash; fleet runs by all their
// fields, their document by its hash), so copying twice, or back, changes nothing. A document
// keeps its stored_at; a fleet run points at its document's id in to. Each document is one
// transaction of to: other writers go on meanwhile, and an interrupted copy keeps what it
// copied (run it again to finish). A document this build cannot read (a newer stagebench's)
// is copied as it is, with the columns that could be read; one that get() refuses for any
// other reason (null, [], a document of the wrong shape, not JSON) is not copied but named in
// CopySummary::skipped, and the copy goes on (a fleet run of it is copied without its
// document). progress is called after every document and fleet run. Throws as get_text() and
// append() do.
CopySummary copy_store(const ResultStore& from, ResultStore& to,
                       const std::function<void(const CopySummary&)>& progress = {});

// The content hash of a document: SHA-256 of dump_json(to_json(doc)) (compact, keys in order,
// U+FFFD for bytes that are not UTF-8), 64 hex digits. A document written to a file and read
// back has the hash it had.
std::string content_hash(const ResultDocument& doc);

// Parses "db:ID" into ID; nullopt when s does not start with "db:". Throws sb::Error(usage)
// when the part after "db:" is not a positive integer.
std::optional<int64_t> parse_db_operand(const std::string& s);

}  // namespace sb
