// Store files damaged or rewritten by a seeded generator (bytes overwritten, pages zeroed, the
// file cut short, rows rewritten by another program): whatever the file holds, every operation
// ends in a value or one sb::Error line, never another exception or a crash, and a file that
// fails SQLite's integrity check is refused when it is opened, so nothing is read from it as
// if it were whole or appended to it. The seed and the number of cases are printed
// (tests/fuzz_seed.hpp).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "core/error.hpp"
#include "fuzz_seed.hpp"
#include "store/result_store.hpp"
#include "store/store_name.hpp"

namespace sb {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

fs::path temp_dir() {
    const fs::path d = fs::path(testing::TempDir()) /
                       ("sb_store_fuzz." + std::to_string(::getpid())) /
                       testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

ResultDocument doc(int i) {
    const json j = {{"schema", "stagebench.result"},
                    {"command", "run"},
                    {"system", {{"hostname", "h" + std::to_string(i)}}},
                    {"tests",
                     {{{"config", {{"n_prompt", 32}, {"n_gen", 8}, {"model_path", "/m/t.gguf"}}},
                       {"status", "ok"},
                       {"prefill", {{"duration_ns", std::vector<int>(50, 1000 + i)}}},
                       {"decode", {{"token_latency_ns", std::vector<int>(300, 7 + i)}}}}}}};
    return from_json<ResultDocument>(j, "sample");
}

// SQLite's own verdict on the file, outside the store's code: "ok" or what is wrong.
std::string integrity(const std::string& path) {
    sqlite3* db = nullptr;
    std::string verdict = "cannot open";
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK) {
            const int rc = sqlite3_step(s);
            verdict = rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                                       : "error " + std::to_string(rc);
        } else {
            verdict = sqlite3_errmsg(db);
        }
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return verdict;
}

void fuzz_raw_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) == SQLITE_OK)
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(db);
}

void damage(std::mt19937_64& rng, const std::string& path, std::string& what) {
    const auto size = static_cast<std::size_t>(fs::file_size(path));
    switch (rng() % 6) {
        case 0: {  // bytes overwritten past the header page
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            const int n = 1 + static_cast<int>(rng() % 16);
            for (int i = 0; i < n; ++i) {
                f.seekp(static_cast<std::streamoff>(100 + rng() % (size - 100)));
                f.put(static_cast<char>(rng()));
            }
            what = std::to_string(n) + " bytes overwritten";
            break;
        }
        case 1: {  // a page zeroed
            const std::size_t pages = size / 4096;
            const std::size_t page = 1 + rng() % (pages - 1);
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(static_cast<std::streamoff>(page * 4096));
            const std::string zeros(4096, '\0');
            f.write(zeros.data(), 4096);
            what = "page " + std::to_string(page + 1) + " zeroed";
            break;
        }
        case 2:  // cut short
            fs::resize_file(path, rng() % size);
            what = "cut short";
            break;
        case 3: {  // the header's bytes
            std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(static_cast<std::streamoff>(rng() % 100));
            f.put(static_cast<char>(rng()));
            what = "a header byte";
            break;
        }
        case 4: {  // a document rewritten by another program
            static const std::vector<std::string> texts = {
                "",
                "{",
                "null",
                "[]",
                "{}",
                "{\"schema\": \"stagebench.result\", \"tests\": 5}",
                std::string(100000, '[') + std::string(100000, ']'),
                "{\"schema\": \"stagebench.result\", \"tests\": [{\"prefill\": {\"duration_ns\": "
                "[-4]}}]}",
                "{\"schema\": \"stagebench.result\", \"schema_version\": 99}"};
            const std::string t = texts[rng() % texts.size()];
            fuzz_raw_sql(path, "UPDATE documents SET json = '" + t + "' WHERE id = 1");
            what = "document #1 rewritten (" + std::to_string(t.size()) + " bytes)";
            break;
        }
        default: {  // the schema rewritten
            static const std::vector<std::string> sql = {
                "PRAGMA user_version = 99",
                "PRAGMA user_version = -3",
                "DROP TABLE fleet_runs",
                "DROP TABLE document_tests",
                "UPDATE documents SET json = NULL WHERE id = 2",
                "UPDATE documents SET models = '[[[[' WHERE id = 1"};
            what = sql[rng() % sql.size()];
            fuzz_raw_sql(path, what);
        }
    }
}

TEST(StoreFuzz, EveryDamagedStoreIsUsableOrOneLineAndNeverUsedPastItsDamage) {
    const fs::path dir = temp_dir();
    const std::string pristine = (dir / "pristine.sqlite").string();
    {
        ResultStore s = ResultStore::open(pristine);
        for (int i = 0; i < 12; ++i)
            s.append(doc(i));
    }
    ASSERT_GE(fs::file_size(pristine), 8u * 4096);
    sbtest::FuzzRun fuzz(5150);
    std::mt19937_64 rng(fuzz.seed());
    int refused_at_open = 0, damaged = 0;
    for (int i = 0; i < 300; ++i) {
        fuzz.next_case();
        const std::string path = (dir / "s.sqlite").string();
        fs::copy_file(pristine, path, fs::copy_options::overwrite_existing);
        std::string what;
        damage(rng, path, what);
        SCOPED_TRACE(what);
        const std::string verdict = integrity(path);
        const bool whole = verdict == "ok";
        damaged += !whole;
        auto one_line = [&](const Error& e) {
            const std::string m = e.what();
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_FALSE(m.empty());
        };
        std::optional<ResultStore> store;
        try {
            StoreWait w;
            w.timeout_s = 0.5;
            store.emplace(ResultStore::open(path, ResultStore::Mode::existing, w));
        } catch (const Error& e) {
            one_line(e);
            ++refused_at_open;
            if (!whole) {
                EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
            }
            continue;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not an sb::Error: " << e.what();
            continue;
        }
        // Opened: only a whole file may be (its migrations may since have changed it).
        EXPECT_TRUE(whole) << "a store failing the integrity check (" << verdict << ") was opened";
        for (const auto& op : std::vector<std::function<void()>>{
                 [&] { store->list(); }, [&] { store->get(1); }, [&] { store->get_text(2); },
                 [&] { store->tests(3); }, [&] { store->fleet_runs(); }, [&] { store->last_id(); },
                 [&] {
                     const int64_t id = store->append(doc(99));
                     // What was appended is there to read back.
                     EXPECT_EQ(store->get(id).tests.size(), 1u);
                 }}) {
            try {
                op();
            } catch (const Error& e) {
                one_line(e);
            } catch (const std::exception& e) {
                ADD_FAILURE() << "not an sb::Error: " << e.what();
            }
        }
    }
    // The generator damages most files, and the check is what refuses them.
    EXPECT_GT(damaged, 60);
    EXPECT_GE(refused_at_open, damaged);
}

#ifdef SB_WITH_POSTGRES
// Store names libpq cannot parse, or parses and then cannot connect with (nothing listens on
// port 1), each with a password made of a marker ("Zq9") and what libpq's parser stumbles on:
// bad percent-escapes, %00, unclosed or stray brackets, '@', '/', '?', '&', '=' and quotes left
// unencoded; in the user information, a password or sslpassword parameter, the key=value form
// and a scheme without its "//". Whatever the name, opening it is one sb::Error line of input
// that holds no piece of the password: neither libpq's message (which quotes what it could not
// read) nor ours.
TEST(StoreFuzz, NoPieceOfAPasswordInAnyMessageAboutAStoreName) {
    static const std::vector<std::string> stumbles = {
        "%zz", "%0", "%", "%00", "%g1", "%2F", "%40", "%5B", "@",  "/",  "?",      "&", "=",
        ":",   "[",  "]", "'",   "\\",  " ",   "#",   "%25", "%%", "%3", "%e2%82", "\t"};
    static const std::vector<std::string> hosts = {"127.0.0.1:1",
                                                   "[::1]:1",
                                                   "[::1:1",
                                                   "[",
                                                   "127.0.0.1:x",
                                                   "127.0.0.1:1]",
                                                   "[]:1",
                                                   "127.0.0.1:99999999999",
                                                   "127.0.0.1:1,[::1",
                                                   ""};
    sbtest::FuzzRun fuzz(4040);
    std::mt19937_64 rng(fuzz.seed());
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    int refused_by_libpq = 0;
    for (int i = 0; i < 400; ++i) {
        fuzz.next_case();
        std::string pw = "Zq9";
        for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n)
            pw += pick(stumbles) + "Zq9";
        const std::string host = pick(hosts);
        const std::string q = "connect_timeout=2";
        std::string name;
        switch (rng() % 7) {
            case 0:
                name = "postgresql://u:" + pw + "@" + host + "/db?" + q;
                break;
            case 1:
                name = "postgres://u:" + pw + "@" + host;
                break;
            case 2:
                name = "postgresql://u@" + host + "/db?" + q + "&password=" + pw;
                break;
            case 3:
                name = "postgresql://" + host + "/db?sslpassword=" + pw + "&" + q;
                break;
            case 4:
                name = "host=127.0.0.1 port=1 password=" + pw + " dbname=db";
                break;
            case 5:
                name = "password='" + pw + "' host=127.0.0.1";
                break;
            default:
                name = "postgresql:u:" + pw + "@" + host + "/db";
                break;
        }
        SCOPED_TRACE(name);
        try {
            StoreWait w;
            w.timeout_s = 1;
            ResultStore::open(name, ResultStore::Mode::existing, w);
            ADD_FAILURE() << "opened";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_EQ(m.find("Zq9"), std::string::npos) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(e.kind(), ErrorKind::input) << m;
            refused_by_libpq += m.find("Connection refused") == std::string::npos &&
                                m.find("cannot connect") != std::string::npos;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not an sb::Error: " << e.what();
        }
    }
    // Most names stumble in libpq's parser, not at the closed port.
    EXPECT_GT(refused_by_libpq, 100);
}
#endif

}  // namespace
}  // namespace sb
