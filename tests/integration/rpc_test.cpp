// A real ggml RPC server on loopback as a device: layers offloaded over TCP.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"
#include "engine/process.hpp"

using nlohmann::json;
using namespace sbtest;

TEST(Rpc, RunOffloadsToALoopbackRpcServer) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    Proc p = sbtest::run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "2", "--rpc",
                             ep, "--device", "CPU,RPC0", "--membw", "off", "-o", "json", "-q"});
    server.stop(SIGTERM);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    ASSERT_EQ(doc["tests"].size(), 2u);
    EXPECT_EQ(doc["tests"][1]["config"]["devices"], "RPC0");
    EXPECT_EQ(doc["tests"][1]["backends"], json::array({"RPC0", "CPU"}));
    EXPECT_EQ(doc["tests"][1]["status"], "ok");
    EXPECT_EQ(doc["tests"][1]["decode"]["token_latency_ns"].size(), 8u);
}

TEST(Rpc, DevicesListsAnRpcServer) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    Proc p = sbtest::run_sb({"devices", "--rpc", server.endpoint()});
    server.stop(SIGTERM);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| CPU |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| RPC0 |"), std::string::npos) << p.out;
}

TEST(Rpc, AServerThatDiesMidRunIsOneLineAndKeepsEarlierTests) {
    TempDir t;
    RpcServer server(t);
    ASSERT_TRUE(server.ready);
    const std::string out = t.file("r.json");
    // Two RPC tests: the first completes (kept on disk), the server dies during the second.
    pid_t run = spawn_bg(
        {stagebench_bin(), "run", "-m", tiny_model(), "-p", "16,32", "-n", "128", "-r", "20",
         "--rpc", server.endpoint(), "--device", "RPC0", "--membw", "off", "--out", out, "-q"},
        t.file("run.log"));
    for (int i = 0; i < 3000; ++i) {
        try {
            if (json::parse(read_file(out))["tests"].size() == 1)
                break;
        } catch (...) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server.stop(SIGKILL);
    const int rc = wait_exit(run, 120);
    EXPECT_EQ(rc, 1);
    const std::string err = read_file(t.file("run.log.err"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(err.rfind("stagebench: error: ", 0), 0u) << err;
    json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 1u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
}
