// Bad store names and unusable stores given to the real binary (issue #40, round 4): each is
// one `stagebench: error:` line and exit 2, names no password, and never costs a store what it
// held or makes a store of a file that a reading command was given.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

using namespace sbtest;
namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args)
        s += a + " ";
    return s;
}

void expect_one_error_line(const Proc& p, const std::vector<std::string>& args) {
    EXPECT_EQ(p.exit_code, 2) << joined(args) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << joined(args) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << joined(args) << p.err;
    EXPECT_TRUE(p.out.empty()) << joined(args) << p.out;
}

void raw_sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
    const std::string m = msg ? msg : "";
    sqlite3_free(msg);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << m;
}

// A small result document, as a file for `db import`.
std::string doc_file(const TempDir& t, const std::string& host) {
    const std::string path = t.file(host + ".json");
    std::ofstream(path) << nlohmann::json{{"schema", "stagebench.result"},
                                          {"command", "run"},
                                          {"system", {{"hostname", host}}},
                                          {"tests", nlohmann::json::array()}}
                               .dump();
    return path;
}

}  // namespace

// libpq quotes what it cannot parse of a URI: the password with a bad percent-escape, the whole
// URI of an unclosed '['. Neither reaches stderr, whichever command was given the URI.
TEST(StoreBadInput, APasswordLibpqCannotParseNeverReachesStderr) {
#ifndef SB_WITH_POSTGRES
    GTEST_SKIP() << "built without libpq";
#endif
    TempDir t;
    const std::string secret = "s3cr";  // every password below holds it
    const std::vector<std::string> uris = {
        "postgresql://u:s3cr%zzet@127.0.0.1/db",
        "postgresql://u:s3cr%00et@127.0.0.1/db",
        "postgresql://u:s3cret@[::1/db",
        "postgresql://u:s3cret@[/db",
        "postgres://u:s3cr%g1et@127.0.0.1:1",
        "postgresql://u:s3cr/et@127.0.0.1:1/db",
        "postgresql://u:s3cr@et@127.0.0.1:x/db",
        "postgresql://u@127.0.0.1:1/db?password=s3cr%zzet",
        "postgresql://u@127.0.0.1:1/db?password=s3cr&et",
        "postgresql://u@[::1/db?sslpassword=s3cret",
        "postgresql:u:s3cret@127.0.0.1/db",
        "host=127.0.0.1 password=s3cr%zzet dbname=db",
        "host=127.0.0.1 password='s3cr et' dbname=db",
    };
    const std::string doc = doc_file(t, "h");
    for (const auto& uri : uris) {
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"db", "list", "--db", uri},
                 {"db", "export", "--db", uri, "1"},
                 {"db", "import", "--db", uri, doc},
                 {"db", "copy", "--from", uri, "--to", t.file("to.sqlite")},
                 {"db", "copy", "--from", t.file("none.sqlite"), "--to", uri},
                 {"compare", doc, "db:1", "--db", uri},
                 {"db", "list", "--db", t.file("s.sqlite"), uri},  // CLI11 quotes it
                 {"db", "list", "--db=" + uri, "--no-such-flag"}}) {
            const Proc p = run_sb(args, 60);
            EXPECT_EQ(p.exit_code, 2) << joined(args) << p.err;
            EXPECT_EQ(p.err.find(secret), std::string::npos) << joined(args) << p.err;
            EXPECT_EQ(error_lines(p.err), 1u) << joined(args) << p.err;
        }
        // A run refuses the store before it measures anything (after the warning that the
        // password is visible in the command line).
        const std::vector<std::string> run = {"run", "-m", tiny_model(), "-p", "8",    "-n",
                                              "2",   "-r", "1",          "-q", "--db", uri};
        const Proc p = run_sb(run, 120);
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(p.err.find(secret), std::string::npos) << p.err;
        EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    }
    EXPECT_FALSE(fs::exists(t.file("to.sqlite")));
}

// "postgresql:" and "postgresql:/" were SQLite files of those names to SQLite.
TEST(StoreBadInput, ANameWithAPostgresSchemeThatIsNoUriIsRefusedAndMakesNoFile) {
    TempDir t;
    const std::string doc = doc_file(t, "h"), from = t.file("from.sqlite");
    ASSERT_EQ(run_sb({"db", "import", "--db", from, doc}).exit_code, 0);
    const fs::path here = fs::current_path();
    fs::current_path(t.path);  // where a relative name would be made
    for (const std::string name :
         {"postgresql:", "postgresql:/", "postgres:bench", "POSTGRES://db/b"}) {
        for (const auto& args :
             std::vector<std::vector<std::string>>{{"db", "import", "--db", name, doc},
                                                   {"db", "list", "--db", name},
                                                   {"db", "copy", "--from", from, "--to", name},
                                                   {"db", "copy", "--from", name, "--to", from},
                                                   {"run", "-m", tiny_model(), "-p", "8", "-n", "2",
                                                    "-r", "1", "-q", "--db", name}}) {
            const Proc p = run_sb(args, 120);
            EXPECT_EQ(p.exit_code, 2) << joined(args) << p.err;
            EXPECT_EQ(error_lines(p.err), 1u) << joined(args) << p.err;
            EXPECT_NE(p.err.find("is not a PostgreSQL URI"), std::string::npos)
                << joined(args) << p.err;
        }
    }
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(t.path))
        left.push_back(e.path().filename().string());
    fs::current_path(here);
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"from.sqlite", "h.json"}));
}

// db list, show, export and copy --from read a store: given an empty file (or one that is no
// store), they say so and leave it as it was, never make a store of it.
TEST(StoreBadInput, ReadingCommandsNeverMakeAStoreOfAnEmptyFile) {
    TempDir t;
    const std::string empty = t.file("empty.txt");
    std::ofstream(empty).close();
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"db", "list", "--db", empty},
             {"db", "show", "--db", empty, "1"},
             {"db", "export", "--db", empty, "1"},
             {"db", "copy", "--from", empty, "--to", t.file("to.sqlite")}}) {
        const Proc p = run_sb(args, 60);
        expect_one_error_line(p, args);
        EXPECT_NE(p.err.find("the file is empty"), std::string::npos) << p.err;
        EXPECT_EQ(fs::file_size(empty), 0u) << joined(args);
    }
    EXPECT_FALSE(fs::exists(t.file("to.sqlite")));
    EXPECT_EQ(std::distance(fs::directory_iterator(t.path), fs::directory_iterator()), 1);
}

// db copy refuses what db show refuses (a stored null or []): the rest is copied, the summary
// counts what was not, and the copy ends with one error line naming it, exit 2.
TEST(StoreBadInput, DbCopySkipsADocumentDbShowRefusesAndSaysSo) {
    TempDir t;
    const std::string from = t.file("from.sqlite"), to = t.file("to.sqlite");
    const Proc imp = run_sb(
        {"db", "import", "--db", from, doc_file(t, "a"), doc_file(t, "b"), doc_file(t, "c")});
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
    raw_sql(from,
            "UPDATE documents SET json = 'null' WHERE id = 2;"
            "UPDATE documents SET json = '[]' WHERE id = 3;");
    const Proc show = run_sb({"db", "show", "--db", from, "2"});
    EXPECT_EQ(show.exit_code, 2) << show.err;
    const std::vector<std::string> args = {"db", "copy", "--from", from, "--to", to};
    const Proc p = run_sb(args);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("1 document(s) added, 0 already there, 2 not copied"), std::string::npos)
        << p.err;
    EXPECT_NE(p.err.find("stagebench: error: 2 documents were not copied, the first: document #2 "
                         "in results store '" +
                         from + "'"),
              std::string::npos)
        << p.err;
    const Proc list = run_sb({"db", "list", "--db", to, "-o", "json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    EXPECT_EQ(nlohmann::json::parse(list.out).size(), 1u);
    EXPECT_EQ(run_sb({"db", "show", "--db", to, "1"}).exit_code, 0);
}

// Tables altered by another program: the reading commands exit 2 with one line, as import.
TEST(StoreBadInput, ReadingAStoreWithAlteredTablesIsOneLineExit2) {
    TempDir t;
    const std::string store = t.file("s.sqlite");
    ASSERT_EQ(run_sb({"db", "import", "--db", store, doc_file(t, "a")}).exit_code, 0);
    raw_sql(store, "ALTER TABLE documents RENAME TO docs");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"db", "list", "--db", store},
             {"db", "show", "--db", store, "1"},
             {"db", "export", "--db", store, "1"},
             {"db", "copy", "--from", store, "--to", t.file("to.sqlite")},
             {"db", "import", "--db", store, doc_file(t, "b")}}) {
        const Proc p = run_sb(args, 60);
        expect_one_error_line(p, args);
        EXPECT_NE(p.err.find("is not usable"), std::string::npos) << joined(args) << p.err;
    }
}
