#include "store/result_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "store/testing/store_fixtures.hpp"
#include "temp_dir.hpp"

namespace sb {
namespace {

using nlohmann::json;
using sbtest::error_of;
namespace fs = std::filesystem;

using sbtest::TempDir;

// Runs raw SQL on a file, as an older stagebench (or another program) would have.
void raw_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
    std::string m = msg ? msg : "";
    sqlite3_free(msg);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << m;
}

TEST(ResultStore, CreatesAppendsListsAndGets) {
    TempDir t;
    auto store = ResultStore::open(t.file("r.sqlite"));
    EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
    EXPECT_TRUE(store.list().empty());
    const ResultDocument a = sbtest::store_doc("host-a", 100.0),
                         b = sbtest::store_doc("host-b", 200.0);
    EXPECT_EQ(store.append(a), 1);
    EXPECT_EQ(store.append(b), 2);
    EXPECT_EQ(to_json(store.get(1)), to_json(a));
    EXPECT_EQ(to_json(store.get(2)), to_json(b));
    // What is stored is what to_json writes.
    EXPECT_EQ(store.get_text(2), to_json(b).dump(2));

    auto entries = store.list();
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].id, 1);
    EXPECT_EQ(entries[1].host, "host-b");
    EXPECT_EQ(entries[1].cpu, "Cortex-X4");
    EXPECT_EQ(entries[1].command, "run");
    EXPECT_EQ(entries[1].tool_version, "0.1.0");
    EXPECT_EQ(entries[1].started_at, "2026-11-29T09:30:00Z");
    EXPECT_EQ(entries[1].models, std::vector<std::string>{"tiny.gguf"});
    EXPECT_EQ(entries[1].n_tests, 1);
    EXPECT_EQ(entries[1].stored_at.size(), 20u);  // 2026-11-29T09:30:00Z

    auto tests = store.tests(2);
    ASSERT_EQ(tests.size(), 1u);
    EXPECT_EQ(tests[0].test, "pp32+tg8");
    EXPECT_EQ(tests[0].model, "tiny.gguf");
    EXPECT_EQ(tests[0].n_threads, 2);
    EXPECT_EQ(tests[0].prefill_tps_median, 200.0);
    EXPECT_EQ(tests[0].decode_tps_median, 50.5);
}

TEST(ResultStore, ReopenedStoreKeepsItsDocuments) {
    TempDir t;
    const ResultDocument a = sbtest::store_doc("h", 1.0);
    { ResultStore::open(t.file("r.sqlite")).append(a); }
    auto store = ResultStore::open(t.file("r.sqlite"), ResultStore::Mode::existing);
    EXPECT_EQ(to_json(store.get(1)), to_json(a));
    EXPECT_EQ(store.append(a), 2);
}

TEST(ResultStore, RoundTripKeepsUnicodeLargeNumbersAndOrder) {
    TempDir t;
    auto store = ResultStore::open(t.file("r.sqlite"));
    json doc = sbtest::store_doc_json("h\xC3\xA9te-\xE6\x9D\xB1\xE4\xBA\xAC-\xF0\x9F\x9A\x80", 1.0);
    doc["u64_max"] = std::numeric_limits<uint64_t>::max();
    doc["i64_min"] = std::numeric_limits<int64_t>::min();
    doc["big_double"] = 1.7976931348623157e308;
    doc["tiny_double"] = 4.9406564584124654e-324;
    doc["tenth"] = 0.1;
    doc["ns"] = int64_t{9007199254740993};  // not representable as a double
    doc["zwj"] = "\xE2\x80\x8D quote\" back\\slash \n tab\t";
    doc["nested"] = {{"null", nullptr}, {"empty", json::object()}, {"arr", json::array()}};
    // Members this build does not know travel too (as a newer build's document would).
    const ResultDocument typed = from_json<ResultDocument>(doc, "doc");
    const int64_t id = store.append(typed);
    const json back = to_json(store.get(id));
    EXPECT_EQ(back, to_json(typed));
    EXPECT_EQ(back["u64_max"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(back["ns"].get<int64_t>(), 9007199254740993);
    EXPECT_EQ(back["tenth"].get<double>(), 0.1);
    EXPECT_EQ(back["nested"], doc["nested"]);
    EXPECT_EQ(store.list()[0].host, doc["system"]["hostname"]);
}

TEST(ResultStore, MigratesAVersion1StoreAndIndexesItsTests) {
    TempDir t;
    const std::string path = t.file("v1.sqlite");
    // As an earlier build stored it: its own text, not what this build's to_json writes.
    json a = sbtest::store_doc_json("old-host", 123.0);
    a.erase("llama");  // a document of then: no llama block, so the migrated row has no commit
    std::string text = a.dump(2);
    std::string quoted;
    for (char c : text)
        quoted += c == '\'' ? std::string("''") : std::string(1, c);
    raw_sql(path,
            "CREATE TABLE documents (id INTEGER PRIMARY KEY AUTOINCREMENT, stored_at TEXT NOT "
            "NULL, command TEXT, started_at TEXT, host TEXT, cpu TEXT, tool_version TEXT, models "
            "TEXT NOT NULL DEFAULT '[]', n_tests INTEGER NOT NULL DEFAULT 0, json TEXT NOT NULL);"
            "INSERT INTO documents (stored_at, command, started_at, host, cpu, tool_version, "
            "models, n_tests, json) VALUES ('2026-01-01T00:00:00Z', 'run', "
            "'2026-01-01T00:00:00Z', 'old-host', 'Cortex-X4', '0.0.9', '[\"tiny.gguf\"]', 1, '" +
                quoted + "'); PRAGMA user_version = 1;");

    auto store = ResultStore::open(path, ResultStore::Mode::existing);
    EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
    EXPECT_TRUE(store.fleet_runs().empty());
    EXPECT_EQ(store.get_text(1), text);
    EXPECT_EQ(to_json(store.get(1)), to_json(from_json<ResultDocument>(a, "a")));
    EXPECT_EQ(store.get(1).tests[0].prefill->throughput.median, 123.0);
    auto entries = store.list();
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_EQ(entries[0].stored_at, "2026-01-01T00:00:00Z");
    EXPECT_EQ(entries[0].host, "old-host");
    // v4: what identifies it, and its device, from the stored JSON.
    EXPECT_EQ(entries[0].content_hash, content_hash(from_json<ResultDocument>(a, "a")));
    EXPECT_EQ(entries[0].device, "old-host");
    EXPECT_FALSE(entries[0].llama_commit);
    auto tests = store.tests(1);
    ASSERT_EQ(tests.size(), 1u);
    EXPECT_EQ(tests[0].test, "pp32+tg8");
    EXPECT_EQ(tests[0].prefill_tps_median, 123.0);
    // New appends land after the migrated document.
    EXPECT_EQ(store.append(sbtest::store_doc("new-host", 1.0)), 2);
    EXPECT_EQ(store.tests(2).size(), 1u);
}

// A v3 store's fleet runs get their hashes: a copy of it recognises them in another store.
TEST(ResultStore, MigratesAVersion3StoreWithFleetRuns) {
    TempDir t;
    const std::string path = t.file("v3.sqlite");
    const json a = sbtest::store_doc_json("pi", 1.0);
    std::string quoted;
    for (char c : a.dump(2))
        quoted += c == '\'' ? std::string("''") : std::string(1, c);
    raw_sql(path,
            "CREATE TABLE documents (id INTEGER PRIMARY KEY AUTOINCREMENT, stored_at TEXT NOT "
            "NULL, command TEXT, started_at TEXT, host TEXT, cpu TEXT, tool_version TEXT, models "
            "TEXT NOT NULL DEFAULT '[]', n_tests INTEGER NOT NULL DEFAULT 0, json TEXT NOT NULL);"
            "CREATE TABLE document_tests (document_id INTEGER NOT NULL, idx INTEGER NOT NULL, "
            "test TEXT NOT NULL, model TEXT, devices TEXT, n_threads INTEGER, status TEXT, "
            "prefill_tps_median REAL, decode_tps_median REAL, PRIMARY KEY (document_id, idx));"
            "CREATE TABLE fleet_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, fleet TEXT NOT NULL, "
            "device TEXT NOT NULL, transport TEXT NOT NULL, command TEXT NOT NULL, status TEXT "
            "NOT NULL, error TEXT, error_kind TEXT, document_id INTEGER, started_at TEXT NOT "
            "NULL, finished_at TEXT NOT NULL, tool_version TEXT, llama_commit TEXT, arch TEXT);"
            "INSERT INTO documents (stored_at, command, host, json) VALUES "
            "('2026-01-01T00:00:00Z', 'run', 'pi', '" +
                quoted +
                "');"
                "INSERT INTO fleet_runs (fleet, device, transport, command, status, document_id, "
                "started_at, finished_at) VALUES ('lab', 'pi', 'local', '[]', 'ok', 1, 's', 'f');"
                "PRAGMA user_version = 3;");
    auto store = ResultStore::open(path, ResultStore::Mode::existing);
    EXPECT_EQ(store.schema_version(), 4);
    EXPECT_EQ(store.list()[0].content_hash, content_hash(from_json<ResultDocument>(a, "a")));
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT length(content_hash) FROM fleet_runs", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 64);
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT_EQ(store.fleet_runs("lab").at(0).document_id, 1);
}

TEST(ResultStore, FleetRunsKeepFailuresBesideDocumentsAndFilterByFleet) {
    TempDir t;
    auto store = ResultStore::open(t.file("fleet.sqlite"));
    const int64_t doc = store.append(sbtest::store_doc("pi5", 10.0));
    FleetRun ok;
    ok.fleet = "lab";
    ok.device = "pi5";
    ok.transport = "ssh://pi@10.0.0.2:22";
    ok.command = R"(["run","-m","tiny.gguf"])";
    ok.status = "ok";
    ok.document_id = doc;
    ok.started_at = "2026-12-01T10:00:00Z";
    ok.finished_at = "2026-12-01T10:01:00Z";
    ok.tool_version = "0.1.0";
    ok.llama_commit = "abc";
    ok.arch = "aarch64";
    FleetRun failed = ok;
    failed.device = "s24";
    failed.transport = "adb://R5CT";
    failed.status = "failed";
    failed.error = "device unreachable: adb: device 'R5CT' not found";
    failed.error_kind = "runtime";
    failed.document_id.reset();
    FleetRun other = ok;
    other.fleet = "desk";
    EXPECT_EQ(store.append_fleet_run(ok), 1);
    EXPECT_EQ(store.append_fleet_run(failed), 2);
    EXPECT_EQ(store.append_fleet_run(other), 3);
    auto lab = store.fleet_runs("lab");
    ASSERT_EQ(lab.size(), 2u);
    EXPECT_EQ(lab[0].document_id, doc);
    EXPECT_EQ(lab[0].arch, "aarch64");
    EXPECT_EQ(lab[1].status, "failed");
    EXPECT_EQ(lab[1].error, failed.error);
    EXPECT_FALSE(lab[1].document_id);
    EXPECT_EQ(store.fleet_runs().size(), 3u);
    // Reopened, the rows are still there.
    auto again = ResultStore::open(t.file("fleet.sqlite"), ResultStore::Mode::existing);
    EXPECT_EQ(again.fleet_runs("desk").size(), 1u);
}

TEST(ResultStore, RefusesAStoreFromANewerVersionWithoutTouchingIt) {
    TempDir t;
    const std::string path = t.file("v9.sqlite");
    raw_sql(path, "CREATE TABLE future (x); PRAGMA user_version = 9;");
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { ResultStore::open(path); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("schema version 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    raw_sql(path, "SELECT x FROM future;");  // still there
}

TEST(ResultStore, NonSqliteFileIsOneLineInputError) {
    TempDir t;
    const std::string path = t.file("not.sqlite");
    std::ofstream(path) << "{\"this is\": \"json, not a database\"}\n";
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { ResultStore::open(path); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg, "'" + path + "' is not a SQLite database");
}

TEST(ResultStore, AnEmptyPathIsAnInputErrorNotATemporaryDatabase) {
    for (auto mode : {ResultStore::Mode::create, ResultStore::Mode::existing}) {
        ErrorKind kind = ErrorKind::runtime;
        const std::string msg = error_of([&] { ResultStore::open("", mode); }, &kind);
        EXPECT_EQ(kind, ErrorKind::input);
        EXPECT_EQ(msg, "an empty path given for the results store (--db)");
    }
}

TEST(ResultStore, ForeignSqliteDatabaseIsRefused) {
    TempDir t;
    const std::string path = t.file("other.sqlite");
    raw_sql(path, "CREATE TABLE customers (name TEXT);");
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { ResultStore::open(path); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("not a stagebench results store"), std::string::npos) << msg;
}

TEST(ResultStore, MissingFileAndMissingIdAreInputErrors) {
    TempDir t;
    ErrorKind kind = ErrorKind::runtime;
    std::string msg = error_of(
        [&] { ResultStore::open(t.file("none.sqlite"), ResultStore::Mode::existing); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("no results store"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(t.file("none.sqlite")));

    auto store = ResultStore::open(t.file("r.sqlite"));
    kind = ErrorKind::runtime;
    msg = error_of([&] { store.get(7); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("no document #7"), std::string::npos) << msg;
    EXPECT_TRUE(store.tests(7).empty());
}

TEST(ResultStore, RepairsInvalidUtf8AndRefusesAStoredTextItCannotRead) {
    TempDir t;
    const std::string path = t.file("r.sqlite");
    auto store = ResultStore::open(path);
    // Bytes that are not UTF-8 cost no measurement: they are stored as U+FFFD.
    ResultDocument doc = sbtest::store_doc("h", 1);
    doc.command = std::string("\xFF\xFE");
    const int64_t id = store.append(doc);
    const ResultDocument back = store.get(id);
    EXPECT_EQ(back.command, "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(back.tests.size(), 1u);
    // A stored text of the wrong shape (another program wrote it) is one input error naming
    // the document and the field.
    raw_sql(path,
            "UPDATE documents SET json = '{\"schema\": \"stagebench.result\", "
            "\"tests\": 3}' WHERE id = 1");
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg = error_of([&] { store.get(1); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg, "document #1 in results store '" + path +
                       "': tests: expected an array, found an integer");
}

TEST(ResultStore, ParsesDbOperands) {
    EXPECT_EQ(parse_db_operand("db:12"), 12);
    EXPECT_EQ(parse_db_operand("r.json"), std::nullopt);
    EXPECT_EQ(parse_db_operand("./db:1"), std::nullopt);
    for (const char* bad : {"db:", "db:0", "db:-1", "db:x", "db:1.5"}) {
        ErrorKind kind = ErrorKind::input;
        error_of([&] { parse_db_operand(bad); }, &kind);
        EXPECT_EQ(kind, ErrorKind::usage) << bad;
    }
}

TEST(ResultStore, ALockedStoreWaitsReportsAndThenGivesUp) {
    TempDir t;
    const std::string path = t.file("busy.sqlite");
    ResultStore::open(path).append(sbtest::store_doc("a", 1));
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    std::vector<double> reports;
    StoreWait w;
    w.timeout_s = 0.6;
    w.progress_s = 0.2;
    w.on_wait = [&](double s) { reports.push_back(s); };
    ResultStore s = ResultStore::open(path, ResultStore::Mode::existing, w);  // reading is free
    EXPECT_EQ(s.last_id(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    ErrorKind kind = ErrorKind::input;
    bool locked = false;
    try {
        s.append(sbtest::store_doc("b", 2));
    } catch (const StoreLocked& e) {
        locked = true;
        kind = e.kind();
        EXPECT_NE(std::string(e.what()).find("locked by another writer"), std::string::npos);
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(locked);
    EXPECT_EQ(kind, ErrorKind::runtime);
    EXPECT_GE(waited, 0.55);
    EXPECT_GE(reports.size(), 2u);
    // Released: the same store takes the document.
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    EXPECT_EQ(s.append(sbtest::store_doc("b", 2)), 2);
}

TEST(ResultStore, ADamagedStoreIsAnInputError) {
    TempDir t;
    const std::string path = t.file("damaged.sqlite");
    {
        ResultStore s = ResultStore::open(path);
        for (int i = 0; i < 5; ++i)
            s.append(sbtest::store_doc(std::string(3000, 'h'), i));
    }
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(4096);
        const std::string junk(fs::file_size(path) - 4096, '\x5a');
        f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    ErrorKind kind = ErrorKind::runtime;
    const std::string msg =
        error_of([&] { ResultStore::open(path, ResultStore::Mode::existing).list(); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input) << msg;
    EXPECT_NE(msg.find("is damaged"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// SQLite would keep these in memory (or read them as URIs): nothing would be left after the
// command. A path that names a file of that name is a file.
TEST(ResultStore, SqliteSpecialNamesAreRefused) {
    TempDir t;
    for (const std::string& name :
         std::vector<std::string>{":memory:", "file:x.sqlite", "file::memory:?cache=shared",
                                  "FILE:" + t.file("u.sqlite") + "?mode=memory", ""}) {
        ErrorKind kind = ErrorKind::runtime;
        const std::string msg = error_of([&] { ResultStore::open(name); }, &kind);
        EXPECT_EQ(kind, ErrorKind::input) << name << ": " << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_EQ(error_of([] { ResultStore::open(":memory:"); }),
              "results store ':memory:' is SQLite's in-memory database, which keeps nothing after "
              "the command: give a file (./:memory: for a file of that name)");
    const std::string file = t.file(":memory:");
    EXPECT_EQ(ResultStore::open(file).append(sbtest::store_doc("a", 1)), 1);
    EXPECT_TRUE(fs::is_regular_file(file));
    EXPECT_EQ(ResultStore::open(file, ResultStore::Mode::existing).list().size(), 1u);
}

// A page damaged away from the header: SQLite would read the header, the schema and even some
// documents; the integrity check at open refuses the file before any of that is trusted or
// anything is appended.
TEST(ResultStore, AStoreFailingTheIntegrityCheckIsRefusedWhenOpened) {
    TempDir t;
    const std::string path = t.file("damaged.sqlite");
    {
        ResultStore s = ResultStore::open(path);
        for (int i = 0; i < 20; ++i)
            s.append(sbtest::store_doc(std::string(2000, 'h'), i));
    }
    const auto pages = fs::file_size(path) / 4096;
    ASSERT_GE(pages, 8u);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>((pages - 2) * 4096));
        const std::string junk(4096, '\x33');
        f.write(junk.data(), 4096);
    }
    const auto before = fs::file_size(path);
    for (const auto mode : {ResultStore::Mode::existing, ResultStore::Mode::create}) {
        ErrorKind kind = ErrorKind::runtime;
        const std::string msg = error_of([&] { ResultStore::open(path, mode); }, &kind);
        EXPECT_EQ(kind, ErrorKind::input) << msg;
        EXPECT_EQ(msg.rfind("results store '" + path + "' is damaged (integrity check: ", 0), 0u)
            << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
    EXPECT_EQ(fs::file_size(path), before);
}

// Ctrl-C while another writer holds the store: the wait ends at once, whatever --db-wait says.
TEST(ResultStore, CtrlCEndsTheWaitForALock) {
    TempDir t;
    const std::string path = t.file("busy.sqlite");
    ResultStore::open(path).append(sbtest::store_doc("a", 1));
    sqlite3* other = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    StoreWait w;
    w.timeout_s = 600;
    ResultStore s = ResultStore::open(path, ResultStore::Mode::existing, w);
    std::thread ctrl_c([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        request_interrupt();
    });
    const auto t0 = std::chrono::steady_clock::now();
    std::string msg;
    bool locked = false;
    try {
        s.append(sbtest::store_doc("b", 2));
    } catch (const StoreLocked& e) {
        locked = true;
        msg = e.what();
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ctrl_c.join();
    clear_interrupt();
    EXPECT_TRUE(locked);
    EXPECT_LT(waited, 5.0);
    EXPECT_NE(msg.find("the wait for it was interrupted (Ctrl-C)"), std::string::npos) << msg;
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    EXPECT_EQ(s.append(sbtest::store_doc("b", 2)), 2);  // nothing half-done: the append works after
}

TEST(ResultStore, SaysWhenItCannotBeWritten) {
    TempDir t;
    const std::string path = t.file("ro.sqlite");
    ResultStore::open(path).append(sbtest::store_doc("a", 1));
    EXPECT_FALSE(ResultStore::open(path).read_only());
    // Opened read-only by SQLite itself: as for a file this process may not write.
    sqlite3* ro = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path.c_str(), &ro, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_db_readonly(ro, "main"), 1);
    sqlite3_close(ro);
    fs::permissions(t.path, fs::perms::owner_read | fs::perms::owner_exec);
    if (::geteuid() != 0) {
        EXPECT_TRUE(ResultStore::open(path, ResultStore::Mode::existing).read_only());
    }
    fs::permissions(t.path, fs::perms::owner_all);
}

// Several processes creating one new store at once, many times over: each store is created
// once, by one of them, and every process's document is in it (a second migration of the
// same tables failed: "duplicate column name: device", "table fleet_runs already exists").
TEST(ResultStore, ProcessesRacingToCreateOneNewStoreAllStoreTheirDocument) {
    TempDir t;
    constexpr int kTrials = 40, kWriters = 4;
    for (int trial = 0; trial < kTrials; ++trial) {
        const std::string path = t.file("race" + std::to_string(trial) + ".sqlite");
        int go[2];
        ASSERT_EQ(::pipe(go), 0);
        std::vector<pid_t> pids;
        std::vector<int> errs;
        for (int w = 0; w < kWriters; ++w) {
            int err[2];
            ASSERT_EQ(::pipe(err), 0);
            const pid_t pid = ::fork();
            ASSERT_GE(pid, 0);
            if (pid == 0) {
                ::close(go[1]);
                ::close(err[0]);
                char c;
                // All start at once: when the parent closes the pipe.
                while (::read(go[0], &c, 1) > 0) {
                }
                std::string msg;
                try {
                    ResultStore s = ResultStore::open(path);
                    s.append(sbtest::store_doc("w" + std::to_string(w), 1));
                } catch (const std::exception& e) {
                    msg = e.what();
                }
                if (!msg.empty() && ::write(err[1], msg.data(), msg.size()) < 0)
                    ::_exit(3);
                ::_exit(msg.empty() ? 0 : 1);
            }
            ::close(err[1]);
            pids.push_back(pid);
            errs.push_back(err[0]);
        }
        ::close(go[0]);
        ::close(go[1]);
        for (int w = 0; w < kWriters; ++w) {
            std::string msg;
            char buf[512];
            for (ssize_t n; (n = ::read(errs[w], buf, sizeof buf)) > 0;)
                msg.append(buf, static_cast<std::size_t>(n));
            ::close(errs[w]);
            int status = 0;
            ASSERT_EQ(::waitpid(pids[w], &status, 0), pids[w]);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
                << "trial " << trial << ", writer " << w << ": " << msg;
        }
        const auto entries = ResultStore::open(path, ResultStore::Mode::existing).list();
        EXPECT_EQ(entries.size(), static_cast<std::size_t>(kWriters)) << "trial " << trial;
    }
}

// A reading open (db list/show/export, copy --from) never makes a store: an empty file, an
// empty SQLite database or another file is refused and left as it was.
TEST(ResultStore, AReadingOpenOfAnEmptyFileRefusesItAndLeavesItEmpty) {
    TempDir t;
    const std::string empty = t.file("empty.txt");
    std::ofstream(empty).close();
    ErrorKind kind = ErrorKind::runtime;
    std::string msg =
        error_of([&] { ResultStore::open(empty, ResultStore::Mode::existing); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_EQ(msg, "no results store at '" + empty + "': the file is empty");
    EXPECT_EQ(fs::file_size(empty), 0u);
    EXPECT_EQ(std::distance(fs::directory_iterator(t.path), fs::directory_iterator()), 1);

    const std::string bare = t.file("bare.sqlite");
    raw_sql(bare, "PRAGMA user_version = 0; VACUUM;");
    const auto size = fs::file_size(bare);
    msg = error_of([&] { ResultStore::open(bare, ResultStore::Mode::existing); }, &kind);
    EXPECT_EQ(kind, ErrorKind::input);
    EXPECT_NE(msg.find("no results store at"), std::string::npos) << msg;
    EXPECT_EQ(fs::file_size(bare), size);

    // A writing open makes the store in it, as it makes a missing file one.
    ResultStore::open(empty).append(sbtest::store_doc("a", 1));
    EXPECT_EQ(ResultStore::open(empty, ResultStore::Mode::existing).list().size(), 1u);
}

// Tables altered by another program: reading them is bad input (exit 2), one line, as appending
// to them is, not a failure of the run.
TEST(ResultStore, TablesAlteredByAnotherProgramAreBadInput) {
    for (const std::string sql :
         {"ALTER TABLE documents RENAME COLUMN command TO cmd", "DROP TABLE document_tests",
          "ALTER TABLE documents RENAME TO docs", "DROP TABLE fleet_runs"}) {
        SCOPED_TRACE(sql);
        TempDir t;
        const std::string path = t.file("r.sqlite");
        ResultStore::open(path).append(sbtest::store_doc("a", 1));
        raw_sql(path, sql);
        ResultStore s = ResultStore::open(path, ResultStore::Mode::existing);
        int refused = 0;
        for (const auto& op : std::vector<std::function<void()>>{
                 [&] { s.list(); }, [&] { s.get(1); }, [&] { s.get_text(1); }, [&] { s.tests(1); },
                 [&] { s.fleet_runs(); }, [&] { s.append(sbtest::store_doc("b", 2)); }}) {
            ErrorKind kind = ErrorKind::input;
            const std::string msg = error_of(op, &kind);
            if (msg.empty())
                continue;
            ++refused;
            EXPECT_EQ(kind, ErrorKind::input) << msg;
            EXPECT_NE(msg.find("is not usable"), std::string::npos) << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        }
        EXPECT_GT(refused, 0);
    }
}

// db copy copies what db show reads, and a newer stagebench's document as it is; null, [] and
// other documents get() refuses are named and not copied, and the rest is.
TEST(ResultStore, CopySkipsWhatGetRefusesAndNamesIt) {
    TempDir t;
    const std::string from = t.file("from.sqlite"), to = t.file("to.sqlite");
    {
        ResultStore s = ResultStore::open(from);
        for (int i = 0; i < 5; ++i)
            s.append(sbtest::store_doc("h" + std::to_string(i), i + 1));
    }
    raw_sql(from,
            "UPDATE documents SET json = 'null' WHERE id = 2;"
            "UPDATE documents SET json = '[]' WHERE id = 3;"
            "UPDATE documents SET json = '{\"schema\": \"stagebench.result\", \"schema_version\": "
            "99, \"tests\": 5}' WHERE id = 4;");
    const ResultStore src = ResultStore::open(from, ResultStore::Mode::existing);
    EXPECT_NE(error_of([&] { src.get(2); }), "");
    EXPECT_NE(error_of([&] { src.get(3); }), "");
    ResultStore dst = ResultStore::open(to);
    const CopySummary c = copy_store(src, dst);
    EXPECT_EQ(c.documents_added, 3);  // 1, 4 (newer: kept as it is) and 5
    ASSERT_EQ(c.skipped.size(), 2u);
    EXPECT_EQ(c.skipped[0].rfind("document #2 in results store '" + from + "'", 0), 0u)
        << c.skipped[0];
    EXPECT_NE(c.skipped[0].find("null"), std::string::npos) << c.skipped[0];
    EXPECT_EQ(c.skipped[1].rfind("document #3 ", 0), 0u) << c.skipped[1];
    const auto copied = dst.list();
    ASSERT_EQ(copied.size(), 3u);
    for (const auto& e : copied)
        EXPECT_NE(dst.get_text(e.id), "null");
    EXPECT_EQ(dst.get(1).tests.size(), 1u);
    EXPECT_EQ(dst.get(3).tests.size(), 1u);
}

}  // namespace
}  // namespace sb
