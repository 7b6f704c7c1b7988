// `stagebench run` end to end on the real llama.cpp with a tiny synthetic model.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "cli_harness.hpp"
#include "core/result.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

double mean_of(const json& arr) {
    double s = 0;
    for (const auto& v : arr)
        s += v.get<double>();
    return s / arr.size();
}

}  // namespace

TEST(Run, VersionNamesTheLlamaBuild) {
    Proc p = run_sb({"--version"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("stagebench "), std::string::npos);
    EXPECT_NE(p.out.find("llama.cpp "), std::string::npos);
    EXPECT_NE(p.out.find("commit "), std::string::npos);
    EXPECT_NE(p.out.find("cpu"), std::string::npos) << p.out;
}

TEST(Run, WritesADocumentWhoseSummariesRecomputeFromRawSamples) {
    TempDir t;
    const std::string out = t.file("r.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "32", "-n", "8", "-r", "3", "-t", "2",
                     "--membw", "off", "--out", out, "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json stdout_doc = json::parse(p.out);
    json doc = json::parse(read_file(out));
    EXPECT_EQ(doc["tests"], stdout_doc["tests"]);
    EXPECT_EQ(doc["schema"], "stagebench.result");
    EXPECT_EQ(doc["schema_version"], sb::kResultSchemaVersion);
    EXPECT_TRUE(doc["models"][0]["synthetic"].get<bool>());
    ASSERT_EQ(doc["tests"].size(), 1u);
    const json& test = doc["tests"][0];
    EXPECT_EQ(test["status"], "ok");
    EXPECT_EQ(test["reps_done"], 3);
    const json& pre = test["prefill"];
    ASSERT_EQ(pre["duration_ns"].size(), 3u);
    EXPECT_NEAR(pre["duration"]["mean"].get<double>(), mean_of(pre["duration_ns"]),
                1e-6 * mean_of(pre["duration_ns"]));
    for (size_t i = 0; i < 3; ++i)
        EXPECT_NEAR(pre["tokens_per_s"][i].get<double>(),
                    32 * 1e9 / pre["duration_ns"][i].get<double>(), 1e-6);
    const json& dec = test["decode"];
    ASSERT_EQ(dec["token_latency_ns"].size(), 24u);
    EXPECT_EQ(dec["kv_depth_start"], 32);
    // A repetition's decode time is the sum of its token latencies.
    for (size_t r = 0; r < 3; ++r) {
        double sum = 0;
        for (size_t i = 0; i < 8; ++i)
            sum += dec["token_latency_ns"][r * 8 + i].get<double>();
        EXPECT_DOUBLE_EQ(sum, dec["duration_ns"][r].get<double>());
    }
    EXPECT_EQ(dec["itl"]["n"], 24);
    ASSERT_EQ(test["ttft_ns"].size(), 3u);
    EXPECT_GT(test["ttft_ns"][0].get<double>(), pre["duration_ns"][0].get<double>());
    EXPECT_FALSE(doc["system"]["cpu_model"].is_null());
}

TEST(Run, MatrixStreamsCsvAndJsonlRows) {
    Proc csv = run_sb({"run", "-m", tiny_model(), "-p", "16,32", "-n", "4", "-r", "1", "--membw",
                       "off", "-o", "csv", "-q"});
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5) << csv.out;  // header + 4
    EXPECT_NE(csv.out.find(",prefill,"), std::string::npos);
    EXPECT_NE(csv.out.find(",decode,"), std::string::npos);

    Proc jl = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-t", "1,2", "-r", "1",
                      "--membw", "off", "-o", "jsonl", "-q"});
    ASSERT_EQ(jl.exit_code, 0) << jl.err;
    std::istringstream lines(jl.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        json j = json::parse(line);
        EXPECT_EQ(j["status"], "ok");
        ++n;
    }
    EXPECT_EQ(n, 2);
}

TEST(Run, MarkdownIsTheDefaultAndLogsStayOnStderr) {
    Proc p =
        run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "--membw", "off"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out.rfind("| model |", 0), 0u) << p.out;
    EXPECT_NE(p.out.find("| pp16 |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| tg4 @ d16 |"), std::string::npos) << p.out;
    EXPECT_EQ(p.out.find("stagebench:"), std::string::npos);
    EXPECT_NE(p.err.find("repetition"), std::string::npos);
}

TEST(Run, CpuAloneAndCpuWithBlasAreDifferentTests) {
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "64", "-n", "2", "-r", "1", "--device",
                     "CPU,BLAS", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    ASSERT_EQ(doc["tests"].size(), 2u);
    EXPECT_EQ(doc["tests"][0]["backends"], json::array({"CPU"}));
    EXPECT_EQ(doc["tests"][1]["backends"], json::array({"BLAS", "CPU"}));
}

TEST(Run, AdaptiveRepetitionsStopAtTheTargetOrTheCap) {
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "2", "--target-ci",
                     "0.0001%", "--max-reps", "3", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json t = json::parse(p.out)["tests"][0];
    EXPECT_EQ(t["stopped_by"], "max_reps");
    EXPECT_EQ(t["reps_done"], 3);

    Proc q = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "3", "--target-ci",
                     "90%", "--max-reps", "20", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    json u = json::parse(q.out)["tests"][0];
    EXPECT_EQ(u["stopped_by"], "target_ci");
    EXPECT_GE(u["reps_done"].get<int>(), 3);
    EXPECT_LT(u["reps_done"].get<int>(), 20);
    EXPECT_LE(u["decode"]["throughput"]["ci95_half_rel"].get<double>(), 0.9);
}

TEST(Run, InterruptKeepsCompletedTestsOnDisk) {
    TempDir t;
    const std::string out = t.file("partial.json");
    pid_t pid = spawn_bg({stagebench_bin(), "run", "-m", tiny_model(), "-p",
                          "16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31", "-n", "64", "-r", "5",
                          "--membw", "off", "--out", out, "-q"},
                         t.file("log"));
    // Wait for the first completed test to reach the disk, then interrupt.
    for (int i = 0; i < 3000; ++i) {
        if (std::filesystem::exists(out)) {
            try {
                if (!json::parse(read_file(out))["tests"].empty())
                    break;
            } catch (...) {
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int rc = signal_and_wait(pid, SIGINT);
    EXPECT_EQ(rc, 1);
    json doc = json::parse(read_file(out));
    ASSERT_GE(doc["tests"].size(), 1u);
    EXPECT_LT(doc["tests"].size(), 16u);
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_NE(read_file(t.file("log.err")).find("interrupted"), std::string::npos);
}
