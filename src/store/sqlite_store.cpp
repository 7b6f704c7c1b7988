// The SQLite implementation of the results store (store_backend.hpp): one file, the embedded
// default.
#include <sqlite3.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"
#include "store/store_backend.hpp"

namespace sb {

using nlohmann::json;

namespace {

// The connection and its wait.
struct Db {
    sqlite3* handle = nullptr;
    StoreWait wait;
    int64_t wait_start_ns = 0;
    double reported_s = 0;
    ~Db() {
        if (handle)
            sqlite3_close(handle);
    }
};

std::string errmsg(sqlite3* db) {
    return db ? sqlite3_errmsg(db) : "out of memory";
}

std::string store_name(sqlite3* db) {
    const char* f = db ? sqlite3_db_filename(db, "main") : nullptr;
    return f && *f ? std::string(f) : std::string("(memory)");
}

// The error for a failed SQLite call: a damaged file is bad input (the user gave it), a lock
// held past the wait or a read-only file is a fault of this run.
[[noreturn]] void fail(sqlite3* db, const std::string& msg) {
    const int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
    const std::string name = "results store '" + store_name(db) + "'";
    switch (code) {
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
            throw input_error(name + " is damaged: " + msg);
        case SQLITE_ERROR:
            // Every statement is this file's own, written for the schema it makes: one SQLite
            // cannot run ("no such table", "no such column") finds tables altered by another
            // program, a store the user gave that is not usable.
            throw input_error(name +
                              " is not usable (its tables are not as stagebench made "
                              "them): " +
                              msg);
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            // on_busy gives up at once on Ctrl-C: the wait was cut short, not run out.
            if (interrupt_requested())
                throw StoreLocked(name +
                                  " is locked by another writer, and the wait for it was "
                                  "interrupted (Ctrl-C)");
            throw StoreLocked(name + " stayed locked by another writer: " + msg);
        case SQLITE_FULL:
            throw runtime_error(name + " cannot take more: " + msg);
        case SQLITE_READONLY:
        case SQLITE_CANTOPEN:
        case SQLITE_PERM:
            throw runtime_error(name + " cannot be written: " + msg);
        default:
            throw runtime_error(name + ": " + msg);
    }
}

// While another connection holds the lock: sleep a little, tell the user now and then, give
// up after the wait's timeout, or at once when Ctrl-C came (a wait of up to --db-wait seconds
// must not outlast the user's wish to stop; the caller keeps the document elsewhere).
int on_busy(void* p, int count) {
    auto* db = static_cast<Db*>(p);
    if (interrupt_requested())
        return 0;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    if (count == 0) {
        db->wait_start_ns = now;
        db->reported_s = 0;
    }
    const double waited = (now - db->wait_start_ns) / 1e9;
    if (waited >= db->wait.timeout_s)
        return 0;
    if (db->wait.on_wait && waited - db->reported_s >= db->wait.progress_s) {
        db->reported_s = waited;
        db->wait.on_wait(waited);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(count < 10 ? 5 : 50));
    return 1;
}

// A prepared statement, finalized on scope exit.
class Stmt {
  public:
    Stmt(sqlite3* db, const std::string& sql) : db_(db) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
            fail(db, errmsg(db));
    }
    ~Stmt() { sqlite3_finalize(s_); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    void bind(int i, int64_t v) { check(sqlite3_bind_int64(s_, i, v)); }
    void bind(int i, const std::string& v) {
        check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    }
    void bind(int i, const std::optional<std::string>& v) {
        v ? bind(i, *v) : check(sqlite3_bind_null(s_, i));
    }
    void bind(int i, const std::optional<int64_t>& v) {
        v ? bind(i, *v) : check(sqlite3_bind_null(s_, i));
    }
    void bind(int i, const std::optional<double>& v) {
        check(v ? sqlite3_bind_double(s_, i, *v) : sqlite3_bind_null(s_, i));
    }
    // True while a row is available.
    bool step() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE)
            return false;
        fail(db_, errmsg(db_));
    }
    void reset() {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
    }
    bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
    int64_t int64(int col) const { return sqlite3_column_int64(s_, col); }
    double real(int col) const { return sqlite3_column_double(s_, col); }
    std::string text(int col) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
        // NULL is also how SQLite says that a value could not be read (a damaged overflow
        // page, no memory; the error code says so): that is not an empty text.
        const int rc = sqlite3_errcode(db_);
        if (!p && rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
            fail(db_, errmsg(db_));
        return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
                 : std::string();
    }
    std::optional<std::string> opt_text(int col) const {
        return is_null(col) ? std::nullopt : std::optional<std::string>(text(col));
    }
    std::optional<int64_t> opt_int64(int col) const {
        return is_null(col) ? std::nullopt : std::optional<int64_t>(int64(col));
    }
    std::optional<double> opt_real(int col) const {
        return is_null(col) ? std::nullopt : std::optional<double>(real(col));
    }

  private:
    void check(int rc) {
        if (rc != SQLITE_OK)
            fail(db_, errmsg(db_));
    }
    sqlite3* db_;
    sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
        std::string m = msg ? msg : errmsg(db);
        sqlite3_free(msg);
        fail(db, m);
    }
}

// BEGIN IMMEDIATE on construction; rolled back on scope exit unless committed, so a failed
// append or migration leaves the file as it was.
class Transaction {
  public:
    explicit Transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
    ~Transaction() {
        if (!done_)
            sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    void commit() {
        exec(db_, "COMMIT");
        done_ = true;
    }

  private:
    sqlite3* db_;
    bool done_ = false;
};

void insert_tests(sqlite3* db, int64_t doc_id, const std::vector<StoredTest>& tests) {
    Stmt ins(db,
             "INSERT INTO document_tests (document_id, idx, test, model, devices, n_threads, "
             "status, prefill_tps_median, decode_tps_median) VALUES (?,?,?,?,?,?,?,?,?)");
    for (const auto& t : tests) {
        ins.bind(1, doc_id);
        ins.bind(2, t.index);
        ins.bind(3, t.test);
        ins.bind(4, t.model);
        ins.bind(5, t.devices);
        ins.bind(6, t.n_threads);
        ins.bind(7, t.status);
        ins.bind(8, t.prefill_tps_median);
        ins.bind(9, t.decode_tps_median);
        ins.step();
        ins.reset();
    }
}

int user_version(sqlite3* db) {
    Stmt s(db, "PRAGMA user_version");
    return s.step() ? static_cast<int>(s.int64(0)) : 0;
}

int64_t table_count(sqlite3* db) {
    Stmt s(db, "SELECT count(*) FROM sqlite_master");
    return s.step() ? s.int64(0) : 0;
}

void set_user_version(sqlite3* db, int v) {
    exec(db, "PRAGMA user_version = " + std::to_string(v));
}

// v0 -> v1: the documents themselves, with the columns `db list` shows.
void migrate_to_v1(sqlite3* db, const std::string& path) {
    exec(db,
         "CREATE TABLE documents ("
         " id INTEGER PRIMARY KEY AUTOINCREMENT,"
         " stored_at TEXT NOT NULL,"
         " command TEXT, started_at TEXT, host TEXT, cpu TEXT, tool_version TEXT,"
         " models TEXT NOT NULL DEFAULT '[]',"  // JSON array of model names
         " n_tests INTEGER NOT NULL DEFAULT 0,"
         " json TEXT NOT NULL)");
}

// The record of stored document id (for a migration that fills a new column or table).
DocumentRecord stored_record(const std::string& path, int64_t id, const std::string& text) {
    try {
        return record_of_text(text, "", "", "document #" + std::to_string(id));
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::input)
            throw;
        throw input_error("results store '" + path + "' is damaged: " + e.what());
    }
}

// v1 -> v2: an index of the tests of every document, filled from the JSON already stored (a
// document this build cannot read stays stored, without an index of its tests).
void migrate_to_v2(sqlite3* db, const std::string& path) {
    exec(db,
         "CREATE TABLE document_tests ("
         " document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,"
         " idx INTEGER NOT NULL,"
         " test TEXT NOT NULL, model TEXT, devices TEXT, n_threads INTEGER, status TEXT,"
         " prefill_tps_median REAL, decode_tps_median REAL,"
         " PRIMARY KEY (document_id, idx))");
    exec(db, "CREATE INDEX document_tests_by_test ON document_tests (test, model)");
    Stmt all(db, "SELECT id, json FROM documents ORDER BY id");
    while (all.step()) {
        const int64_t id = all.int64(0);
        insert_tests(db, id, stored_record(path, id, all.text(1)).tests);
    }
}

// v2 -> v3: the commands of fleet runs, ok or failed, per device.
void migrate_to_v3(sqlite3* db, const std::string&) {
    exec(db,
         "CREATE TABLE fleet_runs ("
         " id INTEGER PRIMARY KEY AUTOINCREMENT,"
         " fleet TEXT NOT NULL, device TEXT NOT NULL, transport TEXT NOT NULL,"
         " command TEXT NOT NULL, status TEXT NOT NULL, error TEXT, error_kind TEXT,"
         " document_id INTEGER REFERENCES documents(id),"
         " started_at TEXT NOT NULL, finished_at TEXT NOT NULL,"
         " tool_version TEXT, llama_commit TEXT, arch TEXT)");
    exec(db, "CREATE INDEX fleet_runs_by_device ON fleet_runs (fleet, device, command)");
}

FleetRun fleet_run_row(const Stmt& s) {
    FleetRun r;
    r.id = s.int64(0);
    r.fleet = s.text(1);
    r.device = s.text(2);
    r.transport = s.text(3);
    r.command = s.text(4);
    r.status = s.text(5);
    r.error = s.opt_text(6);
    r.error_kind = s.opt_text(7);
    r.document_id = s.opt_int64(8);
    r.started_at = s.text(9);
    r.finished_at = s.text(10);
    r.tool_version = s.opt_text(11);
    r.llama_commit = s.opt_text(12);
    r.arch = s.opt_text(13);
    return r;
}

constexpr const char* kFleetRunColumns =
    "id, fleet, device, transport, command, status, error, error_kind, document_id, started_at, "
    "finished_at, tool_version, llama_commit, arch";

// v3 -> v4: what identifies a document and a fleet run (their content hashes), the device and
// llama.cpp commit of every document, filled from what is stored, and the indexes the
// queries of a lab's store use (README "A store for a whole lab").
void migrate_to_v4(sqlite3* db, const std::string& path) {
    exec(db, "ALTER TABLE documents ADD COLUMN device TEXT");
    exec(db, "ALTER TABLE documents ADD COLUMN llama_commit TEXT");
    exec(db, "ALTER TABLE documents ADD COLUMN content_hash TEXT");
    exec(db, "ALTER TABLE fleet_runs ADD COLUMN content_hash TEXT");
    {
        Stmt all(db, "SELECT id, json FROM documents ORDER BY id");
        Stmt set(
            db, "UPDATE documents SET device = ?, llama_commit = ?, content_hash = ? WHERE id = ?");
        while (all.step()) {
            const int64_t id = all.int64(0);
            const DocumentRecord r = stored_record(path, id, all.text(1));
            set.bind(1, r.device);
            set.bind(2, r.llama_commit);
            set.bind(3, r.content_hash);
            set.bind(4, id);
            set.step();
            set.reset();
        }
    }
    {
        Stmt all(db, std::string("SELECT ") + kFleetRunColumns +
                         ", (SELECT content_hash FROM documents d WHERE d.id = document_id) "
                         "FROM fleet_runs ORDER BY id");
        Stmt set(db, "UPDATE fleet_runs SET content_hash = ? WHERE id = ?");
        while (all.step()) {
            const FleetRun r = fleet_run_row(all);
            set.bind(1, fleet_run_hash(r, all.opt_text(14).value_or("")));
            set.bind(2, r.id);
            set.step();
            set.reset();
        }
    }
    exec(db, "CREATE INDEX documents_by_command ON documents (command, device, started_at)");
    exec(db, "CREATE INDEX documents_by_device ON documents (device, started_at)");
    exec(db, "CREATE INDEX documents_by_host ON documents (host)");
    exec(db, "CREATE INDEX documents_by_commit ON documents (llama_commit)");
    exec(db, "CREATE INDEX documents_by_hash ON documents (content_hash)");
    exec(db, "CREATE INDEX document_tests_by_model ON document_tests (model)");
    exec(db, "CREATE INDEX fleet_runs_by_hash ON fleet_runs (content_hash)");
}

// SQLite reads only the pages a statement needs: a damaged page elsewhere would be found (or
// not) by some later read or append, after a run. The whole file is checked when it is opened.
void check_integrity(sqlite3* db, const std::string& path) {
    Stmt s(db, "PRAGMA integrity_check(1)");
    std::string result = s.step() ? s.text(0) : std::string("no answer");
    if (result == "ok")
        return;
    for (char& c : result)
        if (c == '\n' || c == '\r')
            c = ' ';
    throw input_error("results store '" + path +
                      "' is damaged (integrity check: " + result.substr(0, 200) + ")");
}

// Refuses a store of a newer schema, and a SQLite database of another program (tables but no
// version).
void check_version(const std::string& path, int version, int64_t n_tables) {
    if (version > kStoreSchemaVersion)
        throw input_error("results store '" + path + "' has schema version " +
                          std::to_string(version) + ", newer than this stagebench reads (" +
                          std::to_string(kStoreSchemaVersion) + "); use a newer stagebench");
    if (version < 0)
        throw input_error("results store '" + path + "' has an invalid schema version");
    if (version == 0 && n_tables > 0)
        throw input_error("'" + path + "' is a SQLite database but not a stagebench results store");
}

using Migration = void (*)(sqlite3*, const std::string&);
// kMigrations[v] takes a store from version v to v + 1.
constexpr Migration kMigrations[] = {migrate_to_v1, migrate_to_v2, migrate_to_v3, migrate_to_v4};
static_assert(std::size(kMigrations) == kStoreSchemaVersion);

class SqliteBackend final : public StoreBackend {
  public:
    SqliteBackend(std::string path, std::unique_ptr<Db> db)
        : path_(std::move(path)), db_(std::move(db)) {}

    bool is_postgres() const override { return false; }

    bool read_only() override {
        if (sqlite3_db_readonly(db_->handle, "main") == 1)
            return true;
        // The rollback journal is made beside the file.
        const auto dir = std::filesystem::absolute(path_).parent_path();
        return ::access(dir.c_str(), W_OK) != 0;
    }

    int schema_version() override { return user_version(db_->handle); }

    Appended insert_document(const DocumentRecord& r, bool once) override {
        sqlite3* db = db_->handle;
        // BEGIN IMMEDIATE takes the write lock first: the look for the hash and the append see
        // the same store.
        Transaction tx(db);
        if (once) {
            Stmt find(db, "SELECT min(id) FROM documents WHERE content_hash = ?");
            find.bind(1, r.content_hash);
            if (find.step() && !find.is_null(0))
                return {find.int64(0), false};
        }
        Stmt ins(db,
                 "INSERT INTO documents (stored_at, command, started_at, host, cpu, tool_version, "
                 "models, n_tests, json, device, llama_commit, content_hash) "
                 "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
        ins.bind(1, r.stored_at);
        ins.bind(2, r.command);
        ins.bind(3, r.started_at);
        ins.bind(4, r.host);
        ins.bind(5, r.cpu);
        ins.bind(6, r.tool_version);
        ins.bind(7, dump_json(json(r.models)));
        ins.bind(8, r.n_tests);
        ins.bind(9, r.text);
        ins.bind(10, r.device);
        ins.bind(11, r.llama_commit);
        ins.bind(12, r.content_hash);
        ins.step();
        const int64_t id = sqlite3_last_insert_rowid(db);
        insert_tests(db, id, r.tests);
        tx.commit();
        return {id, true};
    }

    int64_t last_id() override {
        Stmt s(db_->handle, "SELECT max(id) FROM documents");
        return s.step() ? s.int64(0) : 0;
    }

    std::vector<StoredEntry> list() override {
        Stmt s(db_->handle,
               "SELECT id, stored_at, command, started_at, host, cpu, tool_version, models, "
               "n_tests, device, llama_commit, content_hash FROM documents ORDER BY id");
        std::vector<StoredEntry> out;
        while (s.step()) {
            StoredEntry e;
            e.id = s.int64(0);
            e.stored_at = s.text(1);
            e.command = s.opt_text(2);
            e.started_at = s.opt_text(3);
            e.host = s.opt_text(4);
            e.cpu = s.opt_text(5);
            e.tool_version = s.opt_text(6);
            json models = json::parse(s.text(7), nullptr, false);
            if (models.is_array())
                for (const auto& m : models)
                    if (m.is_string())
                        e.models.push_back(m.get<std::string>());
            e.n_tests = s.int64(8);
            e.device = s.opt_text(9);
            e.llama_commit = s.opt_text(10);
            e.content_hash = s.opt_text(11).value_or("");
            out.push_back(std::move(e));
        }
        return out;
    }

    std::optional<std::string> text(int64_t id) override {
        Stmt s(db_->handle, "SELECT json FROM documents WHERE id = ?");
        s.bind(1, id);
        if (!s.step())
            return std::nullopt;
        return s.text(0);
    }

    std::optional<std::string> document_hash(int64_t id) override {
        Stmt s(db_->handle, "SELECT content_hash FROM documents WHERE id = ?");
        s.bind(1, id);
        if (!s.step())
            return std::nullopt;
        return s.opt_text(0).value_or("");
    }

    std::vector<StoredTest> tests(int64_t id) override {
        Stmt s(db_->handle,
               "SELECT document_id, idx, test, model, devices, n_threads, status, "
               "prefill_tps_median, decode_tps_median FROM document_tests WHERE document_id = ? "
               "ORDER BY idx");
        s.bind(1, id);
        std::vector<StoredTest> out;
        while (s.step()) {
            StoredTest t;
            t.document_id = s.int64(0);
            t.index = s.int64(1);
            t.test = s.text(2);
            t.model = s.opt_text(3);
            t.devices = s.opt_text(4);
            t.n_threads = s.opt_int64(5);
            t.status = s.opt_text(6);
            t.prefill_tps_median = s.opt_real(7);
            t.decode_tps_median = s.opt_real(8);
            out.push_back(std::move(t));
        }
        return out;
    }

    std::vector<int64_t> latest_per_device(const std::string& command) override {
        Stmt s(db_->handle,
               "SELECT id FROM (SELECT id, device, row_number() OVER (PARTITION BY device "
               "ORDER BY started_at DESC, id DESC) AS n FROM documents "
               "WHERE command = ? AND device IS NOT NULL) AS latest WHERE n = 1 ORDER BY device");
        s.bind(1, command);
        std::vector<int64_t> out;
        while (s.step())
            out.push_back(s.int64(0));
        return out;
    }

    Appended insert_fleet_run(const FleetRun& r, const std::string& hash, bool once) override {
        sqlite3* db = db_->handle;
        Transaction tx(db);
        if (once) {
            Stmt find(db, "SELECT min(id) FROM fleet_runs WHERE content_hash = ?");
            find.bind(1, hash);
            if (find.step() && !find.is_null(0))
                return {find.int64(0), false};
        }
        Stmt ins(db,
                 "INSERT INTO fleet_runs (fleet, device, transport, command, status, error, "
                 "error_kind, document_id, started_at, finished_at, tool_version, llama_commit, "
                 "arch, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
        ins.bind(1, r.fleet);
        ins.bind(2, r.device);
        ins.bind(3, r.transport);
        ins.bind(4, r.command);
        ins.bind(5, r.status);
        ins.bind(6, r.error);
        ins.bind(7, r.error_kind);
        ins.bind(8, r.document_id);
        ins.bind(9, r.started_at);
        ins.bind(10, r.finished_at);
        ins.bind(11, r.tool_version);
        ins.bind(12, r.llama_commit);
        ins.bind(13, r.arch);
        ins.bind(14, hash);
        ins.step();
        const int64_t id = sqlite3_last_insert_rowid(db);
        tx.commit();
        return {id, true};
    }

    std::vector<FleetRun> fleet_runs(const std::optional<std::string>& fleet) override {
        Stmt s(db_->handle, std::string("SELECT ") + kFleetRunColumns +
                                " FROM fleet_runs WHERE ?1 IS NULL OR fleet = ?1 ORDER BY id");
        s.bind(1, fleet);
        std::vector<FleetRun> out;
        while (s.step())
            out.push_back(fleet_run_row(s));
        return out;
    }

  private:
    std::string path_;
    std::unique_ptr<Db> db_;
};

}  // namespace

std::unique_ptr<StoreBackend> open_sqlite_backend(const std::string& path, ResultStore::Mode mode,
                                                  StoreWait wait) {
    namespace fs = std::filesystem;
    // SQLite opens "" as a private temporary database and ":memory:" as one in memory:
    // everything stored would be gone with the process. A "file:" name is a URI to SQLite
    // when URIs are enabled (its options can ask for memory too): refused as well, whatever
    // the build's setting, so that a store is always a file of the name given.
    if (path.empty())
        throw input_error("an empty path given for the results store (--db)");
    if (path == ":memory:")
        throw input_error(
            "results store ':memory:' is SQLite's in-memory database, which keeps nothing after "
            "the command: give a file (./:memory: for a file of that name)");
    if (path.size() >= 5 && std::equal(path.begin(), path.begin() + 5, "file:", [](char a, char b) {
            return std::tolower(a) == b;
        }))
        throw input_error("results store '" + path + "' is a SQLite URI: give a file path (./" +
                          path + " for a file of that name)");
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (mode == ResultStore::Mode::existing && !exists)
        throw input_error("no results store at '" + path + "'");
    if (exists && fs::is_directory(path, ec))
        throw input_error("results store '" + path + "' is a directory");
    // SQLite would open a FIFO read-write and wait on it forever: only regular files.
    if (exists && !fs::is_regular_file(path, ec))
        throw input_error("results store '" + path + "' is not a regular file");

    auto db = std::make_unique<Db>();
    int flags =
        SQLITE_OPEN_READWRITE | (mode == ResultStore::Mode::create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path.c_str(), &db->handle, flags, nullptr) != SQLITE_OK)
        throw input_error("cannot open results store '" + path + "': " + errmsg(db->handle));
    db->wait = std::move(wait);
    sqlite3_busy_handler(db->handle, on_busy, db.get());
    sqlite3_extended_result_codes(db->handle, 0);

    // SQLite reads the header lazily: the first statement tells whether this is a database.
    // The version and the tables are read in one read transaction: another process creating
    // the store may commit its tables between two statements.
    int version = 0;
    int64_t n_tables = 0;
    try {
        exec(db->handle, "BEGIN");
        version = user_version(db->handle);
        n_tables = table_count(db->handle);
        exec(db->handle, "COMMIT");
    } catch (const Error&) {
        const int code = sqlite3_errcode(db->handle);
        const std::string msg = errmsg(db->handle);
        sqlite3_exec(db->handle, "ROLLBACK", nullptr, nullptr, nullptr);
        if (code == SQLITE_NOTADB)
            throw input_error("'" + path + "' is not a SQLite database");
        if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
            throw;
        throw input_error("cannot read results store '" + path + "': " + msg);
    }
    check_version(path, version, n_tables);
    if (version == 0 && n_tables == 0 && mode == ResultStore::Mode::existing) {
        // A reading command never makes a store: an empty file stays as it was.
        const bool empty = fs::file_size(path, ec) == 0 && !ec;
        throw input_error("no results store at '" + path +
                          "': " + (empty ? "the file is empty" : "an empty SQLite database"));
    }
    check_integrity(db->handle, path);
    if (version < kStoreSchemaVersion) {
        // One process migrates (or creates) at a time, all steps in one transaction; what the
        // file holds is looked at again under the write lock: another may have migrated it
        // meanwhile (two runs creating one new store at once).
        Transaction tx(db->handle);
        version = user_version(db->handle);
        check_version(path, version, table_count(db->handle));
        for (int v = version; v < kStoreSchemaVersion; ++v) {
            kMigrations[v](db->handle, path);
            set_user_version(db->handle, v + 1);
        }
        tx.commit();
    }
    return std::make_unique<SqliteBackend>(path, std::move(db));
}

}  // namespace sb
