// The PostgreSQL store against a real server (testing/pg_server.hpp): what only a server
// shared over a network has (logins, a server that dies, writers on other connections), and
// copies between the two kinds of store.
#ifdef SB_WITH_POSTGRES
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"
#include "store/testing/pg_server.hpp"
#include "store/testing/store_fixtures.hpp"

namespace sb {
namespace {

using nlohmann::json;
using sbtest::error_of;
using sbtest::PgServer;
using sbtest::ScopedEnv;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A session of another program on the server, kept open across statements.
class Session {
  public:
    Session(const PgServer& s, const std::string& db) {
        const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(s.port()) +
                                     " dbname=" + db + " user=" + PgServer::kUser +
                                     " password=" + s.password();
        c_ = PQconnectdb(conninfo.c_str());
        EXPECT_EQ(PQstatus(c_), CONNECTION_OK) << PQerrorMessage(c_);
    }
    ~Session() { PQfinish(c_); }
    void exec(const std::string& sql) {
        PGresult* r = PQexec(c_, sql.c_str());
        const auto st = PQresultStatus(r);
        EXPECT_TRUE(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
            << sql << ": " << PQresultErrorMessage(r);
        PQclear(r);
    }

  private:
    PGconn* c_ = nullptr;
};

class PgStore : public ::testing::Test {
  protected:
    void SetUp() override {
        if (PgServer::bin_dir().empty())
            GTEST_SKIP() << "PostgreSQL is not installed (no initdb)";
        server_ = &sbtest::shared_pg_server();
        password_ = std::make_unique<ScopedEnv>("PGPASSWORD", server_->password());
        db_ = server_->create_database();
        url_ = server_->url(db_);
    }
    PgServer* server_ = nullptr;
    std::unique_ptr<ScopedEnv> password_;
    std::string db_, url_;
};

TEST_F(PgStore, RoundTripKeepsUnicodeLargeNumbersAndOrder) {
    auto store = ResultStore::open(url_);
    json d = sbtest::store_doc_json("h\xC3\xA9te-\xE6\x9D\xB1\xE4\xBA\xAC-\xF0\x9F\x9A\x80", 1.0);
    d["u64_max"] = std::numeric_limits<uint64_t>::max();
    d["i64_min"] = std::numeric_limits<int64_t>::min();
    d["big_double"] = 1.7976931348623157e308;
    d["tiny_double"] = 4.9406564584124654e-324;
    d["tenth"] = 0.1;
    d["float_like_int"] = 5e15;
    d["ns"] = int64_t{9007199254740993};  // not representable as a double
    d["zwj"] = "\xE2\x80\x8D quote\" back\\slash \n tab\t \\u0000 (text, not a NUL)";
    d["nested"] = {{"null", nullptr}, {"empty", json::object()}, {"arr", json::array()}};
    const ResultDocument typed = from_json<ResultDocument>(d, "doc");
    const int64_t id = store.append(typed);
    const json back = to_json(store.get(id));
    EXPECT_EQ(back, to_json(typed));
    EXPECT_EQ(back["u64_max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(back["i64_min"].get<int64_t>(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(back["big_double"].get<double>(), 1.7976931348623157e308);
    EXPECT_EQ(back["tiny_double"].get<double>(), 4.9406564584124654e-324);
    EXPECT_EQ(back["ns"].get<int64_t>(), 9007199254740993);
    EXPECT_EQ(back["tenth"].get<double>(), 0.1);
    EXPECT_EQ(back["float_like_int"].get<double>(), 5e15);
    EXPECT_EQ(back["zwj"], d["zwj"]);
    EXPECT_EQ(back["nested"], d["nested"]);
    EXPECT_EQ(store.list()[0].host, d["system"]["hostname"]);
    // Stored whole as JSONB: a query reaches into it.
    EXPECT_EQ(server_->sql(db_, "SELECT doc->'system'->>'cpu_model' FROM documents"), "Cortex-X4");
    EXPECT_EQ(server_->sql(db_, "SELECT jsonb_typeof(doc) FROM documents"), "object");
}

TEST_F(PgStore, ANulCharacterIsStoredAsAReplacementCharacter) {
    auto store = ResultStore::open(url_);
    ResultDocument d = sbtest::store_doc("h", 1);
    d.command = std::string("ru\0n", 4);
    const int64_t id = store.append(d);
    EXPECT_EQ(store.get(id).command, "ru\xEF\xBF\xBDn");
    EXPECT_EQ(store.list()[0].command, "ru\xEF\xBF\xBDn");
    // Its identity is the document's as it was given.
    EXPECT_EQ(store.list()[0].content_hash, content_hash(d));
}

TEST_F(PgStore, WrongCredentialsAreOneLineWithoutThePassword) {
    const std::string url = "postgresql://" + std::string(PgServer::kUser) +
                            ":not-the-password-42@127.0.0.1:" + std::to_string(server_->port()) +
                            "/" + db_;
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { ResultStore::open(url); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg.rfind("cannot connect to results store 'postgresql://sbadmin@127.0.0.1:", 0), 0u)
        << msg;
    EXPECT_NE(msg.find("password authentication failed"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("not-the-password-42"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // No password at all (none in the environment either).
    ScopedEnv none("PGPASSWORD", "");
    ScopedEnv no_file("PGPASSFILE", "/nonexistent");
    const std::string msg2 = error_of([&] { ResultStore::open(url_); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg2.find("no password supplied"), std::string::npos) << msg2;
}

TEST_F(PgStore, APasswordFileWorksAndThePasswordGivenInTheUriNeverShows) {
    // ~/.pgpass, as libpq reads it (PGPASSFILE names it here).
    const fs::path pgpass = fs::temp_directory_path() / ("sb_pgpass_" + db_);
    {
        std::ofstream(pgpass) << "127.0.0.1:" << server_->port() << ":*:" << PgServer::kUser << ":"
                              << server_->password() << "\n";
    }
    fs::permissions(pgpass, fs::perms::owner_read | fs::perms::owner_write);
    ScopedEnv none("PGPASSWORD", "");
    {
        ScopedEnv file("PGPASSFILE", pgpass.string());
        EXPECT_EQ(ResultStore::open(url_).append(sbtest::store_doc("h", 1)), 1);
    }
    fs::remove(pgpass);
    const std::string with_password = "postgresql://" + std::string(PgServer::kUser) + ":" +
                                      server_->password() +
                                      "@127.0.0.1:" + std::to_string(server_->port()) + "/" + db_;
    auto store = ResultStore::open(with_password, ResultStore::Mode::existing);
    EXPECT_EQ(store.path(), url_);
    EXPECT_EQ(store.list().size(), 1u);
}

TEST_F(PgStore, AnUnreachableServerIsOneLineAndQuick) {
    // A port nothing listens on.
    PgServer* s = server_;
    const std::string url = "postgresql://sbadmin@127.0.0.1:1/" + db_;
    const auto t0 = Clock::now();
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { ResultStore::open(url); }, &kind);
    EXPECT_LT(seconds_since(t0), 5.0);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg.rfind("cannot connect to results store 'postgresql://sbadmin@127.0.0.1:1/", 0),
              0u)
        << msg;
    EXPECT_NE(msg.find("Connection refused"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    (void)s;
}

TEST_F(PgStore, ADatabaseOfAnotherProgramIsRefusedAndAnEmptyOneIsNoStoreToRead) {
    ErrorKind kind = ErrorKind::runtime;
    std::string msg =
        error_of([&] { ResultStore::open(url_, ResultStore::Mode::existing); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg, "no results store at '" + url_ +
                       "': the database has no stagebench tables (a command with --db creates "
                       "them)");
    server_->sql(db_, "CREATE TABLE customers (name text)");
    msg = error_of([&] { ResultStore::open(url_); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("other tables but no stagebench store"), std::string::npos) << msg;
    EXPECT_EQ(server_->sql(db_, "SELECT to_regclass('documents') IS NULL"), "t");
}

// A store made by the v3 schema (as the migrations of this build leave it at v3): opened, it
// is migrated to v4 and its documents and fleet runs get their hashes and columns.
TEST_F(PgStore, MigratesAVersion3Store) {
    const json a = sbtest::store_doc_json("old-host", 123.0);
    std::string quoted;
    for (char c : a.dump())
        quoted += c == '\'' ? std::string("''") : std::string(1, c);
    server_->sql(
        db_,
        "CREATE TABLE stagebench_schema (version integer NOT NULL);"
        "INSERT INTO stagebench_schema VALUES (3);"
        "CREATE TABLE documents (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "
        "stored_at text NOT NULL, command text, started_at text, host text, cpu text, "
        "tool_version text, models jsonb NOT NULL DEFAULT '[]', n_tests bigint NOT NULL DEFAULT "
        "0, doc jsonb NOT NULL);"
        "CREATE TABLE document_tests (document_id bigint NOT NULL REFERENCES documents(id) ON "
        "DELETE CASCADE, idx bigint NOT NULL, test text NOT NULL, model text, devices text, "
        "n_threads bigint, status text, prefill_tps_median double precision, decode_tps_median "
        "double precision, PRIMARY KEY (document_id, idx));"
        "CREATE TABLE fleet_runs (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, fleet "
        "text NOT NULL, device text NOT NULL, transport text NOT NULL, command text NOT NULL, "
        "status text NOT NULL, error text, error_kind text, document_id bigint REFERENCES "
        "documents(id), started_at text NOT NULL, finished_at text NOT NULL, tool_version text, "
        "llama_commit text, arch text);"
        "INSERT INTO documents (stored_at, command, started_at, host, models, n_tests, doc) "
        "VALUES ('2026-01-01T00:00:00Z', 'run', '2026-01-01T00:00:00Z', 'old-host', "
        "'[\"tiny.gguf\"]', 1, '" +
            quoted +
            "');"
            "INSERT INTO fleet_runs (fleet, device, transport, command, status, document_id, "
            "started_at, finished_at) VALUES ('lab', 'pi', 'local', '[]', 'ok', 1, 'a', 'b');");
    auto store = ResultStore::open(url_, ResultStore::Mode::existing);
    EXPECT_EQ(store.schema_version(), 4);
    const auto entries = store.list();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].content_hash, content_hash(from_json<ResultDocument>(a, "a")));
    EXPECT_EQ(entries[0].device, "old-host");
    EXPECT_EQ(entries[0].llama_commit, "0123456789ab");
    EXPECT_EQ(entries[0].stored_at, "2026-01-01T00:00:00Z");
    EXPECT_EQ(store.get(1).tests[0].prefill->throughput.median, 123.0);
    EXPECT_EQ(server_->sql(db_, "SELECT count(*) FROM fleet_runs WHERE content_hash IS NULL"), "0");
    EXPECT_EQ(server_->sql(db_,
                           "SELECT count(*) FROM pg_indexes WHERE indexname = "
                           "'documents_by_command'"),
              "1");
    EXPECT_EQ(store.append(sbtest::store_doc("new-host", 1.0)), 2);
}

TEST_F(PgStore, ALoginThatMayOnlyReadIsReadOnly) {
    ResultStore::open(url_).append(sbtest::store_doc("h", 1));
    server_->sql(db_,
                 "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sb_reader') "
                 "THEN CREATE ROLE sb_reader LOGIN PASSWORD 'reader-pw'; END IF; END $$;"
                 "GRANT SELECT ON ALL TABLES IN SCHEMA public TO sb_reader;");
    ScopedEnv pw("PGPASSWORD", "reader-pw");
    auto store = ResultStore::open(server_->url(db_, "sb_reader"), ResultStore::Mode::existing);
    EXPECT_TRUE(store.read_only());
    EXPECT_EQ(store.list().size(), 1u);
    ErrorKind kind = ErrorKind::input;
    const std::string msg = error_of([&] { store.append(sbtest::store_doc("h", 2)); }, &kind);
    EXPECT_EQ(kind, ErrorKind::runtime);
    EXPECT_NE(msg.find("cannot be written: permission denied"), std::string::npos) << msg;
    EXPECT_EQ(store.list().size(), 1u);
}

// A store its login may not read, tables altered by another program, a schema that is not
// there: bad input (exit 2), one line, as a damaged SQLite file is.
TEST_F(PgStore, AStoreTheLoginCannotReadOrWithAlteredTablesIsBadInput) {
    ResultStore::open(url_).append(sbtest::store_doc("h", 1));
    server_->sql(db_,
                 "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sb_blind') "
                 "THEN CREATE ROLE sb_blind LOGIN PASSWORD 'blind-pw'; END IF; END $$;"
                 "GRANT SELECT ON ALL TABLES IN SCHEMA public TO sb_blind;"
                 "REVOKE SELECT ON documents FROM sb_blind;");
    {
        ScopedEnv pw("PGPASSWORD", "blind-pw");
        auto store = ResultStore::open(server_->url(db_, "sb_blind"), ResultStore::Mode::existing);
        ErrorKind kind = ErrorKind::runtime;
        const std::string msg = error_of([&] { store.list(); }, &kind);
        EXPECT_EQ(kind, ErrorKind::input) << msg;
        EXPECT_NE(msg.find("cannot be read by this login: permission denied"), std::string::npos)
            << msg;
        kind = ErrorKind::runtime;
        EXPECT_NE(error_of([&] { store.get_text(1); }, &kind), "");
        EXPECT_EQ(kind, ErrorKind::input);
    }
    server_->sql(db_, "ALTER TABLE documents RENAME COLUMN command TO cmd");
    auto store = ResultStore::open(url_, ResultStore::Mode::existing);
    ErrorKind kind = ErrorKind::runtime;
    std::string msg = error_of([&] { store.list(); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input) << msg;
    EXPECT_NE(msg.find("is not usable"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SQLSTATE 42703"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // A search_path of a schema that does not exist: nowhere to make the tables.
    const std::string db = server_->create_database();
    kind = ErrorKind::runtime;
    msg = error_of([&] { ResultStore::open(server_->url(db) + "?options=-csearch_path%3Dnope"); },
                   &kind);
    EXPECT_EQ(kind, ErrorKind::input) << msg;
    EXPECT_NE(msg.find("SQLSTATE 3F000"), std::string::npos) << msg;
}

// Many writers, each with its own connection: nothing is lost, no id is given twice.
TEST_F(PgStore, ConcurrentWritersLoseNothing) {
    ResultStore::open(url_);
    constexpr int kWriters = 6, kEach = 10;
    std::vector<std::thread> threads;
    std::vector<std::vector<int64_t>> ids(kWriters);
    std::atomic<int> errors{0};
    for (int w = 0; w < kWriters; ++w)
        threads.emplace_back([&, w] {
            try {
                auto store = ResultStore::open(url_);
                for (int i = 0; i < kEach; ++i)
                    ids[w].push_back(
                        store.append(sbtest::store_doc(std::to_string(w) + "-writer", i)));
            } catch (const Error&) {
                ++errors;
            }
        });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(errors, 0);
    std::set<int64_t> all;
    for (const auto& v : ids)
        all.insert(v.begin(), v.end());
    EXPECT_EQ(all.size(), static_cast<std::size_t>(kWriters * kEach));
    EXPECT_EQ(ResultStore::open(url_).list().size(), static_cast<std::size_t>(kWriters * kEach));
    EXPECT_EQ(server_->sql(db_, "SELECT count(*) FROM document_tests"),
              std::to_string(kWriters * kEach));
}

// Several stagebench opening one new database at once: one makes the tables, the others wait
// for it and find them made (none takes them for another program's).
TEST_F(PgStore, ConcurrentFirstOpensOfANewDatabaseAllSucceed) {
    constexpr int kOpeners = 6;
    std::vector<std::thread> threads;
    std::vector<std::string> errors(kOpeners);
    for (int i = 0; i < kOpeners; ++i)
        threads.emplace_back([&, i] {
            errors[i] =
                error_of([&] { ResultStore::open(url_).append(sbtest::store_doc("h", i)); });
        });
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        EXPECT_EQ(e, "");
    EXPECT_EQ(ResultStore::open(url_).list().size(), static_cast<std::size_t>(kOpeners));
    EXPECT_EQ(server_->sql(db_, "SELECT version FROM stagebench_schema"),
              std::to_string(kStoreSchemaVersion));
}

// A writer in the middle of its transaction (an append not yet committed) does not hold the
// others back: they append at once. (SQLite's lock would make them wait.)
TEST_F(PgStore, AnOpenTransactionOfAnotherWriterDoesNotBlockAppends) {
    auto store = ResultStore::open(url_);
    Session other(*server_, db_);
    other.exec("BEGIN");
    other.exec(
        "INSERT INTO documents (stored_at, models, n_tests, doc) VALUES ('x', '[]', 0, '{}')");
    StoreWait w;
    w.timeout_s = 5;
    auto mine = ResultStore::open(url_, ResultStore::Mode::existing, w);
    const auto t0 = Clock::now();
    const int64_t id = mine.append(sbtest::store_doc("h", 1));
    EXPECT_LT(seconds_since(t0), 2.0);
    other.exec("ROLLBACK");
    EXPECT_EQ(store.list().size(), 1u);
    EXPECT_EQ(store.list()[0].id, id);
}

// Two importers of one document at once: it is stored once.
TEST_F(PgStore, TwoImportersOfOneDocumentStoreItOnce) {
    ResultStore::open(url_);
    const ResultDocument d = sbtest::store_doc("h", 1);
    std::atomic<int> added{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&] {
            auto s = ResultStore::open(url_);
            added += s.append_once(d).added ? 1 : 0;
        });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(added, 1);
    EXPECT_EQ(ResultStore::open(url_).list().size(), 1u);
}

// A statement that waits on another writer's lock: the wait is bounded, said, and Ctrl-C ends
// it at once; the store is as it was, and the next append goes through.
TEST_F(PgStore, AWaitForTheServerHasADeadlineAndCtrlCEndsIt) {
    const ResultDocument d = sbtest::store_doc("h", 1);
    ResultStore::open(url_);
    Session other(*server_, db_);
    // The lock an import of d takes: held by the other session.
    const std::string key = content_hash(d).substr(0, 16);
    other.exec("SELECT pg_advisory_lock(('x' || '" + key + "')::bit(64)::bigint)");
    std::vector<double> reports;
    StoreWait w;
    w.timeout_s = 1.2;
    w.progress_s = 0.3;
    w.on_wait = [&](double s) { reports.push_back(s); };
    {
        auto store = ResultStore::open(url_, ResultStore::Mode::existing, w);
        const auto t0 = Clock::now();
        ErrorKind kind = ErrorKind::input;
        bool locked = false;
        std::string msg;
        try {
            store.append_once(d);
        } catch (const StoreLocked& e) {
            locked = true;
            kind = e.kind();
            msg = e.what();
        }
        EXPECT_TRUE(locked);
        EXPECT_EQ(kind, ErrorKind::runtime);
        EXPECT_GE(seconds_since(t0), 1.1);
        EXPECT_LT(seconds_since(t0), 5.0);
        EXPECT_EQ(msg, "results store '" + url_ + "' did not answer within 1 s (--db-wait)");
        EXPECT_GE(reports.size(), 2u);
    }
    {
        StoreWait long_wait;
        long_wait.timeout_s = 600;
        auto store = ResultStore::open(url_, ResultStore::Mode::existing, long_wait);
        std::thread ctrl_c([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            request_interrupt();
        });
        const auto t0 = Clock::now();
        std::string msg;
        try {
            store.append_once(d);
        } catch (const StoreLocked& e) {
            msg = e.what();
        }
        ctrl_c.join();
        clear_interrupt();
        EXPECT_LT(seconds_since(t0), 5.0);
        EXPECT_NE(msg.find("the wait for it was interrupted (Ctrl-C)"), std::string::npos) << msg;
        other.exec("SELECT pg_advisory_unlock_all()");
        // The connection given up is made again for the next statement.
        EXPECT_TRUE(store.append_once(d).added);
    }
    EXPECT_EQ(ResultStore::open(url_).list().size(), 1u);
}

// A server that dies: the next statement is one line (runtime), nothing half-stored; once it is
// back, the same store object reconnects.
TEST(PgStoreServer, AServerThatDiesIsOneLineAndTheStoreReconnectsWhenItIsBack) {
    if (PgServer::bin_dir().empty())
        GTEST_SKIP() << "PostgreSQL is not installed (no initdb)";
    PgServer server;
    ScopedEnv pw("PGPASSWORD", server.password());
    const std::string db = server.create_database();
    auto store = ResultStore::open(server.url(db));
    EXPECT_EQ(store.append(sbtest::store_doc("h", 1)), 1);
    server.kill();
    ErrorKind kind = ErrorKind::input;
    const std::string msg = error_of([&] { store.append(sbtest::store_doc("h", 2)); }, &kind);
    EXPECT_EQ(kind, ErrorKind::runtime) << msg;
    EXPECT_EQ(msg.rfind("results store '" + server.url(db) + "': the connection was lost", 0), 0u)
        << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // Down: opening is bad input (the server cannot be used), as for a server never up.
    EXPECT_EQ(error_of([&] { ResultStore::open(server.url(db)); }, &kind).find("cannot connect"),
              0u);
    EXPECT_EQ(kind, ErrorKind::input);
    server.start();
    const int64_t id = store.append(sbtest::store_doc("h", 3));
    EXPECT_GT(id, 1);
    const auto entries = store.list();
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(store.get(id).tests[0].prefill->throughput.median, 3.0);
}

// SQLite -> PostgreSQL -> SQLite: every document (whole, with its stored_at and hash) and every
// fleet run (pointing at its document's new id) arrives once; copying again adds nothing.
TEST_F(PgStore, CopyingBetweenSqliteAndPostgresBothWaysIsIdempotent) {
    std::random_device rd;
    const fs::path dir = fs::temp_directory_path() / ("sb_copy_" + std::to_string(rd()));
    fs::create_directories(dir);
    const std::string a = (dir / "a.sqlite").string(), b = (dir / "b.sqlite").string();
    {
        auto s = ResultStore::open(a);
        s.append(sbtest::store_doc("pi5", 1));
        const int64_t d2 = s.append(sbtest::store_doc("s24", 2));
        const int64_t again = s.append(sbtest::store_doc("pi5", 1));  // twice: one in a copy
        // A newer stagebench's document (a field of a type this build cannot read): copied as
        // it is.
        json newer = sbtest::store_doc_json("x", 9);
        newer["schema_version"] = 999;
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(a.c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db,
                           "INSERT INTO documents (stored_at, command, models, n_tests, json, "
                           "content_hash) VALUES ('2020-01-01T00:00:00Z', 'run', '[]', 1, ?, "
                           "'feedface')",
                           -1, &st, nullptr);
        const std::string text = newer.dump(2);
        sqlite3_bind_text(st, 1, text.c_str(), -1, SQLITE_TRANSIENT);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        // The second copy stored later (within the same second only by chance): a copy keeps the
        // first's stored_at.
        sqlite3_prepare_v2(db,
                           "UPDATE documents SET stored_at = '2099-01-01T00:00:00Z' WHERE id = ?",
                           -1, &st, nullptr);
        sqlite3_bind_int64(st, 1, again);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(db);
        FleetRun r;
        r.fleet = "lab";
        r.device = "s24";
        r.transport = "adb://X";
        r.command = "[]";
        r.status = "ok";
        r.document_id = d2;
        r.started_at = "s";
        r.finished_at = "f";
        s.append_fleet_run(r);
        r.status = "failed";
        r.document_id.reset();
        r.error = "gone";
        s.append_fleet_run(r);
    }
    auto from = ResultStore::open(a, ResultStore::Mode::existing);
    auto pg = ResultStore::open(url_);
    pg.append(sbtest::store_doc("already-there", 7));
    CopySummary c = copy_store(from, pg);
    EXPECT_EQ(c.documents_added, 3);
    EXPECT_EQ(c.documents_present, 1);
    EXPECT_EQ(c.fleet_runs_added, 2);
    c = copy_store(from, pg);
    EXPECT_EQ(c.documents_added, 0);
    EXPECT_EQ(c.documents_present, 4);
    EXPECT_EQ(c.fleet_runs_added, 0);
    EXPECT_EQ(c.fleet_runs_present, 2);

    auto back = ResultStore::open(b);
    c = copy_store(pg, back);
    EXPECT_EQ(c.documents_added, 4);
    EXPECT_EQ(c.fleet_runs_added, 2);
    c = copy_store(back, pg);
    EXPECT_EQ(c.documents_added, 0);
    EXPECT_EQ(c.fleet_runs_added, 0);

    // The same documents: by hash, with their stored_at and their JSON value (a document
    // stored twice: its first row, the one a copy takes).
    auto by_hash = [](const ResultStore& s) {
        std::map<std::string, std::pair<std::string, json>> m;
        for (const auto& e : s.list())
            m.emplace(e.content_hash, std::pair{e.stored_at, json::parse(s.get_text(e.id))});
        return m;
    };
    auto in_a = by_hash(from), in_pg = by_hash(pg), in_b = by_hash(back);
    EXPECT_EQ(in_a.size(), 3u);
    for (const auto& [hash, v] : in_a) {
        ASSERT_TRUE(in_pg.count(hash)) << hash;
        EXPECT_EQ(in_pg[hash], v) << hash;
        ASSERT_TRUE(in_b.count(hash)) << hash;
        EXPECT_EQ(in_b[hash], v) << hash;
    }
    EXPECT_EQ(in_b.size(), 4u);
    EXPECT_TRUE(in_b.count("feedface"));
    // The fleet run points at the same document in every store.
    const auto runs = back.fleet_runs("lab");
    ASSERT_EQ(runs.size(), 2u);
    ASSERT_TRUE(runs[0].document_id);
    EXPECT_EQ(back.get(*runs[0].document_id).tests[0].prefill->throughput.median, 2.0);
    EXPECT_FALSE(runs[1].document_id);
    EXPECT_EQ(runs[1].error, "gone");
    std::error_code ec;
    fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace sb
#endif
