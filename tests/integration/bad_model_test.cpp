// Bad models, bad servers, bad stores and bad documents through the real binary (issue #20):
// each ends in time, without a signal, with one "stagebench: error:" line and the exit code of
// the README's rule (2 bad input, 1 a failed test or a store that refused the document), and
// what was measured before the fault is kept in --out, --db and -o json.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "cli_harness.hpp"
#include "fault_server.hpp"
#include "model/gguf.hpp"
#include "model/gguf_mutations.hpp"

using nlohmann::json;
using namespace sbtest;
namespace tg = sb::testing_gguf;

namespace {

void expect_bad_model(const Proc& p, const std::string& needle) {
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
    // Not the abort of llama.cpp, not an assertion text.
    EXPECT_EQ(p.err.find("llama.cpp stopped"), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find("GGML_ASSERT"), std::string::npos) << p.err;
}

// F16 weights: a model every CPU backend runs without repacking them for its instruction set.
struct Models {
    TempDir dir;
    std::string good, aligned8, blocks1000, no_arch, neg_eps, dup_tokens, no_bos;
};

const Models& models() {
    static Models m = [] {
        Models x;
        x.good = x.dir.file("good.gguf");
        Proc p = run_sb({"synth", "--preset", "tiny", "--quant", "f16", "--layers", "2", "--seed",
                         "3", "-o", x.good});
        if (p.exit_code != 0)
            throw std::runtime_error("synth failed: " + p.err);
        auto mutate = [&](const std::string& name, tg::Mutation m) {
            const std::string path = x.dir.file(name);
            tg::write_mutated(x.good, path, m);
            return path;
        };
        auto set = [](const std::string& key, sb::GgufValue v) {
            return tg::Mutation{key, [key, v](auto& kv) { tg::set_kv(kv, key, v); }, {}};
        };
        x.aligned8 = mutate("aligned8.gguf", {"alignment 8", nullptr, 8});
        x.blocks1000 = mutate("blocks1000.gguf", set("llama.block_count", uint32_t{1000}));
        // An architecture llama.cpp does not know: it refuses the file itself (no abort).
        x.no_arch = mutate("bogus_arch.gguf", set("general.architecture", std::string("bogus")));
        x.neg_eps =
            mutate("neg_eps.gguf", set("llama.attention.layer_norm_rms_epsilon", float{-1e-5f}));
        x.dup_tokens = mutate("dup.gguf", {"duplicate token",
                                           [](auto& kv) {
                                               auto* e = tg::find_kv(kv, "tokenizer.ggml.tokens");
                                               auto& t = std::get<std::vector<std::string>>(
                                                   std::get<sb::GgufArray>(e->value));
                                               t[300] = t[301];
                                           },
                                           {}});
        // A T5 (Unigram) vocabulary that adds a BOS token to every text (the tiny preset's
        // add_bos_token) but names none: Unigram has no default BOS, so llama.cpp loads it
        // and asserts in its tokenizer, ending the process, on the first text it tokenizes.
        x.no_bos =
            mutate("no_bos.gguf",
                   {"t5 vocabulary without its BOS",
                    [](auto& kv) {
                        tg::set_kv(kv, "tokenizer.ggml.model", std::string("t5"));
                        kv.erase(std::remove_if(kv.begin(), kv.end(),
                                                [](const sb::GgufKv& e) {
                                                    return e.key == "tokenizer.ggml.bos_token_id";
                                                }),
                                 kv.end());
                    },
                    {}});
        return x;
    }();
    return m;
}

std::vector<std::string> quick_model_run(const std::string& model) {
    return {"run", "-m", model,     "-p",  "8",      "-n", "2",
            "-r",  "1",  "--membw", "off", "--idle", "0",  "-q"};
}

TEST(BadModel, EveryClassIsOneLineAndExit2InEveryCommand) {
    const Models& m = models();
    const std::vector<std::pair<std::string, std::string>> bad = {
        {m.aligned8, "not a multiple of 32"},
        {m.blocks1000, "block_count is 1000"},
        {m.neg_eps, "epsilon"},
        {m.dup_tokens, "twice"},
        // llama.cpp's own reason, from its silenced log.
        {m.no_arch,
         "could not load model '" + m.no_arch + "': unknown model architecture: 'bogus'"},
    };
    for (const auto& [path, why] : bad) {
        SCOPED_TRACE(path);
        expect_bad_model(run_sb(quick_model_run(path), 120), why);
        expect_bad_model(run_sb({"ops", "-m", path, "-p", "4", "--reps", "1", "--plain-reps", "1",
                                 "--replay", "0", "-q"},
                                120),
                         why);
        expect_bad_model(run_sb({"sustained", "-m", path, "--rounds", "2", "--prompt-tokens", "4",
                                 "--max-tokens", "2", "--idle", "0", "-q"},
                                120),
                         why);
        expect_bad_model(run_sb({"hybrid", "-m", path, "--prefill-device", "CPU", "--decode-device",
                                 "BLAS", "-p", "4", "-n", "2", "-r", "1", "--idle", "0", "-q"},
                                120),
                         why);
        // The llama-server serve and explain start gets no model that run refuses: refused
        // before it starts, as run refuses it.
        expect_bad_model(run_sb({"serve", "-m", path, "--concurrency", "1", "--requests", "1", "-p",
                                 "4", "-n", "2", "--idle", "0"},
                                120),
                         why);
        expect_bad_model(
            run_sb({"explain", "-m", path, "-p", "8", "-n", "2", "-r", "1", "--no-ops", "-q"}, 120),
            why);
    }
}

// Whether a live process (zombies excluded) has text in its command line.
bool process_with(const std::string& text) {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos ||
            std::stol(name) == static_cast<long>(getpid()))
            continue;
        if (read_file(e.path().string() + "/cmdline").find(text) != std::string::npos)
            return true;
    }
    return false;
}

// A vocabulary llama.cpp loads but cannot tokenize a text with (its tokenizer asserts: the
// process ends): explain used to start its llama-server and then end inside llama.cpp on its
// first prompt ("llama.cpp stopped: GGML_ASSERT(special_bos_id != LLAMA_TOKEN_NULL)", exit 1,
// nothing recorded). The commands that tokenize text (explain in-process, serve's llama-server)
// refuse it up front as bad input, before any server starts; run measures on token ids and
// never tokenizes, so it measures the model.
TEST(BadModel, AVocabularyLlamaCppCannotTokenizeIsRefusedWhereTextIsTokenized) {
    const Models& m = models();
    const std::string why = "adds a BOS token to every text (tokenizer.ggml.add_bos_token)";
    expect_bad_model(
        run_sb({"explain", "-m", m.no_bos, "-p", "8", "-n", "2", "-r", "1", "--no-ops"}, 120), why);
    EXPECT_FALSE(process_with(m.no_bos)) << "a server was left behind";
    expect_bad_model(run_sb({"serve", "-m", m.no_bos, "--concurrency", "1", "--requests", "1", "-p",
                             "4", "-n", "2", "--idle", "0"},
                            120),
                     why);
    EXPECT_FALSE(process_with(m.no_bos)) << "a server was left behind";
    const Proc run = run_sb(quick_model_run(m.no_bos), 120);
    EXPECT_EQ(run.exit_code, 0) << run.err;
}

TEST(BadModel, ASweepRecordsTheBadModelAndGoesOn) {
    const Models& m = models();
    TempDir t;
    for (const std::string& bad : {m.aligned8, m.no_arch}) {
        SCOPED_TRACE(bad);
        const std::string out = t.file("sweep.json"), db = t.file("sweep.sqlite");
        auto args = quick_model_run(m.good + "," + bad + "," + m.good);
        args.insert(args.end(), {"-o", "json", "--out", out, "--db", db});
        const Proc p = run_sb(args, 300);
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(error_lines(p.err), 1u) << p.err;
        EXPECT_NE(p.err.find("the others ran and are kept"), std::string::npos) << p.err;
        const json stdout_doc = json::parse(p.out);
        const json file_doc = json::parse(read_file(out));
        const Proc exported = run_sb({"db", "export", "1", "--db", db});
        ASSERT_EQ(exported.exit_code, 0) << exported.err;
        const json stored = json::parse(exported.out);
        for (const json* d : {&stdout_doc, &file_doc, &stored}) {
            const json& tests = (*d)["tests"];
            ASSERT_EQ(tests.size(), 3u) << *d;
            EXPECT_EQ(tests[0]["status"], "ok");
            EXPECT_EQ(tests[1]["status"], "failed");
            EXPECT_EQ(tests[1]["error_kind"], "input");
            EXPECT_EQ(tests[1]["config"]["model_path"], bad);
            EXPECT_EQ(tests[2]["status"], "ok");
        }
        std::filesystem::remove(db);
    }
}

// Seeded mutations of the metadata, each through `stagebench run`: llama.cpp runs it, or it is
// refused with one line and exit 2. Never a signal, never llama.cpp's abort.
TEST(BadModel, SeededMutationsNeverAbort) {
    const Models& m = models();
    TempDir t;
    const sb::GgufFile g = sb::read_gguf(m.good);
    std::mt19937_64 rng(777);
    int ran = 0, refused = 0;
    for (int i = 0; i < 16; ++i) {
        const tg::Mutation mu = tg::random_mutation(rng, g);
        SCOPED_TRACE(mu.what);
        const std::string path = t.file("mut" + std::to_string(i) + ".gguf");
        tg::write_mutated(m.good, path, mu);
        const Proc p = run_sb(quick_model_run(path), 120);
        EXPECT_TRUE(p.exit_code == 0 || p.exit_code == 2) << p.exit_code << "\n" << p.err;
        EXPECT_EQ(p.err.find("llama.cpp stopped"), std::string::npos) << p.err;
        if (p.exit_code == 2) {
            EXPECT_EQ(error_lines(p.err), 1u) << p.err;
            ++refused;
        } else {
            ++ran;
        }
    }
    EXPECT_GT(ran + refused, 0);
}

// llama.cpp aborts the process when its RPC server dies mid-run: the tests measured before are
// still printed (-o json) and stored (--db), not only kept in --out, and the abort is one line.
TEST(Fault, AnAbortInsideLlamaCppKeepsWhatWasMeasuredEverywhere) {
    const Models& m = models();
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    const std::string out = t.file("r.json"), db = t.file("r.sqlite");
    pid_t run = spawn_bg({stagebench_bin(),
                          "run",
                          "-m",
                          m.good,
                          "-p",
                          "16,32",
                          "-n",
                          "256",
                          "-r",
                          "3",
                          "--rpc",
                          server.endpoint(),
                          "--device",
                          "RPC0",
                          "--membw",
                          "off",
                          "--idle",
                          "0",
                          "--out",
                          out,
                          "--db",
                          db,
                          "-o",
                          "json",
                          "-q"},
                         t.file("run.log"));
    // The first test (3 repetitions over RPC) takes a second here, a minute on a loaded VM;
    // the kill lands while the second one loads or measures.
    bool first_done = false;
    for (int i = 0; i < 15000 && !first_done; ++i) {
        try {
            first_done = json::parse(read_file(out))["tests"].size() == 1;
        } catch (...) {
        }
        if (!first_done)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!first_done)
        kill(run, SIGKILL);
    ASSERT_TRUE(first_done) << "the first test did not end within 5 minutes";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server.stop(SIGKILL);
    const int rc = wait_exit(run, 120);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(rc, 1) << err;
    EXPECT_EQ(error_lines(err), 1u) << err;
    // The line names the test that was running and llama.cpp's message (or, between tests,
    // "llama.cpp stopped: ...").
    EXPECT_NE(err.find("llama.cpp"), std::string::npos) << err;
    const json printed = json::parse(read_file(t.file("run.log")));
    ASSERT_GE(printed["tests"].size(), 1u);
    EXPECT_EQ(printed["tests"][0]["status"], "ok");
    const Proc exported = run_sb({"db", "export", "1", "--db", db});
    ASSERT_EQ(exported.exit_code, 0) << exported.err << err;
    EXPECT_EQ(json::parse(exported.out)["tests"][0]["status"], "ok");
    EXPECT_EQ(json::parse(read_file(out))["tests"][0]["status"], "ok");
}

// ---- servers -----------------------------------------------------------------------------------

TEST(BadServer, WrongTypesInModelListsAreBadInput) {
    const std::vector<std::pair<std::string, std::string>> answers = {
        {"/v1/models", R"({"data":[{"id":42,"owned_by":"x"}]})"},
        {"/v1/models", R"({"data":[{"id":"m","owned_by":7}]})"},
        {"/v1/models", R"({"data":{"id":"m"}})"},
        {"/v1/models", R"({"data":["m"]})"},
    };
    for (const auto& [path, body] : answers) {
        SCOPED_TRACE(body);
        sbtest::FaultServer server([&](const sbtest::HttpRequest& req, sbtest::FaultConn& c) {
            if (req.path == path)
                c.reply(200, "application/json", body);
            else
                c.reply(404, "application/json", R"({"error":"no"})");
        });
        const Proc p = run_sb({"run", "--engine", "http", "--url", server.url(), "-p", "4", "-n",
                               "2", "-r", "1", "--idle", "0", "-q"},
                              60);
        expect_bad_model(p, "/v1/models");
    }
    for (const std::string version : {R"({"version":3})", R"(["0.5"])"}) {
        SCOPED_TRACE(version);
        sbtest::FaultServer server([&](const sbtest::HttpRequest& req, sbtest::FaultConn& c) {
            if (req.path == "/api/version")
                c.reply(200, "application/json", version);
            else if (req.path == "/api/tags")
                c.reply(200, "application/json", R"({"models":[{"name":5}]})");
            else
                c.reply(404, "application/json", "{}");
        });
        const Proc p = run_sb({"run", "--engine", "http", "--api", "ollama", "--url", server.url(),
                               "-m", "x", "-p", "4", "-n", "2", "-r", "1", "--idle", "0", "-q"},
                              60);
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    }
}

// ---- stores ------------------------------------------------------------------------------------

// Holds the store's exclusive lock, as another program writing to it would: not even readers
// get in while it lasts.
struct ExclusiveLock {
    explicit ExclusiveLock(const std::string& path) {
        EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    }
    ~ExclusiveLock() {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(db);
    }
    sqlite3* db = nullptr;
};

TEST(BadStore, ALockedStoreWaitsThenWritesTheDocumentBesideIt) {
    const Models& m = models();
    TempDir t;
    const std::string db = t.file("busy.sqlite"), out = t.file("busy.json");
    auto args = quick_model_run(m.good);
    args.insert(args.end(), {"--db", db, "--db-wait", "6", "--out", out, "-o", "json"});
    const Proc first = run_sb(args, 120);  // makes the store, stores #1
    ASSERT_EQ(first.exit_code, 0) << first.err;
    Proc p;
    {
        ExclusiveLock lock(db);
        p = run_sb(args, 120);
    }
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_EQ(error_lines(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("is locked by another writer; waited 5 s"), std::string::npos) << p.err;
    std::smatch where;
    ASSERT_TRUE(std::regex_search(p.err, where,
                                  std::regex("written to (\\S+busy\\.sqlite\\.[0-9TZ]+\\.json)")))
        << p.err;
    const std::string fallback_path = where[1];
    const json fallback = json::parse(read_file(fallback_path));
    ASSERT_EQ(fallback["tests"].size(), 1u);
    EXPECT_EQ(fallback["tests"][0]["status"], "ok");
    EXPECT_EQ(json::parse(p.out)["tests"].size(), 1u);
    EXPECT_EQ(json::parse(read_file(out))["tests"].size(), 1u);
    // Once the lock is gone the document joins the store.
    const Proc imp = run_sb({"db", "import", "--db", db, fallback_path});
    EXPECT_EQ(imp.exit_code, 0) << imp.err;
    const Proc list = run_sb({"db", "list", "--db", db, "-o", "json"});
    EXPECT_EQ(json::parse(list.out).size(), 2u) << list.out;
}

// A file nobody may write, root included (the immutable attribute of ext4 and others).
bool make_immutable(const std::string& path, bool on) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
        return false;
    int flags = 0;
    bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    ::close(fd);
    return ok;
}

TEST(BadStore, AStoreThatCannotBeWrittenIsBadInputBeforeMeasuring) {
    const Models& m = models();
    TempDir t;
    const std::string db = t.file("ro.sqlite"), doc = t.file("doc.json");
    auto args = quick_model_run(m.good);
    args.insert(args.end(), {"--out", doc});
    ASSERT_EQ(run_sb(args, 120).exit_code, 0);
    ASSERT_EQ(run_sb({"db", "import", "--db", db, doc}).exit_code, 0);
    ::chmod(db.c_str(), 0444);
    const bool immutable = ::geteuid() == 0 && make_immutable(db, true);
    if (::geteuid() == 0 && !immutable)
        GTEST_SKIP() << "root writes read-only files and this file system has no immutable flag";
    auto with_db = quick_model_run(m.good);
    with_db.insert(with_db.end(), {"--db", db});
    const Proc p = run_sb(with_db, 120);
    if (immutable)
        make_immutable(db, false);
    expect_bad_model(p, "cannot be written");
    EXPECT_EQ(p.err.find("pp8"), std::string::npos) << "measured before refusing: " << p.err;
}

TEST(BadStore, ADamagedStoreIsOneLineAndExit2) {
    const Models& m = models();
    TempDir t;
    const std::string db = t.file("damaged.sqlite"), doc = t.file("doc.json");
    auto args = quick_model_run(m.good);
    args.insert(args.end(), {"--out", doc});
    ASSERT_EQ(run_sb(args, 120).exit_code, 0);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(run_sb({"db", "import", "--db", db, doc}).exit_code, 0);
    // Garbage over every page after the first: the header still reads as SQLite's.
    {
        std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(4096);
        const std::string junk(std::filesystem::file_size(db) - 4096, '\x5a');
        f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    auto run_args = quick_model_run(m.good);
    run_args.insert(run_args.end(), {"--db", db});
    for (const auto& cmd :
         std::vector<std::vector<std::string>>{{"db", "list", "--db", db},
                                               {"db", "show", "1", "--db", db},
                                               {"db", "export", "2", "--db", db},
                                               {"compare", "db:1", "db:2", "--db", db},
                                               run_args}) {
        SCOPED_TRACE(cmd[0] + " " + cmd[1]);
        const Proc p = run_sb(cmd, 60);
        EXPECT_EQ(p.exit_code, 2) << p.err;
        EXPECT_EQ(line_count(p.err), 1u) << p.err;
        EXPECT_NE(p.err.find("damaged.sqlite"), std::string::npos) << p.err;
    }
}

// ---- documents ---------------------------------------------------------------------------------

TEST(BadDocument, EveryReaderRefusesWithOneLineNamingTheFile) {
    const Models& m = models();
    TempDir t;
    const std::string good = t.file("good.json");
    auto args = quick_model_run(m.good);
    args.insert(args.end(), {"--out", good});
    ASSERT_EQ(run_sb(args, 120).exit_code, 0);
    const json base = json::parse(read_file(good));
    struct Bad {
        std::string name, text, needle;
    };
    std::vector<Bad> docs;
    {
        json d = base;
        d["schema_version"] = 99;
        docs.push_back({"future.json", d.dump(), "newer stagebench"});
    }
    {
        std::string s = base.dump();
        const std::string from = "\"n_prompt\":8";
        s.replace(s.find(from), from.size(), "\"n_prompt\":1e999");
        docs.push_back({"huge.json", s, "huge.json"});
    }
    {
        json d = base;
        d["tests"][0]["config"]["n_prompt"] = nullptr;
        docs.push_back({"null.json", d.dump(), "tests[0].config.n_prompt"});
    }
    {
        json d = base;
        d["tests"][0]["decode"]["throughput"]["median"] = "fast";
        docs.push_back({"typed.json", d.dump(), "tests[0].decode.throughput.median"});
    }
    {
        json d = base;
        d["tests"] = json::object();
        docs.push_back({"tests.json", d.dump(), "tests"});
    }
    for (const auto& b : docs) {
        SCOPED_TRACE(b.name);
        const std::string path = t.file(b.name);
        std::ofstream(path) << b.text;
        const std::string db = t.file("docs.sqlite");
        for (const auto& cmd :
             std::vector<std::vector<std::string>>{{"report", path, "-o", t.file("r.html")},
                                                   {"compare", good, path},
                                                   {"advise", path},
                                                   {"trace", path, "-o", t.file("t.json")},
                                                   {"db", "import", "--db", db, path}}) {
            SCOPED_TRACE(cmd[0]);
            const Proc p = run_sb(cmd, 60);
            EXPECT_EQ(p.exit_code, 2) << p.err;
            EXPECT_EQ(line_count(p.err), 1u) << p.err;
            EXPECT_NE(p.err.find(b.name), std::string::npos) << p.err;
            EXPECT_NE(p.err.find(b.needle), std::string::npos) << p.err;
        }
    }
}

}  // namespace
