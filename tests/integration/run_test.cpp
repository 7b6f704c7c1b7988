// `stagebench run` end to end on the real llama.cpp with a tiny synthetic model.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>
#include <vector>

#include "cli_harness.hpp"
#include "core/result.hpp"
#include "core/sysinfo.hpp"
#include "doc_stats.hpp"
#include "engine/llama_engine.hpp"
#include "scenario/stage_sweep.hpp"

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

// Bytes of K and V (f16 each) that one token adds to the cache of the document's model.
static double kv_bytes_per_token(const json& model) {
    const double head_dim = model["n_embd"].get<double>() / model["n_head"].get<double>();
    return model["n_layers"].get<double>() * model["n_head_kv"].get<double>() * head_dim * (2 + 2);
}

TEST(Run, DepthStartsEveryRepetitionAfterDTokensOfContext) {
    // -d 0,64: two tests; decode at depth 64 continues after 64 + 16 tokens, and reads the KV
    // cache of 64 more tokens per generated token than at depth 0 (the roofline's bytes).
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-d", "0,64", "-r", "2",
                     "--membw", "10", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    ASSERT_EQ(doc["tests"].size(), 2u);
    const json& d0 = doc["tests"][0];
    const json& d64 = doc["tests"][1];
    for (const json* t : {&d0, &d64}) {
        EXPECT_EQ((*t)["status"], "ok") << (*t)["error"];
        EXPECT_EQ((*t)["reps_done"], 2);
        EXPECT_EQ((*t)["decode"]["token_latency_ns"].size(), 8u);
    }
    EXPECT_EQ(d0["config"]["n_depth"], 0);
    EXPECT_EQ(d64["config"]["n_depth"], 64);
    EXPECT_EQ(d64["config"]["test"], "pp16+tg4 @ d64");
    EXPECT_EQ(d0["decode"]["kv_depth_start"], 16);
    EXPECT_EQ(d64["decode"]["kv_depth_start"], 80);
    EXPECT_DOUBLE_EQ(d64["roofline"]["decode_bytes_per_token"].get<double>() -
                         d0["roofline"]["decode_bytes_per_token"].get<double>(),
                     64 * kv_bytes_per_token(doc["models"][0]));

    Proc md = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-d", "64", "-r", "1",
                      "--membw", "off", "-q"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| pp16 @ d64 |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| tg4 @ d80 |"), std::string::npos) << md.out;
}

TEST(Run, PromptZeroTimesDecodeAloneAtDepthAsLlamaBenchsTgTest) {
    // -p 0,16 -n 0,4: llama-bench's tg4 and pp16 tests, and the two stages together; the
    // point with neither is left out. Decode alone starts at the depth, with no prefill stage
    // and no TTFT.
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "0,16", "-n", "0,4", "-d", "64", "-r", "2",
                     "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    ASSERT_EQ(doc["tests"].size(), 3u);
    const json& tg = doc["tests"][0];
    EXPECT_EQ(tg["config"]["test"], "tg4 @ d64");
    EXPECT_EQ(tg["config"]["n_prompt"], 0);
    EXPECT_EQ(tg["status"], "ok") << tg["error"];
    EXPECT_FALSE(tg.contains("prefill") && !tg["prefill"].is_null()) << tg["prefill"];
    EXPECT_EQ(tg["decode"]["kv_depth_start"], 64);
    EXPECT_EQ(tg["decode"]["token_latency_ns"].size(), 8u);
    EXPECT_TRUE(!tg.contains("ttft_ns") || tg["ttft_ns"].empty()) << tg["ttft_ns"];
    EXPECT_EQ(doc["tests"][1]["config"]["test"], "pp16 @ d64");
    EXPECT_EQ(doc["tests"][2]["config"]["test"], "pp16+tg4 @ d64");

    Proc md = run_sb({"run", "-m", tiny_model(), "-p", "0", "-n", "4", "-d", "64", "-r", "1",
                      "--membw", "off", "-q"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| tg4 @ d64 |"), std::string::npos) << md.out;
    EXPECT_EQ(md.out.find("| pp"), std::string::npos) << md.out;

    // Nothing to measure, and a server's request, which begins with its prompt: exit 2.
    Proc none = run_sb({"run", "-m", tiny_model(), "-p", "0", "-n", "0"});
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_NE(none.err.find("-p 0 with -n 0 measures nothing"), std::string::npos) << none.err;
    Proc http = run_sb({"run", "-m", tiny_model(), "-p", "0", "-n", "4", "--engine", "http"});
    EXPECT_EQ(http.exit_code, 2);
    EXPECT_NE(http.err.find("-p 0 (decode alone) is not available with --engine http"),
              std::string::npos)
        << http.err;
    // --fidelity starts from the logits after the prompt: none without one.
    Proc fid = run_sb({"run", "-m", tiny_model(), "-p", "0,8", "-n", "4", "--fidelity"});
    EXPECT_EQ(fid.exit_code, 2);
    EXPECT_NE(fid.err.find("-p 0 (decode alone) has none to start from"), std::string::npos)
        << fid.err;
}

TEST(Run, DepthFillsTheKvCacheBeforeTheTimedStages) {
    // What -d does inside the engine: fill_to_depth(d) puts d tokens in the cache (the second
    // time from its cached state), so the sequence after a prompt holds d + p tokens' K and V.
    sb::TestConfig c;
    c.model_path = tiny_model();
    c.n_prompt = 16;
    c.n_gen = 4;
    c.n_depth = 64;
    c.n_threads = 1;
    sb::LlamaEngine e;
    e.load(sb::load_spec_for(c));
    const auto prompt = sb::random_tokens(16, e.n_vocab(), 5);
    std::vector<uint8_t> buf;
    auto state_bytes_after = [&](int depth) {
        e.fill_to_depth(depth, 1);
        e.prefill(prompt);
        return static_cast<double>(e.save_state(buf));
    };
    const double at0 = state_bytes_after(0);
    const double at64 = state_bytes_after(64);
    const double again = state_bytes_after(64);  // restored from the engine's cached state
    const double per_token = static_cast<double>(*e.kv_bytes_read(1));
    EXPECT_GE(at64 - at0, 64 * per_token) << at0 << " -> " << at64;
    EXPECT_LT(at64 - at0, 1.5 * 64 * per_token) << at0 << " -> " << at64;
    EXPECT_EQ(again, at64);
}

// How much faster than STREAM's memory bandwidth a model can be read when it fits in the
// caches (the tiny model does): caches deliver several times DRAM bandwidth, not 16 times.
constexpr double kMaxCacheOverMemory = 16;

TEST(Run, RooflineColumnsFollowFromTheMeasuredBandwidth) {
    TempDir t;
    const std::string out = t.file("r.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "32", "-n", "8", "-r", "2", "-t", "1",
                     "--membw", "auto", "--out", out});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| decode GB/s | of machine | prefill GFLOP/s |"), std::string::npos)
        << p.out;
    json doc = json::parse(read_file(out));
    EXPECT_EQ(doc["membw"]["source"], "measured");
    const double machine = doc["membw"]["triad_gbps"].get<double>();
    ASSERT_GT(machine, 0);
    const json& test = doc["tests"][0];
    const json& rl = test["roofline"];
    // Decode reads every weight and the KV cache at its mean depth once per token.
    const double kv_depth = 32 + 8 / 2;
    const double bytes = rl["decode_bytes_per_token"].get<double>();
    EXPECT_GT(bytes, kv_depth * kv_bytes_per_token(doc["models"][0]));
    EXPECT_LT(bytes, doc["models"][0]["file_bytes"].get<double>() +
                         kv_depth * kv_bytes_per_token(doc["models"][0]));
    const double gbps = rl["decode_bandwidth_gbps"].get<double>();
    EXPECT_NEAR(gbps, bytes * median_of(test["decode"]["tokens_per_s"]) / 1e9, 1e-9 * gbps);
    const double fraction = rl["decode_bandwidth_fraction"].get<double>();
    EXPECT_NEAR(fraction, gbps / machine, 1e-12);
    // Plausible: above 0, and a tiny model served from the caches reads at most a few times
    // what STREAM gets from memory.
    EXPECT_GT(fraction, 0);
    EXPECT_LE(fraction, kMaxCacheOverMemory);
    const double gflops = rl["prefill_gflops"].get<double>();
    EXPECT_GT(gflops, 0);
    // One thread: below what one core's vector units can do (64 FLOP/cycle at 5 GHz).
    EXPECT_LT(gflops, 320);
}

TEST(Membw, MeasuresTheFourKernelsAndReportsTheBestOfTheRepetitions) {
    Proc p = run_sb({"membw", "-t", "1", "-r", "3", "--array-mib", "16", "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json m = json::parse(p.out);
    EXPECT_EQ(m["threads"], 1);
    EXPECT_EQ(m["array_bytes"], 16u << 20);
    for (const char* k : {"copy_gbps", "scale_gbps", "add_gbps", "triad_gbps"}) {
        ASSERT_TRUE(m[k].is_number()) << k;
        EXPECT_GT(m[k].get<double>(), 0) << k;
        EXPECT_LT(m[k].get<double>(), 1000) << k;  // GB/s, not B/s or MB/s
    }
    const json& samples = m["triad_samples_gbps"];
    EXPECT_EQ(samples["n"], 3);
    EXPECT_DOUBLE_EQ(samples["max"].get<double>(), m["triad_gbps"].get<double>());

    Proc md = run_sb({"membw", "-t", "1", "-r", "2", "--array-mib", "16"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| triad |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("1 threads, 16 MiB per array, best of 2 repetitions"), std::string::npos)
        << md.out;
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

// Every test records what llama.cpp allocated per buffer type (its own accounting). On the CPU:
// the KV cache in the CPU buffer, a whole number of cells of the model's shape (2 x layers x
// KV width x the element's bytes), at least the cells the test needs; q8_0 for K and V takes
// exactly 34/64 of f16's; the weights mapped from the file, no more than the file.
TEST(Run, MemoryIsLlamaCppsOwnAccountingOfWeightsCacheAndComputeBuffers) {
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "64", "-n", "8", "-r", "1", "-ctk",
                     "f16,q8_0", "-ctv", "f16,q8_0", "--membw", "off", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(p.out);
    const json& model = doc["models"][0];
    const uint64_t kv_width = model["n_head_kv"].get<uint64_t>() *
                              (model["n_embd"].get<uint64_t>() / model["n_head"].get<uint64_t>());
    const uint64_t f16_cell = 2 * model["n_layers"].get<uint64_t>() * kv_width * 2;
    std::map<std::string, std::map<std::string, json>> by_cache;  // "f16/f16" -> buffer -> entry
    for (const auto& t : doc["tests"]) {
        std::string prev;
        for (const auto& m : t["memory"]) {
            const std::string name = m["buffer"];
            EXPECT_LT(prev, name) << "sorted by buffer, each once";
            prev = name;
            EXPECT_GT(m["model_bytes"].get<uint64_t>() + m["context_bytes"].get<uint64_t>() +
                          m["compute_bytes"].get<uint64_t>(),
                      0u)
                << "a buffer type that holds nothing is left out";
            by_cache[t["config"]["type_k"].get<std::string>() + "/" +
                     t["config"]["type_v"].get<std::string>()][name] = m;
        }
    }
    ASSERT_TRUE(by_cache.count("f16/f16") && by_cache.count("q8_0/q8_0")) << p.out;
    auto& f16 = by_cache["f16/f16"];
    ASSERT_TRUE(f16.count("CPU") && f16.count("CPU_Mapped")) << p.out;
    const uint64_t kv = f16["CPU"]["context_bytes"];
    EXPECT_EQ(kv % f16_cell, 0u) << kv;
    EXPECT_GE(kv / f16_cell, 64u + 8u) << kv;
    EXPECT_GT(f16["CPU"]["compute_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(by_cache["q8_0/q8_0"]["CPU"]["context_bytes"].get<uint64_t>() * 64, kv * 34);
    const uint64_t mapped = f16["CPU_Mapped"]["model_bytes"];
    EXPECT_GT(mapped, 0u);
    EXPECT_LE(mapped, model["file_bytes"].get<uint64_t>());
    EXPECT_EQ(f16["CPU_Mapped"]["context_bytes"], 0);
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
    // The target holds the robust (median-based) figure of every stage.
    EXPECT_LE(u["decode"]["robust"]["ci95_half_rel"].get<double>(), 0.9);
    EXPECT_LE(u["prefill"]["robust"]["ci95_half_rel"].get<double>(), 0.9);
}

TEST(Run, WithoutThreadsUsesOnePerPhysicalCoreAndSaysSo) {
    const int expected = sb::default_thread_count();
    ASSERT_GT(expected, 0);
    TempDir t;
    const std::string out = t.file("r.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "--membw", "off",
                     "--out", out});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    EXPECT_EQ(doc["tests"][0]["config"]["n_threads"], expected);
    // The Markdown row names the threads after the devices column.
    EXPECT_NE(p.out.find("| CPU | " + std::to_string(expected) + " | pp16 |"), std::string::npos)
        << p.out;
    // No oversubscription warning for the default.
    for (const auto& w : doc["warnings"])
        EXPECT_NE(w["code"], "oversubscribed") << w.dump();
}

TEST(Run, RobustFiguresAndStallCountsReachEveryFormat) {
    Proc p = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "8", "-r", "3", "--membw", "off",
                     "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json t = json::parse(p.out)["tests"][0];
    const json& pre = t["prefill"];
    const json& dec = t["decode"];
    // Robust prefill: n_tokens / median repetition duration.
    std::vector<double> d;
    for (const auto& x : pre["duration_ns"])
        d.push_back(x.get<double>());
    std::sort(d.begin(), d.end());
    EXPECT_NEAR(pre["robust"]["tokens_per_s"].get<double>(), 16 * 1e9 / d[1], 1e-6 * 16e9 / d[1]);
    // Robust decode: 1e9 / median inter-token latency.
    EXPECT_NEAR(dec["robust"]["tokens_per_s"].get<double>(),
                1e9 / dec["itl"]["median"].get<double>(),
                1e-6 * dec["robust"]["tokens_per_s"].get<double>());
    EXPECT_EQ(dec["token_latency_counts"], json::array({8, 8, 8}));
    for (const json* s : {&pre["stalls"]["repetitions"], &dec["stalls"]["repetitions"]}) {
        EXPECT_EQ((*s)["k"], 3.5);
        EXPECT_EQ((*s)["n"], 3);
        EXPECT_TRUE((*s)["rule"].is_string());
    }
    EXPECT_EQ(dec["stalls"]["tokens"]["n"], 24);
    EXPECT_TRUE(dec["robust"]["ci95_lo"].is_number());
    EXPECT_LE(dec["robust"]["ci95_lo"].get<double>(), dec["robust"]["tokens_per_s"].get<double>());

    Proc md = run_sb(
        {"run", "-m", tiny_model(), "-p", "16", "-n", "8", "-r", "2", "--membw", "off", "-q"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| robust t/s | stalls |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("/2 reps |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("/16 tokens |"), std::string::npos) << md.out;

    Proc csv = run_sb({"run", "-m", tiny_model(), "-p", "16", "-n", "8", "-r", "2", "--membw",
                       "off", "-o", "csv", "-q"});
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_NE(csv.out.find(",robust_tokens_per_s,robust_ci95_lo,robust_ci95_hi,stalled_reps,"),
              std::string::npos)
        << csv.out;
}

TEST(Run, AStalledProcessIsCountedWarnedAndLeavesTheRobustRateAlone) {
    // A real stall: the process is stopped (SIGSTOP) for 1 s in the middle of a repetition's
    // decode, as a shared VM's host or a phone's power manager stops it. One thread, so that a
    // busy test machine delays the run but does not stall it much by itself. 500 tokens a
    // repetition: long enough (over a second at one thread) for the stop to land in the third
    // one's decode, and short enough that the stall slows that repetition well past the 10 %
    // the rate check below needs (it would not if a repetition took 9 s).
    TempDir t;
    const std::string out = t.file("r.json");
    const std::string log = t.file("log");
    pid_t pid = spawn_bg({stagebench_bin(), "run", "-m", tiny_model(), "-p", "16", "-n", "500",
                          "-r", "5", "-t", "1", "--membw", "off", "--out", out, "-o", "json"},
                         log);
    bool seen = false;
    for (int i = 0; i < 60000 && !seen; ++i) {
        seen = read_file(log + ".err").find("repetition 3/5") != std::string::npos;
        if (!seen)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!seen)
        signal_and_wait(pid, SIGKILL);
    ASSERT_TRUE(seen) << read_file(log + ".err");
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the 16-token prefill
    kill(pid, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    kill(pid, SIGCONT);
    ASSERT_EQ(wait_exit(pid, 600), 0) << read_file(log + ".err");

    const json doc = json::parse(read_file(out));
    const json& dec = doc["tests"][0]["decode"];
    const json& tokens = dec["stalls"]["tokens"];
    ASSERT_GE(tokens["count"].get<int>(), 1) << tokens.dump();
    EXPECT_GE(tokens["excess_ns"].get<double>(), 900e6) << tokens.dump();
    // The stall sits in the third repetition's tokens.
    bool in_third = false;
    for (const auto& i : tokens["indices"])
        in_third |= i.get<int>() / 500 == 2;
    EXPECT_TRUE(in_third) << tokens.dump();
    // The stalled repetition's rate and the mean include the stall; the median-based figure
    // does not.
    const double robust = dec["robust"]["tokens_per_s"].get<double>();
    EXPECT_LT(dec["tokens_per_s"][2].get<double>(), 0.9 * robust)
        << robust << " " << dec["tokens_per_s"].dump();
    // It is the median inter-token latency's rate, and that median is a token's time, not a
    // stall's (exact, whatever the machine's speed).
    const double itl_median = dec["itl"]["median"].get<double>();
    EXPECT_NEAR(robust, 1e9 / itl_median, 1e-9 * robust);
    EXPECT_LT(itl_median, tokens["threshold_ns"].get<double>()) << tokens.dump();
    bool warned = false;
    for (const auto& w : doc["warnings"])
        if (w["code"] == "stalls") {
            warned = true;
            EXPECT_NE(w["message"].get<std::string>().find("decode tokens stalled"),
                      std::string::npos)
                << w.dump();
            EXPECT_FALSE(w["hint"].get<std::string>().empty());
        }
    EXPECT_TRUE(warned) << doc["warnings"].dump();
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
