// `stagebench import llama-server-log` on a real llama-server's log: the server started as
// docs/serve.md tells a user to start one for --url (loopback, one slot, no web UI), its stderr
// kept in a file, `serve` measuring requests against it; the log then imported. The imported
// requests are the ones serve measured: their counts exactly the counts serve kept, their times
// the server's claims serve kept (to the log's 0.01 ms) and within what serve's clock saw. The
// imported document is taken by report and compare like a run's. Bad files: one error line.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_harness.hpp"
#include "engine/http_client.hpp"
#include "engine/process.hpp"

namespace {

using nlohmann::json;
using namespace sbtest;

// Waits for the server's /health; false when it never answers.
bool healthy(const std::string& url) {
    ::sb::HttpClient c(url, ::sb::HttpTimeouts{2000, 5000});
    for (int i = 0; i < 1200; ++i) {
        try {
            if (c.get("/health").status == 200)
                return true;
        } catch (const std::exception&) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

TEST(ServerLogImport, TheRealServersLogAgreesWithWhatServeMeasured) {
    TempDir t;
    const int port = ::sb::free_loopback_port();
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    // spawn_bg writes the server's stdout to server.out and its stderr, where llama-server
    // logs (a user's `2> server.log`), to server.out.err.
    const std::string log = t.file("server.out") + ".err";
    const pid_t pid =
        spawn_bg({peer("llama-server"), "-m", tiny_model(), "--host", "127.0.0.1", "--port",
                  std::to_string(port), "-c", "1024", "-np", "1", "-t", "1", "--no-webui"},
                 t.file("server.out"));
    ASSERT_TRUE(::sb::wait_for_port("127.0.0.1", port, 60000));
    ASSERT_TRUE(healthy(url)) << read_file(log);
    const int n = 5;
    const Proc s =
        run_sb({"serve", "--url", url, "--concurrency", "1", "--requests", std::to_string(n), "-p",
                "16", "-n", "8", "-o", "json", "--out", t.file("serve.json")},
               300);
    // Stopped before its log is read: every line written.
    EXPECT_EQ(signal_and_wait(pid, SIGTERM), 0);
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json serve = json::parse(s.out);
    const json& reqs = serve["serve"]["points"][0]["requests"];
    ASSERT_EQ(reqs.size(), static_cast<size_t>(n));

    const std::string out = t.file("imported.json");
    const Proc p = run_sb({"import", "llama-server-log", log, "--out", out, "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.err, "");
    const json doc = json::parse(read_file(out));
    EXPECT_EQ(json::parse(p.out), doc);
    EXPECT_EQ(doc["command"], "import");
    EXPECT_EQ(doc["import"]["tool"], "llama-server-log");
    EXPECT_EQ(doc["import"]["files"][0]["variant"], "print_timings");
    EXPECT_EQ(doc["import"]["files"][0]["skipped"], 0);
    EXPECT_EQ(doc["models"][0]["path"], tiny_model());
    // Every request the log finished, in its order: serve's measured ones are the last n (the
    // requests before its clock, which size its prompts, come first).
    std::vector<json> rows;
    for (const auto& test : doc["tests"]) {
        EXPECT_EQ(test["config"]["engine"], "http");
        for (const auto& r : test["import"]["rows"])
            rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
        return a["line"].get<int64_t>() < b["line"].get<int64_t>();
    });
    ASSERT_GE(rows.size(), static_cast<size_t>(n));
    EXPECT_EQ(doc["import"]["files"][0]["rows"], rows.size());
    const size_t first = rows.size() - n;
    for (int i = 0; i < n; ++i) {
        SCOPED_TRACE(i);
        const json& q = reqs[static_cast<size_t>(i)];
        const json& r = rows[first + static_cast<size_t>(i)];
        ASSERT_TRUE(q.contains("server_claim")) << q;
        const json& c = q["server_claim"];
        EXPECT_EQ(c["source"], "llama-server");
        EXPECT_TRUE(c["disagreements"].empty()) << c;
        // Counts exactly: the log's, the server's claim that serve kept, serve's own count.
        const int64_t prompt = std::stoll(r["fields"]["prompt_eval_tokens"].get<std::string>());
        const int64_t gen = std::stoll(r["fields"]["eval_tokens"].get<std::string>());
        EXPECT_EQ(prompt, c["prompt_n"]);
        EXPECT_EQ(prompt + c["cache_n"].get<int64_t>(), q["prompt_tokens"]);
        EXPECT_EQ(gen, c["predicted_n"]);
        EXPECT_EQ(gen, q["output_tokens"]);
        EXPECT_EQ(gen, 8);
        // Times: the log's two decimals of the claim serve received, and within serve's clock.
        const double prompt_ns = std::stod(r["fields"]["prompt_eval_ms"].get<std::string>()) * 1e6;
        const double eval_ns = std::stod(r["fields"]["eval_ms"].get<std::string>()) * 1e6;
        EXPECT_NEAR(prompt_ns, c["prompt_ns"].get<double>(), 5001);
        EXPECT_NEAR(eval_ns, c["predicted_ns"].get<double>(), 5001);
        const double ttft = q["ttft_ns"].get<double>(), e2e = q["e2e_ns"].get<double>();
        EXPECT_LE(prompt_ns, ttft + 1e6 + 0.01 * ttft);
        EXPECT_LE(prompt_ns + eval_ns, e2e + 1e6 + 0.01 * e2e);
    }
    // A result document like a run's: report and compare take it.
    const Proc html = run_sb({"report", out, "-o", t.file("r.html")});
    EXPECT_EQ(html.exit_code, 0) << html.err;
    EXPECT_TRUE(std::filesystem::exists(t.file("r.html")));
    const Proc cmp = run_sb({"compare", out, out, "--match", "p,n"});
    EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
    EXPECT_NE(cmp.out.find("prefill t/s"), std::string::npos) << cmp.out;
}

TEST(ServerLogImport, BadFilesAreOneErrorLine) {
    TempDir t;
    const std::string empty = t.file("empty.log");
    std::ofstream(empty) << "main: server is listening on http://127.0.0.1:8080\n";
    const Proc p = run_sb({"import", "llama-server-log", empty});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_EQ(p.err, "stagebench: error: '" + empty +
                         "': no complete request timings found (1 lines; looked for "
                         "llama-server's print_timing lines and llama_perf_context_print's)\n");
    const Proc missing = run_sb({"import", "llama-server-log", t.file("none.log")});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
}

}  // namespace
