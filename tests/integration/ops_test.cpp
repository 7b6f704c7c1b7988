// `stagebench ops` end to end on the real llama.cpp with the tiny synthetic model: CPU alone,
// CPU + BLAS (a partial-coverage accelerator) and CPU + an RPC server on loopback (real
// per-dispatch communication). Also `stagebench import hexagon-profile` on the fixtures.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli_harness.hpp"
#include "engine/process.hpp"
#include "profile/hexagon_import_printf.hpp"

using nlohmann::json;
using namespace sbtest;

namespace {

const json& stage_of(const json& ops, const std::string& name) {
    for (const auto& s : ops["stages"])
        if (s["stage"] == name)
            return s;
    static const json none;
    ADD_FAILURE() << "no stage " << name;
    return none;
}

const json* op_row(const json& stage, const std::string& op) {
    for (const auto& a : stage["by_op"])
        if (a["op"] == op)
            return &a;
    return nullptr;
}

// Checks every stage: per-op records with call and op times, aggregates, reconciliation.
void check_stage(const json& s, int min_nodes) {
    SCOPED_TRACE(s["stage"].get<std::string>());
    ASSERT_GE(s["ops"].size(), static_cast<size_t>(min_nodes));
    int with_op = 0, compute = 0;
    for (const auto& r : s["ops"]) {
        ASSERT_TRUE(r["call_ns"].is_number()) << r.dump();
        EXPECT_GT(r["call_ns"].get<double>(), 0);
        EXPECT_FALSE(r["backend"].get<std::string>().empty());
        if (r["no_compute"].get<bool>()) {
            EXPECT_EQ(r["op_ns"], 0);
            continue;
        }
        ++compute;
        if (r["op_ns"].is_number()) {
            ++with_op;
            EXPECT_GT(r["op_ns"].get<double>(), 0) << r.dump();
        }
    }
    EXPECT_EQ(with_op, compute) << "every computing op is replayed";
    const json& rec = s["reconciliation"];
    ASSERT_TRUE(rec["plain_median_ns"].is_number());
    ASSERT_TRUE(rec["traced_median_ns"].is_number());
    ASSERT_TRUE(rec["sum_op_ns"].is_number());
    EXPECT_TRUE(rec["overhead_ratio"].is_number());
    // On a quiet machine the replayed ops fit inside the uninstrumented stage; a stall of this
    // VM during the replay can push their sum over it, and then the tool must say so (flag and
    // note) rather than hide it. How closely they fit is a timing claim: bench/replay_fit.sh.
    const double sum_op = rec["sum_op_ns"].get<double>();
    const double plain = rec["plain_median_ns"].get<double>();
    EXPECT_EQ(rec["op_within_stage"].get<bool>(), sum_op <= plain);
    if (sum_op > plain) {
        EXPECT_FALSE(s["notes"].empty());
    }
    // Calls as the host sees them cost more than the ops replayed alone on a quiet machine;
    // that is a timing claim too (bench/replay_fit.sh), here only that both were measured.
    EXPECT_GT(rec["sum_call_ns"].get<double>(), 0);
    const json* mm = op_row(s, "MUL_MAT");
    ASSERT_NE(mm, nullptr);
    EXPECT_TRUE((*mm)["call_op_ratio"].is_number());
    EXPECT_GT((*mm)["count"].get<int>(), 4);
    EXPECT_FALSE(s["by_layer"].empty());
    EXPECT_FALSE(s["by_backend"].empty());
    EXPECT_FALSE(s["top"].empty());
    EXPECT_GE(s["n_splits"].get<int>(), 1);
}

std::set<std::string> backends_of(const json& stage, const std::string& op) {
    std::set<std::string> b;
    for (const auto& r : stage["ops"])
        if (r["op"] == op)
            b.insert(r["backend"].get<std::string>());
    return b;
}

}  // namespace

TEST(Ops, CpuProfilesPrefillAndDecode) {
    TempDir t;
    const std::string out = t.file("ops.json");
    Proc p = sbtest::run_sb({"ops", "-m", tiny_model(), "-p", "64", "-t", "1", "--replay", "8",
                             "--reps", "2", "--plain-reps", "3", "--out", out, "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("### By op type"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("call/op"), std::string::npos);
    EXPECT_NE(p.out.find("## prefill"), std::string::npos);
    EXPECT_NE(p.out.find("## decode"), std::string::npos);
    json doc = json::parse(read_file(out));
    EXPECT_EQ(doc["command"], "ops");
    EXPECT_EQ(doc["schema_version"], 2);
    const json& ops = doc["ops"];
    EXPECT_EQ(ops["source"], "trace");
    ASSERT_EQ(ops["stages"].size(), 2u);
    const json& pre = stage_of(ops, "prefill");
    const json& dec = stage_of(ops, "decode");
    check_stage(pre, 50);
    check_stage(dec, 50);
    EXPECT_EQ(pre["n_tokens"], 64);
    EXPECT_EQ(dec["kv_depth"], 64);
    EXPECT_EQ(backends_of(dec, "MUL_MAT"), std::set<std::string>{"CPU"});
    EXPECT_TRUE(dec["fallback"].empty());
    // The layer is known for the per-layer ops: the tiny preset has 4 layers.
    std::set<int> layers;
    for (const auto& a : dec["by_layer"])
        if (a["layer"].is_number())
            layers.insert(a["layer"].get<int>());
    EXPECT_EQ(layers, (std::set<int>{0, 1, 2, 3}));
}

TEST(Ops, BlasTakesLargeMatMulsAndTheRestFallsBack) {
    // F16 weights: llama.cpp repacks q4_0 weights for the CPU, and BLAS cannot read those.
    TempDir t;
    const std::string model = t.file("tiny-f16.gguf");
    Proc s =
        sbtest::run_sb({"synth", "--preset", "tiny", "--seed", "7", "--quant", "f16", "-o", model});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    Proc p =
        sbtest::run_sb({"ops", "-m", model, "-p", "64", "-t", "1", "--device", "BLAS", "--replay",
                        "8", "--reps", "2", "--plain-reps", "3", "-o", "json", "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    const json& ops = doc["ops"];
    EXPECT_EQ(ops["requested"], json::array({"BLAS"}));
    const json& pre = stage_of(ops, "prefill");
    const json& dec = stage_of(ops, "decode");
    check_stage(pre, 50);
    check_stage(dec, 50);
    // Prefill's batch is large enough for BLAS; decode's single token is not.
    EXPECT_TRUE(backends_of(pre, "MUL_MAT").count("BLAS")) << pre["by_backend"].dump();
    EXPECT_EQ(backends_of(dec, "MUL_MAT"), std::set<std::string>{"CPU"});
    EXPECT_GT(pre["n_splits"].get<int>(), 1);
    // Everything BLAS cannot run is a fallback to the CPU, with no BLAS time to compare.
    ASSERT_FALSE(pre["fallback"].empty());
    bool rms = false;
    for (const auto& f : pre["fallback"]) {
        EXPECT_EQ(f["backend"], "CPU");
        if (f["op"] == "RMS_NORM") {
            rms = true;
            EXPECT_TRUE(f["op_ns_requested"].is_null());
            EXPECT_EQ(f["n_replayed"], 0);
            EXPECT_NE(f["note"].get<std::string>().find("not supported"), std::string::npos);
        }
    }
    EXPECT_TRUE(rms);

    // Op coverage: BLAS's own supports-op answer per node. MUL_MAT is BLAS's where the batch is
    // large enough; every other op is BLAS-unsupported and ran on the CPU.
    EXPECT_EQ(pre["coverage_devices"], json::array({"BLAS", "CPU"}));
    bool mm_seen = false;
    for (const auto& c : pre["coverage"]) {
        SCOPED_TRACE(c.dump());
        const int count = c["count"].get<int>();
        EXPECT_EQ(c["supported"]["CPU"].get<int>(), count);
        if (c["op"] == "MUL_MAT") {
            mm_seen = true;
            EXPECT_GT(c["ran"]["BLAS"].get<int>(), 0);
            EXPECT_GE(c["supported"]["BLAS"].get<int>(), c["ran"]["BLAS"].get<int>());
        } else {
            EXPECT_EQ(c["ran"], json({{"CPU", count}}));
            EXPECT_EQ(c["supported"]["BLAS"], 0);
            EXPECT_NE(c["note"].get<std::string>().find("BLAS: " + std::to_string(count) +
                                                        " not supported"),
                      std::string::npos);
        }
    }
    EXPECT_TRUE(mm_seen);
    // Decode's one-token mat-muls are not BLAS's (its minimum batch), so all ran on the CPU.
    for (const auto& c : dec["coverage"])
        if (c["op"] == "MUL_MAT") {
            EXPECT_EQ(c["supported"]["BLAS"], 0) << c.dump();
            EXPECT_EQ(c["ran"], json({{"CPU", c["count"]}}));
        }
    Proc md = sbtest::run_sb({"ops", "-m", model, "-p", "64", "-t", "1", "--device", "BLAS",
                              "--replay", "0", "--reps", "1", "--plain-reps", "1", "-q"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("### Op coverage"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| BLAS supports | CPU supports |"), std::string::npos) << md.out;
}

// The buffer types llama.cpp put the model's weights in, from its load log
// ("load_tensors:   CPU_REPACK model buffer size =  2.25 MiB").
static std::set<std::string> weight_buffers(const std::string& log) {
    std::set<std::string> out;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
        const auto at = line.find(" model buffer size");
        if (line.rfind("load_tensors:", 0) != 0 || at == std::string::npos)
            continue;
        std::istringstream words(line.substr(13, at - 13));
        std::string name;
        words >> name;
        out.insert(name);
    }
    return out;
}

TEST(Ops, RepackedWeightsKeepMatMulsOffBlasAndSayWhy) {
    // Whether llama.cpp repacks the tiny model's weights for this CPU, and into which buffer
    // type (CPU_REPACK on x86 with AVX2 or ARM with dotprod, AMX on Xeons with AMX), depends on
    // the CPU. llama.cpp says so itself when it loads the model, which STAGEBENCH_LLAMA_LOG=1
    // lets through; each outcome has its own exact expectation.
    Proc p = sbtest::run({"/usr/bin/env",
                          "STAGEBENCH_LLAMA_LOG=1",
                          stagebench_bin(),
                          "ops",
                          "-m",
                          tiny_model(),
                          "-p",
                          "64",
                          "-t",
                          "1",
                          "--device",
                          "BLAS",
                          "--stage",
                          "prefill",
                          "--replay",
                          "4",
                          "--reps",
                          "1",
                          "--plain-reps",
                          "2",
                          "-o",
                          "json",
                          "-q"});
    ASSERT_EQ(p.exit_code, 0) << p.err.substr(0, 4000);
    std::set<std::string> repacked;
    for (const auto& b : weight_buffers(p.err))
        if (b != "CPU" && b != "CPU_Mapped")  // plain host memory, which BLAS reads
            repacked.insert(b);
    json doc = json::parse(p.out);
    ASSERT_EQ(doc["ops"]["stages"].size(), 1u);
    const json& pre = stage_of(doc["ops"], "prefill");
    const json* mm_fallback = nullptr;
    for (const auto& f : pre["fallback"])
        if (f["op"] == "MUL_MAT")
            mm_fallback = &f;
    std::printf("weight buffers: %s\n", ::testing::PrintToString(weight_buffers(p.err)).c_str());
    if (!repacked.empty()) {
        // The repacked mat-muls stay on the CPU, the fallback row says why, and what they
        // would cost on BLAS is measured.
        ASSERT_NE(mm_fallback, nullptr) << pre["fallback"].dump();
        const json& f = *mm_fallback;
        EXPECT_EQ(f["backend"], "CPU");
        EXPECT_EQ(f["requested"], "BLAS");
        const std::string note = f["note"].get<std::string>();
        bool named = false;
        for (const auto& b : repacked)
            named |= note.find("inputs in " + b + " buffers, which BLAS cannot use") !=
                     std::string::npos;
        EXPECT_TRUE(named) << note;
        EXPECT_GT(f["n_replayed"].get<int>(), 0);
        ASSERT_TRUE(f["penalty"].is_number()) << f.dump();
        EXPECT_GT(f["penalty"].get<double>(), 0);
    } else {
        // Weights in plain host memory: BLAS takes the batched mat-muls, and no fallback row
        // blames a buffer BLAS cannot use.
        EXPECT_TRUE(backends_of(pre, "MUL_MAT").count("BLAS")) << pre["by_backend"].dump();
        if (mm_fallback) {
            EXPECT_EQ((*mm_fallback)["note"].get<std::string>().find("cannot use"),
                      std::string::npos);
        }
    }
}

// Decode on RPC0 over a loopback server: the graph splits, its copies are timed, and every
// op type has a call time and an op time. Which ops pay the round trip more (the study's
// pattern: light ops do, mat-muls amortise it) is a comparison of timings, measured by
// bench/rpc_op_tax.sh, not asserted here.
TEST(Ops, RpcDecodeSplitsCopiesAndTimesEveryOpOnRpc0) {
    TempDir t;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    Proc p = sbtest::run_sb({"ops",          "-m",       tiny_model(), "-p",     "32",
                             "-t",           "1",        "--rpc",      ep,       "--device",
                             "RPC0",         "--replay", "8",          "--reps", "2",
                             "--plain-reps", "3",        "-o",         "json",   "-q"});
    server.stop(SIGTERM);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    const json& ops = doc["ops"];
    const json& dec = stage_of(ops, "decode");
    check_stage(dec, 50);
    check_stage(stage_of(ops, "prefill"), 50);
    EXPECT_TRUE(backends_of(dec, "MUL_MAT").count("RPC0"));
    EXPECT_GT(dec["n_splits"].get<int>(), 1);
    EXPECT_GT(dec["n_copies"].get<int>(), 0);
    bool timed_copy = false;
    for (const auto& sp : dec["splits"])
        timed_copy |= sp["copy_ns"].is_number();
    EXPECT_TRUE(timed_copy) << dec["splits"].dump();
    // The rows bench/rpc_op_tax.sh compares: MUL_MAT and at least three light ops, each with
    // a call time, an op time and their ratio.
    int timed = 0;
    for (const char* op : {"MUL_MAT", "RMS_NORM", "ADD", "MUL", "ROPE"}) {
        const json* r = op_row(dec, op);
        if (!r || !(*r)["call_op_ratio"].is_number())
            continue;
        ++timed;
        EXPECT_GT((*r)["call_ns"].get<double>(), 0) << op;
        EXPECT_GT((*r)["op_ns"].get<double>(), 0) << op;
        EXPECT_GT((*r)["call_op_ratio"].get<double>(), 0) << op;
    }
    ASSERT_NE(op_row(dec, "MUL_MAT"), nullptr);
    EXPECT_TRUE((*op_row(dec, "MUL_MAT"))["call_op_ratio"].is_number());
    EXPECT_GE(timed, 4);
    // Ops kept on the CPU (the input embedding) are fallback from RPC0, priced there.
    ASSERT_FALSE(dec["fallback"].empty());
    EXPECT_EQ(dec["fallback"][0]["requested"], "RPC0");
}

// Ctrl-C during the node-by-node tracing: the profile traced so far is kept in --out, marked
// partial with a warning, and the run ends with the line and exit 1 (not 0: not everything
// asked for was done).
TEST(Ops, CtrlCKeepsThePartialProfileAndExits1) {
    TempDir t;
    const std::string out = t.file("ops.json");
    const std::string log = t.file("log");
    pid_t pid = spawn_bg({stagebench_bin(), "ops", "-m", tiny_model(), "--reps", "100000",
                          "--replay", "0", "--out", out},
                         log);
    bool tracing = false;
    for (int i = 0; i < 3000 && !tracing; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        tracing = read_file(log + ".err").find("tracing node by node") != std::string::npos;
    }
    ASSERT_TRUE(tracing) << read_file(log + ".err");
    const int rc = signal_and_wait(pid, SIGINT, 60);
    EXPECT_EQ(rc, 1) << read_file(log + ".err");
    const json doc = json::parse(read_file(out));
    bool warned = false;
    for (const auto& w : doc["warnings"])
        warned |= w["code"] == "interrupted";
    EXPECT_TRUE(warned) << doc["warnings"].dump();
    EXPECT_FALSE(doc["ops"].is_null());
    EXPECT_NE(read_file(log + ".err")
                  .find("stagebench: interrupted; what was measured is kept in " + out),
              std::string::npos)
        << read_file(log + ".err");
}

TEST(Ops, BadInputIsOneLine) {
    Proc p = sbtest::run_sb({"ops", "-m", "/nonexistent.gguf", "-q"});
    EXPECT_EQ(p.exit_code, 2);
    EXPECT_NE(p.err.find("stagebench: error:"), std::string::npos);
    Proc d = sbtest::run_sb({"ops", "-m", tiny_model(), "--device", "NOPE0", "-q"});
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_NE(d.err.find("unknown device"), std::string::npos) << d.err;
}

TEST(Import, HexagonLogsOfBothFormatsBecomeTables) {
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/";
    Proc md = sbtest::run_sb({"import", "hexagon-profile", dir + "opsync_old.log"});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("### By op type"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("| MUL_MAT | 15 |"), std::string::npos) << md.out;
    EXPECT_NE(md.err.find("3 profile line(s) did not parse"), std::string::npos) << md.err;

    Proc js =
        sbtest::run_sb({"import", "hexagon-profile", dir + "async_pr22269.log", "-o", "json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    json doc = json::parse(js.out);
    EXPECT_EQ(doc["command"], "import");
    const json& ops = doc["ops"];
    EXPECT_EQ(ops["source"], "hexagon-profile");
    EXPECT_EQ(ops["import"]["n_records"], 16);
    EXPECT_EQ(ops["import"]["n_unparsed"], 1);
    const json& s = ops["stages"][0];
    EXPECT_EQ(s["ops"].size(), 16u);
    EXPECT_TRUE(s["ops"][0]["call_ns"].is_null());

    Proc none = sbtest::run_sb({"import", "hexagon-profile", dir + "../../CMakeLists.txt"});
    EXPECT_EQ(none.exit_code, 2);
    Proc missing = sbtest::run_sb({"import", "hexagon-profile", dir + "nope.log"});
    EXPECT_EQ(missing.exit_code, 2);
}

TEST(Import, PinnedSourceLogSplitsIntoPrefillAndDecode) {
    // The fixture printed with the pinned Hexagon backend's format strings
    // (src/profile/hexagon_pinned_test.cpp keeps it equal to what the source prints).
    const std::string log =
        std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile2.log";
    Proc js = sbtest::run_sb({"import", "hexagon-profile", log, "-o", "json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const json ops = json::parse(js.out)["ops"];
    EXPECT_EQ(ops["import"]["stage_split"], "tokens");
    ASSERT_EQ(ops["stages"].size(), 2u);
    const json& pre = stage_of(ops, "prefill");
    const json& dec = stage_of(ops, "decode");
    EXPECT_EQ(pre["n_graphs"], 1);
    EXPECT_EQ(dec["n_graphs"], 2);
    EXPECT_EQ(pre["n_tokens"], 7);
    EXPECT_EQ(dec["n_tokens"], 2);  // two decode graphs of one token
    // The stages' op totals are the log's usec, summed per stage from the lines themselves.
    std::istringstream in(read_file(log));
    double usec[2] = {0, 0};
    int stage = -1;
    for (std::string line; std::getline(in, line);) {
        if (line.find("OPBATCH") != std::string::npos) {
            stage = stage < 0 ? 0 : 1;  // the first batch is the prefill graph
            continue;
        }
        const auto at = line.find("|usec ");
        if (at != std::string::npos)
            usec[stage] += std::stod(line.substr(at + 6));
    }
    EXPECT_DOUBLE_EQ(pre["reconciliation"]["sum_op_ns"].get<double>(), usec[0] * 1000);
    EXPECT_DOUBLE_EQ(dec["reconciliation"]["sum_op_ns"].get<double>(), usec[1] * 1000);
    EXPECT_EQ(pre["ops"][2]["pmu"].size(), 8u);
    EXPECT_EQ(pre["ops"][2]["kernel"], "hvx-tiled vtcm 262144");

    Proc one = sbtest::run_sb({"import", "hexagon-profile", log, "--one-stage", "-o", "json"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(json::parse(one.out)["ops"]["stages"][0]["stage"], "log");
    Proc marks = sbtest::run_sb(
        {"import", "hexagon-profile", log, "--stage-of", "n_ctx=warmup", "-o", "json"});
    ASSERT_EQ(marks.exit_code, 0) << marks.err;
    const json mops = json::parse(marks.out)["ops"];
    EXPECT_EQ(mops["import"]["stage_split"], "markers");
    EXPECT_EQ(mops["stages"][0]["stage"], "warmup");
    Proc bad = sbtest::run_sb({"import", "hexagon-profile", log, "--stage-of", "nostage"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("expected TEXT=STAGE"), std::string::npos) << bad.err;
}

// Per graph, the op and call microseconds of a Hexagon log, summed straight from its lines
// (independently of the importer): a graph starts at RMS_NORM of inp_embd into norm-0; a time is
// "usec N" or "op-usec N" after a space or '|', a call time "call-usec N".
struct GraphSums {
    std::vector<double> op_usec, call_usec;
};
GraphSums sum_log(const std::string& path) {
    GraphSums g;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
        if (line.find("inp_embd") != std::string::npos &&
            line.find("norm-0") != std::string::npos &&
            line.find("trace-op") == std::string::npos) {
            g.op_usec.push_back(0);
            g.call_usec.push_back(0);
        }
        if (g.op_usec.empty() || line.find("OPBATCH") != std::string::npos)
            continue;
        for (const char* key : {" usec ", "|usec ", " op-usec "})
            if (auto at = line.find(key); at != std::string::npos)
                g.op_usec.back() += std::stod(line.substr(at + std::string(key).size()));
        if (auto at = line.find("call-usec "); at != std::string::npos)
            g.call_usec.back() += std::stod(line.substr(at + 10));
    }
    return g;
}

TEST(Import, EveryUpstreamFormatWithItsPrefixesBecomesPrefillAndDecode) {
    // tests/fixtures/hexagon/formats/*.log: printed through each format's own format string
    // (src/profile/hexagon_import_formats_test.cpp keeps them equal to that print).
    const std::map<std::string, std::string> formats = {
        {"pr16547_first", "first (PR 16547)"},
        {"pr17500_profile_op", "op-usec (PR 17500)"},
        {"pr22269_async", "usec (PR 22269)"},
        {"pr24592_start_mhz", "usec start mhz (PR 24592)"},
        {"pr24954_pipe", "pipe (PR 24954)"}};
    for (const auto& [name, format] : formats) {
        SCOPED_TRACE(name);
        const std::string log =
            std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/formats/" + name + ".log";
        Proc p = sbtest::run_sb({"import", "hexagon-profile", log, "-o", "json"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
        EXPECT_EQ(p.err, "");
        const json ops = json::parse(p.out)["ops"];
        EXPECT_EQ(ops["import"]["formats"].size(), 1u);
        EXPECT_TRUE(ops["import"]["formats"].contains(format)) << ops["import"]["formats"];
        EXPECT_EQ(ops["import"]["n_unparsed"], 0);
        EXPECT_EQ(ops["import"]["n_refused"], 0);
        EXPECT_EQ(ops["import"]["stage_split"], "tokens");
        const GraphSums g = sum_log(log);
        ASSERT_EQ(g.op_usec.size(), 3u);
        const json& pre = stage_of(ops, "prefill");
        const json& dec = stage_of(ops, "decode");
        EXPECT_EQ(pre["n_graphs"], 1);
        EXPECT_EQ(dec["n_graphs"], 2);
        EXPECT_EQ(pre["n_tokens"], 7);
        EXPECT_DOUBLE_EQ(pre["reconciliation"]["sum_op_ns"].get<double>(), g.op_usec[0] * 1000);
        EXPECT_DOUBLE_EQ(dec["reconciliation"]["sum_op_ns"].get<double>(),
                         (g.op_usec[1] + g.op_usec[2]) * 1000);
        // The formats before PR 22269 have the host's call times.
        const bool call = name == "pr16547_first" || name == "pr17500_profile_op";
        ASSERT_EQ(pre["reconciliation"]["sum_call_ns"].is_null(), !call);
        if (call) {
            EXPECT_GT(g.call_usec[0], g.op_usec[0]);
            EXPECT_DOUBLE_EQ(pre["reconciliation"]["sum_call_ns"].get<double>(),
                             g.call_usec[0] * 1000);
            EXPECT_DOUBLE_EQ(dec["reconciliation"]["sum_call_ns"].get<double>(),
                             (g.call_usec[1] + g.call_usec[2]) * 1000);
            EXPECT_FALSE(pre["ops"][2]["call_ns"].is_null());
        }
    }
}

TEST(Import, ALineWhoseValuesCannotBeTrueIsRefusedTheRestKept) {
    TempDir t;
    const std::string src =
        read_file(std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile1.log");
    // Qcur-0's mat-mul in the prefill graph, with issue #33's clock.
    std::istringstream in(src);
    std::string text, line, bad_line;
    int n = 0, bad_no = 0;
    double bad_usec = 0;
    while (std::getline(in, line)) {
        ++n;
        if (bad_no == 0 && line.find("-> Qcur-0|") != std::string::npos) {
            bad_no = n;
            bad_usec = std::stod(line.substr(line.find("|usec ") + 6));
            line = line.substr(0, line.rfind(" mhz ")) + " mhz 1e23";
            bad_line = line;
        }
        text += line + "\n";
    }
    ASSERT_GT(bad_no, 0);
    const std::string log = t.file("bad.log");
    std::ofstream(log) << text;
    Proc p = sbtest::run_sb({"import", "hexagon-profile", log, "-o", "json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    EXPECT_NE(p.err.find(fmt::format("1 profile line(s) refused for values that cannot be true "
                                     "(first: line {}: implausible mhz (1e+23",
                                     bad_no)),
              std::string::npos)
        << p.err;
    const json doc = json::parse(p.out);
    EXPECT_EQ(doc["warnings"][0]["code"], "hexagon_implausible_lines");
    const json ops = doc["ops"];
    EXPECT_EQ(ops["import"]["n_refused"], 1);
    EXPECT_EQ(ops["import"]["refused"][0]["line"], bad_no);
    for (const auto& st : ops["stages"])
        for (const auto& op : st["ops"])
            if (!op["mhz"].is_null()) {
                EXPECT_LE(op["mhz"].get<double>(), 10000);
            }
    const GraphSums g =
        sum_log(std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile1.log");
    EXPECT_DOUBLE_EQ(stage_of(ops, "prefill")["reconciliation"]["sum_op_ns"].get<double>(),
                     (g.op_usec[0] - bad_usec) * 1000);

    // A log of nothing but such lines is bad input: one line, exit 2.
    const std::string only = t.file("only.log");
    std::ofstream(only) << bad_line << "\n";
    Proc q = sbtest::run_sb({"import", "hexagon-profile", only});
    EXPECT_EQ(q.exit_code, 2);
    EXPECT_EQ(std::count(q.err.begin(), q.err.end(), '\n'), 1) << q.err;
    EXPECT_NE(q.err.find("line 1: implausible mhz (1e+23"), std::string::npos) << q.err;
    EXPECT_EQ(q.out, "");
}

TEST(Compare, CpuAndRpcOpsDocumentsOpByOp) {
    TempDir t;
    const std::string cpu = t.file("cpu.json"), rpc = t.file("rpc.json");
    Proc a = sbtest::run_sb({"ops", "-m", tiny_model(), "-p", "32", "-t", "1", "--replay", "8",
                             "--reps", "2", "--plain-reps", "2", "--out", cpu, "-q"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    Proc b = sbtest::run_sb({"ops",
                             "-m",
                             tiny_model(),
                             "-p",
                             "32",
                             "-t",
                             "1",
                             "--rpc",
                             server.endpoint(),
                             "--device",
                             "RPC0",
                             "--replay",
                             "8",
                             "--reps",
                             "2",
                             "--plain-reps",
                             "2",
                             "--out",
                             rpc,
                             "-q"});
    server.stop(SIGTERM);
    ASSERT_EQ(b.exit_code, 0) << b.err;

    Proc js =
        sbtest::run_sb({"compare", cpu, rpc, "--label", "CPU", "--label", "RPC", "-o", "json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const json r = json::parse(js.out);
    // Nodes are matched by signature (op, role, types, shapes), then each op type rolled up.
    EXPECT_EQ(r["match"]["fields"], json::array({"stage", "op", "signature"}));
    std::set<std::string> metrics;
    bool mm_decode = false;
    for (const auto& row : r["rows"]) {
        metrics.insert(row["metric"].get<std::string>());
        ASSERT_EQ(row["ratios"].size(), 1u);
        EXPECT_EQ(row["ratios"][0]["label"], "RPC/CPU");
        if (row["test"] == "MUL_MAT" && row["stage"] == "decode" &&
            row["metric"] == "call_total_us") {
            mm_decode = true;
            EXPECT_TRUE(row["ratios"][0]["median"].is_number()) << row.dump();
            EXPECT_TRUE(row["ratios"][0]["ci_low"].is_number()) << row.dump();
            EXPECT_EQ(row["differs"]["devices"], json::array({"CPU", "RPC0"}));
        }
    }
    EXPECT_TRUE(mm_decode);
    EXPECT_EQ(metrics,
              (std::set<std::string>{"op_us", "call_us", "call_per_op", "op_total_us",
                                     "call_total_us", "call_per_op_total", "fallback_us"}));
    // The input embedding RPC0's run kept on the CPU (weights in host memory), priced against
    // the CPU-only run: its time there and its splits' share against the same node there.
    bool fallback = false;
    for (const auto& row : r["rows"])
        if (row["metric"] == "fallback_us" && row["test"] == "GET_ROWS on CPU (asked RPC0)") {
            fallback = true;
            EXPECT_TRUE(row["sides"][0]["total"].is_number()) << row.dump();
            EXPECT_TRUE(row["sides"][1]["total"].is_number()) << row.dump();
            EXPECT_EQ(row["ratios"][0]["verdict"], "no CI: totals of one stage");
        }
    EXPECT_TRUE(fallback);
    Proc md = sbtest::run_sb({"compare", cpu, rpc});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| MUL_MAT | decode Σ call / Σ op |"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("Matched by: stage, op, signature"), std::string::npos) << md.out;
}

TEST(Import, AFusedLogComparesWithTheUnfusedOnesPartsSummed) {
    // The same graphs printed by the pinned backend without fusion (pinned_profile1.log, as with
    // GGML_HEXAGON_OPFUSION=0) and with the attention outputs' MUL_MAT+ADD fused
    // (pinned_fused.log, 1 µs less each; src/profile/hexagon_pinned_test.cpp keeps both equal to
    // what the source prints). Decode graph g's mat-mul takes 20 + g µs and its ADD 2 + g, two
    // layers, graphs 1 and 2; prefill's 120 and 12.
    TempDir t;
    const std::string dir = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/";
    const std::string a = t.file("unfused.json"), b = t.file("fused.json");
    for (auto [log, out] :
         {std::pair{dir + "pinned_profile1.log", a}, std::pair{dir + "pinned_fused.log", b}}) {
        Proc p = sbtest::run_sb({"import", "hexagon-profile", log, "--out", out, "-o", "json"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
    }
    Proc js = sbtest::run_sb({"compare", a, b, "-o", "json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const json r = json::parse(js.out);
    // Every node meets its counterpart: the fused ones the unfused pairs, summed.
    EXPECT_EQ(r["unmatched"], json::array()) << r["unmatched"].dump();
    auto find = [&](const std::string& stage, const std::string& test, const std::string& m) {
        for (const auto& row : r["rows"])
            if (row["stage"] == stage && row["test"] == test && row["metric"] == m)
                return row;
        return json();
    };
    const json tot = find("decode", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(tot.is_object()) << js.out;
    EXPECT_DOUBLE_EQ(tot["sides"][0]["total"].get<double>(), (2 * 24 + 2 * 26) / 2.0);
    EXPECT_DOUBLE_EQ(tot["sides"][1]["total"].get<double>(), (2 * 23 + 2 * 25) / 2.0);
    EXPECT_DOUBLE_EQ(tot["ratios"][0]["median"].get<double>(), 48.0 / 50.0);
    EXPECT_EQ(tot["fused"], "A: MUL_MAT + ADD summed");
    const json shape = find(
        "decode", "MUL_MAT+ADD attn_output: q4_0 256×256, f32 256, f32 256 → f32 256", "op_us");
    ASSERT_TRUE(shape.is_object()) << js.out;
    EXPECT_DOUBLE_EQ(shape["sides"][0]["median"].get<double>(), 25.0);
    EXPECT_DOUBLE_EQ(shape["sides"][1]["median"].get<double>(), 24.0);
    EXPECT_EQ(shape["fused"], "A: MUL_MAT + ADD summed");
    const json pre = find("prefill", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(pre.is_object()) << js.out;
    EXPECT_DOUBLE_EQ(pre["sides"][0]["total"].get<double>(), 2 * 132.0);
    EXPECT_DOUBLE_EQ(pre["sides"][1]["total"].get<double>(), 2 * 131.0);
    // The other mat-muls stay MUL_MAT, the same on both sides.
    const json mm = find("decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm.is_object());
    EXPECT_DOUBLE_EQ(mm["ratios"][0]["median"].get<double>(), 1.0);
    EXPECT_TRUE(mm["fused"].is_null());

    Proc md = sbtest::run_sb({"compare", a, b});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| MUL_MAT+ADD (fused; A: MUL_MAT + ADD summed) | decode Σ op µs | Σ "
                          "50.00 | - | Σ 48.00 | - |"),
              std::string::npos)
        << md.out;
    EXPECT_EQ(md.out.find("Unmatched"), std::string::npos) << md.out;
}

// The Hexagon log of a CPU ops document's graphs as the pinned backend prints them with its
// mat-muls that share an input fused (GGML_HEXAGON_FUSE_MUL_MAT_NX): one OPBATCH line per stage
// and an op line per computing node, through the pinned source's own formats (ggml-hexagon.cpp:
// ggml_hexagon_dump_batch_prof, ggml_hexagon_dump_op_prof). A mat-mul and the later mat-muls of
// the next 16 nodes with the same src1 are stacked (ggml_hexagon_graph_optimize_reorder's
// N_FORWARD) and fused into one MUL_MAT_NX node (try_fuse_mul_mat_nx): its inputs the weights
// then the shared input, its output the last mat-mul's. Each node takes 10 µs, a fused one 25.
// fused_us gets, per stage, the CPU's op time (µs) of the mat-muls each NX node stands for, and
// n_nx the NX nodes.
std::string nx_log_of(const json& cpu, std::map<std::string, double>& fused_us,
                      std::map<std::string, int>& n_nx) {
    const std::string file = "ggml/src/ggml-hexagon/ggml-hexagon.cpp";
    const std::string src = sb::hexlog::read_text(std::string(SB_LLAMA_SOURCE_DIR) + "/" + file);
    const auto op_fmt = sb::hexlog::find_call(src, file, "GGML_LOG_DEBUG", "profile-op %s|", 0);
    const auto batch_fmt =
        sb::hexlog::find_call(src, file, "GGML_LOG_DEBUG", "profile-op OPBATCH|", 0);
    std::string log;
    long long clock = 1000000;
    for (const auto& st : cpu["stages"]) {
        const std::string stage = st["stage"];
        const json& ops = st["ops"];
        struct Node {
            std::string op;
            std::vector<json> ins;
            json out;
            long long usec;
        };
        std::vector<Node> nodes;
        std::vector<bool> used(ops.size(), false);
        for (std::size_t a = 0; a < ops.size(); ++a) {
            const json& r = ops[a];
            if (used[a] || r["no_compute"].get<bool>())
                continue;
            std::vector<std::size_t> stack{a};
            if (r["op"] == "MUL_MAT")
                for (std::size_t m = a + 1; m < ops.size() && m < a + 16; ++m)
                    if (!used[m] && ops[m]["op"] == "MUL_MAT" &&
                        ops[m]["srcs"][1]["name"] == r["srcs"][1]["name"])
                        stack.push_back(m);
            if (stack.size() < 2) {
                nodes.push_back({r["op"], {r["srcs"].begin(), r["srcs"].end()}, r, 10});
                continue;
            }
            Node nx{"MUL_MAT_NX", {}, ops[stack.back()], 25};
            for (std::size_t k : stack) {
                used[k] = true;
                nx.ins.push_back(ops[k]["srcs"][0]);
                fused_us[stage] += ops[k]["op_ns"].get<double>() / 1e3;
            }
            nx.ins.push_back(r["srcs"][1]);
            nodes.push_back(nx);
            n_nx[stage]++;
        }
        long long batch_usec = 0;
        for (const auto& n : nodes)
            batch_usec += n.usec;
        log +=
            sb::hexlog::print(batch_fmt, {{"sess_name.c_str()", std::string("HTP0")},
                                          {"rsp.n_ops", static_cast<long long>(nodes.size())},
                                          {"evt_str", std::string("----")},
                                          {"rsp.usecs", batch_usec},
                                          {"(unsigned long long) batch_cycles", batch_usec * 1100},
                                          {"(unsigned long long) rsp.cycles_start", clock},
                                          {"batch_mhz", 1100.0}});
        for (const auto& n : nodes) {
            std::vector<std::string> names, dims, types, strides;
            for (const json* t : [&] {
                     std::vector<const json*> v;
                     for (const auto& x : n.ins)
                         v.push_back(&x);
                     v.push_back(&n.out);
                     return v;
                 }()) {
                const auto ne = (*t)["ne"].get<std::vector<long long>>();
                names.push_back((*t)["name"].get<std::string>());
                dims.push_back(sb::hexlog::dims_text(ne));
                types.push_back((*t)["type"].get<std::string>());
                strides.push_back(sb::hexlog::strides_text(ne, types.back()));
            }
            log += sb::hexlog::print(op_fmt, {{"sess_name.c_str()", std::string("HTP0")},
                                              {"node.op_name().c_str()", n.op},
                                              {"fmt.names", sb::hexlog::joined(names)},
                                              {"fmt.dims", sb::hexlog::joined(dims)},
                                              {"fmt.types", sb::hexlog::joined(types)},
                                              {"fmt.strides", sb::hexlog::joined(strides)},
                                              {"fmt.kparams", std::string("----")},
                                              {"op_usec", n.usec},
                                              {"op_cycles", n.usec * 1100},
                                              {"pd.cycles_start", clock},
                                              {"mhz", 1100.0},
                                              {"pmu_str", std::string()}});
            clock += n.usec * 1100;
        }
    }
    return log;
}

TEST(Import, AMulMatNxLogComparesWithARealCpuOpsDocument) {
    // The tiny model's real CPU ops document, and its graphs as the NPU would print them with
    // q/k/v and gate/up fused: compare meets each MUL_MAT_NX node with the CPU's mat-muls
    // sharing its input, summed.
    TempDir t;
    const std::string cpu = t.file("cpu.json"), log = t.file("nx.log"), npu = t.file("npu.json");
    Proc a = sbtest::run_sb({"ops", "-m", tiny_model(), "-p", "32", "-t", "1", "--replay", "8",
                             "--reps", "2", "--plain-reps", "2", "--out", cpu, "-q"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const json doc = json::parse(read_file(cpu));
    std::map<std::string, double> fused_us;
    std::map<std::string, int> n_nx;
    {
        std::ofstream f(log);
        f << nx_log_of(doc["ops"], fused_us, n_nx);
    }
    // The tiny model's layers each have q/k/v and gate/up: two nodes per layer.
    ASSERT_GT(n_nx["decode"], 0);
    EXPECT_EQ(n_nx["decode"] % 2, 0);
    Proc imp = sbtest::run_sb({"import", "hexagon-profile", log, "--out", npu, "-o", "json"});
    ASSERT_EQ(imp.exit_code, 0) << imp.err;
    EXPECT_EQ(imp.err, "");
    Proc js = sbtest::run_sb({"compare", cpu, npu, "-o", "json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const json r = json::parse(js.out);
    EXPECT_EQ(r["unmatched"], json::array()) << r["unmatched"].dump();
    auto find = [&](const std::string& stage, const std::string& test, const std::string& m) {
        for (const auto& row : r["rows"])
            if (row["stage"] == stage && row["test"] == test && row["metric"] == m)
                return row;
        return json();
    };
    for (const std::string stage : {"prefill", "decode"}) {
        SCOPED_TRACE(stage);
        const json tot = find(stage, "MUL_MAT_NX", "op_total_us");
        ASSERT_TRUE(tot.is_object()) << js.out;
        EXPECT_NEAR(tot["sides"][0]["total"].get<double>(), fused_us[stage], 1e-6);
        EXPECT_DOUBLE_EQ(tot["sides"][1]["total"].get<double>(), 25.0 * n_nx[stage]);
        EXPECT_EQ(tot["fused"], "A: the MUL_MATs sharing its input summed");
    }
    // The attention's q, k and v of layer 0 as one signature.
    bool qkv = false;
    for (const auto& row : r["rows"])
        qkv = qkv || (row["stage"] == "decode" && row["metric"] == "op_us" &&
                      row["test"].get<std::string>().rfind("MUL_MAT_NX attn_q: ", 0) == 0);
    EXPECT_TRUE(qkv) << js.out;
    // The mat-muls of an input of their own (attention output, FFN down, the output
    // projection) stay MUL_MAT on both sides.
    const json mm = find("decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm.is_object());
    EXPECT_TRUE(mm["fused"].is_null());

    Proc md = sbtest::run_sb({"compare", cpu, npu});
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("| MUL_MAT_NX (fused; A: the MUL_MATs sharing its input summed) |"),
              std::string::npos)
        << md.out;
}

TEST(Decompose, RpcStagesSplitIntoComputeConversionCommunicationCopiesHost) {
    TempDir t;
    // One core for the server, one for the client (-t 1): timings are compared.
    RpcServer server(t, {"-t", "1"});
    ASSERT_TRUE(server.ready);
    const std::string ep = server.endpoint();
    Proc p = sbtest::run_sb({"decompose",    "-m",       tiny_model(), "-p",     "32",
                             "-t",           "1",        "--rpc",      ep,       "--device",
                             "RPC0",         "--replay", "8",          "--reps", "2",
                             "--plain-reps", "3",        "-o",         "json",   "-q"});
    Proc md = sbtest::run_sb({"decompose", "-m",      tiny_model(),   "-p",       "32",
                              "-t",        "1",       "--rpc",        ep,         "--device",
                              "RPC0",      "--stage", "decode",       "--replay", "4",
                              "--reps",    "1",       "--plain-reps", "2",        "-q"});
    server.stop(SIGTERM);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    json doc = json::parse(p.out);
    EXPECT_EQ(doc["command"], "decompose");
    for (const auto& s : doc["ops"]["stages"]) {
        SCOPED_TRACE(s["stage"].get<std::string>());
        const json& d = s["decomposition"];
        ASSERT_TRUE(d.is_object());
        std::map<std::string, json> parts;
        for (const auto& part : d["parts"])
            parts[part["name"]] = part;
        for (const char* name : {"accelerator_compute", "conversion", "communication", "copies",
                                 "fallback_ops", "host"})
            ASSERT_TRUE(parts.count(name)) << name;
        // What holds by construction. Accelerator compute is a sum of replayed op times, each
        // above 0 (a replay's slope, average or time less its dispatch when above it), less
        // the mat-muls' conversions capped at their ops: the other ops on RPC0 (norms, ropes,
        // adds) keep it above 0. Copies are the median gaps of real transfers between the
        // splits. Communication is the splits' dispatches times one no-work round trip, itself
        // measured apart (a lone op's time less its op time, never below 0): on a loaded
        // machine it can come out 0, so only its count and product are exact here; that it is
        // above 0 on an idle machine is bench/decompose_rpc.sh's claim.
        EXPECT_GT(parts["accelerator_compute"]["ns"].get<double>(), 0);
        EXPECT_GE(parts["conversion"]["ns"].get<double>(), 0);
        EXPECT_GT(d["n_dispatches"].get<int>(), 0);
        const double dispatch = d["dispatch_ns"]["RPC0"].get<double>();
        EXPECT_GE(dispatch, 0);
        EXPECT_NEAR(parts["communication"]["ns"].get<double>(),
                    d["n_dispatches"].get<int>() * dispatch,
                    1e-9 * (1 + d["n_dispatches"].get<int>() * dispatch));
        EXPECT_GT(s["n_copies"].get<int>(), 0);
        EXPECT_GT(parts["copies"]["ns"].get<double>(), 0);
        EXPECT_TRUE(parts["host"]["ns"].is_number());
        EXPECT_GT(d["n_conversion_ops"].get<int>(), 0);
        // Host is what is left of the uninstrumented stage time, so the parts add up by
        // construction; what can go wrong is a part that is not a part. Every part but host is
        // >= 0; host < 0 only with its note that the parts overlap; no part exceeds the stage
        // unless its note says so (measured on its own, it ran slower than inside the stage).
        const double plain = s["reconciliation"]["plain_median_ns"].get<double>();
        ASSERT_GT(plain, 0);
        for (const auto& [name, part] : parts) {
            SCOPED_TRACE(name);
            if (!part["ns"].is_number())
                continue;
            const double ns = part["ns"].get<double>();
            const std::string note = part["note"].get<std::string>();
            if (name != "host") {
                EXPECT_GE(ns, 0);
            } else if (ns < 0) {
                EXPECT_NE(note.find("overlap"), std::string::npos) << note;
            }
            if (ns > plain) {
                EXPECT_NE(note.find("exceeds the uninstrumented stage time"), std::string::npos)
                    << ns << " ns of a " << plain << " ns stage: " << note;
            }
            EXPECT_NEAR(part["share"].get<double>(), ns / plain, 1e-9);
        }
    }
    ASSERT_EQ(md.exit_code, 0) << md.err;
    EXPECT_NE(md.out.find("### Decomposition of the stage, probe model (accelerator path: RPC0)"),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("| communication |"), std::string::npos);
    EXPECT_EQ(md.out.find("### By layer"), std::string::npos);  // the brief view
}
