// `--db postgresql://...` end to end: the real binary against a real PostgreSQL server
// (src/store/testing/pg_server.hpp: initdb and postgres in a temporary folder on loopback,
// password logins). Several fleet runs writing into one database at once, the queries of the
// manual (docs/results.md), copies to SQLite and back, and the faults: a server that stops during a
// run, one that cannot be reached, wrong credentials, a store of a newer schema.
#if defined(SB_WITH_POSTGRES) && defined(SB_WITH_FLEET)
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "store/testing/pg_server.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;
namespace fs = std::filesystem;

json listed(const std::string& store) {
    const Proc p = run_sb({"db", "list", "--db", store, "-o", "json"});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return p.exit_code == 0 ? json::parse(p.out) : json::array();
}

std::set<std::string> hashes(const json& list) {
    std::set<std::string> out;
    for (const auto& e : list)
        out.insert(e["content_hash"].get<std::string>());
    return out;
}

// The code blocks fenced ```lang in the manual's section "A store for a whole lab"
// (docs/results.md).
std::vector<std::string> manual_blocks(const std::string& lang) {
    const std::string page = read_file(std::string(SB_SOURCE_DIR) + "/docs/results.md");
    const auto start = page.find("\n## A store for a whole lab: PostgreSQL");
    std::vector<std::string> out;
    if (start == std::string::npos) {
        ADD_FAILURE() << "docs/results.md has no section \"A store for a whole lab: PostgreSQL\"";
        return out;
    }
    const auto end = page.find("\n## ", start + 1);
    const std::string section = page.substr(start, end - start);
    const std::string open = "```" + lang + "\n";
    for (auto at = section.find(open); at != std::string::npos; at = section.find(open, at + 1)) {
        const auto body = at + open.size();
        out.push_back(section.substr(body, section.find("```", body) - body));
    }
    return out;
}

// The rows of sql on a SQLite file, each row its cells joined with '|'.
std::vector<std::string> sqlite_rows(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    std::vector<std::string> rows;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK)
        return rows;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
        ADD_FAILURE() << sqlite3_errmsg(db) << ": " << sql;
        sqlite3_close(db);
        return rows;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        std::string row;
        for (int i = 0; i < sqlite3_column_count(st); ++i) {
            const auto* v = sqlite3_column_text(st, i);
            if (i > 0)
                row += '|';
            if (v)
                row += reinterpret_cast<const char*>(v);
        }
        rows.push_back(row);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

std::string fleet_toml(const std::string& name, const std::string& dir,
                       const std::vector<std::string>& devices) {
    std::string t = "name = \"" + name + "\"\n";
    for (const auto& d : devices)
        t += "[[device]]\nname = \"" + d + "\"\ntransport = \"local\"\nworkdir = \"" + dir + "/" +
             d + "\"\n";
    return t;
}

class PgCli : public ::testing::Test {
  protected:
    void SetUp() override {
        if (PgServer::bin_dir().empty())
            GTEST_SKIP() << "PostgreSQL is not installed (no initdb)";
        server_ = &shared_pg_server();
        // As a lab would: the password from the environment, never on the command line.
        password_ = std::make_unique<ScopedEnv>("PGPASSWORD", server_->password());
    }
    PgServer* server_ = nullptr;
    std::unique_ptr<ScopedEnv> password_;
};

// Two fleets of two devices each, both `fleet run --parallel 2` at once into one database:
// every document is there, compare and report read them, and a copy to SQLite and back leaves
// the same documents.
TEST_F(PgCli, TwoParallelFleetRunsIntoOneDatabaseThenCompareReportAndCopyBothWays) {
    TempDir t;
    const std::string url = server_->url(server_->create_database());
    write_file(t.file("a.toml"), fleet_toml("lab-a", t.path.string(), {"a1", "a2"}));
    write_file(t.file("b.toml"), fleet_toml("lab-b", t.path.string(), {"b1", "b2"}));
    auto fleet = [&](const std::string& hosts) {
        return std::vector<std::string>{stagebench_bin(),
                                        "fleet",
                                        "run",
                                        "--hosts",
                                        hosts,
                                        "--db",
                                        url,
                                        "--parallel",
                                        "2",
                                        "--",
                                        "run",
                                        "-m",
                                        tiny_model(),
                                        "-p",
                                        "16",
                                        "-n",
                                        "4",
                                        "-r",
                                        "2",
                                        "--membw",
                                        "off"};
    };
    const pid_t a = spawn_bg(fleet(t.file("a.toml")), t.file("a.log"));
    const pid_t b = spawn_bg(fleet(t.file("b.toml")), t.file("b.log"));
    EXPECT_EQ(wait_exit(a, 600), 0) << read_file(t.file("a.log.err"));
    EXPECT_EQ(wait_exit(b, 600), 0) << read_file(t.file("b.log.err"));
    EXPECT_NE(read_file(t.file("a.log.err")).find("fleet lab-a: 2 ok, 0 failed"), std::string::npos)
        << read_file(t.file("a.log.err"));

    const json docs = listed(url);
    ASSERT_EQ(docs.size(), 4u) << docs;
    std::set<std::string> devices, ids;
    for (const auto& d : docs) {
        devices.insert(d["device"].get<std::string>());
        EXPECT_EQ(d["command"], "run");
        EXPECT_EQ(d["content_hash"].get<std::string>().size(), 64u);
        EXPECT_TRUE(d["llama_commit"].is_string()) << d;
    }
    EXPECT_EQ(devices, (std::set<std::string>{"a1", "a2", "b1", "b2"}));
    const Proc status = run_sb({"fleet", "status", "--db", url, "--fleet", "lab-b"});
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("| b1 | ok |"), std::string::npos) << status.out;
    EXPECT_NE(status.out.find("| b2 | ok |"), std::string::npos) << status.out;

    // Compare two of them from the database.
    const std::string first = "db:" + std::to_string(docs[0]["id"].get<int64_t>());
    const std::string second = "db:" + std::to_string(docs[3]["id"].get<int64_t>());
    const Proc c = run_sb({"compare", "--db", url, first, second});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.out.find("| " + first + " |"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("| " + second + " |"), std::string::npos) << c.out;
    EXPECT_NE(c.out.find("B/A"), std::string::npos) << c.out;
    const Proc cf = run_sb({"compare", "--db", url, "--fleet", "lab-a"});
    EXPECT_EQ(cf.exit_code, 0) << cf.err;

    // The latest run of every device, as one page.
    const Proc r = run_sb({"report", "--db", url, "--latest", "run", "-o", t.file("latest.html")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("(4 documents)"), std::string::npos) << r.err;
    const std::string page = read_file(t.file("latest.html"));
    for (const char* d : {"(a1)", "(a2)", "(b1)", "(b2)"})
        EXPECT_NE(page.find(d), std::string::npos) << d;
    // Drawn: a decode chart per device, holding that device's latest decode tokens/s.
    std::string why;
    std::vector<std::string> check =
        report_check_argv(t.file("latest.html"), t.file("latest.png"), t.file("charts.json"), why);
    ASSERT_FALSE(check.empty()) << why;
    for (const char* text : {"db:", "(a1)", "(b2)"}) {
        check.push_back("--expect-text");
        check.push_back(text);
    }
    check.push_back("--expect-chart");
    check.push_back("throughput-decode");
    const Proc drawn = run(check, 180);
    EXPECT_EQ(drawn.exit_code, 0) << drawn.out << drawn.err;
    int decode_charts = 0;
    for (const auto& ch : json::parse(read_file(t.file("charts.json"))))
        decode_charts += ch["kind"] == "throughput-decode";
    EXPECT_EQ(decode_charts, 4);

    // To SQLite and back (into the same database and a new one): the same documents.
    const std::string sqlite = t.file("lab.sqlite");
    Proc cp = run_sb({"db", "copy", "--from", url, "--to", sqlite});
    ASSERT_EQ(cp.exit_code, 0) << cp.err;
    EXPECT_NE(cp.err.find("4 document(s) added, 0 already there; 4 fleet run(s) added"),
              std::string::npos)
        << cp.err;
    cp = run_sb({"db", "copy", "--from", sqlite, "--to", url});
    ASSERT_EQ(cp.exit_code, 0) << cp.err;
    EXPECT_NE(cp.err.find("0 document(s) added, 4 already there; 0 fleet run(s) added, 4 already "
                          "there"),
              std::string::npos)
        << cp.err;
    const std::string fresh = server_->url(server_->create_database());
    cp = run_sb({"db", "copy", "--from", sqlite, "--to", fresh});
    ASSERT_EQ(cp.exit_code, 0) << cp.err;
    EXPECT_EQ(hashes(listed(sqlite)), hashes(docs));
    EXPECT_EQ(hashes(listed(fresh)), hashes(docs));
    EXPECT_EQ(listed(url).size(), 4u);
    // And each one whole: the same JSON from every store.
    for (const auto& d : listed(sqlite)) {
        const Proc x = run_sb({"db", "export", "--db", sqlite, std::to_string(d["id"].get<int>())});
        bool found = false;
        for (const auto& e : docs)
            if (e["content_hash"] == d["content_hash"]) {
                const Proc y =
                    run_sb({"db", "export", "--db", url, std::to_string(e["id"].get<int>())});
                EXPECT_EQ(json::parse(x.out), json::parse(y.out));
                found = true;
            }
        EXPECT_TRUE(found);
    }
    const Proc sr = run_sb({"report", "--db", sqlite, "--latest", "run", "-o", t.file("s.html")});
    EXPECT_EQ(sr.exit_code, 0) << sr.err;

    // The manual's queries, as written there, on the stores the fleets wrote.
    const auto pg_queries = manual_blocks("sql");
    ASSERT_EQ(pg_queries.size(), 2u);
    // Tokens/s by device and commit: one row per device (one commit, one test here), 1 run each.
    EXPECT_EQ(server_->sql(fs::path(url).filename().string(),
                           "SELECT string_agg(device || ':' || runs, ',') FROM (" +
                               pg_queries[0].substr(0, pg_queries[0].rfind(';')) + ") AS q"),
              "a1:1,a2:1,b1:1,b2:1");
    // The latest sustained run per device: none here, but the query runs.
    EXPECT_EQ(server_->sql(fs::path(url).filename().string(),
                           "SELECT count(*) FROM (" +
                               pg_queries[1].substr(0, pg_queries[1].rfind(';')) + ") AS q"),
              "0");
    const auto sqlite_queries = manual_blocks("sqlite");
    ASSERT_EQ(sqlite_queries.size(), 1u);
    const auto rows = sqlite_rows(sqlite, sqlite_queries[0]);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].rfind("a1|", 0), 0u) << rows[0];
    EXPECT_NE(rows[0].find("|tiny.gguf|pp16+tg4|1|"), std::string::npos) << rows[0];
}

// The server stops in the middle of a run: the run ends with exit 1 and its document in a file
// (in the current folder: a database has no "beside"), and `db import` adds it once the server
// is back, once however often it is imported.
TEST(PgCliServer, AServerStoppedDuringARunKeepsTheDocumentAndDbImportAddsItLater) {
    if (PgServer::bin_dir().empty())
        GTEST_SKIP() << "PostgreSQL is not installed (no initdb)";
    PgServer server;
    ScopedEnv pw("PGPASSWORD", server.password());
    const std::string url = server.url(server.create_database());
    TempDir t;
    const std::string out = t.file("r.json");
    const std::vector<std::string> args = {"run", "-m",    tiny_model(), "-p",   "16,32,64,128",
                                           "-n",  "4",     "-r",         "3",    "--membw",
                                           "off", "--out", out,          "--db", url};
    std::string line = "cd '" + t.path.string() + "' && exec '" + stagebench_bin() + "'";
    for (const auto& a : args)
        line += " '" + a + "'";
    const pid_t pid = spawn_bg({"/bin/sh", "-c", line}, t.file("log"));
    for (int i = 0; i < 3000; ++i) {  // the first test measured and on disk
        try {
            if (json::parse(read_file(out))["tests"].size() >= 1)
                break;
        } catch (...) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server.stop();
    const int rc = wait_exit(pid, 600);
    const std::string err = read_file(t.file("log.err"));
    EXPECT_EQ(rc, 1) << err;
    const std::string marker = "the result document was written to ";
    const auto at = err.find(marker);
    ASSERT_NE(at, std::string::npos) << err;
    const std::string file =
        err.substr(at + marker.size(), err.find(' ', at + marker.size()) - at - marker.size());
    EXPECT_EQ(file.rfind(fs::path(url).filename().string() + ".", 0), 0u) << file;
    const std::string path = (t.path / file).string();
    ASSERT_TRUE(fs::is_regular_file(path)) << path;
    EXPECT_EQ(json::parse(read_file(path))["tests"].size(), 4u);
    EXPECT_NE(err.find("stagebench db import --db " + url + " " + file), std::string::npos) << err;

    server.start();
    Proc imp = run_sb({"db", "import", "--db", url, path});
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
    EXPECT_NE(imp.err.find("stored " + path + " as #"), std::string::npos) << imp.err;
    imp = run_sb({"db", "import", "--db", url, path});
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
    EXPECT_NE(imp.err.find(path + " is already in " + url + " as #"), std::string::npos) << imp.err;
    const json docs = listed(url);
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0]["n_tests"], 4);
}

// Bad stores are one line and exit 2 before anything is measured; no password is ever shown.
TEST_F(PgCli, BadStoresAreOneLineExitTwoAndShowNoPassword) {
    TempDir t;
    const std::string db = server_->create_database();
    auto expect_refused = [&](const Proc& p, const std::string& what) {
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
        EXPECT_NE(p.err.find(what), std::string::npos) << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
        EXPECT_TRUE(p.out.empty()) << p.out;
    };
    const std::vector<std::string> run_args = {"run", "-m", tiny_model(), "-p",      "8",   "-n",
                                               "2",   "-r", "1",          "--membw", "off", "--db"};
    auto run_with = [&](const std::string& store) {
        auto a = run_args;
        a.push_back(store);
        return run_sb(a);
    };
    // Nothing listens there.
    expect_refused(run_with("postgresql://sbadmin@127.0.0.1:1/" + db), "Connection refused");
    // Wrong credentials.
    {
        ScopedEnv wrong("PGPASSWORD", "not-the-password-17");
        const Proc p = run_with(server_->url(db));
        expect_refused(p, "password authentication failed");
        EXPECT_EQ(p.err.find("not-the-password-17"), std::string::npos) << p.err;
    }
    // A database of a newer stagebench.
    const std::string newer = server_->create_database();
    server_->sql(newer,
                 "CREATE TABLE stagebench_schema (version integer NOT NULL);"
                 "INSERT INTO stagebench_schema VALUES (99)");
    expect_refused(run_with(server_->url(newer)), "has schema version 99, newer");
    expect_refused(run_sb({"db", "list", "--db", server_->url(newer)}), "newer");
    // A database of another program.
    server_->sql(db, "CREATE TABLE customers (name text)");
    expect_refused(run_with(server_->url(db)), "other tables but no stagebench store");
}

// A password in the URI works, but neither the document nor the log keeps it.
TEST_F(PgCli, APasswordInTheUriIsNeverWrittenOut) {
    ScopedEnv none("PGPASSWORD", "");
    const std::string db = server_->create_database();
    const std::string url = "postgresql://" + std::string(PgServer::kUser) + ":" +
                            server_->password() + "@127.0.0.1:" + std::to_string(server_->port()) +
                            "/" + db;
    const Proc p = run_sb({"run", "-m", tiny_model(), "-p", "8", "-n", "2", "-r", "1", "--membw",
                           "off", "-o", "json", "--db", url});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out.find(server_->password()), std::string::npos);
    EXPECT_EQ(p.err.find(server_->password()), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("warning: the password in --db is visible"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("stored as #1 in " + server_->url(db)), std::string::npos) << p.err;
    const json doc = json::parse(p.out);
    EXPECT_NE(doc["argv"].dump().find(server_->url(db)), std::string::npos) << doc["argv"];
    const Proc x = run_sb({"db", "export", "--db", url, "1"});
    ASSERT_EQ(x.exit_code, 0) << x.err;
    EXPECT_EQ(x.out.find(server_->password()), std::string::npos);
    EXPECT_EQ(json::parse(x.out)["argv"], doc["argv"]);
}

}  // namespace
#endif
