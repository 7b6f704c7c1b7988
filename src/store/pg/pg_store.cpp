// The PostgreSQL implementation of the results store (store_backend.hpp), through libpq: one
// database a lab shares, many hosts appending at once. Each append is one short transaction
// (rows from an identity sequence, no table lock), so writers never wait on each other longer
// than that; `db copy`/`db import` take a transaction-scoped advisory lock on the document's
// hash, so two of them storing the same document store it once.
//
// Every statement is sent without blocking and its answer awaited with a deadline (StoreWait)
// and Ctrl-C in mind: a server that stops answering, or is killed, costs at most that wait,
// and the connection is then closed (the server rolls back what was not committed).
#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "store/store_backend.hpp"
#include "store/store_name.hpp"

namespace sb {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

struct ResultDeleter {
    void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// A statement's parameter: text, or SQL NULL.
using Param = std::optional<std::string>;

// The default deadline of a connection when neither the URI nor PGCONNECT_TIMEOUT gives one.
constexpr double kConnectTimeoutS = 10;
// The smallest deadline of a statement (--db-wait 0 still lets the server answer).
constexpr double kMinStatementWaitS = 1;
// The advisory lock (two-int form: a key space apart from the hashes' one-bigint locks) that
// serialises migrations of one database.
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(1935831917, 4)";

// libpq's message on one line: its lines joined with "; ", tabs and trailing blanks dropped.
std::string one_line(std::string_view m) {
    std::string out;
    std::size_t pos = 0;
    while (pos < m.size()) {
        std::size_t nl = m.find('\n', pos);
        std::string_view line = m.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
        pos = nl == std::string_view::npos ? m.size() : nl + 1;
        while (!line.empty() && (line.front() == '\t' || line.front() == ' '))
            line.remove_prefix(1);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
            line.remove_suffix(1);
        if (line.empty())
            continue;
        if (!out.empty())
            out += "; ";
        out += line;
    }
    return out.empty() ? "no message from libpq" : out;
}

// Text PostgreSQL takes: its text type cannot hold NUL (and libpq would cut the value there).
std::string pg_text(std::string s) {
    std::string out;
    for (char c : s) {
        if (c == '\0')
            out += "\xEF\xBF\xBD";
        else
            out += c;
    }
    return out;
}
Param pg_text(const std::optional<std::string>& s) {
    return s ? Param(pg_text(*s)) : std::nullopt;
}

// JSON text JSONB takes: it refuses the escape \u0000 (NUL); the document keeps U+FFFD there.
std::string jsonb_text(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        // Outside strings JSON has no backslash; inside, an escape is two characters or \uXXXX.
        if (text[i] == '\\' && i + 1 < text.size()) {
            if (text.compare(i, 6, "\\u0000") == 0) {
                out += "\\ufffd";
                i += 5;
            } else {
                out += text[i];
                out += text[i + 1];
                ++i;
            }
            continue;
        }
        out += text[i];
    }
    return out;
}

std::string num(int64_t v) {
    return std::to_string(v);
}
Param num(const std::optional<int64_t>& v) {
    return v ? Param(num(*v)) : std::nullopt;
}
// The advisory lock of a hash: its first 64 bits.
std::string lock_key(const std::string& hash) {
    return num(static_cast<int64_t>(std::strtoull(hash.substr(0, 16).c_str(), nullptr, 16)));
}

// A result's cells.
bool is_null(const PGresult* r, int row, int col) {
    return PQgetisnull(r, row, col) == 1;
}
std::string text_at(const PGresult* r, int row, int col) {
    return std::string(PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col)));
}
std::optional<std::string> opt_text_at(const PGresult* r, int row, int col) {
    return is_null(r, row, col) ? std::nullopt : std::optional<std::string>(text_at(r, row, col));
}
int64_t int_at(const PGresult* r, int row, int col) {
    const std::string s = text_at(r, row, col);
    int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}
std::optional<int64_t> opt_int_at(const PGresult* r, int row, int col) {
    return is_null(r, row, col) ? std::nullopt : std::optional<int64_t>(int_at(r, row, col));
}
std::optional<double> opt_real_at(const PGresult* r, int row, int col) {
    if (is_null(r, row, col))
        return std::nullopt;
    const std::string s = text_at(r, row, col);
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}
bool bool_at(const PGresult* r, int row, int col) {
    return !is_null(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}

// One connection to the server, its statements awaited with a deadline.
class Connection {
  public:
    Connection(std::string url, StoreWait wait)
        : url_(std::move(url)), name_(printable_store_name(url_)), wait_(std::move(wait)) {}
    ~Connection() { close(); }
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    const std::string& name() const { return name_; }
    bool connected() const { return c_ && PQstatus(c_) == CONNECTION_OK; }

    void close() {
        if (c_)
            PQfinish(c_);
        c_ = nullptr;
    }

    // Connects (again, after a lost connection). Throws sb::Error(input) when the server
    // cannot be reached in time or refuses the login, StoreLocked on Ctrl-C.
    void connect() {
        close();
        // Defaults before dbname: what the URI (or a service file) says wins over them.
        const char* keys[] = {"fallback_application_name",
                              "keepalives",
                              "keepalives_idle",
                              "keepalives_interval",
                              "keepalives_count",
                              "tcp_user_timeout",
                              "dbname",
                              "client_encoding",
                              nullptr};
        const char* values[] = {"stagebench", "1",          "30",   "10",   "3",
                                "60000",      url_.c_str(), "UTF8", nullptr};
        c_ = PQconnectStartParams(keys, values, 1);
        if (!c_)
            throw runtime_error("results store '" + name_ + "': out of memory");
        if (PQstatus(c_) == CONNECTION_BAD)
            fail_connect();
        const double timeout_s = connect_timeout_s();
        const auto start = Clock::now();
        PostgresPollingStatusType st = PGRES_POLLING_WRITING;
        while (st != PGRES_POLLING_OK) {
            if (st == PGRES_POLLING_FAILED)
                fail_connect();
            const short events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT;
            while (!ready(events, 100)) {
                if (interrupt_requested()) {
                    close();
                    throw StoreLocked("the connection to results store '" + name_ +
                                      "' was interrupted (Ctrl-C)");
                }
                if (std::chrono::duration<double>(Clock::now() - start).count() >= timeout_s) {
                    close();
                    throw input_error("cannot connect to results store '" + name_ +
                                      "': no answer within " + num(std::llround(timeout_s)) +
                                      " s (connect_timeout)");
                }
            }
            st = PQconnectPoll(c_);
        }
        if (PQsetnonblocking(c_, 1) != 0)
            fail_connect();
        if (PQserverVersion(c_) < 100000) {
            const int v = PQserverVersion(c_);
            close();
            throw input_error("results store '" + name_ + "' is on PostgreSQL " + num(v / 10000) +
                              ", older than this stagebench needs (10)");
        }
    }

    // Runs one statement with its parameters and returns its result (rows or none). Throws
    // StoreLocked when the answer does not come within the wait (or Ctrl-C comes), and
    // sb::Error(runtime) when the server refuses the statement or the connection is lost;
    // the connection is closed after a wait given up or a lost connection.
    Result exec(const std::string& sql, const std::vector<Param>& params = {}) {
        if (!connected())
            throw runtime_error("results store '" + name_ + "': the connection is lost");
        std::vector<const char*> values;
        for (const auto& p : params)
            values.push_back(p ? p->c_str() : nullptr);
        if (!PQsendQueryParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                               values.data(), nullptr, nullptr, 0))
            fail_connection();
        const auto start = Clock::now();
        reported_s_ = 0;
        // In non-blocking mode a large statement leaves libpq in pieces.
        while (true) {
            const int f = PQflush(c_);
            if (f == 0)
                break;
            if (f < 0)
                fail_connection();
            await(POLLOUT | POLLIN, start);
            if (!PQconsumeInput(c_))
                fail_connection();
        }
        Result last, error;
        while (true) {
            if (!PQconsumeInput(c_))
                fail_connection();
            bool done = false;
            while (!PQisBusy(c_)) {
                Result r(PQgetResult(c_));
                if (!r) {
                    done = true;
                    break;
                }
                const auto st = PQresultStatus(r.get());
                if (st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE ||
                    st == PGRES_NONFATAL_ERROR) {
                    if (!error)
                        error = std::move(r);
                } else {
                    last = std::move(r);
                }
            }
            if (done)
                break;
            await(POLLIN, start);
        }
        if (error)
            fail_statement(error.get(), sql);
        return last;
    }

  private:
    // Whether the socket is ready for events within timeout_ms.
    bool ready(short events, int timeout_ms) {
        pollfd p{PQsocket(c_), events, 0};
        const int rc = ::poll(&p, 1, timeout_ms);
        return rc > 0 || (rc < 0 && errno != EINTR);
    }

    // Waits for the socket until the statement's deadline (from start) or Ctrl-C.
    void await(short events, Clock::time_point start) {
        const double timeout_s = std::max(kMinStatementWaitS, wait_.timeout_s);
        while (!ready(events, 100)) {
            const double waited = std::chrono::duration<double>(Clock::now() - start).count();
            if (interrupt_requested()) {
                close();
                throw StoreLocked("results store '" + name_ +
                                  "' has not answered, and the wait for it was interrupted "
                                  "(Ctrl-C)");
            }
            if (waited >= timeout_s) {
                close();
                throw StoreLocked("results store '" + name_ + "' did not answer within " +
                                  num(std::llround(timeout_s)) + " s (--db-wait)");
            }
            if (wait_.on_wait && waited - reported_s_ >= wait_.progress_s) {
                reported_s_ = waited;
                wait_.on_wait(waited);
            }
        }
    }

    double connect_timeout_s() const {
        double t = kConnectTimeoutS;
        if (PQconninfoOption* opts = PQconninfo(c_)) {
            for (PQconninfoOption* o = opts; o->keyword; ++o)
                if (std::strcmp(o->keyword, "connect_timeout") == 0 && o->val && *o->val) {
                    const double v = std::atof(o->val);
                    if (v > 0)
                        t = std::max(2.0, v);  // as libpq: below 2 s means 2 s
                }
            PQconninfoFree(opts);
        }
        return t;
    }

    // libpq's message, one line, without a secret of the URI: libpq quotes what it cannot
    // parse of it (a password with a bad percent-escape, the whole URI of an unclosed '[').
    std::string libpq_says(std::string_view m) const {
        return scrub_store_secrets(one_line(m), url_);
    }

    [[noreturn]] void fail_connect() {
        const std::string msg = libpq_says(c_ ? PQerrorMessage(c_) : "out of memory");
        close();
        throw input_error("cannot connect to results store '" + name_ + "': " + msg);
    }

    [[noreturn]] void fail_connection() {
        const std::string msg = libpq_says(c_ ? PQerrorMessage(c_) : "");
        close();
        throw runtime_error("results store '" + name_ + "': the connection was lost: " + msg);
    }

    [[noreturn]] void fail_statement(const PGresult* r, const std::string& sql) {
        const char* state_c = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        const std::string state = state_c ? state_c : "";
        const std::string msg = libpq_says(primary ? primary : PQresultErrorMessage(r));
        const std::string cls = state.substr(0, 2);
        if (!connected() || cls == "08" || cls == "57") {
            close();
            throw runtime_error("results store '" + name_ + "': the connection was lost: " + msg);
        }
        const bool read = sql.rfind("SELECT", 0) == 0;
        // A login the store's tables refuse to be read by, tables altered or dropped, a schema
        // that is not there: a store the user gave that is not usable, as a damaged file is.
        if (state == "42501" && read)
            throw input_error("results store '" + name_ + "' cannot be read by this login: " + msg);
        if (state == "42501" || state == "25006")
            throw runtime_error("results store '" + name_ + "' cannot be written: " + msg);
        if (cls == "42" || cls == "3F")
            throw input_error("results store '" + name_ +
                              "' is not usable (its tables are not as stagebench made them): " +
                              msg + " (SQLSTATE " + state + ")");
        if (cls == "53")
            throw runtime_error("results store '" + name_ + "' cannot take more: " + msg);
        throw runtime_error("results store '" + name_ + "': " + msg +
                            (state.empty() ? "" : " (SQLSTATE " + state + ")"));
    }

    PGconn* c_ = nullptr;
    std::string url_, name_;
    StoreWait wait_;
    double reported_s_ = 0;
};

// BEGIN on construction; rolled back on scope exit unless committed (or the connection is
// gone, when the server has rolled it back), so a failed append leaves the store as it was.
class Transaction {
  public:
    explicit Transaction(Connection& c) : c_(c) { c_.exec("BEGIN"); }
    ~Transaction() {
        if (done_ || !c_.connected())
            return;
        try {
            c_.exec("ROLLBACK");
        } catch (const Error&) {
        }
    }
    void commit() {
        c_.exec("COMMIT");
        done_ = true;
    }

  private:
    Connection& c_;
    bool done_ = false;
};

int read_version(Connection& c) {
    // From pg_class itself, not to_regclass(): that goes through the session's catalog cache,
    // which an advisory lock does not refresh, and would miss the tables another migration has
    // just committed.
    Result has = c.exec(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
        "n.oid = c.relnamespace WHERE c.relname = 'stagebench_schema' AND n.nspname = "
        "current_schema())");
    if (!bool_at(has.get(), 0, 0))
        return 0;
    Result v = c.exec("SELECT max(version) FROM stagebench_schema");
    if (PQntuples(v.get()) != 1 || is_null(v.get(), 0, 0))
        throw input_error("results store '" + c.name() +
                          "' has an empty stagebench_schema table: not a stagebench store");
    return static_cast<int>(int_at(v.get(), 0, 0));
}

void insert_tests(Connection& c, int64_t doc_id, const std::vector<StoredTest>& tests) {
    if (tests.empty())
        return;
    // All of them in one statement: one round trip, however many rounds a document has.
    json rows = json::array();
    for (const auto& t : tests)
        rows.push_back({{"idx", t.index},
                        {"test", pg_text(t.test)},
                        {"model", opt(pg_text(t.model))},
                        {"devices", opt(pg_text(t.devices))},
                        {"n_threads", opt(t.n_threads)},
                        {"status", opt(pg_text(t.status))},
                        {"prefill", opt(t.prefill_tps_median)},
                        {"decode", opt(t.decode_tps_median)}});
    c.exec(
        "INSERT INTO document_tests (document_id, idx, test, model, devices, n_threads, status, "
        "prefill_tps_median, decode_tps_median) SELECT $1, t.idx, t.test, t.model, t.devices, "
        "t.n_threads, t.status, t.prefill, t.decode FROM jsonb_to_recordset($2::jsonb) AS t(idx "
        "bigint, test text, model text, devices text, n_threads bigint, status text, prefill "
        "double precision, decode double precision)",
        {num(doc_id), dump_json(rows)});
}

// The record of a stored document, for a migration that fills a new column or table.
DocumentRecord stored_record(Connection& c, int64_t id, const std::string& text) {
    try {
        return record_of_text(text, "", "", "document #" + num(id));
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::input)
            throw;
        throw input_error("results store '" + c.name() + "' is damaged: " + e.what());
    }
}

// The migrations: the same steps as the SQLite store's (sqlite_store.cpp), in PostgreSQL's
// types: documents whole as JSONB, ids from identity columns.
void migrate_to_v1(Connection& c) {
    c.exec(
        "CREATE TABLE documents ("
        " id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
        " stored_at text NOT NULL,"
        " command text, started_at text, host text, cpu text, tool_version text,"
        " models jsonb NOT NULL DEFAULT '[]',"
        " n_tests bigint NOT NULL DEFAULT 0,"
        " doc jsonb NOT NULL)");
}

void migrate_to_v2(Connection& c) {
    c.exec(
        "CREATE TABLE document_tests ("
        " document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,"
        " idx bigint NOT NULL,"
        " test text NOT NULL, model text, devices text, n_threads bigint, status text,"
        " prefill_tps_median double precision, decode_tps_median double precision,"
        " PRIMARY KEY (document_id, idx))");
    c.exec("CREATE INDEX document_tests_by_test ON document_tests (test, model)");
    Result all = c.exec("SELECT id, doc::text FROM documents ORDER BY id");
    for (int i = 0; i < PQntuples(all.get()); ++i) {
        const int64_t id = int_at(all.get(), i, 0);
        insert_tests(c, id, stored_record(c, id, text_at(all.get(), i, 1)).tests);
    }
}

void migrate_to_v3(Connection& c) {
    c.exec(
        "CREATE TABLE fleet_runs ("
        " id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
        " fleet text NOT NULL, device text NOT NULL, transport text NOT NULL,"
        " command text NOT NULL, status text NOT NULL, error text, error_kind text,"
        " document_id bigint REFERENCES documents(id),"
        " started_at text NOT NULL, finished_at text NOT NULL,"
        " tool_version text, llama_commit text, arch text)");
    c.exec("CREATE INDEX fleet_runs_by_device ON fleet_runs (fleet, device, command)");
}

constexpr const char* kFleetRunColumns =
    "id, fleet, device, transport, command, status, error, error_kind, document_id, started_at, "
    "finished_at, tool_version, llama_commit, arch";

FleetRun fleet_run_row(const PGresult* r, int i) {
    FleetRun f;
    f.id = int_at(r, i, 0);
    f.fleet = text_at(r, i, 1);
    f.device = text_at(r, i, 2);
    f.transport = text_at(r, i, 3);
    f.command = text_at(r, i, 4);
    f.status = text_at(r, i, 5);
    f.error = opt_text_at(r, i, 6);
    f.error_kind = opt_text_at(r, i, 7);
    f.document_id = opt_int_at(r, i, 8);
    f.started_at = text_at(r, i, 9);
    f.finished_at = text_at(r, i, 10);
    f.tool_version = opt_text_at(r, i, 11);
    f.llama_commit = opt_text_at(r, i, 12);
    f.arch = opt_text_at(r, i, 13);
    return f;
}

void migrate_to_v4(Connection& c) {
    c.exec(
        "ALTER TABLE documents ADD COLUMN device text, ADD COLUMN llama_commit text, "
        "ADD COLUMN content_hash text");
    c.exec("ALTER TABLE fleet_runs ADD COLUMN content_hash text");
    Result all = c.exec("SELECT id, doc::text FROM documents ORDER BY id");
    for (int i = 0; i < PQntuples(all.get()); ++i) {
        const int64_t id = int_at(all.get(), i, 0);
        const DocumentRecord r = stored_record(c, id, text_at(all.get(), i, 1));
        c.exec(
            "UPDATE documents SET device = $1, llama_commit = $2, content_hash = $3 "
            "WHERE id = $4",
            {pg_text(r.device), pg_text(r.llama_commit), r.content_hash, num(id)});
    }
    Result runs = c.exec(std::string("SELECT ") + kFleetRunColumns +
                         ", (SELECT content_hash FROM documents d WHERE d.id = document_id) "
                         "FROM fleet_runs ORDER BY id");
    for (int i = 0; i < PQntuples(runs.get()); ++i) {
        const FleetRun r = fleet_run_row(runs.get(), i);
        c.exec("UPDATE fleet_runs SET content_hash = $1 WHERE id = $2",
               {fleet_run_hash(r, opt_text_at(runs.get(), i, 14).value_or("")), num(r.id)});
    }
    c.exec("CREATE INDEX documents_by_command ON documents (command, device, started_at)");
    c.exec("CREATE INDEX documents_by_device ON documents (device, started_at)");
    c.exec("CREATE INDEX documents_by_host ON documents (host)");
    c.exec("CREATE INDEX documents_by_commit ON documents (llama_commit)");
    c.exec("CREATE INDEX documents_by_hash ON documents (content_hash)");
    c.exec("CREATE INDEX document_tests_by_model ON document_tests (model)");
    c.exec("CREATE INDEX fleet_runs_by_hash ON fleet_runs (content_hash)");
}

using Migration = void (*)(Connection&);
// kMigrations[v] takes a store from version v to v + 1.
constexpr Migration kMigrations[] = {migrate_to_v1, migrate_to_v2, migrate_to_v3, migrate_to_v4};
static_assert(std::size(kMigrations) == kStoreSchemaVersion);

class PgBackend final : public StoreBackend {
  public:
    PgBackend(std::string url, StoreWait wait) : c_(std::move(url), std::move(wait)) {}

    // Connects, checks the schema and migrates it (see ResultStore::open).
    void open(ResultStore::Mode mode) {
        c_.connect();
        if (read_version(c_) == kStoreSchemaVersion)
            return;
        // Two stagebench opening a new database at once: one migrates, the other waits for it
        // (one transaction) and then finds it done. Only under the lock is what the database
        // holds looked at: before, another's migration may be committing its tables.
        Transaction tx(c_);
        c_.exec(kSchemaLock);
        const int version = checked_version(mode);
        if (version == 0) {
            c_.exec("CREATE TABLE stagebench_schema (version integer NOT NULL)");
            c_.exec("INSERT INTO stagebench_schema (version) VALUES (0)");
        }
        for (int v = version; v < kStoreSchemaVersion; ++v) {
            kMigrations[v](c_);
            c_.exec("UPDATE stagebench_schema SET version = $1", {num(v + 1)});
        }
        tx.commit();
    }

    bool is_postgres() const override { return true; }

    bool read_only() override {
        ensure();
        Result r = c_.exec(
            "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' OR "
            "NOT (has_table_privilege('documents', 'INSERT') AND "
            "has_table_privilege('document_tests', 'INSERT') AND "
            "has_table_privilege('fleet_runs', 'INSERT'))");
        return bool_at(r.get(), 0, 0);
    }

    int schema_version() override {
        ensure();
        return read_version(c_);
    }

    Appended insert_document(const DocumentRecord& r, bool once) override {
        ensure();
        Transaction tx(c_);
        if (once) {
            c_.exec("SELECT pg_advisory_xact_lock($1)", {lock_key(r.content_hash)});
            Result found =
                c_.exec("SELECT min(id) FROM documents WHERE content_hash = $1", {r.content_hash});
            if (!is_null(found.get(), 0, 0)) {
                const int64_t id = int_at(found.get(), 0, 0);
                tx.commit();
                return {id, false};
            }
        }
        json models = json::array();
        for (const auto& m : r.models)
            models.push_back(pg_text(m));
        Result ins = c_.exec(
            "INSERT INTO documents (stored_at, command, started_at, host, cpu, tool_version, "
            "models, n_tests, doc, device, llama_commit, content_hash) VALUES ($1, $2, $3, $4, "
            "$5, $6, $7::jsonb, $8, $9::jsonb, $10, $11, $12) RETURNING id",
            {pg_text(r.stored_at), pg_text(r.command), pg_text(r.started_at), pg_text(r.host),
             pg_text(r.cpu), pg_text(r.tool_version), dump_json(models), num(r.n_tests),
             jsonb_text(r.text), pg_text(r.device), pg_text(r.llama_commit), r.content_hash});
        const int64_t id = int_at(ins.get(), 0, 0);
        insert_tests(c_, id, r.tests);
        tx.commit();
        return {id, true};
    }

    int64_t last_id() override {
        ensure();
        Result r = c_.exec("SELECT coalesce(max(id), 0) FROM documents");
        return int_at(r.get(), 0, 0);
    }

    std::vector<StoredEntry> list() override {
        ensure();
        Result r = c_.exec(
            "SELECT id, stored_at, command, started_at, host, cpu, tool_version, models::text, "
            "n_tests, device, llama_commit, content_hash FROM documents ORDER BY id");
        std::vector<StoredEntry> out;
        for (int i = 0; i < PQntuples(r.get()); ++i) {
            StoredEntry e;
            e.id = int_at(r.get(), i, 0);
            e.stored_at = text_at(r.get(), i, 1);
            e.command = opt_text_at(r.get(), i, 2);
            e.started_at = opt_text_at(r.get(), i, 3);
            e.host = opt_text_at(r.get(), i, 4);
            e.cpu = opt_text_at(r.get(), i, 5);
            e.tool_version = opt_text_at(r.get(), i, 6);
            const json models = json::parse(text_at(r.get(), i, 7), nullptr, false);
            if (models.is_array())
                for (const auto& m : models)
                    if (m.is_string())
                        e.models.push_back(m.get<std::string>());
            e.n_tests = int_at(r.get(), i, 8);
            e.device = opt_text_at(r.get(), i, 9);
            e.llama_commit = opt_text_at(r.get(), i, 10);
            e.content_hash = opt_text_at(r.get(), i, 11).value_or("");
            out.push_back(std::move(e));
        }
        return out;
    }

    std::optional<std::string> text(int64_t id) override {
        ensure();
        Result r = c_.exec("SELECT doc::text FROM documents WHERE id = $1", {num(id)});
        if (PQntuples(r.get()) == 0)
            return std::nullopt;
        // JSONB keeps the value, not the text: written out as the SQLite store keeps it.
        const json j = json::parse(text_at(r.get(), 0, 0), nullptr, false);
        if (j.is_discarded())
            throw input_error("results store '" + c_.name() + "': document #" + num(id) +
                              " is not JSON");
        return dump_json(j, 2);
    }

    std::optional<std::string> document_hash(int64_t id) override {
        ensure();
        Result r = c_.exec("SELECT content_hash FROM documents WHERE id = $1", {num(id)});
        if (PQntuples(r.get()) == 0)
            return std::nullopt;
        return opt_text_at(r.get(), 0, 0).value_or("");
    }

    std::vector<StoredTest> tests(int64_t id) override {
        ensure();
        Result r = c_.exec(
            "SELECT document_id, idx, test, model, devices, n_threads, status, "
            "prefill_tps_median, decode_tps_median FROM document_tests WHERE document_id = $1 "
            "ORDER BY idx",
            {num(id)});
        std::vector<StoredTest> out;
        for (int i = 0; i < PQntuples(r.get()); ++i) {
            StoredTest t;
            t.document_id = int_at(r.get(), i, 0);
            t.index = int_at(r.get(), i, 1);
            t.test = text_at(r.get(), i, 2);
            t.model = opt_text_at(r.get(), i, 3);
            t.devices = opt_text_at(r.get(), i, 4);
            t.n_threads = opt_int_at(r.get(), i, 5);
            t.status = opt_text_at(r.get(), i, 6);
            t.prefill_tps_median = opt_real_at(r.get(), i, 7);
            t.decode_tps_median = opt_real_at(r.get(), i, 8);
            out.push_back(std::move(t));
        }
        return out;
    }

    std::vector<int64_t> latest_per_device(const std::string& command) override {
        ensure();
        Result r = c_.exec(
            "SELECT DISTINCT ON (device) id FROM documents WHERE command = $1 AND device IS NOT "
            "NULL ORDER BY device, started_at DESC, id DESC",
            {pg_text(command)});
        std::vector<int64_t> out;
        for (int i = 0; i < PQntuples(r.get()); ++i)
            out.push_back(int_at(r.get(), i, 0));
        return out;
    }

    Appended insert_fleet_run(const FleetRun& f, const std::string& hash, bool once) override {
        ensure();
        Transaction tx(c_);
        if (once) {
            c_.exec("SELECT pg_advisory_xact_lock($1)", {lock_key(hash)});
            Result found =
                c_.exec("SELECT min(id) FROM fleet_runs WHERE content_hash = $1", {hash});
            if (!is_null(found.get(), 0, 0)) {
                const int64_t id = int_at(found.get(), 0, 0);
                tx.commit();
                return {id, false};
            }
        }
        Result ins = c_.exec(
            "INSERT INTO fleet_runs (fleet, device, transport, command, status, error, "
            "error_kind, document_id, started_at, finished_at, tool_version, llama_commit, arch, "
            "content_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) "
            "RETURNING id",
            {pg_text(f.fleet), pg_text(f.device), pg_text(f.transport), pg_text(f.command),
             pg_text(f.status), pg_text(f.error), pg_text(f.error_kind), num(f.document_id),
             pg_text(f.started_at), pg_text(f.finished_at), pg_text(f.tool_version),
             pg_text(f.llama_commit), pg_text(f.arch), hash});
        const int64_t id = int_at(ins.get(), 0, 0);
        tx.commit();
        return {id, true};
    }

    std::vector<FleetRun> fleet_runs(const std::optional<std::string>& fleet) override {
        ensure();
        Result r = c_.exec(std::string("SELECT ") + kFleetRunColumns +
                               " FROM fleet_runs WHERE $1::text IS NULL OR fleet = $1 ORDER BY id",
                           {pg_text(fleet)});
        std::vector<FleetRun> out;
        for (int i = 0; i < PQntuples(r.get()); ++i)
            out.push_back(fleet_run_row(r.get(), i));
        return out;
    }

  private:
    // A connection lost since the last statement (a server restarted in a long fleet run) is
    // made again before the next one; a transaction never spans two.
    void ensure() {
        if (!c_.connected())
            c_.connect();
    }

    int checked_version(ResultStore::Mode mode) {
        const int version = read_version(c_);
        if (version > kStoreSchemaVersion)
            throw input_error("results store '" + c_.name() + "' has schema version " +
                              num(version) + ", newer than this stagebench reads (" +
                              num(kStoreSchemaVersion) + "); use a newer stagebench");
        if (version < 0)
            throw input_error("results store '" + c_.name() + "' has an invalid schema version");
        if (version == 0) {
            Result others = c_.exec(
                "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()");
            if (int_at(others.get(), 0, 0) > 0)
                throw input_error(
                    "results store '" + c_.name() +
                    "' is a PostgreSQL database with other tables but no stagebench store: give "
                    "an empty database (or a schema of its own: ?options=-csearch_path%3DNAME)");
            if (mode == ResultStore::Mode::existing)
                throw input_error("no results store at '" + c_.name() +
                                  "': the database has no stagebench tables (a command with "
                                  "--db creates them)");
        }
        return version;
    }

    Connection c_;
};

}  // namespace

std::unique_ptr<StoreBackend> open_pg_backend(const std::string& url, ResultStore::Mode mode,
                                              StoreWait wait) {
    auto b = std::make_unique<PgBackend>(url, std::move(wait));
    b->open(mode);
    return b;
}

}  // namespace sb
