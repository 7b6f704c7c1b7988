// `stagebench serve`'s measurements through the real binary against the fault server: latency
// CIs and the saturation verdict in the document and the Markdown, workload shapes (ranges, a
// CSV of lengths, --duration), energy from a fixture sysfs tree, and Ctrl-C keeping what was
// collected.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_harness.hpp"
#include "fault_server.hpp"

namespace {

using namespace sbtest;
using nlohmann::json;

// Streams exactly the max_tokens asked for (the prompt calibration before the clock asks for
// fewer than the measured requests).
void answer_tokens(const HttpRequest& req, FaultConn& c) {
    const int n = req.json().value("max_tokens", 1);
    c.begin_chunked(200, "text/event-stream");
    for (int i = 0; i < n; ++i)
        c.chunk(sse_text("t"));
    c.chunk(sse_final(8, n));
    c.end_chunked();
}

TEST(ServeMeasure, CisAndSaturationInTheDocumentAndTheMarkdown) {
    FaultServer server([](const HttpRequest& req, FaultConn& c) {
        if (!answer_discovery(req, c))
            answer_tokens(req, c);
    });
    TempDir t;
    Proc p = run_sb({"serve", "--url", server.url(), "--concurrency", "1,2", "--requests", "6",
                     "-p", "8", "-n", "3", "--slo", "ttft=60s", "--telemetry", "off", "--out",
                     t.file("s.json")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("Latency in ms with seeded bootstrap 95 % CIs"), std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("\nSaturation: "), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("the highest concurrency meeting the SLOs (90 % of requests) is 2"),
              std::string::npos)
        << p.out;
    const json d = json::parse(read_file(t.file("s.json")))["serve"];
    for (const auto& pt : d["points"]) {
        for (const char* m : {"ttft", "tpot", "itl", "e2e"}) {
            const json& s = pt[m];
            for (const char* k : {"mean", "median", "p90", "p99"}) {
                const json& ci = s[std::string(k) + "_ci95_ms"];
                ASSERT_TRUE(ci.is_array()) << m << " " << k << " " << s;
                const double v = s[std::string(k) + "_ms"].get<double>();
                EXPECT_LE(ci[0].get<double>(), v) << m << " " << k;
                EXPECT_GE(ci[1].get<double>(), v) << m << " " << k;
            }
        }
        EXPECT_EQ(pt["window_tokens_per_s"].size(), 10u);
        EXPECT_DOUBLE_EQ(pt["slo_attainment"].get<double>(), 1.0);
        EXPECT_TRUE(pt["client_cpu_ms_per_request"].is_number());
    }
    const json& sat = d["saturation"];
    ASSERT_EQ(sat["steps"].size(), 1u);
    EXPECT_EQ(sat["steps"][0]["from"], 1.0);
    EXPECT_TRUE(sat["steps"][0]["throughput_ratio"]["ci95"].is_array());
    EXPECT_EQ(sat["max_meeting_slo"], 2.0);
    EXPECT_TRUE(sat["verdict"].is_string());
}

TEST(ServeMeasure, LengthRangesAndACsvOfLengths) {
    FaultServer server([](const HttpRequest& req, FaultConn& c) {
        if (!answer_discovery(req, c))
            answer_tokens(req, c);
    });
    Proc p = run_sb({"serve", "--url", server.url(), "--concurrency", "2", "--requests", "16", "-p",
                     "8-16", "-n", "2-6", "--telemetry", "off", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    std::set<int> outs;
    const json doc = json::parse(p.out);  // kept: a loop over a member of a temporary dangles
    for (const auto& r : doc["serve"]["points"][0]["requests"]) {
        const int n = r["output_tokens"].get<int>();
        EXPECT_GE(n, 2);
        EXPECT_LE(n, 6);
        outs.insert(n);
    }
    EXPECT_GE(outs.size(), 2u);  // lengths vary (seeded: the same every run)

    TempDir t;
    std::ofstream(t.file("l.csv")) << "prompt,output\n8,3\n12,5\n";
    Proc q = run_sb({"serve", "--url", server.url(), "--concurrency", "1", "--requests", "4",
                     "--lengths", t.file("l.csv"), "--telemetry", "off", "-o", "json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const json reqs = json::parse(q.out)["serve"]["points"][0]["requests"];
    ASSERT_EQ(reqs.size(), 4u);
    for (const auto& r : reqs)
        EXPECT_EQ(r["output_tokens"], r["index"].get<int>() % 2 == 0 ? 3 : 5) << r;
}

TEST(ServeMeasure, DurationPerPoint) {
    FaultServer server([](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        c.sleep_ms(20);
        answer_tokens(req, c);
    });
    // Closed loop for 0.5 s and open loop at 10/s for 0.5 s, each with at most 1000 requests
    // (the default cap with --duration): 20 ms requests, two clients, could not send 1000.
    Proc p = run_sb({"serve", "--url", server.url(), "--concurrency", "2", "--duration", "500ms",
                     "-p", "8", "-n", "2", "--telemetry", "off", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json d = json::parse(p.out)["serve"];
    EXPECT_EQ(d["duration_s"], 0.5);
    const size_t n = d["points"][0]["requests"].size();
    EXPECT_GE(n, 2u);
    EXPECT_LT(n, 1000u);
    for (const auto& r : d["points"][0]["requests"])
        EXPECT_TRUE(r["error"].is_null()) << r;
    Proc q = run_sb({"serve", "--url", server.url(), "--rate", "10", "--duration", "500ms", "-p",
                     "8", "-n", "2", "--telemetry", "off", "-o", "json"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const json e = json::parse(q.out)["serve"];
    EXPECT_EQ(e["requests_per_point"], 1000);  // --duration's default cap
    for (const auto& r : e["points"][0]["requests"])
        EXPECT_LT(r["index"].get<int>(), 1000);
    EXPECT_LT(e["points"][0]["requests"].size(), 1000u);
}

// Energy from a Jetson's INA3221 fixture (VDD_IN, the whole-system meter): per request and per
// output token are the point's energy divided by its successful requests and output tokens.
TEST(ServeMeasure, EnergyPerRequestFromTheTelemetryTree) {
    FaultServer server([](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        c.sleep_ms(50);
        answer_tokens(req, c);
    });
    TempDir t;
    const auto root = t.path / "sys";
    std::filesystem::copy(
        std::filesystem::path(SB_SOURCE_DIR) / "tests/fixtures/telemetry/jetson-ina3221/sys", root,
        std::filesystem::copy_options::recursive);
    Proc p = run_sb({"serve",       "--url",       server.url(), "--concurrency",
                     "1,2",         "--requests",  "4",          "-p",
                     "8",           "-n",          "4",          "--sysfs-root",
                     root.string(), "--telemetry", "on",         "--telemetry-hz",
                     "100",         "--idle",      "0.2",        "-o",
                     "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    ASSERT_TRUE(doc["telemetry"].is_object());
    for (const auto& pt : doc["serve"]["points"]) {
        const json& e = pt["energy"];
        ASSERT_TRUE(e.is_object()) << pt.dump().substr(0, 400);
        EXPECT_NE(e["metric"].get<std::string>().find("VDD_IN"), std::string::npos) << e;
        const double j = e["energy_j"].get<double>();
        EXPECT_GT(j, 0);
        EXPECT_DOUBLE_EQ(e["j_per_request"].get<double>(), j / 4);
        EXPECT_DOUBLE_EQ(e["j_per_output_token"].get<double>(), j / 16);
        ASSERT_TRUE(e["net_energy_j"].is_number()) << e;
        EXPECT_DOUBLE_EQ(e["net_j_per_request"].get<double>(), e["net_energy_j"].get<double>() / 4);
        EXPECT_TRUE(e["idle_power_mw"].is_number());
    }
    Proc md =
        run_sb({"serve", "--url", server.url(), "--concurrency", "1", "--requests", "2", "-p", "8",
                "-n", "4", "--sysfs-root", root.string(), "--telemetry", "on", "--idle", "0.1"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| J/request | net J/request |"), std::string::npos) << md.out;
}

// Ctrl-C while requests hang: those answered stay, those in flight are kept as interrupted,
// the document is written and the exit code is 1.
TEST(ServeMeasure, CtrlCKeepsWhatWasCollected) {
    std::atomic<int> measured{0};
    FaultServer server([&](const HttpRequest& req, FaultConn& c) {
        if (answer_discovery(req, c))
            return;
        if (req.json().value("max_tokens", 1) != 4) {
            answer_tokens(req, c);  // the prompt calibration
            return;
        }
        if (measured++ < 3) {
            answer_tokens(req, c);
            return;
        }
        c.wait_until_stopped();  // silence
    });
    TempDir t;
    const std::string out = t.file("s.json");
    pid_t pid = spawn_bg(
        {stagebench_bin(), "serve", "--url", server.url(), "--concurrency", "2", "--requests", "8",
         "-p", "8", "-n", "4", "--timeout", "600", "--telemetry", "off", "--out", out},
        t.file("log"));
    for (int i = 0; i < 1500 && measured.load() < 5; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(measured.load(), 5) << read_file(t.file("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(signal_and_wait(pid, SIGINT, 30), 1) << read_file(t.file("log"));
    const json d = json::parse(read_file(out))["serve"];
    EXPECT_EQ(d["interrupted"], true);
    ASSERT_EQ(d["points"].size(), 1u);
    const json& pt = d["points"][0];
    EXPECT_EQ(pt["ok"], 3);
    EXPECT_EQ(pt["errors"], 0);
    EXPECT_EQ(pt["interrupted"], 2);
    ASSERT_EQ(pt["requests"].size(), 5u);
    int cut = 0;
    for (const auto& r : pt["requests"])
        cut += r["interrupted"].get<bool>();
    EXPECT_EQ(cut, 2);
    EXPECT_FALSE(pt["ttft"]["median_ms"].is_null());
}

TEST(ServeMeasure, BadShapesAreOneLineAndExitTwo) {
    TempDir t;
    std::ofstream(t.file("bad.csv")) << "8,3\nlots,5\n";
    std::ofstream(t.file("empty.csv")) << "prompt,output\n";
    const std::string url = "http://127.0.0.1:9";
    const std::vector<std::vector<std::string>> cases = {
        {"-p", "0"},
        {"-p", "16-8"},
        {"-p", "many"},
        {"-n", "3-"},
        {"-n", "1-99999999"},
        {"--lengths", t.file("missing.csv")},
        {"--lengths", t.file("bad.csv")},
        {"--lengths", t.file("empty.csv")},
        {"--duration", "0"},
        {"--duration", "soon"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> args = {"serve", "--url", url, "--concurrency", "1"};
        args.insert(args.end(), c.begin(), c.end());
        Proc p = run_sb(args);
        EXPECT_EQ(p.exit_code, 2) << c[0] << " " << c[1] << ": " << p.err;
        EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    }
    Proc p = run_sb({"serve", "--url", url, "--concurrency", "1", "--lengths", t.file("bad.csv")});
    EXPECT_NE(p.err.find("bad.csv:2: expected two token counts"), std::string::npos) << p.err;
}

}  // namespace
