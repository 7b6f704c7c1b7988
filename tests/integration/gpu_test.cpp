// Every level of stagebench on a GPU backend: the real llama.cpp with its Vulkan module, on
// Mesa's lavapipe (a conformant Vulkan driver that runs on the CPU: its own buffers, command
// submission, host-device copies and fallbacks are the Vulkan backend's, only the silicon is
// not a GPU's). ggml-vulkan shows a CPU-type device only when GGML_VK_VISIBLE_DEVICES names it,
// as docs/gpu.md tells a user to; a machine with a GPU needs nothing. Built only where the
// llama.cpp build has the Vulkan module (scripts/gpu-module.sh; tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "cli_harness.hpp"

namespace {

using nlohmann::json;
using sbtest::Proc;
using sbtest::read_file;
using sbtest::run_sb;
using sbtest::TempDir;
using sbtest::tiny_model;

// Sets (or, with nullopt, unsets) an environment variable for the scope; the children the
// harness starts inherit it.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
        if (const char* old = std::getenv(name))
            old_ = old;
        if (value)
            ::setenv(name, value->c_str(), 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

  private:
    const char* name_;
    std::optional<std::string> old_;
};

// lavapipe as Vulkan0, the way docs/gpu.md shows it.
struct Lavapipe : ScopedEnv {
    Lavapipe() : ScopedEnv("GGML_VK_VISIBLE_DEVICES", std::string("0")) {}
};

const json& stage_of(const json& test, const char* stage) {
    return test.at(stage);
}

// `devices` names lavapipe Vulkan0 with its driver and memory; without the variable, the
// Vulkan module says why it shows no device, and asking for Vulkan0 is one line of bad input
// that says the same.
TEST(Gpu, DevicesShowTheVulkanDeviceOrSayWhyNot) {
    {
        Lavapipe vk;
        Proc p = run_sb({"devices"}, 120);
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_NE(p.out.find("| Vulkan0 | gpu | Vulkan | llvmpipe"), std::string::npos) << p.out;
        // The driver column is ggml-vulkan's own line about the device; memory free / total.
        EXPECT_NE(p.out.find("| llvmpipe | "), std::string::npos) << p.out;
        EXPECT_NE(p.out.find(" MiB / "), std::string::npos) << p.out;
        EXPECT_NE(p.out.find("Vulkan0: uma: "), std::string::npos) << p.out;
        EXPECT_NE(p.out.find("modules in "), std::string::npos) << p.out;
        EXPECT_NE(p.out.find(" vulkan"), std::string::npos) << p.out;
    }
    {
        // Named but not there (an index past the devices, or a driver the loader dropped,
        // e.g. one that needs a newer C++ runtime): the note says so, not "name it".
        ScopedEnv wrong("GGML_VK_VISIBLE_DEVICES", std::string("7"));
        Proc w = run_sb({"devices"}, 120);
        ASSERT_EQ(w.exit_code, 0) << w.err;
        EXPECT_EQ(w.out.find("| Vulkan0 |"), std::string::npos) << w.out;
        EXPECT_NE(w.out.find("vulkan: no Vulkan device found among those "
                             "GGML_VK_VISIBLE_DEVICES=7 names"),
                  std::string::npos)
            << w.out;
        EXPECT_NE(w.out.find("VK_LOADER_DEBUG=driver"), std::string::npos) << w.out;
    }
    ScopedEnv hidden("GGML_VK_VISIBLE_DEVICES", std::nullopt);
    Proc p = run_sb({"devices"}, 120);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out.find("| Vulkan0 |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("vulkan: no Vulkan GPU found"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("GGML_VK_VISIBLE_DEVICES=0"), std::string::npos) << p.out;

    Proc bad =
        run_sb({"run", "-m", tiny_model(), "--device", "Vulkan0", "-p", "8", "-n", "2"}, 120);
    EXPECT_EQ(bad.exit_code, 2) << bad.err;
    EXPECT_NE(bad.err.find("unknown device 'Vulkan0'"), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("the vulkan module: no Vulkan GPU found"), std::string::npos) << bad.err;

    // No driver at all (the loader pointed at an ICD file that is not there): the module does
    // not start, and `devices` says what to install rather than ggml's "returned NULL".
    ScopedEnv no_icd("VK_ICD_FILENAMES", std::string("/nonexistent/stagebench_icd.json"));
    ScopedEnv no_icd_new("VK_DRIVER_FILES", std::string("/nonexistent/stagebench_icd.json"));
    Proc none = run_sb({"devices"}, 120);
    ASSERT_EQ(none.exit_code, 0) << none.err;
    EXPECT_NE(none.out.find("vulkan: the Vulkan loader found no driver it could start"),
              std::string::npos)
        << none.out;
    EXPECT_EQ(none.out.find("returned NULL"), std::string::npos) << none.out;
}

// CPU and Vulkan0 side by side and an -ngl sweep: every test measured, and the Markdown table
// has an ngl column (it varies; report/golden_test.cpp has the CSV's n_gpu_layers).
TEST(Gpu, RunPutsTheCpuAndTheGpuSideBySideWithAnOffloadSweep) {
    Lavapipe vk;
    TempDir t;
    const std::string out = t.file("r.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "--device", "CPU,Vulkan0", "-ngl", "0,99", "-p",
                     "32", "-n", "8", "-r", "2", "--membw", "off", "--out", out},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("| threads | ngl | test |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| Vulkan0 | 2 | 99 | pp32 |"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("| Vulkan0 | 2 | 0 | tg8 @ d32 |"), std::string::npos) << p.out;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 4u);
    std::set<std::pair<std::string, int>> seen;
    for (const auto& test : doc["tests"]) {
        EXPECT_EQ(test["status"], "ok") << test.dump();
        seen.insert({test["config"]["devices"].get<std::string>(),
                     test["config"]["n_gpu_layers"].get<int>()});
        for (const char* stage : {"prefill", "decode"})
            EXPECT_GT(stage_of(test, stage)["robust"]["tokens_per_s"].get<double>(), 0);
    }
    EXPECT_EQ(seen.size(), 4u);

    // Where llama.cpp put the weights, the KV cache and the compute buffers (its own
    // accounting): with -ngl 0 the device holds no weight and no cache, only compute buffers
    // for the ops it takes; with -ngl 99 it holds the cache the CPU held and the weights, more
    // of them than the token embedding's table that stays mapped in host memory for the lookup.
    // The Markdown says it too.
    auto buffers = [&](const std::string& devices, int ngl) {
        std::map<std::string, json> by;
        for (const auto& test : doc["tests"])
            if (test["config"]["devices"] == devices && test["config"]["n_gpu_layers"] == ngl)
                for (const auto& m : test["memory"])
                    by[m["buffer"].get<std::string>()] = m;
        return by;
    };
    auto none = buffers("Vulkan0", 0), all = buffers("Vulkan0", 99);
    ASSERT_TRUE(none.count("Vulkan0") && none.count("CPU") && all.count("Vulkan0") &&
                all.count("CPU_Mapped"))
        << doc["tests"].dump();
    EXPECT_EQ(none["Vulkan0"]["model_bytes"], 0);
    EXPECT_EQ(none["Vulkan0"]["context_bytes"], 0);
    EXPECT_GT(none["Vulkan0"]["compute_bytes"].get<uint64_t>(), 0u);
    EXPECT_GT(none["CPU"]["context_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(all["Vulkan0"]["context_bytes"], none["CPU"]["context_bytes"]);
    EXPECT_FALSE(all.count("CPU") && all["CPU"]["context_bytes"] != 0) << all["CPU"].dump();
    EXPECT_GT(all["Vulkan0"]["model_bytes"].get<uint64_t>(),
              all["CPU_Mapped"]["model_bytes"].get<uint64_t>());
    EXPECT_NE(p.out.find("| buffer | weights MiB | context MiB | compute MiB | total MiB |"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("| pp32+tg8 | Vulkan0 (ngl 0) | Vulkan0 | 0.00 | 0.00 | "),
              std::string::npos)
        << p.out;
}

// The op profiler on the GPU: every computing node ran on Vulkan0 but the token embedding (its
// table stays in host memory), each with its call time as the host saw it and an op time from
// the device's own timer (Vulkan timestamp queries, read in a pass of its own) whose method the
// document names; the embedding lookup is a fallback row priced by its split; the
// decomposition has the device's no-work round trip and the copies between host and device.
TEST(Gpu, OpsOnVulkanSeparateOpFromCallAndPriceTheFallback) {
    Lavapipe vk;
    TempDir t;
    const std::string out = t.file("ops.json");
    Proc p = run_sb({"decompose", "-m", tiny_model(), "--device", "Vulkan0", "-p", "16",
                     "--decode-tokens", "4", "--out", out},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json& timer = doc["ops"]["device_timer"];
    ASSERT_TRUE(timer.is_object()) << doc["ops"].dump();
    EXPECT_EQ(timer["device"], "Vulkan0");
    EXPECT_EQ(timer["error"], "") << timer.dump();
    EXPECT_EQ(timer["n_rejected"], 0) << timer.dump();
    const json& stages = doc["ops"]["stages"];
    ASSERT_EQ(stages.size(), 2u);
    // Prefills as traced repetitions, then the decode steps.
    EXPECT_EQ(timer["n_sections"].get<int>(),
              static_cast<int>(stages[0]["reconciliation"]["traced_ns"].size()) + 4)
        << timer.dump();
    for (const auto& st : stages) {
        SCOPED_TRACE(st["stage"].get<std::string>());
        int on_gpu = 0, by_timer = 0;
        for (const auto& op : st["ops"]) {
            if (op["no_compute"].get<bool>() || op["backend"] != "Vulkan0")
                continue;
            ++on_gpu;
            EXPECT_GT(op["call_ns"].get<double>(), 0) << op.dump();
            ASSERT_TRUE(op["op_ns"].is_number()) << op.dump();
            EXPECT_GE(op["op_ns"].get<double>(), 0) << op.dump();
            by_timer += op["op_method"].get<std::string>().rfind(
                            "device timer: Vulkan timestamp queries", 0) == 0;
        }
        EXPECT_GT(on_gpu, 50);
        // Every op on the device has its name and count in the pass.
        EXPECT_EQ(by_timer, on_gpu);
        EXPECT_EQ(st["reconciliation"]["n_op_device_timer"].get<int>(), by_timer);
        bool embedding_fallback = false;
        for (const auto& f : st["fallback"])
            embedding_fallback |= f["op"] == "GET_ROWS" && f["backend"] == "CPU" &&
                                  f["requested"] == "Vulkan0" && f["penalty_ns"].is_number() &&
                                  f["split_ns"].is_number();
        EXPECT_TRUE(embedding_fallback) << st["fallback"].dump();
        EXPECT_GT(st["n_copies"].get<int>(), 0);
        const json& parts = st["decomposition"];
        EXPECT_FALSE(parts.is_null());
    }
    EXPECT_NE(p.out.find("one dispatch with no work on Vulkan0"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("device timer"), std::string::npos) << p.out;
}

// Each stage's ops get the device's times of their own kernels: the timer's pass names every
// op by the logger's name (op, type, shape) per stage, so a prefill's mat-mul over 32 rows gets
// the 32-row kernel (MUL_MAT n=32) and a decode step's the one-row kernel (MUL_MAT_VEC n=1),
// each from its own stage's sections, and ops that share a name share its mean. What holds
// under any load; how the device's times compare with the calls' (at most 1.25x, a prefill
// mat-mul above a decode step's) is a timing claim, judged over rounds by
// bench/device_timer.sh: on lavapipe the "device" clock is the CPU's, read by the driver's queue
// thread, so a preemption lands inside the op it interrupts, and decode's ops often run longer
// in the timer's pass than dispatched alone (one CI run: decode's device time 60.6 ms against
// 45.9 ms of calls; idle rounds here 0.81-1.60x).
TEST(Gpu, EachStagesOpsGetTheDevicesTimesOfTheirOwnKernels) {
    Lavapipe vk;
    TempDir t;
    const std::string out = t.file("ops.json");
    Proc p = run_sb({"ops", "-m", tiny_model(), "--device", "Vulkan0", "-p", "32",
                     "--decode-tokens", "4", "-q", "--out", out},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["ops"]["device_timer"]["error"], "") << doc["ops"]["device_timer"].dump();
    ASSERT_EQ(doc["ops"]["stages"].size(), 2u);
    for (const auto& st : doc["ops"]["stages"]) {
        const std::string stage = st["stage"].get<std::string>();
        SCOPED_TRACE(stage);
        const int reps = static_cast<int>(st["reconciliation"]["traced_ns"].size());
        const std::string per =
            stage == "prefill" ? " per prefill, median of " + std::to_string(reps) + " prefill(s)"
                               : " per decode step, median of 4 decode step(s)";
        std::map<std::string, double> op_ns_of;  // op_method -> op_ns
        int mm = 0, rows32 = 0;
        for (const auto& op : st["ops"]) {
            if (op["no_compute"].get<bool>() || op["backend"] != "Vulkan0")
                continue;
            const std::string m = op["op_method"].get<std::string>();
            ASSERT_EQ(m.rfind("device timer: Vulkan timestamp queries", 0), 0u) << op.dump();
            EXPECT_NE(m.find(per), std::string::npos) << m;
            const double ns = op["op_ns"].get<double>();
            EXPECT_GT(ns, 0) << op.dump();
            const auto it = op_ns_of.emplace(m, ns).first;
            EXPECT_EQ(it->second, ns) << "one name, one mean: " << m;
            if (op["op"] != "MUL_MAT")
                continue;
            ++mm;
            const int rows = op["ne"][1].get<int>();
            rows32 += rows == 32;
            EXPECT_NE(m.find(" n=" + std::to_string(rows) + " "), std::string::npos) << m;
            EXPECT_EQ(m.find("MUL_MAT_VEC ") != std::string::npos, rows == 1) << m;
        }
        EXPECT_EQ(mm, 29);
        // The prefill's projections run over its 32 tokens; its output row and every decode
        // step's mat-mul over one.
        EXPECT_EQ(rows32, stage == "prefill" ? 25 : 0);
    }
}

// Prefill on the CPU, decode on the GPU, and the reverse: the KV cache moves between them, and
// each hybrid stands beside both devices alone.
TEST(Gpu, HybridMovesTheCacheBetweenTheCpuAndTheGpuBothWays) {
    Lavapipe vk;
    for (const auto& [pre, dec] : {std::pair{"CPU", "Vulkan0"}, std::pair{"Vulkan0", "CPU"}}) {
        TempDir t;
        const std::string out = t.file("h.json");
        Proc p = run_sb({"hybrid", "-m", tiny_model(), "--prefill-device", pre, "--decode-device",
                         dec, "-p", "32", "-n", "8", "-r", "2", "--out", out},
                        600);
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_NE(p.out.find(std::string("hybrid ") + pre + " → " + dec), std::string::npos)
            << p.out;
        const json doc = json::parse(read_file(out));
        int hybrid = 0;
        for (const auto& test : doc["tests"]) {
            EXPECT_EQ(test["status"], "ok");
            hybrid += test["config"]["devices"] == std::string(pre) + ">" + dec;
        }
        EXPECT_EQ(hybrid, 1) << doc["tests"].dump();
    }
}

// A KV cache too large for the GPU: the test fails with one reason a user can act on (the
// device, what for, the size, the device's memory, what asks for less), the run exits 2, and
// the test measured before it stays on disk beside the failed one. lavapipe refuses any one
// allocation larger than its heap (2048 MiB here), and a 16M-cell cache of the tiny model asks
// for 3906 MiB at once; a lavapipe with a heap that large would try to hold all of it.
TEST(Gpu, AKvCacheTooLargeForTheGpuSaysSoAndKeepsTheTestsBeforeIt) {
    Lavapipe vk;
    Proc devices = run_sb({"devices"}, 120);
    ASSERT_EQ(devices.exit_code, 0) << devices.err;
    const size_t row = devices.out.find("| Vulkan0 |");
    ASSERT_NE(row, std::string::npos) << devices.out;
    const std::string line = devices.out.substr(row, devices.out.find('\n', row) - row);
    const size_t slash = line.find(" MiB / ");
    ASSERT_NE(slash, std::string::npos) << line;
    if (std::stod(line.substr(slash + 7)) >= 3906)
        GTEST_SKIP() << "this lavapipe's heap would take the 3906 MiB buffer: " << line;

    TempDir t;
    const std::string out = t.file("oom.json");
    Proc p = run_sb({"run", "-m", tiny_model(), "--device", "Vulkan0", "-p", "8", "-n", "2", "-d",
                     "0,16000000", "-r", "1", "--out", out},
                    300);
    EXPECT_EQ(p.exit_code, 2) << p.err;
    const std::string reason =
        "out of memory on Vulkan0 for the KV cache: a buffer of 3906.3 MiB "
        "could not be allocated (Vulkan0 reports ";
    const size_t error = p.err.find("stagebench: error: llama.cpp could not create a context");
    ASSERT_NE(error, std::string::npos) << p.err;
    const std::string last = p.err.substr(error, p.err.find('\n', error) - error);
    EXPECT_NE(last.find(reason), std::string::npos) << last;
    EXPECT_NE(last.find("try a smaller context, a quantized KV cache (-ctk/-ctv q8_0) or fewer "
                        "layers on the device (-ngl)"),
              std::string::npos)
        << last;
    const json doc = json::parse(read_file(out));
    ASSERT_EQ(doc["tests"].size(), 2u) << doc["tests"].dump();
    EXPECT_EQ(doc["tests"][0]["status"], "ok");
    EXPECT_EQ(doc["tests"][1]["status"], "failed");
    EXPECT_NE(doc["tests"][1]["error"].get<std::string>().find(reason), std::string::npos)
        << doc["tests"][1].dump();

    // A llama-server that stagebench starts says the same from its log (without its fitting,
    // which llama.cpp's scheduler stops on at this size before allocating anything).
    Proc server = run_sb({"serve", "-m", tiny_model(), "--concurrency", "1", "--server-args",
                          "-ngl 99 -dev Vulkan0 -c 16000000 -fit off"},
                         300);
    EXPECT_EQ(server.exit_code, 2) << server.err;
    EXPECT_NE(server.err.find("llama-server could not start on '" + tiny_model() +
                              "': out of memory on Vulkan0 for the KV cache: a buffer of "),
              std::string::npos)
        << server.err;
}

// The GPU's logits against the CPU's: close (float and f16 kernels of the same model), not
// identical (another device's arithmetic).
TEST(Gpu, FidelityOfTheGpuAgainstTheCpu) {
    Lavapipe vk;
    TempDir t;
    const std::string out = t.file("f.json");
    Proc p = run_sb({"fidelity", "-m", tiny_model(), "--device", "CPU,Vulkan0", "--reference",
                     "CPU", "-p", "32", "-n", "8", "-r", "1", "--out", out},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    bool found = false;
    for (const auto& v : doc["fidelity"]["variants"]) {
        if (v["devices"] != "Vulkan0")
            continue;
        found = true;
        const double kl = v["decode"]["kl_mean"].get<double>();
        EXPECT_GE(kl, 0);
        EXPECT_LT(kl, 1e-2) << v.dump();
        EXPECT_GE(v["decode"]["top1_agreement"].get<double>(), 0.75) << v.dump();
    }
    EXPECT_TRUE(found) << doc["fidelity"].dump();
}

// Sustained rounds on the GPU, and a server stagebench starts that offloads to it.
TEST(Gpu, SustainedRoundsAndAServerThatOffloadsToTheGpu) {
    Lavapipe vk;
    TempDir t;
    const std::string s_out = t.file("s.json");
    Proc s =
        run_sb({"sustained", "-m", tiny_model(), "--device", "Vulkan0", "--rounds", "3",
                "--cooldown", "0", "--prompt-tokens", "16", "--max-tokens", "8", "--out", s_out},
               600);
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json sdoc = json::parse(read_file(s_out));
    ASSERT_EQ(sdoc["sustained"]["phases"].size(), 1u);
    EXPECT_EQ(sdoc["sustained"]["phases"][0]["rounds"].size(), 3u);
    for (const auto& r : sdoc["sustained"]["phases"][0]["rounds"])
        EXPECT_EQ(r["status"], "ok") << r.dump();

    const std::string v_out = t.file("serve.json");
    Proc v = run_sb({"serve", "-m", tiny_model(), "--server-args", "-ngl 99 -dev Vulkan0",
                     "--concurrency", "1", "-p", "16", "-n", "4", "--out", v_out},
                    600);
    const json vdoc = json::parse(read_file(v_out));
    EXPECT_EQ(vdoc["serve"]["server_args"], json({"-ngl", "99", "-dev", "Vulkan0"}));
    ASSERT_EQ(vdoc["serve"]["points"].size(), 1u) << v.err;
    EXPECT_GT(vdoc["serve"]["points"][0]["ok"].get<int>(), 0) << v.err;
}

// explain against a llama-server that offloads to the GPU (-ngl 99 -dev Vulkan0), the bench
// on Vulkan0 too: every level measured; the server's devices are what llama.cpp gives it
// (the CPU, Vulkan0, and the accelerators every context takes whatever -dev says), the
// bench's what --device names, and where they differ that difference is measured alone.
TEST(Gpu, ExplainAgainstAServerThatOffloadsToTheGpu) {
    Lavapipe vk;
    TempDir t;
    const std::string out = t.file("e.json");
    Proc p = run_sb({"explain", "-m", tiny_model(), "-p", "48", "-n", "4", "-r", "1", "--device",
                     "Vulkan0", "--server-args", "-ngl 99 -dev Vulkan0", "--no-ops",
                     "--concurrency", "1", "--out", out, "-q"},
                    600);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json doc = json::parse(read_file(out));
    const json& e = doc["explain"];
    EXPECT_EQ(e["server_args"], json({"-ngl", "99", "-dev", "Vulkan0"}));
    EXPECT_TRUE(e["settings_read"].get<bool>());
    std::set<std::string> ids;
    for (const auto& m : e["measures"]) {
        ids.insert(m["id"].get<std::string>());
        EXPECT_EQ(m["n_failed"], 0) << m.dump();
    }
    for (const char* id : {"graph", "generation", "server", "served@1"})
        EXPECT_TRUE(ids.count(id)) << id;
    const json* dev = nullptr;
    for (const auto& s : e["settings"])
        if (s["name"] == "devices")
            dev = &s;
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ((*dev)["bench"], "Vulkan0");
    EXPECT_EQ((*dev)["source"], "--server-args");
    const std::string server = (*dev)["server"].get<std::string>();
    EXPECT_EQ(server.rfind("CPU+Vulkan0", 0), 0u) << server;
    // BLAS beside it on the server (this build has the module): a difference, measured alone.
    EXPECT_EQ((*dev)["differs"].get<bool>(), server != "CPU+Vulkan0");
    EXPECT_EQ(ids.count("graph+devices") > 0, (*dev)["differs"].get<bool>());
}

}  // namespace
