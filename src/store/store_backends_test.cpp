// The same behaviour of both implementations of the store: every test here runs against a
// SQLite file and against a database of a real PostgreSQL server (testing/pg_server.hpp).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <random>

#include "core/error.hpp"
#include "store/result_store.hpp"
#include "store/testing/store_fixtures.hpp"
#ifdef SB_WITH_POSTGRES
#include "store/testing/pg_server.hpp"
#endif

namespace sb {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using sbtest::error_of;

enum class Kind { sqlite, postgres };

class BothStores : public ::testing::TestWithParam<Kind> {
  protected:
    void SetUp() override {
        std::random_device rd;
        dir_ = fs::temp_directory_path() / ("sb_both_stores_" + std::to_string(rd()));
        fs::create_directories(dir_);
        if (GetParam() == Kind::postgres) {
#ifdef SB_WITH_POSTGRES
            if (sbtest::PgServer::bin_dir().empty())
                GTEST_SKIP() << "PostgreSQL is not installed (no initdb)";
            // Started once per test binary; a server that cannot start fails the test.
            password_ = std::make_unique<sbtest::ScopedEnv>("PGPASSWORD",
                                                            sbtest::shared_pg_server().password());
#else
            GTEST_SKIP() << "this build has no libpq (PostgreSQL stores left out)";
#endif
        }
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    // A new, empty store's name.
    std::string new_store() {
        ++n_;
        if (GetParam() == Kind::sqlite)
            return (dir_ / ("s" + std::to_string(n_) + ".sqlite")).string();
#ifdef SB_WITH_POSTGRES
        auto& server = sbtest::shared_pg_server();
        return server.url(server.create_database());
#else
        return "";
#endif
    }

    // Runs sql on the store's database directly, as another program would.
    void raw(const std::string& store, const std::string& sql) {
        if (GetParam() == Kind::sqlite) {
            sqlite3* db = nullptr;
            ASSERT_EQ(sqlite3_open(store.c_str(), &db), SQLITE_OK);
            char* msg = nullptr;
            const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
            std::string m = msg ? msg : "";
            sqlite3_free(msg);
            sqlite3_close(db);
            ASSERT_EQ(rc, SQLITE_OK) << m;
            return;
        }
#ifdef SB_WITH_POSTGRES
        sbtest::shared_pg_server().sql(store.substr(store.rfind('/') + 1), sql);
#endif
    }

    fs::path dir_;
    int n_ = 0;
#ifdef SB_WITH_POSTGRES
    std::unique_ptr<sbtest::ScopedEnv> password_;
#endif
};

TEST_P(BothStores, AppendsListsGetsAndIndexesTests) {
    const std::string name = new_store();
    auto store = ResultStore::open(name);
    EXPECT_EQ(store.schema_version(), kStoreSchemaVersion);
    EXPECT_EQ(store.is_postgres(), GetParam() == Kind::postgres);
    EXPECT_FALSE(store.read_only());
    EXPECT_TRUE(store.list().empty());
    EXPECT_EQ(store.last_id(), 0);
    const ResultDocument a = sbtest::store_doc("host-a", 100.0),
                         b = sbtest::store_doc("host-b", 200.0);
    EXPECT_EQ(store.append(a), 1);
    EXPECT_EQ(store.append(b), 2);
    EXPECT_EQ(store.last_id(), 2);
    EXPECT_EQ(to_json(store.get(1)), to_json(a));
    EXPECT_EQ(to_json(store.get(2)), to_json(b));
    // The text is what to_json writes, whichever database holds it.
    EXPECT_EQ(store.get_text(2), to_json(b).dump(2));

    const auto entries = store.list();
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].id, 1);
    EXPECT_EQ(entries[1].host, "host-b");
    EXPECT_EQ(entries[1].device, "host-b");
    EXPECT_EQ(entries[1].cpu, "Cortex-X4");
    EXPECT_EQ(entries[1].command, "run");
    EXPECT_EQ(entries[1].tool_version, "0.1.0");
    EXPECT_EQ(entries[1].llama_commit, "0123456789ab");
    EXPECT_EQ(entries[1].started_at, "2026-11-29T09:30:00Z");
    EXPECT_EQ(entries[1].models, std::vector<std::string>{"tiny.gguf"});
    EXPECT_EQ(entries[1].n_tests, 1);
    EXPECT_EQ(entries[1].stored_at.size(), 20u);
    EXPECT_EQ(entries[1].content_hash, content_hash(b));
    EXPECT_NE(entries[0].content_hash, entries[1].content_hash);

    const auto tests = store.tests(2);
    ASSERT_EQ(tests.size(), 1u);
    EXPECT_EQ(tests[0].document_id, 2);
    EXPECT_EQ(tests[0].test, "pp32+tg8");
    EXPECT_EQ(tests[0].model, "tiny.gguf");
    EXPECT_EQ(tests[0].devices, "CPU");
    EXPECT_EQ(tests[0].status, "ok");
    EXPECT_EQ(tests[0].n_threads, 2);
    EXPECT_EQ(tests[0].prefill_tps_median, 200.0);
    EXPECT_EQ(tests[0].decode_tps_median, 50.5);
    EXPECT_TRUE(store.tests(7).empty());

    ErrorKind kind = ErrorKind::runtime;
    EXPECT_EQ(error_of([&] { store.get(7); }, &kind),
              "no document #7 in results store '" + name + "'");
    EXPECT_EQ(kind, ErrorKind::input);
    // Reopened, as it was.
    auto again = ResultStore::open(name, ResultStore::Mode::existing);
    EXPECT_EQ(again.list().size(), 2u);
    EXPECT_EQ(to_json(again.get(1)), to_json(a));
}

TEST_P(BothStores, AppendOnceFindsTheSameDocumentAndAppendAlwaysAdds) {
    auto store = ResultStore::open(new_store());
    const ResultDocument a = sbtest::store_doc("h", 1.0), b = sbtest::store_doc("h", 2.0);
    const Appended first = store.append_once(a);
    EXPECT_EQ(first.id, 1);
    EXPECT_TRUE(first.added);
    const Appended again = store.append_once(a);
    EXPECT_EQ(again.id, 1);
    EXPECT_FALSE(again.added);
    // A document written to a file and read back is the same document.
    const ResultDocument reread = from_json<ResultDocument>(json::parse(to_json(a).dump(2)), "f");
    EXPECT_FALSE(store.append_once(reread).added);
    EXPECT_EQ(store.append(a), 2);  // a run appends, whatever is there
    EXPECT_EQ(store.append_once(b).id, 3);
    EXPECT_EQ(store.list().size(), 3u);
}

TEST_P(BothStores, FleetRunsKeepFailuresAndFilterByFleet) {
    const std::string name = new_store();
    auto store = ResultStore::open(name);
    const int64_t d = store.append(sbtest::store_doc("pi5", 10.0));
    FleetRun ok;
    ok.fleet = "lab";
    ok.device = "pi5";
    ok.transport = "ssh://pi@10.0.0.2:22";
    ok.command = R"(["run","-m","tiny.gguf"])";
    ok.status = "ok";
    ok.document_id = d;
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
    const auto lab = store.fleet_runs("lab");
    ASSERT_EQ(lab.size(), 2u);
    EXPECT_EQ(lab[0].document_id, d);
    EXPECT_EQ(lab[0].arch, "aarch64");
    EXPECT_EQ(lab[0].transport, ok.transport);
    EXPECT_EQ(lab[0].started_at, ok.started_at);
    EXPECT_EQ(lab[1].status, "failed");
    EXPECT_EQ(lab[1].error, failed.error);
    EXPECT_EQ(lab[1].error_kind, "runtime");
    EXPECT_FALSE(lab[1].document_id);
    EXPECT_EQ(store.fleet_runs().size(), 3u);
    EXPECT_EQ(ResultStore::open(name, ResultStore::Mode::existing).fleet_runs("desk").size(), 1u);
}

TEST_P(BothStores, TheLatestDocumentOfACommandPerDevice) {
    auto store = ResultStore::open(new_store());
    ResultDocument pi_old = sbtest::store_doc("pi5", 1, "sustained", "2026-11-01T10:00:00Z");
    ResultDocument pi_new = sbtest::store_doc("pi5", 2, "sustained", "2026-11-02T10:00:00Z");
    ResultDocument s24 = sbtest::store_doc("ignored-host", 3, "sustained", "2026-10-01T10:00:00Z");
    s24.fleet = json{{"fleet", "lab"}, {"device", "s24"}};  // a fleet's name wins over the host
    const ResultDocument pi_run = sbtest::store_doc("pi5", 4, "run", "2026-12-01T10:00:00Z");
    const int64_t a = store.append(pi_new);
    store.append(pi_old);  // stored later, ran earlier
    const int64_t c = store.append(s24);
    store.append(pi_run);
    EXPECT_EQ(store.latest_per_device("sustained"), (std::vector<int64_t>{a, c}));
    EXPECT_EQ(store.list()[2].device, "s24");
    EXPECT_EQ(store.latest_per_device("run"), (std::vector<int64_t>{4}));
    EXPECT_TRUE(store.latest_per_device("serve").empty());
}

TEST_P(BothStores, AStoreOfANewerSchemaIsRefusedAndLeftAsItIs) {
    const std::string name = new_store();
    ResultStore::open(name).append(sbtest::store_doc("h", 1));
    raw(name, GetParam() == Kind::sqlite ? "PRAGMA user_version = 9"
                                         : "UPDATE stagebench_schema SET version = 9");
    for (const auto mode : {ResultStore::Mode::create, ResultStore::Mode::existing}) {
        ErrorKind kind = ErrorKind::runtime;
        const std::string msg = error_of([&] { ResultStore::open(name, mode); }, &kind);
        EXPECT_EQ(kind, ErrorKind::input);
        EXPECT_EQ(msg, "results store '" + name +
                           "' has schema version 9, newer than this stagebench reads (" +
                           std::to_string(kStoreSchemaVersion) + "); use a newer stagebench");
    }
}

TEST_P(BothStores, TextThatIsNotUtf8IsStoredAsReplacementCharacters) {
    auto store = ResultStore::open(new_store());
    ResultDocument d = sbtest::store_doc("h\xFF", 1);
    d.command = std::string("\xFF\xFE");
    const int64_t id = store.append(d);
    EXPECT_EQ(store.get(id).command, "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(store.list()[0].command, "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(store.list()[0].host, "h\xEF\xBF\xBD");
}

INSTANTIATE_TEST_SUITE_P(Store, BothStores, ::testing::Values(Kind::sqlite, Kind::postgres),
                         [](const auto& info) {
                             return info.param == Kind::sqlite ? std::string("Sqlite")
                                                               : std::string("Postgres");
                         });

}  // namespace
}  // namespace sb
