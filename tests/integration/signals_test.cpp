// Signals and the children of stagebench through the real binary (issue #40): Ctrl-C is
// answered within a bounded time inside the longest loops (thousands of decode steps, a huge
// prompt), what was measured is kept, and no child (llama-server of serve -m, decompose
// --mode's runs) outlives stagebench however it ends: a second Ctrl-C, SIGHUP, SIGKILL.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli_harness.hpp"
#include "fuzz_seed.hpp"
#include "model/gguf_mutations.hpp"

using nlohmann::json;
using namespace sbtest;
namespace fs = std::filesystem;

namespace {

// Pids of the live processes (zombies excluded: their cmdline is empty) whose command line
// carries marker, other than not_pid.
std::vector<pid_t> processes_with(const std::string& marker, pid_t not_pid = -1) {
    std::vector<pid_t> out;
    DIR* d = opendir("/proc");
    if (!d)
        return out;
    while (dirent* e = readdir(d)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end || pid == not_pid || pid == getpid())
            continue;
        std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline", std::ios::binary);
        std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (cmd.find(marker) != std::string::npos)
            out.push_back(static_cast<pid_t>(pid));
    }
    closedir(d);
    return out;
}

// Waits up to timeout_s for pred; true when it held.
template <class Pred>
bool wait_for(Pred pred, double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    while (!pred()) {
        if (seconds_since(start) > timeout_s)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

// The tiny model copied into dir: its path, unique to this test, marks the children.
std::string marked_model(const TempDir& t) {
    const std::string m = t.file("marker-model.gguf");
    fs::copy_file(tiny_model(), m, fs::copy_options::overwrite_existing);
    return m;
}

// Kills what is left (a failed test must not leave processes behind either).
void kill_all(const std::vector<pid_t>& pids) {
    for (pid_t p : pids)
        kill(p, SIGKILL);
}

bool stderr_has(const TempDir& t, const std::string& what) {
    return read_file(t.file("log.err")).find(what) != std::string::npos;
}

}  // namespace

// --decode-tokens 4096: thousands of traced and untraced decode steps in one repetition. Ctrl-C
// ends the decode at the next step (it used to run to the end: 31 s at 2048, more than 60 s at
// 4096), exit 1, and the profile traced so far is in --out, marked interrupted.
TEST(Signals, CtrlCInsideALongOpsDecodeIsAnsweredAndKeepsTheProfile) {
    TempDir t;
    const std::string out = t.file("ops.json");
    pid_t pid =
        spawn_bg({stagebench_bin(), "ops", "-m", tiny_model(), "-p", "16", "--stage", "decode",
                  "--decode-tokens", "4096", "--replay", "0", "-t", "1", "--out", out},
                 t.file("log"));
    if (!wait_for([&] { return stderr_has(t, "tracing node by node"); }, 60)) {
        kill(pid, SIGKILL);  // no stagebench left behind by a failed test
        wait_exit(pid, 10);
        FAIL() << read_file(t.file("log.err"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // inside the decode steps
    const auto start = std::chrono::steady_clock::now();
    const int rc = signal_and_wait(pid, SIGINT, 20);
    EXPECT_EQ(rc, 1) << read_file(t.file("log.err"));
    EXPECT_LT(seconds_since(start), 20);
    const json doc = json::parse(read_file(out));
    bool warned = false;
    for (const auto& w : doc["warnings"])
        warned |= w["code"] == "interrupted";
    EXPECT_TRUE(warned) << doc["warnings"].dump();
    ASSERT_TRUE(doc.contains("ops")) << read_file(t.file("log.err"));
    bool decode = false;
    for (const auto& st : doc["ops"]["stages"])
        decode |= st["stage"] == "decode" && !st["by_op"].empty();
    EXPECT_TRUE(decode) << "the decode steps traced before Ctrl-C are kept";
}

// A prompt of 30000 tokens is one long prefill: llama.cpp's abort callback ends it at the
// next graph node, and `run` keeps the document, the test interrupted.
TEST(Signals, CtrlCInsideAHugePrefillIsAnswered) {
    TempDir t;
    const std::string out = t.file("run.json");
    pid_t pid = spawn_bg({stagebench_bin(), "run", "-m", tiny_model(), "-p", "30000", "-n", "1",
                          "-r", "1", "-t", "1", "--membw", "off", "--out", out},
                         t.file("log"));
    if (!wait_for([&] { return stderr_has(t, "loading the model"); }, 60)) {
        kill(pid, SIGKILL);  // no stagebench left behind by a failed test
        wait_exit(pid, 10);
        FAIL() << read_file(t.file("log.err"));
    }
    // The tiny model loads at once; its warm-up prefill of 30000 tokens takes minutes.
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    const auto start = std::chrono::steady_clock::now();
    const int rc = signal_and_wait(pid, SIGINT, 20);
    EXPECT_EQ(rc, 1) << read_file(t.file("log.err"));
    EXPECT_LT(seconds_since(start), 20);
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "interrupted") << doc["tests"][0].dump();
}

namespace {

// serve -m on the marked model: stagebench and its llama-server, once the server runs.
struct ServeUnderTest {
    TempDir t;
    std::string model = marked_model(t);
    pid_t pid = -1;
    std::vector<pid_t> children;
    ServeUnderTest() {
        pid = spawn_bg({stagebench_bin(), "serve", "-m", model, "--concurrency", "1", "--requests",
                        "100000", "-p", "8", "-n", "4", "--out", t.file("s.json")},
                       t.file("log"));
        // Once the server serves and the requests run (a stagebench that dies while the server
        // still starts would leave it behind just the same, but then the first Ctrl-C alone
        // stops it).
        wait_for([&] { return stderr_has(t, "serve concurrency 1:"); }, 60);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        children = processes_with(model, pid);
    }
    ~ServeUnderTest() {
        kill(pid, SIGKILL);
        wait_exit(pid, 10);
        kill_all(processes_with(model));
    }
    // No process with the model in its command line within 10 s of stagebench's end.
    void expect_no_orphan() {
        const bool gone = wait_for([&] { return processes_with(model).empty(); }, 10);
        EXPECT_TRUE(gone) << "left behind: " << processes_with(model).size() << " process(es); "
                          << read_file(t.file("log.err"));
    }
};

}  // namespace

namespace {

// Whether signal sig is pending for process pid (its shared or main thread's pending set, as
// /proc/PID/status shows them in hex): sent, not yet taken by a handler.
bool signal_pending(pid_t pid, int sig) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    const unsigned long long bit = 1ULL << (sig - 1);
    for (std::string line; std::getline(f, line);)
        if (line.rfind("ShdPnd:", 0) == 0 || line.rfind("SigPnd:", 0) == 0)
            if (std::stoull(line.substr(7), nullptr, 16) & bit)
                return true;
    return false;
}

// Whether process pid has a handler for sig (SigCgt in /proc/PID/status): before it installs
// one, at start-up, a signal ends it by the default action, as it does any program.
bool signal_caught(pid_t pid, int sig) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    const unsigned long long bit = 1ULL << (sig - 1);
    for (std::string line; std::getline(f, line);)
        if (line.rfind("SigCgt:", 0) == 0)
            return (std::stoull(line.substr(7), nullptr, 16) & bit) != 0;
    return false;
}

// Whether process pid runs (exists and is no zombie).
bool running(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(f, stat);
    const auto close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

}  // namespace

// The second Ctrl-C ends stagebench the default way (after removing unfinished outputs'
// temporaries), with no time to stop its llama-server: only the child's death signal
// (PR_SET_PDEATHSIG) ends the server then. The server is stopped (SIGSTOP) first, so the first
// Ctrl-C's orderly stop of it (SIGTERM, up to 2 s for it to exit) cannot end it before the
// second Ctrl-C comes; two SIGINTs sent back to back would be one (a pending signal is not
// queued twice), so the second is sent once the first was taken. Without the death signal the
// server outlives stagebench and this test fails (it passed on such a binary when the two
// signals were sent back to back).
TEST(Signals, ASecondCtrlCLeavesNoLlamaServerBehind) {
    ServeUnderTest s;
    ASSERT_FALSE(s.children.empty()) << read_file(s.t.file("log.err"));
    for (pid_t c : s.children)
        kill(c, SIGSTOP);
    kill(s.pid, SIGINT);
    ASSERT_TRUE(wait_for([&] { return !signal_pending(s.pid, SIGINT); }, 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // inside the orderly stop
    const bool serving = std::any_of(s.children.begin(), s.children.end(), running);
    ASSERT_TRUE(running(s.pid)) << read_file(s.t.file("log.err"));
    kill(s.pid, SIGINT);
    EXPECT_TRUE(serving) << "the server had ended before the second Ctrl-C";
    const int rc = wait_exit(s.pid, 30);
    EXPECT_NE(rc, 999) << read_file(s.t.file("log.err"));
    // Ended by the second signal (130), or by the watchdog's end of a stage it deferred (1).
    EXPECT_TRUE(rc == 128 + SIGINT || rc == 1) << rc << ": " << read_file(s.t.file("log.err"));
    s.expect_no_orphan();
}

TEST(Signals, SighupIsCtrlCAndLeavesNoLlamaServerBehind) {
    ServeUnderTest s;
    ASSERT_FALSE(s.children.empty()) << read_file(s.t.file("log.err"));
    // Handled like Ctrl-C: the points measured are kept, exit 1, not death by the signal.
    EXPECT_EQ(signal_and_wait(s.pid, SIGHUP, 30), 1) << read_file(s.t.file("log.err"));
    s.expect_no_orphan();
}

TEST(Signals, SigkillOfStagebenchLeavesNoLlamaServerBehind) {
    ServeUnderTest s;
    ASSERT_FALSE(s.children.empty()) << read_file(s.t.file("log.err"));
    EXPECT_EQ(signal_and_wait(s.pid, SIGKILL, 30), 128 + SIGKILL);
    s.expect_no_orphan();
}

// The llama-server explain started aborts mid-run (SIGABRT, as llama.cpp's GGML_ABORT ends
// it): the server levels' runs after it say that it stopped, how, and where its log is, not
// "cannot connect"; no request is sent to it again, the other levels go on, the document
// keeps it all, exit 1, and nothing is left running.
TEST(Signals, AnAbortedExplainServerIsNamedInItsLevelsErrors) {
    TempDir t;
    const std::string model = marked_model(t);
    const std::string out = t.file("explain.json");
    pid_t pid = spawn_bg({stagebench_bin(), "explain", "-m", model, "-p", "48", "-n", "4", "-r",
                          "3", "--no-ops", "-t", "1", "--out", out},
                         t.file("log"));
    const bool serving = wait_for([&] { return stderr_has(t, "round 1/3:"); }, 120);
    const std::vector<pid_t> servers = processes_with(model, pid);
    if (!serving || servers.empty()) {
        kill(pid, SIGKILL);
        wait_exit(pid, 10);
        kill_all(processes_with(model));
        FAIL() << read_file(t.file("log.err"));
    }
    for (pid_t s : servers)
        kill(s, SIGABRT);
    const int rc = wait_exit(pid, 300);
    EXPECT_EQ(rc, 1) << read_file(t.file("log.err"));
    const json doc = json::parse(read_file(out));
    int stopped = 0, unexplained = 0;
    for (const auto& m : doc["explain"]["measures"])
        for (const auto& r : m["runs"]) {
            if (!r["error"].is_string())
                continue;
            const std::string e = r["error"];
            if (e.find("the llama-server stagebench started has stopped (killed by signal 6 "
                       "(SIGABRT))") != std::string::npos &&
                e.find("(log /") != std::string::npos)
                ++stopped;
            else
                ++unexplained;
            EXPECT_EQ(m["level"], "server") << e;
        }
    EXPECT_GE(stopped, 2) << "at least the server's runs of rounds 2 and 3";
    EXPECT_EQ(unexplained, 0) << read_file(t.file("log.err"));
    EXPECT_TRUE(processes_with(model).empty());
    kill_all(processes_with(model));
}

// The same for `serve -m`: the point's failed requests are one line that names the stopped
// server (not a "cannot connect" line per request), their errors in the document say it, and
// no further point is sent.
TEST(Signals, AnAbortedServeServerIsOneLineAndEndsTheSweep) {
    TempDir t;
    const std::string model = marked_model(t);
    const std::string out = t.file("serve.json");
    pid_t pid = spawn_bg({stagebench_bin(), "serve", "-m", model, "--concurrency", "1,2",
                          "--requests", "200", "-p", "32", "-n", "16", "--out", out},
                         t.file("log"));
    const bool serving =
        wait_for([&] { return stderr_has(t, "serve concurrency 1: 200 requests"); }, 120);
    const std::vector<pid_t> servers = processes_with(model, pid);
    if (!serving || servers.empty()) {
        kill(pid, SIGKILL);
        wait_exit(pid, 10);
        kill_all(processes_with(model));
        FAIL() << read_file(t.file("log.err"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (pid_t s : servers)
        kill(s, SIGABRT);
    EXPECT_EQ(wait_exit(pid, 300), 1) << read_file(t.file("log.err"));
    const std::string err = read_file(t.file("log.err"));
    EXPECT_EQ(err.find("cannot connect"), std::string::npos) << err;
    EXPECT_NE(err.find("request(s) failed: the llama-server stagebench started has stopped "
                       "(killed by signal 6 (SIGABRT))"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("serve concurrency 2"), std::string::npos) << err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["serve"]["points"].size(), 1u) << doc["serve"].dump().substr(0, 500);
    int stopped = 0;
    for (const auto& q : doc["serve"]["points"][0]["requests"])
        if (q["error"].is_string()) {
            EXPECT_NE(q["error"].get<std::string>().find("has stopped"), std::string::npos)
                << q["error"];
            ++stopped;
        }
    EXPECT_GT(stopped, 0);
    EXPECT_TRUE(processes_with(model).empty());
    kill_all(processes_with(model));
}

// decompose --mode's runs are children run to completion (core/subprocess.hpp): in a process
// group of their own, which a Ctrl-C at the terminal does not reach, yet killed with stagebench.
TEST(Signals, SigkillOfStagebenchLeavesNoDecomposeModeRunBehind) {
    TempDir t;
    const std::string model = marked_model(t);
    // -q and a prompt of 16000 tokens: the child writes nothing for many seconds, so only the
    // kernel's death signal ends it (a writing child dies of SIGPIPE on its closed pipe).
    pid_t pid = spawn_bg({stagebench_bin(), "decompose", "-m", model, "--mode", "a=", "--mode",
                          "b=", "-r", "50", "-n", "4", "-p", "16000", "-t", "1", "-q"},
                         t.file("log"));
    const bool started = wait_for([&] { return !processes_with(model, pid).empty(); }, 60);
    EXPECT_TRUE(started) << read_file(t.file("log.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the child in its prefill
    EXPECT_EQ(signal_and_wait(pid, SIGKILL, 30), 128 + SIGKILL);
    const bool gone = wait_for([&] { return processes_with(model).empty(); }, 10);
    EXPECT_TRUE(gone) << read_file(t.file("log.err"));
    kill_all(processes_with(model));
}

// fidelity over a model llama.cpp refuses beside a good one: bad input, as run says it (exit 2,
// one line), the good model's variant measured and kept in --out. It used to exit 1.
TEST(ExitCodes, FidelityWithABadModelAmongGoodOnesIsExit2KeepingTheGoodOnes) {
    TempDir t;
    const std::string bad = t.file("bogus_arch.gguf");
    namespace tg = sb::testing_gguf;
    tg::write_mutated(
        tiny_model(), bad,
        {"bogus arch",
         [](auto& kv) { tg::set_kv(kv, "general.architecture", std::string("bogus")); },
         {}});
    const std::string out = t.file("f.json");
    Proc p = run_sb({"fidelity", "-m", tiny_model() + "," + bad, "-p", "8", "-n", "2", "-r", "1",
                     "-t", "1", "--out", out},
                    300);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    std::size_t errors = 0;
    for (size_t at = 0; (at = p.err.find("stagebench: error: ", at)) != std::string::npos; ++at)
        ++errors;
    EXPECT_EQ(errors, 1u) << p.err;
    EXPECT_NE(p.err.find("unknown model architecture: 'bogus'"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("1 of 2 variants failed on it; the others ran and are kept"),
              std::string::npos)
        << p.err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["fidelity"]["variants"].size(), 2u) << doc["fidelity"].dump();
    EXPECT_TRUE(doc["fidelity"]["variants"][0]["error"].is_null());
    EXPECT_TRUE(doc["fidelity"]["variants"][0]["decode_tokens_per_s"].is_number());
    EXPECT_TRUE(doc["fidelity"]["variants"][1]["error"].is_string());
}

// Seeded fuzz: a signal (SIGINT, SIGTERM, SIGHUP, or SIGINT twice) at a random moment of each
// long command on the marked model. Each ends within 20 s of it with the interrupt's exit code
// (1; a second SIGINT may end it by the signal; 0 or 1 when it finished first), never another
// signal (a crash) nor a hang, with at most one error line, and leaves no child behind.
TEST(Signals, SignalsAtRandomPointsOfEveryLongCommand) {
    FuzzRun fuzz(40);
    std::mt19937_64 rng(fuzz.seed());
    TempDir t;
    const std::string model = marked_model(t);
    const std::vector<std::vector<std::string>> commands = {
        {"run", "-m", model, "-p", "64", "-n", "256", "-r", "20", "-t", "1"},
        {"ops", "-m", model, "-p", "32", "--decode-tokens", "256", "-t", "1"},
        {"decompose", "-m", model, "-p", "32", "--decode-tokens", "256", "-t", "1"},
        {"decompose", "-m", model, "--mode", "a=", "--mode", "b=", "-r", "20", "-p", "32", "-n",
         "64", "-t", "1"},
        {"sustained", "-m", model, "--prompt-tokens", "32", "--max-tokens", "64", "--rounds",
         "1000", "--idle", "0", "-t", "1"},
        {"serve", "-m", model, "--concurrency", "1", "--requests", "1000", "-p", "8", "-n", "8"},
    };
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, 0};  // 0: SIGINT twice
    for (const auto& cmd : commands) {
        const int sig = sigs[rng() % 4];
        const int delay_ms = static_cast<int>(200 + rng() % 4000);
        fuzz.next_case();
        SCOPED_TRACE(cmd[0] + " " + cmd[3] + ": signal " + std::to_string(sig) + " after " +
                     std::to_string(delay_ms) + " ms");
        std::vector<std::string> argv{stagebench_bin()};
        argv.insert(argv.end(), cmd.begin(), cmd.end());
        argv.insert(argv.end(), {"--out", t.file("out.json")});
        const pid_t pid = spawn_bg(argv, t.file("log"));
        // The delay counts from when the command handles signals: on a loaded machine the
        // start-up (loading libllama and its modules) can outlast 200 ms, and a signal before
        // the handlers are in ends any program by the default action (exit 130 on CI once).
        const int want = sig ? sig : SIGINT;
        ASSERT_TRUE(wait_for([&] { return signal_caught(pid, want); }, 30))
            << read_file(t.file("log.err"));
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        kill(pid, want);
        if (!sig)
            kill(pid, SIGINT);
        const auto start = std::chrono::steady_clock::now();
        const int rc = wait_exit(pid, 20);
        EXPECT_LT(seconds_since(start), 20);
        if (sig)
            EXPECT_TRUE(rc == 1 || rc == 0) << rc << "\n" << read_file(t.file("log.err"));
        else
            EXPECT_TRUE(rc == 1 || rc == 0 || rc == 128 + SIGINT) << rc << "\n"
                                                                  << read_file(t.file("log.err"));
        const std::string err = read_file(t.file("log.err"));
        std::size_t errors = 0;
        for (size_t at = 0; (at = err.find("stagebench: error: ", at)) != std::string::npos; ++at)
            ++errors;
        EXPECT_LE(errors, 1u) << err;
        const bool gone = wait_for([&] { return processes_with(model).empty(); }, 10);
        EXPECT_TRUE(gone) << "a child outlived stagebench\n" << err;
        kill_all(processes_with(model));
    }
}
