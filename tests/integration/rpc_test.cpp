// RPC servers on loopback as devices: the server started as the README shows, llama.cpp's own
// server, servers that die mid-run, and endpoints that are not (working) RPC servers.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "engine/process.hpp"
#include "fault_server.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

// Waits until the document at path holds at least n entries under the JSON pointer ptr.
void wait_for_entries(const std::string& path, const std::string& ptr, size_t n) {
    for (int i = 0; i < 6000; ++i) {
        try {
            if (json::parse(read_file(path)).at(json::json_pointer(ptr)).size() >= n)
                return;
        } catch (...) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// One line on stderr, exit 2, nothing measured: what bad input gets.
void expect_bad_rpc_server(const Proc& p, const std::string& endpoint, const std::string& why) {
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: RPC server " + endpoint, 0), 0u) << p.err;
    EXPECT_NE(p.err.find(why), std::string::npos) << p.err;
    EXPECT_TRUE(p.out.empty()) << p.out;
}

// Two tests on RPC0 (pp16 then pp32, the same model placement), one client thread: the server
// is stopped as soon as the first is in --out, so the stop meets the second, whatever the
// machine's speed (its first call to the server fails).
std::vector<std::string> two_tests(const std::string& endpoint, const std::string& out) {
    return {stagebench_bin(),
            "run",
            "-m",
            tiny_model(),
            "-p",
            "16,32",
            "-n",
            "32",
            "-r",
            "5",
            "-t",
            "1",
            "--rpc",
            endpoint,
            "--device",
            "RPC0",
            "--membw",
            "off",
            "--out",
            out,
            "-q"};
}

// The document of two_tests() in --out and in the store: the first test ok, the second failed
// because the server at ep went away, its error holding why.
void expect_second_test_failed(const std::string& out, const std::string& db, const std::string& ep,
                               const std::string& why) {
    auto check = [&](const json& doc) {
        ASSERT_EQ(doc["tests"].size(), 2u) << doc["tests"].dump();
        EXPECT_EQ(doc["tests"][0]["status"], "ok");
        const json& failed = doc["tests"][1];
        EXPECT_EQ(failed["status"], "failed");
        EXPECT_EQ(failed["stopped_by"], "error");
        EXPECT_EQ(failed["config"]["n_prompt"], 32);
        const std::string error = failed["error"].get<std::string>();
        EXPECT_EQ(error.rfind("RPC server " + ep + " went away during ", 0), 0u) << error;
        EXPECT_NE(error.find(why), std::string::npos) << error;
    };
    SCOPED_TRACE("--out");
    check(json::parse(read_file(out)));
    Proc stored = run_sb({"db", "export", "--db", db, "1"});
    ASSERT_EQ(stored.exit_code, 0) << stored.err;
    SCOPED_TRACE("--db");
    check(json::parse(stored.out));
}

std::vector<std::string> rpc_run_args(const std::string& endpoint) {
    return {"run", "-m",    tiny_model(), "-p",       "8",    "-n",      "2",   "-r",
            "1",   "--rpc", endpoint,     "--device", "RPC0", "--membw", "off", "-q"};
}

}  // namespace

// `stagebench rpc-server -p PORT` offers the CPU: llama.cpp's rpc-server without -d offers the
// BLAS module of this build and stops on the first graph.
TEST(Rpc, TheServerAsTheReadmeStartsItServesRunOpsAndHybrid) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    Proc run = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "2", "--rpc", ep,
                       "--device", "CPU,RPC0", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    json doc = json::parse(run.out);
    ASSERT_EQ(doc["tests"].size(), 2u);
    EXPECT_EQ(doc["tests"][1]["config"]["devices"], "RPC0");
    EXPECT_EQ(doc["tests"][1]["backends"], json::array({"RPC0", "CPU"}));
    EXPECT_EQ(doc["tests"][1]["status"], "ok");
    EXPECT_EQ(doc["tests"][1]["decode"]["token_latency_ns"].size(), 8u);

    Proc ops =
        run_sb({"ops",      "-m",           tiny_model(), "-p",     "16",       "--rpc", ep,
                "--device", "RPC0",         "--stage",    "decode", "--replay", "2",     "--reps",
                "1",        "--plain-reps", "1",          "-o",     "json",     "-q"});
    ASSERT_EQ(ops.exit_code, 0) << ops.err;
    doc = json::parse(ops.out);
    ASSERT_FALSE(doc["ops"]["stages"].empty());
    EXPECT_FALSE(doc["ops"]["stages"][0]["ops"].empty());

    Proc hybrid = run_sb({"hybrid", "-m", tiny_model(), "--decode-device", "RPC0", "--rpc", ep,
                          "-p", "16", "-n", "4", "-r", "2", "-o", "json", "-q"});
    ASSERT_EQ(hybrid.exit_code, 0) << hybrid.err;
    doc = json::parse(hybrid.out);
    ASSERT_EQ(doc["tests"].size(), 3u);
    for (const auto& test : doc["tests"])
        EXPECT_EQ(test["status"], "ok") << test.dump();
}

// The README's alternative: llama.cpp's own server, told to offer the CPU.
TEST(Rpc, LlamaCppsOwnServerWithTheCpuDeviceServesRun) {
    TempDir t;
    RpcServer server(t, {}, /*llama_peer=*/true);
    ASSERT_TRUE(server.ready);
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "--rpc",
                     server.endpoint(), "--device", "RPC0", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(json::parse(p.out)["tests"][0]["status"], "ok");
}

TEST(Rpc, DevicesListsAnRpcServer) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    Proc p = run_sb({"devices", "--rpc", server.endpoint()});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| CPU |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| RPC0 |"), std::string::npos) << p.out;
}

TEST(Rpc, RpcServerBadInputIsOneLine) {
    const std::string port = std::to_string(::sb::free_loopback_port());
    Proc p = run_sb({"rpc-server", "-p", port, "-d", "NOPE0"}, 60);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("unknown device 'NOPE0' (available: CPU"), std::string::npos) << p.err;

    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    p = run_sb({"rpc-server", "-p", std::to_string(server.port)}, 60);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(line_count(p.err), 1u) << p.err;
    EXPECT_NE(p.err.find("cannot listen on 127.0.0.1:" + std::to_string(server.port)),
              std::string::npos)
        << p.err;
}

// A server killed during the second test: the first test and the failed second one, with its
// error, are in --out and in --db; one line, exit 1.
TEST(Rpc, AServerThatDiesMidRunLeavesTheFailedTestInOutAndDb) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    const std::string out = t.file("r.json"), db = t.file("r.db");
    auto args = two_tests(ep, out);
    args.insert(args.end(), {"--db", db});
    pid_t run = spawn_bg(args, t.file("run.log"));
    wait_for_entries(out, "/tests", 1);
    server.stop(SIGKILL);
    EXPECT_EQ(wait_exit(run, 120), 1);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(line_count(err), 1u) << err;
    EXPECT_EQ(err.rfind("stagebench: error: test pp32+tg32 on RPC0 failed: RPC server " + ep, 0),
              0u)
        << err;
    EXPECT_NE(err.find("1 earlier test(s) kept in " + out), std::string::npos) << err;

    expect_second_test_failed(out, db, ep, "llama.cpp: Remote RPC server crashed");
}

// A server that stops answering in the middle of a run (suspended: the connection stays open,
// nothing comes back) would leave llama.cpp's RPC client waiting forever. With
// --stage-timeout 3 the stage watchdog ends the run: the first test and the failed second one,
// with what happened, in --out and --db; one line, exit 1.
TEST(Rpc, AServerThatStopsAnsweringMidRunEndsAtTheStageTimeout) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    const std::string out = t.file("r.json"), db = t.file("r.db");
    auto args = two_tests(ep, out);
    args.insert(args.end(), {"--db", db, "--stage-timeout", "3"});
    pid_t run = spawn_bg(args, t.file("run.log"));
    wait_for_entries(out, "/tests", 1);
    ASSERT_EQ(kill(server.pid, SIGSTOP), 0);
    const int code = wait_exit(run, 90);
    kill(server.pid, SIGCONT);
    EXPECT_EQ(code, 1);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(line_count(err), 1u) << err;
    EXPECT_EQ(err.rfind("stagebench: error: test pp32+tg32 on RPC0 failed: RPC server " + ep, 0),
              0u)
        << err;
    // The server stops as the second test begins: in its load (10x the timeout) or, when the
    // load was quicker than this test's reaction, in a later stage (the timeout itself).
    EXPECT_TRUE(err.find("loading the model did not finish within 30 s (--stage-timeout") !=
                    std::string::npos ||
                err.find("did not finish within 3 s (--stage-timeout") != std::string::npos)
        << err;
    EXPECT_NE(err.find("1 earlier test(s) kept in " + out), std::string::npos) << err;
    expect_second_test_failed(out, db, ep, "it no longer answers");
}

// Ctrl-C while the stage waits on a server that stopped answering: the run does not wait for
// the stage (default --stage-timeout, far away) but ends a few seconds after the signal,
// keeping the first test.
TEST(Rpc, CtrlCEndsARunWaitingOnAServerThatStoppedAnswering) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string out = t.file("r.json");
    pid_t run = spawn_bg(two_tests(server.endpoint(), out), t.file("run.log"));
    wait_for_entries(out, "/tests", 1);
    ASSERT_EQ(kill(server.pid, SIGSTOP), 0);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    kill(run, SIGINT);
    const int code = wait_exit(run, 60);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    kill(server.pid, SIGCONT);
    EXPECT_EQ(code, 1);
    EXPECT_LT(took, 30) << "the run waited for the stuck stage";
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(line_count(err), 1u) << err;
    EXPECT_NE(err.find("interrupted (Ctrl-C) while "), std::string::npos) << err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 2u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_EQ(doc["tests"][1]["status"], "failed");
}

// The connection breaks but the server lives on: the error says so. The client's socket is
// destroyed with `ss -K` (root and a kernel with socket destroy, else the test is skipped).
TEST(Rpc, ABrokenConnectionToALiveServerIsRecordedAsSuch) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});  // the client has one thread, the server the other core
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    const std::string out = t.file("r.json");
    pid_t run = spawn_bg(two_tests(ep, out), t.file("run.log"));
    wait_for_entries(out, "/tests", 1);
    Proc ss = sbtest::run({"/bin/ss", "-K", "-4", "dst", "127.0.0.1", "dport", "=",
                           std::string(":") + std::to_string(server.port)},
                          30);
    if (ss.exit_code != 0 || ss.out.find(ep) == std::string::npos) {
        kill(run, SIGKILL);
        wait_exit(run, 30);
        GTEST_SKIP() << "ss -K cannot destroy sockets here: " << ss.err;
    }
    EXPECT_EQ(wait_exit(run, 120), 1);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(line_count(err), 1u) << err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 2u);
    EXPECT_EQ(doc["tests"][1]["status"], "failed");
    const std::string error = doc["tests"][1]["error"].get<std::string>();
    EXPECT_EQ(error.rfind(std::string("RPC server ") + ep +
                              " broke the connection or sent a malformed reply during ",
                          0),
              0u)
        << error;
    EXPECT_NE(error.find(", and answers a new connection (llama.cpp: "), std::string::npos)
        << error;
}

TEST(Rpc, AServerThatDiesDuringASustainedRunLeavesTheFailedRound) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    const std::string out = t.file("s.json");
    pid_t run = spawn_bg({stagebench_bin(),
                          "sustained",
                          "-m",
                          tiny_model(),
                          "-t",
                          "1",
                          "--rounds",
                          "50",
                          "--prompt-tokens",
                          "32",
                          "--max-tokens",
                          "64",
                          "--cooldown",
                          "0",
                          "--telemetry",
                          "off",
                          "--rpc",
                          ep,
                          "--device",
                          "RPC0",
                          "--out",
                          out,
                          "-q"},
                         t.file("s.log"));
    wait_for_entries(out, "/sustained/phases/0/rounds", 2);
    server.stop(SIGKILL);
    EXPECT_EQ(wait_exit(run, 120), 1);
    const std::string err = read_file(t.file("s.log.err"));
    EXPECT_EQ(line_count(err), 1u) << err;
    EXPECT_NE(err.find("failed: RPC server " + ep), std::string::npos) << err;
    const json doc = json::parse(read_file(out));
    const json& rounds = doc["sustained"]["phases"][0]["rounds"];
    ASSERT_GE(rounds.size(), 3u);
    for (size_t i = 0; i + 1 < rounds.size(); ++i)
        EXPECT_EQ(rounds[i]["status"], "ok") << i;
    EXPECT_EQ(rounds.back()["status"], "failed");
    EXPECT_NE(rounds.back()["error"].get<std::string>().find("RPC server " + ep),
              std::string::npos);
    EXPECT_EQ(doc["tests"].size(), rounds.size());
    EXPECT_EQ(doc["tests"].back()["status"], "failed");
}

// The ops profile is one measurement: a server that dies during it leaves a line naming it.
TEST(Rpc, AServerThatDiesDuringOpsIsOneLineNamingIt) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    pid_t run =
        spawn_bg({stagebench_bin(), "ops",  "-m", tiny_model(), "-p",       "64", "--rpc",  ep,
                  "--device",       "RPC0", "-t", "1",          "--replay", "64", "--reps", "20",
                  "--plain-reps",   "20",   "-o", "json"},
                 t.file("ops.log"));
    for (int i = 0; i < 6000; ++i) {
        if (read_file(t.file("ops.log.err")).find("tracing node by node") != std::string::npos)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server.stop(SIGKILL);
    EXPECT_EQ(wait_exit(run, 120), 1);
    const std::string err = read_file(t.file("ops.log.err"));
    const size_t last = err.rfind('\n', err.size() - 2);
    const std::string line = err.substr(last == std::string::npos ? 0 : last + 1);
    EXPECT_EQ(line.rfind("stagebench: error: the ops profile on RPC0 failed: RPC server " + ep +
                             " went away: it no longer ",
                         0),
              0u)
        << err;
}

// Endpoints that are not working RPC servers are bad input, found before anything is measured,
// within the probe's deadline (3 s per wait).
TEST(Rpc, AServerThatAcceptsAndNeverAnswersIsBadInput) {
    RawFaultServer silent([](FaultConn& c) { c.wait_until_stopped(); });
    const auto start = std::chrono::steady_clock::now();
    expect_bad_rpc_server(run_sb(rpc_run_args(silent.endpoint()), 60), silent.endpoint(),
                          "did not answer the RPC hello within 3000 ms");
    expect_bad_rpc_server(run_sb({"devices", "--rpc", silent.endpoint()}, 60), silent.endpoint(),
                          "did not answer");
    // Each waits one deadline; a hang would take the 60 s timeout.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// A server that passes the probe (hello and device count on the first connection) and then
// fails llama.cpp's own connection: registering its devices is a setup step with a deadline
// of its own (kRpcSetupBudgetS, 15 s) and llama.cpp's stop during it is the server's fault.
// Either way the server is bad input, like one that never answered, in devices and run alike.
std::string hello_reply() {
    std::string r;
    const uint64_t size = 28;  // protocol 6.0.0, no connection capabilities
    r.append(reinterpret_cast<const char*>(&size), 8);
    return r + std::string("\x06\x00\x00\x00", 4) + std::string(24, '\0');
}

std::function<void(FaultConn&)> passes_the_probe_then(std::string then) {
    auto n = std::make_shared<std::atomic<int>>(0);
    return [n, then](FaultConn& c) {
        const bool probe = n->fetch_add(1) % 2 == 0;  // each command probes, then llama.cpp
        std::string bytes = hello_reply();
        if (probe) {
            const uint64_t size = 4;
            const uint32_t count = 1;
            bytes.append(reinterpret_cast<const char*>(&size), 8);
            bytes.append(reinterpret_cast<const char*>(&count), 4);
        } else {
            bytes += then;
        }
        c.send(bytes);
        c.wait_until_stopped();
    };
}

// An environment variable for the commands this test process runs, restored at destruction.
struct ScopedEnv {
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name))
            old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }
    const char* name_;
    std::optional<std::string> old_;
};

// The registration's budget is 15 s (engine/backends_test.cpp: RpcSetupBudget);
// STAGEBENCH_RPC_SETUP_S=2 shortens it here, so that both commands reach the watchdog's end in
// seconds. Had either command kept 15 s, the two would take 30 s and say so.
TEST(Rpc, AServerThatAnswersTheHelloAndThenStopsIsBadInput) {
    RawFaultServer half(passes_the_probe_then(""));
    ScopedEnv budget("STAGEBENCH_RPC_SETUP_S", "2");
    const auto start = std::chrono::steady_clock::now();
    expect_bad_rpc_server(run_sb({"devices", "--rpc", half.endpoint()}, 60), half.endpoint(),
                          "answered the hello, but registering its devices did not finish "
                          "within 2 s: the device stopped answering");
    expect_bad_rpc_server(run_sb(rpc_run_args(half.endpoint()), 60), half.endpoint(),
                          "did not finish within 2 s");
    EXPECT_EQ(half.connections(), 4);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(25));
}

// A budget that is not a number of seconds is one line of bad input before any connection.
TEST(Rpc, ABadRegistrationBudgetIsBadInputBeforeAnyConnection) {
    RawFaultServer half(passes_the_probe_then(""));
    ScopedEnv budget("STAGEBENCH_RPC_SETUP_S", "0");
    const Proc p = run_sb({"devices", "--rpc", half.endpoint()}, 60);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(p.err,
              "stagebench: error: STAGEBENCH_RPC_SETUP_S='0' is not a number of seconds more than "
              "0 to 86400\n");
    EXPECT_EQ(half.connections(), 0);
}

TEST(Rpc, AServerThatAnswersTheHelloAndThenSendsGarbageIsBadInput) {
    RawFaultServer half(passes_the_probe_then(std::string(64, '\xab')));
    expect_bad_rpc_server(run_sb({"devices", "--rpc", half.endpoint()}, 60), half.endpoint(),
                          "answered the hello, but registering its devices failed: ");
    expect_bad_rpc_server(run_sb(rpc_run_args(half.endpoint()), 60), half.endpoint(),
                          "registering its devices failed: ");
}

TEST(Rpc, AServerThatSendsGarbageIsBadInput) {
    RawFaultServer garbage([](FaultConn& c) {
        c.send(std::string(64, '\xab'));
        c.wait_until_stopped();
    });
    expect_bad_rpc_server(run_sb(rpc_run_args(garbage.endpoint()), 60), garbage.endpoint(),
                          "does not speak the ggml RPC protocol");
    expect_bad_rpc_server(run_sb({"hybrid", "-m", tiny_model(), "--decode-device", "RPC0", "--rpc",
                                  garbage.endpoint(), "-p", "8", "-n", "2", "-q"},
                                 60),
                          garbage.endpoint(), "does not speak the ggml RPC protocol");
}

TEST(Rpc, AServerThatClosesAtOnceIsBadInput) {
    RawFaultServer closing([](FaultConn&) {});
    expect_bad_rpc_server(run_sb(rpc_run_args(closing.endpoint()), 60), closing.endpoint(),
                          "closed the connection during RPC hello");
    expect_bad_rpc_server(
        run_sb({"ops", "-m", tiny_model(), "--rpc", closing.endpoint(), "--device", "RPC0", "-q"},
               60),
        closing.endpoint(), "closed the connection");
}
