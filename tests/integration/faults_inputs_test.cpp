// Input surfaces of issue #33 through the real binary: documents nested 100,000 deep or holding
// negative measurements, SQLite's special store names, damaged stores, fallback files that
// must never replace one another, the store's wait under Ctrl-C, hex and garbage in number
// flags, empty list items, fleet inventories and deadlines, GGUFs with absurd values. Each ends
// without a signal and in bounded time: bad input is one "stagebench: error:" line and exit 2,
// a store that cannot take a document is exit 1 with the document kept beside it, and nothing
// is stored that the input did not support.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <thread>

#include "cli_harness.hpp"
#include "fuzz_seed.hpp"
#include "model/gguf.hpp"
#include "model/gguf_mutations.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;
namespace tg = sb::testing_gguf;

namespace {

std::size_t count_lines(const std::string& s) {
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Bad input: exit 2, stderr one "stagebench: error:" line holding needle, nothing on stdout.
void expect_bad_input(const Proc& p, const std::string& needle, const std::string& what = "") {
    EXPECT_EQ(p.exit_code, 2) << what << "\n" << p.err;
    EXPECT_EQ(count_lines(p.err), 1u) << what << "\n" << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << what << "\n" << p.err;
    EXPECT_NE(p.err.find(needle), std::string::npos) << what << "\n" << p.err;
    EXPECT_TRUE(p.out.empty()) << what << "\n" << p.out;
}

std::string fixture(const std::string& name) {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures/documents/" + name;
}

std::vector<std::string> quick_run(const std::string& model) {
    return {"run", "-m", model,     "-p",  "8",           "-n",  "2",
            "-r",  "1",  "--membw", "off", "--telemetry", "off", "-q"};
}

// The readers of documents, each given file.
std::vector<std::vector<std::string>> readers(const std::string& file, const TempDir& t) {
    return {{"report", file, "-o", t.file("r.html")},
            {"compare", fixture("run.json"), file},
            {"advise", file},
            {"trace", file, "-o", t.file("t.json")},
            {"db", "import", "--db", t.file("readers.sqlite"), file}};
}

// The number of documents in a store, through the binary; -1 when it cannot be listed.
int stored(const std::string& db) {
    const Proc p = run_sb({"db", "list", "--db", db, "-o", "json"});
    return p.exit_code == 0 ? static_cast<int>(json::parse(p.out).size()) : -1;
}

// Holds the store's lock, as another program writing to it would: EXCLUSIVE keeps readers out
// too, IMMEDIATE only other writers.
struct Locker {
    explicit Locker(const std::string& path, const char* begin = "BEGIN EXCLUSIVE") {
        EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        EXPECT_EQ(sqlite3_exec(db, begin, nullptr, nullptr, nullptr), SQLITE_OK);
    }
    ~Locker() {
        sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        sqlite3_close(db);
    }
    sqlite3* db = nullptr;
};

// A short Hexagon profile log: `import hexagon-profile` makes a document of it at once, so the
// store's behaviour is seen without measuring anything.
std::string hexagon_log(const TempDir& t) {
    const std::string log = t.file("hex.log");
    std::ofstream f(log);
    for (int i = 0; i < 4; ++i)
        f << "ggml-hex: HTP0 profile-op MUL_MAT: w x a -> Qcur-" << i
          << " : 64:64 x 64:1 -> 64:1 : q4_0 x f32 -> f32 : 1:1 : HTP0 : op-usec " << 10 + i
          << " op-cycles 1000 op-pkts 10 (1.0) call-usec " << 15 + i << "\n";
    return log;
}

std::string utc_stamp(std::time_t t) {
    std::tm tm{};
    gmtime_r(&t, &tm);
    char s[32];
    std::strftime(s, sizeof s, "%Y%m%dT%H%M%SZ", &tm);
    return s;
}

}  // namespace

// ---- documents -------------------------------------------------------------------------------

// The crash of every reader: an unknown member inside 100,000 nested arrays.
TEST(FaultsInputs, ADocumentNested100000DeepIsOneLineInEveryReader) {
    TempDir t;
    json doc = json::parse(read_file(fixture("run.json")));
    doc["tests"][0]["zz_new"] = "@";
    std::string text = doc.dump();
    text.replace(text.find("\"@\""), 3, std::string(100000, '[') + std::string(100000, ']'));
    const std::string file = t.file("deep.json");
    std::ofstream(file) << text;
    const auto start = std::chrono::steady_clock::now();
    for (const auto& cmd : readers(file, t))
        expect_bad_input(run_sb(cmd, 60), "nests arrays and objects more than 64 deep", cmd[0]);
    EXPECT_LE(stored(t.file("readers.sqlite")), 0);  // none, or no store at all
    EXPECT_LT(seconds_since(start), 60);
}

TEST(FaultsInputs, NegativeMeasurementsAreRefusedNamingTheFileAndTheField) {
    TempDir t;
    const std::vector<std::pair<std::string, json>> cases = {
        {"/tests/0/prefill/duration_ns/0", -5},
        {"/tests/0/decode/tokens_per_s/0", -12.5},
        {"/tests/0/config/n_gen", -2},
        {"/tests/0/decode/throughput/median", -1.0},
        {"/tests/0/ttft_ns/0", -7}};
    for (const auto& [pointer, value] : cases) {
        json doc = json::parse(read_file(fixture("run.json")));
        doc.at(json::json_pointer(pointer)) = value;
        const std::string file = t.file("neg.json");
        std::ofstream(file) << doc.dump();
        std::string field = pointer.substr(1);  // "/tests/0/x" -> "tests[0].x"
        field = std::regex_replace(field, std::regex("/([0-9]+)"), "[$1]");
        field = std::regex_replace(field, std::regex("/"), ".");
        for (const auto& cmd : readers(file, t))
            expect_bad_input(run_sb(cmd, 60), "'" + file + "': " + field + ": expected at least 0",
                             cmd[0] + " " + pointer);
    }
    EXPECT_LE(stored(t.file("readers.sqlite")), 0);  // none, or no store at all
}

// ---- stores ----------------------------------------------------------------------------------

TEST(FaultsInputs, SqliteSpecialNamesAreRefusedAndADotSlashNameIsAFile) {
    TempDir t;
    for (const std::string name : {":memory:", "file:x.sqlite?mode=memory", "FILE:r.sqlite"}) {
        expect_bad_input(run_sb(with(quick_run(tiny_model()), {"--db", name}), 60), "results store",
                         name);
        expect_bad_input(run_sb({"db", "import", "--db", name, fixture("run.json")}), name, name);
        expect_bad_input(run_sb({"db", "list", "--db", name}), name, name);
    }
    // A file of that name, given as one, is a store like any other.
    const std::string cwd_before = fs::current_path().string();
    fs::current_path(t.path);
    const Proc p = run_sb({"db", "import", "--db", "./:memory:", fixture("run.json")});
    fs::current_path(cwd_before);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    EXPECT_TRUE(fs::is_regular_file(t.path / ":memory:"));
    EXPECT_EQ(stored(t.file(":memory:")), 1);
}

TEST(FaultsInputs, ADamagedStoreIsRefusedBeforeAnythingAndLeftAsItWas) {
    TempDir t;
    const std::string db = t.file("d.sqlite");
    for (const char* f : {"run.json", "run2.json", "ops.json", "sustained.json", "hybrid.json"})
        ASSERT_EQ(run_sb({"db", "import", "--db", db, fixture(f)}).exit_code, 0);
    const auto size = fs::file_size(db);
    ASSERT_GE(size, 6u * 4096);
    {  // page 4 of the file, a page of the documents' table, overwritten
        std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(3 * 4096);
        const std::string junk(4096, '\x5a');
        f.write(junk.data(), 4096);
    }
    const std::string damaged = read_file(db);
    const auto start = std::chrono::steady_clock::now();
    expect_bad_input(run_sb({"db", "show", "1", "--db", db}), "is damaged");
    expect_bad_input(run_sb({"db", "list", "--db", db}), "is damaged");
    expect_bad_input(run_sb({"db", "export", "2", "--db", db}), "is damaged");
    expect_bad_input(run_sb({"db", "import", "--db", db, fixture("run.json")}), "is damaged");
    expect_bad_input(run_sb(with(quick_run(tiny_model()), {"--db", db}), 60), "is damaged");
    expect_bad_input(run_sb({"compare", "db:1", "db:2", "--db", db}), "is damaged");
    EXPECT_LT(seconds_since(start), 60);
    EXPECT_EQ(read_file(db), damaged) << "a damaged store was written to";
}

// Two runs that fall back in the same second (here: files of this second and the next ones
// already there) write files of their own, and no file is replaced.
TEST(FaultsInputs, AFallbackFileNeverReplacesAnother) {
    TempDir t;
    const std::string db = t.file("busy.sqlite"), log = hexagon_log(t);
    ASSERT_EQ(run_sb({"import", "hexagon-profile", log, "--db", db}).exit_code, 0);
    const std::time_t now = std::time(nullptr);
    std::vector<std::string> taken;
    for (int s = 0; s < 30; ++s) {
        taken.push_back(db + "." + utc_stamp(now + s) + ".json");
        std::ofstream(taken.back()) << "{\"earlier\": " << s << "}";
    }
    std::vector<std::string> written;
    {
        Locker lock(db);
        for (int i = 0; i < 3; ++i) {
            // Each its own --db-wait, so that the three documents differ (the store keeps a
            // document once, by its content) even when they are made within one second.
            const Proc p = run_sb({"import", "hexagon-profile", log, "--db", db, "--db-wait",
                                   "0.2" + std::to_string(i)},
                                  60);
            EXPECT_EQ(p.exit_code, 1) << p.err;
            EXPECT_EQ(error_lines(p.err), 1u) << p.err;
            std::smatch m;
            ASSERT_TRUE(std::regex_search(p.err, m, std::regex("written to (\\S+\\.json) instead")))
                << p.err;
            written.push_back(m[1]);
        }
    }
    for (std::size_t s = 0; s < taken.size(); ++s)
        EXPECT_EQ(read_file(taken[s]), "{\"earlier\": " + std::to_string(s) + "}") << taken[s];
    std::sort(written.begin(), written.end());
    EXPECT_EQ(std::unique(written.begin(), written.end()), written.end()) << "a name twice";
    for (const auto& w : written) {
        EXPECT_EQ(std::find(taken.begin(), taken.end(), w), taken.end()) << w;
        EXPECT_TRUE(std::regex_search(w, std::regex("Z-[0-9]+\\.json$"))) << w;
        EXPECT_EQ(json::parse(read_file(w))["command"], "import") << w;
        EXPECT_EQ(run_sb({"db", "import", "--db", db, w}).exit_code, 0);
    }
    EXPECT_EQ(stored(db), 4);
}

TEST(FaultsInputs, DbImportOntoALockedStoreIsOneErrorLine) {
    TempDir t;
    const std::string db = t.file("busy.sqlite");
    ASSERT_EQ(run_sb({"db", "import", "--db", db, fixture("run.json")}).exit_code, 0);
    {  // another writer: the store is read, the append waits and gives up
        Locker lock(db, "BEGIN IMMEDIATE");
        const Proc p =
            run_sb({"db", "import", "--db", db, "--db-wait", "0.5", fixture("run2.json")});
        EXPECT_EQ(p.exit_code, 1) << p.err;
        EXPECT_EQ(count_lines(p.err), 1u) << p.err;
        EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
        EXPECT_EQ(p.err.find("stored " + fixture("run2.json") + " as"), std::string::npos) << p.err;
        EXPECT_NE(p.err.find("run2.json was not stored"), std::string::npos) << p.err;
        EXPECT_NE(p.err.find("locked by another writer"), std::string::npos) << p.err;
    }
    // Free again: the note alone, on its own line.
    const Proc ok = run_sb({"db", "import", "--db", db, fixture("run2.json")});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_EQ(ok.err, "stagebench: stored " + fixture("run2.json") + " as #2 in " + db + "\n");
    {  // an exclusive lock: not even opened
        Locker lock(db);
        const Proc p =
            run_sb({"db", "import", "--db", db, "--db-wait", "0.5", fixture("run2.json")});
        EXPECT_EQ(p.exit_code, 1) << p.err;
        EXPECT_EQ(count_lines(p.err), 1u) << p.err;
        EXPECT_NE(p.err.find("locked by another writer"), std::string::npos) << p.err;
    }
    EXPECT_EQ(stored(db), 2);
}

// A full disk under the store: db import says which file was not stored, on one line, exit 1,
// and the store keeps what it had (SQLite rolls the append back).
TEST(FaultsInputs, DbImportOntoAFullStoreIsOneErrorLine) {
    TempDir t;
    const std::string dir = t.file("small");
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=256k") != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here";
    struct Unmount {
        std::string dir;
        ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
    } unmount{dir};
    const std::string db = dir + "/full.sqlite";
    // A store keeps a document once (by its content hash): each import is another document,
    // the fixture with one more argv word.
    const json doc = json::parse(read_file(fixture("sustained.json")));
    int ok = 0;
    Proc p;
    for (int i = 0; i < 100; ++i) {
        json copy = doc;
        copy["argv"].push_back("--copy=" + std::to_string(i));
        const std::string file = t.file("sustained.json");
        std::ofstream(file) << copy.dump();
        p = run_sb({"db", "import", "--db", db, file});
        if (p.exit_code != 0)
            break;
        ++ok;
    }
    ASSERT_GT(ok, 0) << p.err;
    EXPECT_EQ(p.exit_code, 1) << p.err;
    EXPECT_EQ(count_lines(p.err), 1u) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find("sustained.json was not stored"), std::string::npos) << p.err;
    EXPECT_EQ(stored(db), ok);
}

// Ctrl-C while waiting for a locked store ends the wait at once: db import says so (exit 1),
// a run writes its document beside the store (exit 1).
TEST(FaultsInputs, CtrlCEndsTheWaitForALockedStore) {
    TempDir t;
    const std::string db = t.file("busy.sqlite"), log = hexagon_log(t);
    ASSERT_EQ(run_sb({"db", "import", "--db", db, fixture("run.json")}).exit_code, 0);
    Locker lock(db);
    {
        // spawn_bg: stdout to the file named, stderr to that name + ".err"
        const std::string out = t.file("import.out"), err = out + ".err";
        const pid_t pid = spawn_bg({stagebench_bin(), "db", "import", "--db", db, "--db-wait",
                                    "600", fixture("run2.json")},
                                   out);
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        const auto start = std::chrono::steady_clock::now();
        const int rc = signal_and_wait(pid, SIGINT, 30);
        EXPECT_LT(seconds_since(start), 5);
        EXPECT_EQ(rc, 1) << read_file(err);
        EXPECT_NE(read_file(err).find("interrupted (Ctrl-C)"), std::string::npos) << read_file(err);
    }
    {
        const std::string out = t.file("hex.out"), err = out + ".err";
        const pid_t pid = spawn_bg(
            {stagebench_bin(), "import", "hexagon-profile", log, "--db", db, "--db-wait", "600"},
            out);
        // In the wait once the first progress line is there (after 5 s).
        for (int i = 0; i < 300 && read_file(err).find("waited") == std::string::npos; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ASSERT_NE(read_file(err).find("waited"), std::string::npos) << read_file(err);
        const auto start = std::chrono::steady_clock::now();
        const int rc = signal_and_wait(pid, SIGINT, 30);
        EXPECT_LT(seconds_since(start), 5);
        EXPECT_EQ(rc, 1) << read_file(err);
        std::smatch m;
        const std::string e = read_file(err);
        ASSERT_TRUE(std::regex_search(e, m, std::regex("written to (\\S+\\.json) instead"))) << e;
        EXPECT_EQ(json::parse(read_file(m[1]))["command"], "import");
    }
}

// ---- flags -----------------------------------------------------------------------------------

TEST(FaultsInputs, HexAndGarbageInNumberFlagsAreRefused) {
    TempDir t;
    const std::string m = tiny_model(), db = t.file("s.sqlite");
    ASSERT_EQ(run_sb({"db", "import", "--db", db, fixture("run.json")}).exit_code, 0);
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {with(quick_run(m), {"-p", "0x10"}), "'0x10'"},
        {with(quick_run(m), {"-t", "0x2"}), "'0x2'"},
        {with(quick_run(m), {"--seed", "-1"}), "'-1'"},
        {with(quick_run(m), {"--seed", "18446744073709551616"}), "18446744073709551616"},
        {with(quick_run(m), {"--seed", "10000000000000000000000"}), "10000000000000000000000"},
        {with(quick_run(m), {"--seed", ""}), "''"},
        {with(quick_run(m), {"--seed", "0x10"}), "'0x10'"},
        {with(quick_run(m), {"--device", "CPU,,BLAS"}), "has an empty item"},
        {with(quick_run(m), {"-p", "8,,16"}), "has an empty item"},
        {with(quick_run(m), {"--target-ci", ""}), "--target-ci"},
        {with(quick_run(m), {"--idle", "0x1"}), "'0x1'"},
        {{"db", "show", "0x1", "--db", db}, "'0x1'"},
        {{"db", "export", "1e0", "--db", db}, "'1e0'"},
        {{"advise", fixture("run.json"), "--dispatch-budget-us", "nan"}, "'nan'"},
        {{"advise", fixture("run.json"), "--prompt", "0x100"}, "'0x100'"},
        {{"synth", "--preset", "tiny", "--seed", "-1", "-o", t.file("x.gguf")}, "'-1'"},
        {{"compare", fixture("run.json"), fixture("run2.json"), "--seed", "1e3"}, "'1e3'"},
    };
    for (const auto& [args, needle] : cases) {
        std::string what;
        for (const auto& a : args)
            what += a + " ";
        expect_bad_input(run_sb(args, 60), needle, what);
    }
    EXPECT_FALSE(fs::exists(t.file("x.gguf")));
}

// ---- fleet -----------------------------------------------------------------------------------

TEST(FaultsInputs, FleetInventoriesAndDeadlinesAreCheckedBeforeAnything) {
#ifndef SB_WITH_FLEET
    GTEST_SKIP() << "fleet is not in this build";
#endif
    TempDir t;
    auto inventory = [&](const std::string& name, const std::string& text) {
        const std::string path = t.file(name);
        std::ofstream(path) << text;
        return path;
    };
    const std::string good =
        inventory("good.toml", "[[device]]\nname = \"here\"\ntransport = \"local\"\n");
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"[[device]]\nname = \"pi\\n5\"\ntransport = \"local\"\n", "'pi\\n5'"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[::1\"\n", "without its ']'"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@fe80::1\"\n", "in brackets"},
        {"[gates]\ncool_timeout = -1\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "is not a wait"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\n[device.gates]\ncool_timeout = \"0s\"\n",
         "above 0"},
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        const std::string inv = inventory("bad" + std::to_string(i) + ".toml", bad[i].first);
        expect_bad_input(run_sb({"fleet", "status", "--hosts", inv}), bad[i].second, bad[i].first);
        expect_bad_input(run_sb({"fleet", "run", "--hosts", inv, "--db", t.file("f.sqlite"), "--",
                                 "run", "-m", "m.gguf"}),
                         bad[i].second, bad[i].first);
    }
    for (const std::vector<std::string>& flags :
         std::vector<std::vector<std::string>>{{"--timeout", "0s"},
                                               {"--timeout", "2d"},
                                               {"--cool-timeout", "0"},
                                               {"--parallel", "0"},
                                               {"--parallel", "0x2"}}) {
        expect_bad_input(run_sb(with({"fleet", "run", "--hosts", good, "--db", t.file("f.sqlite")},
                                     with(flags, {"--", "run", "-m", "m.gguf"}))),
                         flags[0], flags[0] + " " + flags[1]);
    }
    EXPECT_FALSE(fs::exists(t.file("f.sqlite")));
}

// ---- models ----------------------------------------------------------------------------------

// Values llama.cpp loads without a word: refused where its results would mean nothing (a RoPE
// base of inf), a warning where only text would (a BOS id beyond the vocabulary, a vocabulary
// of empty tokens), and the run then measures with exit 0.
TEST(FaultsInputs, AbsurdGgufValuesAreRefusedOrWarnedAbout) {
    TempDir t;
    const std::string src = tiny_model();
    auto mutated = [&](const std::string& name, tg::Mutation m) {
        const std::string dst = t.file(name);
        tg::write_mutated(src, dst, m);
        return dst;
    };
    const std::string inf_base =
        mutated("inf_base.gguf", {"rope.freq_base inf",
                                  [](auto& kv) {
                                      tg::set_kv(kv, "llama.rope.freq_base",
                                                 std::numeric_limits<float>::infinity());
                                  },
                                  std::nullopt});
    expect_bad_input(run_sb(quick_run(inf_base), 120), "llama.rope.freq_base is inf");

    const std::string bos = mutated(
        "bos.gguf",
        {"bos beyond", [](auto& kv) { tg::set_kv(kv, "tokenizer.ggml.bos_token_id", 1000000u); },
         std::nullopt});
    const std::string empty =
        mutated("empty.gguf", {"empty vocabulary",
                               [](auto& kv) {
                                   auto* e = tg::find_kv(kv, "tokenizer.ggml.tokens");
                                   auto& toks = std::get<std::vector<std::string>>(
                                       std::get<sb::GgufArray>(e->value));
                                   // llama.cpp refuses a token twice, so each empty one is distinct
                                   // only by its place: all of them empty.
                                   for (auto& tok : toks)
                                       tok.clear();
                               },
                               std::nullopt});
    for (const auto& [model, code] : std::vector<std::pair<std::string, std::string>>{
             {bos, "model_special_token_beyond_vocab"}, {empty, "model_empty_vocabulary"}}) {
        const Proc p = run_sb(with(quick_run(model), {"-o", "json"}), 300);
        ASSERT_EQ(p.exit_code, 0) << p.err;
        const json doc = json::parse(p.out);
        EXPECT_EQ(doc["tests"][0]["status"], "ok");
        bool found = false;
        for (const auto& w : doc["warnings"])
            found |= w["code"] == code;
        EXPECT_TRUE(found) << doc["warnings"].dump();
        EXPECT_EQ(doc["models"][0]["warnings"][0]["code"], code);
    }
}

// ---- synth and import: input files, fuzzed configs, signals ----------------------------------

namespace {

// The names of the files in dir.
std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// A small config.json (the tiny preset's) with the value of key given as raw JSON text, which
// may be what no JSON library writes (1e999).
std::string config_text(const std::string& key = "", const std::string& raw = "") {
    const std::vector<std::pair<std::string, std::string>> base = {
        {"model_type", "\"llama\""},
        {"head_dim", "32"},
        {"hidden_size", "256"},
        {"intermediate_size", "768"},
        {"max_position_embeddings", "2048"},
        {"num_attention_heads", "8"},
        {"num_hidden_layers", "4"},
        {"num_key_value_heads", "4"},
        {"rms_norm_eps", "1e-05"},
        {"rope_theta", "10000.0"},
        {"tie_word_embeddings", "true"},
        {"vocab_size", "4096"},
        {"rope_scaling", "{\"rope_type\": \"linear\", \"factor\": 2.0}"}};
    std::string text = "{";
    bool replaced = false;
    for (const auto& [k, v] : base) {
        const bool here = k == key;
        replaced |= here;
        text += (text.size() > 1 ? ", \"" : "\"") + k + "\": " + (here ? raw : v);
    }
    if (!key.empty() && !replaced)
        text += ", \"" + key + "\": " + raw;
    return text + "}";
}

// Ends in exit 0 or in bad input: exit 2 and one "stagebench: error:" line, never a raw library
// text.
void expect_model_or_one_line(const Proc& p, const std::string& what) {
    EXPECT_TRUE(p.exit_code == 0 || p.exit_code == 2) << what << ": exit " << p.exit_code << "\n"
                                                      << p.err;
    if (p.exit_code != 2)
        return;
    EXPECT_EQ(count_lines(p.err), 1u) << what << "\n" << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << what << "\n" << p.err;
    for (const char* raw : {"json.exception", "basic_string", "std::", "bad_alloc"})
        EXPECT_EQ(p.err.find(raw), std::string::npos) << what << "\n" << p.err;
}

}  // namespace

// Special files and deep nesting as synth's inputs: a FIFO blocked forever and ignored Ctrl-C,
// /dev/zero was read until memory ran out, 100,000 nested arrays overflowed the stack.
TEST(FaultsInputs, SynthInputsThatAreNotConfigsAreOneLine) {
    TempDir t;
    const std::string out = t.file("m.gguf"), fifo = t.file("fifo.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::ofstream(t.file("deep.json"))
        << config_text("x", std::string(100000, '[') + std::string(100000, ']'));
    std::ofstream(t.file("inf.json")) << config_text("rope_theta", "1e999");
    const auto start = std::chrono::steady_clock::now();
    for (const auto& [config, needle] : std::vector<std::pair<std::string, std::string>>{
             {t.file("deep.json"), "more than 64 deep"},
             {fifo, "it is a FIFO"},
             {"/dev/zero", "it is a character device"},
             {t.path.string(), "it is a directory"},
             {t.file("inf.json"), "rope_theta is 1e999, a number beyond any double"}})
        expect_bad_input(run_sb({"synth", "--config", config, "-o", out}, 20), needle, config);
    for (const auto& [vocab, needle] :
         std::vector<std::pair<std::string, std::string>>{{fifo, "not a regular file"},
                                                          {"/dev/zero", "not a regular file"},
                                                          {t.path.string() + "/", "directory"}})
        expect_bad_input(run_sb({"synth", "--preset", "tiny", "--vocab", vocab, "-o", out}, 20),
                         needle, vocab);
    EXPECT_LT(seconds_since(start), 60);
    EXPECT_FALSE(fs::exists(out));
}

// Seeded values in a config.json: numbers no double or float32 holds, -0, NaN-like strings,
// sizes at and beyond every bound, negative ones, wrong types, nesting. Each run writes a
// model or is one line of bad input, in bounded time, and never leaves a temporary.
TEST(FaultsInputs, SynthConfigFuzzWritesAModelOrOneLine) {
    TempDir t;
    const std::vector<std::string> keys = {"hidden_size",
                                           "intermediate_size",
                                           "vocab_size",
                                           "num_hidden_layers",
                                           "num_attention_heads",
                                           "num_key_value_heads",
                                           "head_dim",
                                           "rms_norm_eps",
                                           "rope_theta",
                                           "max_position_embeddings",
                                           "rope_scaling",
                                           "tie_word_embeddings",
                                           "model_type",
                                           "bos_token_id",
                                           "x"};
    const std::vector<std::string> values = {"1e308",
                                             "1e999",
                                             "-1e999",
                                             "-0",
                                             "-0.0",
                                             "0",
                                             "-1",
                                             "1.5",
                                             "1e-300",
                                             "3.5e38",
                                             "2147483647",
                                             "2147483648",
                                             "4294967296",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "18446744073709551615",
                                             "65537",
                                             "2097153",
                                             "\"NaN\"",
                                             "\"inf\"",
                                             "\"-Infinity\"",
                                             "null",
                                             "true",
                                             "[]",
                                             "{}",
                                             "\"\"",
                                             "[1, 2]",
                                             "{\"factor\": 1e999}",
                                             "{\"rope_type\": \"linear\", \"factor\": 1e308}",
                                             "{\"rope_type\": \"yarn\", \"factor\": -0}",
                                             std::string(64, '[') + std::string(64, ']'),
                                             std::string(70, '[') + std::string(70, ']')};
    sbtest::FuzzRun fuzz(40);
    std::mt19937_64 rng(fuzz.seed());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    const std::string out = t.file("m.gguf"), config = t.file("config.json");
    int written = 0, refused = 0;
    while (fuzz.cases() < 60 && std::chrono::steady_clock::now() < deadline) {
        const std::string& key = keys[rng() % keys.size()];
        const std::string& raw = values[rng() % values.size()];
        std::ofstream(config) << config_text(key, raw);
        fuzz.next_case();
        const Proc p = run_sb({"synth", "--config", config, "-t", "1", "-o", out}, 60);
        expect_model_or_one_line(p, key + " = " + raw.substr(0, 40));
        (p.exit_code == 0 ? written : refused) += 1;
        if (p.exit_code == 2) {
            EXPECT_FALSE(fs::exists(out)) << key << " = " << raw;
        }
        fs::remove(out);
        EXPECT_EQ(files_in(t.path.string()), std::vector<std::string>{"config.json"})
            << key << " = " << raw;
    }
    EXPECT_GE(fuzz.cases(), 30);
    EXPECT_GT(refused, 10);
    EXPECT_GT(written, 0);
}

// Ctrl-C or SIGTERM stops synth within seconds wherever its write is: exit 1, one line, and
// nothing beside -o; a second signal, which ends the process at once, leaves no temporary
// either (synth ignored both signals, ran to its end and exited 0; a second Ctrl-C left a
// 109 MB temporary).
TEST(FaultsInputs, SynthStopsOnSignalsAndLeavesNoTemporary) {
    TempDir t;
    struct Case {
        int sig;
        bool twice;
        uintmax_t after_bytes;  // signalled once the temporary holds this much
    };
    int i = 0;
    for (const Case c : {Case{SIGINT, false, 0}, Case{SIGTERM, false, 40u << 20},
                         Case{SIGINT, true, 0}, Case{SIGTERM, true, 40u << 20}}) {
        const std::string what = std::string(c.sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                 (c.twice ? " twice" : "") + " after " +
                                 std::to_string(c.after_bytes) + " bytes";
        const std::string dir = t.file("case" + std::to_string(i)),
                          log = t.file("log" + std::to_string(i));
        ++i;
        fs::create_directories(dir);
        const pid_t pid = spawn_bg({stagebench_bin(), "synth", "--preset", "qwen3-0.6b", "--quant",
                                    "f16", "-t", "1", "-o", dir + "/m.gguf"},
                                   log);
        bool ready = false;
        for (int k = 0; k < 3000 && !ready; ++k) {
            for (const auto& e : fs::directory_iterator(dir)) {
                std::error_code ec;
                ready |= e.path().filename().string().rfind("m.gguf.tmp-", 0) == 0 &&
                         fs::file_size(e.path(), ec) >= std::max<uintmax_t>(c.after_bytes, 1);
            }
            if (!ready)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        if (!ready) {
            ::kill(pid, SIGKILL);
            wait_exit(pid, 10);
            FAIL() << what << ": no temporary appeared\n" << read_file(log + ".err");
        }
        const auto start = std::chrono::steady_clock::now();
        ::kill(pid, c.sig);
        if (c.twice) {
            // Apart: two signals sent at once are delivered as one.
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            ::kill(pid, c.sig);
        }
        const int rc = wait_exit(pid, 20);
        EXPECT_LT(seconds_since(start), 5) << what;
        const std::string err = read_file(log + ".err");
        if (c.twice) {
            EXPECT_TRUE(rc == 1 || rc == 128 + c.sig) << what << ": exit " << rc << "\n" << err;
        } else {
            EXPECT_EQ(rc, 1) << what << "\n" << err;
            EXPECT_EQ(count_lines(err), 1u) << what << "\n" << err;
            EXPECT_NE(err.find("stagebench: error: synth interrupted"), std::string::npos)
                << what << "\n"
                << err;
            EXPECT_TRUE(read_file(log).empty()) << what;
        }
        EXPECT_TRUE(files_in(dir).empty()) << what << ": " << files_in(dir).front();
    }
}

// Ctrl-C or SIGTERM stops a long import: exit 1, one line, no document (it ran to its end and
// exited 0).
TEST(FaultsInputs, ImportStopsOnSignals) {
    TempDir t;
    const std::string log = t.file("big.log");
    {
        std::ofstream f(log);
        for (int i = 0; i < 400000; ++i)
            f << "ggml-hex: HTP0 profile-op MUL_MAT: w x a -> Qcur-" << i % 50
              << " : 64:64 x 64:1 -> 64:1 : q4_0 x f32 -> f32 : 1:1 : HTP0 : op-usec " << 10 + i % 7
              << " op-cycles 1000 op-pkts 10 (1.0) call-usec " << 15 + i % 5 << "\n";
    }
    for (const int sig : {SIGINT, SIGTERM}) {
        const std::string out = t.file("import.out"), doc = t.file("doc.json");
        const pid_t pid =
            spawn_bg({stagebench_bin(), "import", "hexagon-profile", log, "--out", doc}, out);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        const auto start = std::chrono::steady_clock::now();
        const int rc = signal_and_wait(pid, sig, 30);
        EXPECT_LT(seconds_since(start), 5);
        const std::string err = read_file(out + ".err");
        EXPECT_EQ(rc, 1) << err;
        EXPECT_EQ(count_lines(err), 1u) << err;
        EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
        EXPECT_EQ(files_in(t.path.string()),
                  (std::vector<std::string>{"big.log", "import.out", "import.out.err"}));
    }
}
