// Hexagon profile logs written with the pinned llama.cpp's own format strings.
//
// The Hexagon backend (ggml/src/ggml-hexagon/ggml-hexagon.cpp of the pinned llama.cpp) logs its
// op profile with GGML_HEXAGON_PROFILE=1 (2 adds PMU counters, 3 trace events):
//   ggml_hexagon_dump_op_prof     GGML_LOG_DEBUG("ggml-hex: %s profile-op %s|%s|...|usec %u
//                                 cycles %u start %u mhz %.1f%s\n", ...)  one line per op
//   (its PMU text)                snprintf(pmu_str, ..., " pmu [%u,%u,%u,%u,%u,%u,%u,%u]", ...)
//   ggml_hexagon_dump_batch_prof  GGML_LOG_DEBUG("ggml-hex: %s profile-op OPBATCH|----|n-ops
//                                 %u|%s|----|----|usec %u cycles %llu start %llu mhz %.1f\n")
//                                 one line per batch, written BEFORE the batch's op lines
//   (its event counts)            snprintf(evt_str, ..., "evt-cnt %u,%u,...", ...)
//   ggml_hexagon_dump_trace_events GGML_LOG_DEBUG("ggml-hex: %s trace-evt %s: thread %u ...")
// The field texts (names, dims, types, strides: "in0 x in1 -> out", dims "%d:%d" or
// "%d:%d:%d:%d") are htp_opformat's in ggml-hexagon/htp-opnode.h.
//
// These tests read each call (its format string AND its argument list) from the pinned source
// at test time, print a log holding one prefill graph and two decode graphs through them, and
// import it. A format change upstream (a field added, renamed, reordered) fails here, naming the
// file and line, before a user's log fails to import. The printed logs are also kept in
// tests/fixtures/hexagon/pinned_profile{1,2,3}.log and must equal what the source prints now
// (SB_WRITE_FIXTURES=1 rewrites them).
#include "profile/hexagon_import.hpp"

#include <gtest/gtest.h>

#include "profile/hexagon_import_printf.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/result.hpp"
#include "profile/ops_command.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

const std::string kSourceFile = "ggml/src/ggml-hexagon/ggml-hexagon.cpp";

std::string pinned_source() {
    return hexlog::read_text(std::string(SB_LLAMA_SOURCE_DIR) + "/" + kSourceFile);
}

using hexlog::CallSite;
using hexlog::dims_text;
using hexlog::graph_ops;
using hexlog::joined;
using hexlog::Op;
using hexlog::print;
using hexlog::strides_text;
using hexlog::Value;

CallSite find_call(const std::string& src, const std::string& func, const std::string& needle,
                   size_t fmt_arg) {
    return hexlog::find_call(src, kSourceFile, func, needle, fmt_arg);
}

// The pinned source's logging calls.
struct PinnedFormats {
    CallSite op, batch, pmu, evt, trace;
};

PinnedFormats pinned_formats(const std::string& src = pinned_source()) {
    PinnedFormats p;
    p.op = find_call(src, "GGML_LOG_DEBUG", "profile-op %s|", 0);
    p.batch = find_call(src, "GGML_LOG_DEBUG", "profile-op OPBATCH|", 0);
    p.pmu = find_call(src, "snprintf", " pmu [%u", 2);
    p.evt = find_call(src, "snprintf", "evt-cnt %u", 2);
    p.trace = find_call(src, "GGML_LOG_DEBUG", "trace-evt %s", 0);
    return p;
}

struct PinnedExpected {
    std::map<std::string, double> op_usec;  // per stage
    std::map<std::string, int> count;
    std::map<std::string, std::map<std::string, double>> by_op;  // stage -> op -> usec
    // GGML_HEXAGON_PROFILE=3: per stage, each pipeline part's wall time (µs), and per stage and
    // op type each part's wall time within its nodes.
    std::map<std::string, std::map<std::string, double>> part_usec;
    std::map<std::string, std::map<std::string, std::map<std::string, double>>> op_part_usec;
};

// One trace event as the backend keeps it (htp_trace_desc): thread, event, info, start|stop,
// the thread's 32-bit cycle counter.
struct TraceEvt {
    long long thread;
    std::string event;
    long long info;
    bool stop;
    long long cycles;
};

// The trace events of one op that starts at cycle c0 and takes `cyc` cycles (fractions of it
// in whole cycles, usec x 1100 x k/20), as the kernels record them: a quantized mat-mul
// quantizes its activations (HVX thread 0) and DMAs its weights (thread 1) while the HMX
// (thread 10) computes after the quantization; flash attention prepares Q and K on two
// threads, runs QK and softmax on both, prepares V, then finishes on HVX; other ops compute on
// two HVX threads at once. Adds each kind's wall time (µs at 1100 MHz) to the stage's parts
// and to its op type's.
void op_events(const Op& o, long long c0, long long info, std::vector<TraceEvt>& out,
               std::map<std::string, double>& stage_parts,
               std::map<std::string, double>& op_parts) {
    auto put = [&](const std::string& kind, double us) {
        stage_parts[kind] += us;
        op_parts[kind] += us;
    };
    const long long u = o.usec;
    auto at = [&](long long twentieths) { return c0 + u * 55 * twentieths; };  // cyc x k/20
    auto add = [&](long long t, const std::string& e, long long a, long long b) {
        out.push_back({t, e, info, false, at(a)});
        out.push_back({t, e, info, true, at(b)});
    };
    const double us = static_cast<double>(u) / 20;  // one twentieth of the op, in µs
    if (o.op == "MUL_MAT") {
        add(0, "HVX_A_QUANT", 0, 3);
        add(1, "DMA", 0, 6);
        add(10, "HMX_COMP", 3, 20);
        put("activation_quantization", 3 * us);
        put("dma", 6 * us);
        put("compute", 17 * us);
    } else if (o.op == "FLASH_ATTN_EXT") {
        add(0, "HVX_Q_PREP", 0, 2);
        add(1, "HVX_K_PREP", 0, 2);
        add(0, "HVX_QK_FA", 2, 14);
        add(1, "HVX_SFM_FA", 2, 14);
        add(0, "HVX_V_PREP", 14, 16);
        add(0, "HVX_COMP", 16, 20);
        put("attention_preparation", 4 * us);
        put("compute", 16 * us);
    } else {
        add(0, "HVX_COMP", 0, 20);
        add(1, "HVX_COMP", 0, 20);
        put("compute", 20 * us);
    }
}

// The ops with each attention output's mat-mul and the ADD of its output to the residual as one
// node, as the pinned backend fuses them (GGML_HEXAGON_OPFUSION, try_fuse_mul_mat_add):
// "MUL_MAT+ADD", the mat-mul's inputs then the ADD's other input, the ADD's output, the
// mat-mul's kernel; 1 µs less than the two apart.
std::vector<Op> fuse_mul_mat_add(const std::vector<Op>& ops) {
    std::vector<Op> out;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& mm = ops[i];
        if (mm.op == "MUL_MAT" && i + 1 < ops.size() && ops[i + 1].op == "ADD" &&
            ops[i + 1].names[0] == mm.names.back()) {
            const Op& add = ops[++i];
            out.push_back({"MUL_MAT+ADD",
                           {mm.names[0], mm.names[1], add.names[1], add.names[2]},
                           {mm.ne[0], mm.ne[1], add.ne[1], add.ne[2]},
                           {mm.types[0], mm.types[1], add.types[1], add.types[2]},
                           mm.kparams,
                           mm.usec + add.usec - 1});
            continue;
        }
        out.push_back(mm);
    }
    return out;
}

// The log of one prefill graph (7 tokens) and two decode graphs through the pinned formats, at
// GGML_HEXAGON_PROFILE=`profile` (fused: the attention outputs' MUL_MAT+ADD as one node), with
// what its stages must sum to.
std::string pinned_log(int profile, PinnedExpected* want, bool fused = false) {
    const PinnedFormats pf = pinned_formats();
    std::string log = "llama_context: n_ctx = 512\n";  // other output, ignored
    long long clock = 4000000;
    int graph_no = 0;
    for (auto [stage, tokens, kv] :
         {std::tuple{"prefill", 7LL, 7LL}, std::tuple{"decode", 1LL, 8LL},
          std::tuple{"decode", 1LL, 9LL}}) {
        const auto ops = fused ? fuse_mul_mat_add(graph_ops(tokens, kv, graph_no++))
                               : graph_ops(tokens, kv, graph_no++);
        long long batch_usec = 0;
        for (const auto& o : ops)
            batch_usec += o.usec;
        // PROFILE=3: the batch's trace events, printed thread by thread after its ops, and
        // counted per thread (HVX threads 0-9, the HMX 10) on its batch line.
        std::vector<TraceEvt> events;
        std::string evt = "----";
        if (profile == 3) {
            long long c = clock;
            std::map<std::string, double> parts;
            std::map<std::string, std::map<std::string, double>> op_parts;
            for (std::size_t i = 0; i < ops.size(); ++i) {
                op_events(ops[i], c, static_cast<long long>(i), events, parts, op_parts[ops[i].op]);
                c += ops[i].usec * 1100;
            }
            if (want)
                for (const auto& [op, m] : op_parts)
                    for (const auto& [k, v] : m)
                        want->op_part_usec[stage][op][k] += v;
            std::stable_sort(
                events.begin(), events.end(),
                [](const TraceEvt& a, const TraceEvt& b) { return a.thread < b.thread; });
            std::map<std::string, Value> ev;
            for (int i = 0; i < 11; ++i)
                ev[fmt::format("rsp.n_traces[{}]", i)] = Value(static_cast<long long>(
                    std::count_if(events.begin(), events.end(),
                                  [&](const TraceEvt& e) { return e.thread == i; })));
            evt = print(pf.evt, ev);
            if (want)
                for (const auto& [k, v] : parts)
                    want->part_usec[stage][k] += v;
        }
        const long long bcycles = (batch_usec + 5) * 1100;
        log += print(pf.batch, {{"sess_name.c_str()", std::string("HTP0")},
                                {"rsp.n_ops", static_cast<long long>(ops.size())},
                                {"evt_str", evt},
                                {"rsp.usecs", batch_usec + 5},
                                {"(unsigned long long) batch_cycles", bcycles},
                                {"(unsigned long long) rsp.cycles_start", clock},
                                {"batch_mhz", 1100.0}});
        for (const auto& o : ops) {
            std::vector<std::string> dims, strides;
            for (size_t i = 0; i < o.ne.size(); ++i) {
                dims.push_back(dims_text(o.ne[i]));
                strides.push_back(strides_text(o.ne[i], o.types[i]));
            }
            std::string pmu;
            if (profile == 2) {
                std::map<std::string, Value> pv;
                for (int i = 0; i < 8; ++i)
                    pv[fmt::format("pmu[{}]", i)] = Value(o.usec * (i + 1));
                pmu = print(pf.pmu, pv);
            }
            const long long cycles = o.usec * 1100;
            log += print(pf.op, {{"sess_name.c_str()", std::string("HTP0")},
                                 {"node.op_name().c_str()", o.op},
                                 {"fmt.names", joined(o.names)},
                                 {"fmt.dims", joined(dims)},
                                 {"fmt.types", joined(o.types)},
                                 {"fmt.strides", joined(strides)},
                                 {"fmt.kparams", o.kparams},
                                 {"op_usec", o.usec},
                                 {"op_cycles", cycles},
                                 {"pd.cycles_start", clock},
                                 {"mhz", 1100.0},
                                 {"pmu_str", pmu}});
            clock += cycles;
            if (want) {
                want->op_usec[stage] += o.usec;
                want->count[stage]++;
                want->by_op[stage][o.op] += o.usec;
            }
        }
        for (const TraceEvt& e : events)
            log +=
                print(pf.trace,
                      {{"sess_name.c_str()", std::string("HTP0")},
                       {"htp_event_name(e.id)", e.event},
                       {"t", e.thread},
                       {"info", e.info},
                       {"is_stop ? \"stop\" : \"start\"", std::string(e.stop ? "stop" : "start")},
                       {"e.cycles", e.cycles}});
    }
    return log;
}

const OpAggregate* find_pinned(const std::vector<OpAggregate>& v, const std::string& key) {
    for (const auto& a : v)
        if (a.key == key)
            return &a;
    return nullptr;
}

TEST(HexagonPinned, SourceHasTheProfileCalls) {
    const PinnedFormats pf = pinned_formats();
    // Printed so a failure elsewhere shows which lines of the pinned source were read.
    std::printf("op line %s: %s", pf.op.where().c_str(), pf.op.format.c_str());
    std::printf("batch line %s: %s", pf.batch.where().c_str(), pf.batch.format.c_str());
    std::printf("pmu %s, evt %s, trace %s\n", pf.pmu.where().c_str(), pf.evt.where().c_str(),
                pf.trace.where().c_str());
    EXPECT_EQ(pf.op.args.size(), 12u) << pf.op.where();
    EXPECT_EQ(pf.batch.args.size(), 7u) << pf.batch.where();
    EXPECT_EQ(pf.pmu.args.size(), 8u) << pf.pmu.where();
}

TEST(HexagonPinned, AChangedFormatFailsNamingTheLine) {
    // The op line as a future backend might write it: a field added before the timings.
    std::string src = pinned_source();
    const std::string from = "%s|usec %u cycles", to = "%s|pkts %u|usec %u cycles";
    const size_t at = src.find(from);
    ASSERT_NE(at, std::string::npos);
    src.replace(at, from.size(), to);
    const size_t args = src.find("fmt.kparams, op_usec");
    ASSERT_NE(args, std::string::npos);
    src.insert(args + std::string("fmt.kparams, ").size(), "op_pkts, ");
    const PinnedFormats pf = pinned_formats(src);
    try {
        print(pf.op, {{"sess_name.c_str()", std::string("HTP0")}});
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(kSourceFile + ":"), std::string::npos) << e.what();
    }
    // And with every known argument given, the new one is what stops it.
    std::map<std::string, Value> all;
    for (const auto& a : pinned_formats().op.args)
        all[a] = a.find("usec") != std::string::npos || a.find("cycles") != std::string::npos
                     ? Value(1LL)
                 : a == "mhz" ? Value(1.0)
                              : Value(std::string("x"));
    EXPECT_NO_THROW(print(pinned_formats().op, all));
    try {
        print(pf.op, all);
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("'op_pkts'"), std::string::npos) << e.what();
    }
}

TEST(HexagonPinned, FusedOpsKeepTheirNameAndCountAsMatMuls) {
    // With GGML_HEXAGON_OPFUSION a node can be several ggml ops; htp_opnode::op_name() joins
    // them with '+'. A fused mat-mul still tells prefill from decode by its tokens.
    const PinnedFormats pf = pinned_formats();
    std::string log;
    // A prefill graph's last layer, then a decode graph's first.
    for (auto [tokens, l] : {std::pair{5LL, 2}, std::pair{1LL, 0}})
        log += print(pf.op,
                     {{"sess_name.c_str()", std::string("HTP0")},
                      {"node.op_name().c_str()", std::string("MUL_MAT+ADD")},
                      {"fmt.names", fmt::format("blk.{0}.attn_output.weight x kqv_out-{0} x "
                                                "l_in-{0} -> attn_out-{0}",
                                                l)},
                      {"fmt.dims", fmt::format("256:256 x 256:{0} x 256:{0} -> 256:{0}", tokens)},
                      {"fmt.types", std::string("q4_0 x f32 x f32 -> f32")},
                      {"fmt.strides", std::string("18:144 x 4:1024 x 4:1024 -> 4:1024")},
                      {"fmt.kparams", std::string("hvx-tiled vtcm 262144")},
                      {"op_usec", 10 * tokens},
                      {"op_cycles", 11000 * tokens},
                      {"pd.cycles_start", 7LL},
                      {"mhz", 1100.0},
                      {"pmu_str", std::string()}});
    std::istringstream in(log);
    const HexagonImport imp = parse_hexagon_profile(in);
    ASSERT_EQ(imp.records.size(), 2u) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    EXPECT_EQ(imp.records[0].op, "MUL_MAT+ADD");
    EXPECT_EQ(imp.records[0].srcs.size(), 3u);
    EXPECT_EQ(matmul_tokens(imp.records[0]), 5);
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.stage, (std::vector<std::string>{"prefill", "decode"}));
}

// The text between `from` and the next line starting a function at column 0 after it, white
// space collapsed.
std::string function_text(const std::string& src, const std::string& from) {
    const size_t at = src.find(from);
    if (at == std::string::npos)
        return "";
    const size_t end = src.find("\n    bool ", at + from.size());
    return hexlog::collapse(
        src.substr(at, end == std::string::npos ? std::string::npos : end - at));
}

// What a MUL_MAT_NX node (GGML_HEXAGON_FUSE_MUL_MAT_NX) prints: try_fuse_mul_mat_nx in
// ggml-hexagon.cpp renames two mat-muls that share src1 "MUL_MAT_NX" and makes its inputs the
// weights, then the shared input (w0, w1, x; a third weight goes before x), its outputs both
// mat-muls' outputs; htp_opformat (htp-opnode.h) prints the inputs and node.dst(), the last
// output. The line below is printed through the pinned op format with that layout.
TEST(HexagonPinned, AMulMatNxNodeIsReadAsItsWeightsThenTheSharedInput) {
    const std::string src = pinned_source();
    const std::string fuse = function_text(src, "bool try_fuse_mul_mat_nx(");
    ASSERT_FALSE(fuse.empty()) << "try_fuse_mul_mat_nx not found in " << kSourceFile;
    size_t pos = 0;
    for (const std::string step :
         {"last_node.inputs[curr_n] = w_in; last_node.inputs.push_back(x); "
          "last_node.outputs.push_back(d_in);",
          "last_node.name = \"MUL_MAT_NX\"; last_node.inputs.clear(); "
          "last_node.inputs.push_back(w0); last_node.inputs.push_back(w1); "
          "last_node.inputs.push_back(x); last_node.outputs.clear(); "
          "last_node.outputs.push_back(dst_0); last_node.outputs.push_back(dst_1);"}) {
        const size_t at = fuse.find(step, pos);
        EXPECT_NE(at, std::string::npos)
            << "the pinned try_fuse_mul_mat_nx no longer does: " << step;
        pos = at == std::string::npos ? pos : at;
    }
    const std::string node = hexlog::collapse(hexlog::read_text(
        std::string(SB_LLAMA_SOURCE_DIR) + "/ggml/src/ggml-hexagon/htp-opnode.h"));
    EXPECT_NE(node.find("const ggml_tensor * dst() const { return outputs.empty() ? node : "
                        "outputs.back(); }"),
              std::string::npos);

    const PinnedFormats pf = pinned_formats();
    std::string log;
    for (auto [tokens, l] : {std::pair{5LL, 1}, std::pair{1LL, 0}})
        log += print(pf.op, {{"sess_name.c_str()", std::string("HTP0")},
                             {"node.op_name().c_str()", std::string("MUL_MAT_NX")},
                             {"fmt.names", fmt::format("blk.{0}.attn_q.weight x blk.{0}.attn_k."
                                                       "weight x blk.{0}.attn_v.weight x "
                                                       "attn_norm-{0} -> Vcur-{0}",
                                                       l)},
                             {"fmt.dims", fmt::format("256:256 x 256:64 x 256:64 x 256:{0} -> "
                                                      "64:{0}",
                                                      tokens)},
                             {"fmt.types", std::string("q4_0 x q4_0 x q4_0 x f32 -> f32")},
                             {"fmt.strides", std::string("18:144 x 18:144 x 18:144 x 4:1024 -> "
                                                         "4:256")},
                             {"fmt.kparams", std::string("hmx-tiled vtcm 524288")},
                             {"op_usec", 10 * tokens},
                             {"op_cycles", 11000 * tokens},
                             {"pd.cycles_start", 7LL},
                             {"mhz", 1100.0},
                             {"pmu_str", std::string()}});
    std::istringstream in(log);
    const HexagonImport imp = parse_hexagon_profile(in);
    ASSERT_EQ(imp.records.size(), 2u) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    // A prefill graph's last layer, then a decode graph's first.
    const OpRecord& r = imp.records[1];
    EXPECT_EQ(r.op, "MUL_MAT_NX");
    ASSERT_EQ(r.srcs.size(), 4u);
    EXPECT_EQ(r.srcs[1].name, "blk.0.attn_k.weight");
    EXPECT_EQ(r.srcs[1].ne, (std::vector<int64_t>{256, 64}));
    EXPECT_EQ(r.srcs[3].name, "attn_norm-0");
    EXPECT_EQ(r.out.name, "Vcur-0");
    EXPECT_EQ(r.kernel, "hmx-tiled vtcm 524288");
    // Its tokens tell prefill from decode, as a mat-mul's.
    EXPECT_EQ(matmul_tokens(imp.records[0]), 5);
    EXPECT_EQ(matmul_tokens(r), 1);
    EXPECT_EQ(split_stages(imp).stage, (std::vector<std::string>{"prefill", "decode"}));
}

class HexagonPinnedLog : public ::testing::TestWithParam<int> {};

TEST_P(HexagonPinnedLog, MatchesTheKeptFixture) {
    const std::string text = pinned_log(GetParam(), nullptr);
    const std::string path =
        fmt::format("{}/tests/fixtures/hexagon/pinned_profile{}.log", SB_SOURCE_DIR, GetParam());
    if (const char* w = std::getenv("SB_WRITE_FIXTURES"); w && std::string(w) == "1") {
        std::ofstream(path) << text;
    }
    std::ifstream f(path);
    std::stringstream kept;
    kept << f.rdbuf();
    EXPECT_EQ(kept.str(), text) << path
                                << " differs from what the pinned source prints now; rerun "
                                   "with SB_WRITE_FIXTURES=1 and check the importer";
}

TEST(HexagonPinned, TheFusedLogMatchesTheKeptFixture) {
    // tests/fixtures/hexagon/pinned_fused.log: pinned_profile1.log's graphs as the backend
    // prints them with MUL_MAT+ADD fused (tests/integration compares the two).
    PinnedExpected want;
    const std::string text = pinned_log(1, &want, true);
    const std::string path =
        std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_fused.log";
    if (const char* w = std::getenv("SB_WRITE_FIXTURES"); w && std::string(w) == "1")
        std::ofstream(path) << text;
    std::ifstream f(path);
    std::stringstream kept;
    kept << f.rdbuf();
    EXPECT_EQ(kept.str(), text) << path;
    std::istringstream in(text);
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0);
    // Two attention outputs per graph, three graphs.
    EXPECT_EQ(std::count_if(imp.records.begin(), imp.records.end(),
                            [](const OpRecord& r) { return r.op == "MUL_MAT+ADD"; }),
              6);
    // Decode graph g's attention output: mat-mul 20 + g µs, add 2 + g, fused 1 µs less; two
    // layers in each of graphs 1 and 2.
    EXPECT_EQ(want.by_op["decode"]["MUL_MAT+ADD"], 2 * (21 + 2 * 1) + 2 * (21 + 2 * 2));
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);
}

TEST_P(HexagonPinnedLog, EveryLineParsesIntoPrefillAndDecode) {
    PinnedExpected want;
    std::istringstream in(pinned_log(GetParam(), &want));
    HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    EXPECT_EQ(imp.formats.at("pipe (PR 24954)"), want.count["prefill"] + want.count["decode"]);
    ASSERT_EQ(imp.batches.size(), 3u);
    EXPECT_EQ(imp.batches[0].n_ops, want.count["prefill"]);
    if (GetParam() == 3) {
        ASSERT_TRUE(imp.batches[0].evt_cnt.has_value());
        EXPECT_EQ(imp.batches[0].evt_cnt->size(), 11u);
        // The prefill graph's 13 mat-muls, 2 flash attentions and 11 other ops: thread 0 has a
        // start and a stop per op and 3 more per flash attention, the HMX one per mat-mul.
        EXPECT_EQ((*imp.batches[0].evt_cnt)[0], 2 * (13 + 2 * 4 + 11));
        EXPECT_EQ((*imp.batches[0].evt_cnt)[10], 2 * 13);
        EXPECT_EQ((*imp.batches[0].evt_cnt)[2], 0);
        EXPECT_EQ(static_cast<int>(imp.events.size()), imp.n_trace);
    }

    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.method, "tokens");
    ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("prefill"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);

    // Per op: the newer fields are kept.
    const OpRecord& q = imp.records[2];
    EXPECT_EQ(q.op, "MUL_MAT");
    EXPECT_EQ(q.out.name, "Qcur-0");
    EXPECT_EQ(q.out.ne, (std::vector<int64_t>{256, 7}));
    EXPECT_EQ(q.srcs[0].type, "q4_0");
    EXPECT_EQ(q.kernel, "hvx-tiled vtcm 262144");
    EXPECT_EQ(*q.cycles, *q.op_ns / 1000 * 1100);
    EXPECT_DOUBLE_EQ(*q.mhz, 1100.0);
    if (GetParam() == 2) {
        ASSERT_TRUE(q.pmu.has_value());
        EXPECT_EQ(*q.pmu, (std::vector<int64_t>{120, 240, 360, 480, 600, 720, 840, 960}));
    } else {
        EXPECT_FALSE(q.pmu.has_value());
    }
    // The 4-d dims of FLASH_ATTN_EXT's output.
    EXPECT_EQ(imp.records[6].out.ne, (std::vector<int64_t>{64, 4, 7, 1}));

    // The stages' totals are the log's, exactly.
    ImportOptions o;
    for (const auto& stage : sp.order) {
        StageProfile s;
        s.stage = stage;
        for (size_t i = 0; i < imp.records.size(); ++i)
            if (sp.stage[i] == stage)
                s.ops.push_back(imp.records[i]);
        finalize_stage(s);
        EXPECT_EQ(static_cast<int>(s.ops.size()), want.count[stage]) << stage;
        EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, want.op_usec[stage] * 1000.0) << stage;
        for (const auto& [op, usec] : want.by_op[stage]) {
            const OpAggregate* a = find_pinned(s.by_op, op);
            ASSERT_TRUE(a) << stage << " " << op;
            EXPECT_DOUBLE_EQ(*a->op_ns, usec * 1000.0) << stage << " " << op;
        }
    }
}

TEST(HexagonPinned, ImportCommandSplitsTheKeptFixture) {
    // What `stagebench import hexagon-profile tests/fixtures/hexagon/pinned_profile2.log` does.
    PinnedExpected want;
    pinned_log(2, &want);
    ImportOptions o;
    o.log_path = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile2.log";
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(run_import_hexagon(o, doc, err), 0);
    EXPECT_EQ(err.str(), "");
    ASSERT_TRUE(doc.ops.has_value());
    EXPECT_EQ(doc.ops->import_info["stage_split"], "tokens");
    ASSERT_EQ(doc.ops->stages.size(), 2u);
    for (const auto& s : doc.ops->stages) {
        SCOPED_TRACE(s.stage);
        EXPECT_EQ(static_cast<int>(s.ops.size()), want.count[s.stage]);
        EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, want.op_usec[s.stage] * 1000.0);
        EXPECT_EQ(s.n_graphs, s.stage == "prefill" ? 1 : 2);
        // The graphs' tokens: one prompt of 7, two decode steps of one each.
        EXPECT_EQ(s.n_tokens, s.stage == "prefill" ? 7 : 2);
        // The stage's own batches (each printed 5 µs above its ops), not the log's.
        const double batch_usec = want.op_usec[s.stage] + 5.0 * s.n_graphs;
        const std::string note = fmt::format(
            "batches in this stage, per NPU session: HTP0 {} batch(es), NPU busy {:.3f} ms "
            "(OPBATCH usec). The log holds no host time for these batches (OPBATCH lines carry "
            "only the NPU's), so the host's wall time around them is unknown",
            s.n_graphs, batch_usec / 1e3);
        EXPECT_NE(std::find(s.notes.begin(), s.notes.end(), note), s.notes.end()) << note;
    }
    EXPECT_EQ(doc.ops->stages[1].ops.back().graph, 1);  // the second decode graph

    o.one_stage = true;
    ResultDocument one;
    run_import_hexagon(o, one, err);
    ASSERT_EQ(one.ops->stages.size(), 1u);
    EXPECT_EQ(one.ops->stages[0].stage, "log");
    EXPECT_DOUBLE_EQ(*one.ops->stages[0].rec.sum_op_ns,
                     (want.op_usec["prefill"] + want.op_usec["decode"]) * 1000.0);

    o.one_stage = false;
    o.stage_of = {"no-equals-sign"};
    ResultDocument bad;
    try {
        run_import_hexagon(o, bad, err);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("expected TEXT=STAGE"), std::string::npos);
    }
}

TEST(HexagonPinned, ImportCommandDecomposesTheProfile3Fixture) {
    // What `stagebench import hexagon-profile tests/fixtures/hexagon/pinned_profile3.log`
    // does with the trace events: per stage, each kind as wall time over the threads, never
    // their sum (a mat-mul's DMA overlaps its quantization; flash attention's QK and softmax
    // run on two threads at once), against the NPU's batch time.
    PinnedExpected want;
    pinned_log(3, &want);
    ImportOptions o;
    o.log_path = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile3.log";
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(run_import_hexagon(o, doc, err), 0);
    EXPECT_EQ(err.str(), "");
    ASSERT_EQ(doc.ops->stages.size(), 2u);
    for (const auto& s : doc.ops->stages) {
        SCOPED_TRACE(s.stage);
        ASSERT_EQ(s.npu_pipeline.size(), 1u);
        const NpuPipeline& p = s.npu_pipeline[0];
        EXPECT_EQ(p.device, "HTP0");
        EXPECT_EQ(p.n_unpaired, 0);
        EXPECT_EQ(p.n_no_clock, 0);
        EXPECT_EQ(p.envelope, "NPU batch");
        const double batch_us = want.op_usec[s.stage] + 5.0 * s.n_graphs;
        EXPECT_DOUBLE_EQ(*p.npu_batch_ns, batch_us * 1e3);
        // Every op is covered by some event from its start to its end: busy is the ops' time.
        EXPECT_NEAR(*p.traced_busy_ns, want.op_usec[s.stage] * 1e3, 1e-3);
        std::map<std::string, double> got;
        for (const auto& part : p.parts)
            got[part.name] = part.ns / 1e3;
        EXPECT_NEAR(got.at("batch_overhead"), 5.0 * s.n_graphs, 1e-9);
        got.erase("batch_overhead");
        ASSERT_EQ(got.size(), want.part_usec[s.stage].size());
        for (const auto& [kind, us] : want.part_usec[s.stage])
            EXPECT_NEAR(got.at(kind), us, 1e-6) << kind;
        for (const auto& part : p.parts)
            EXPECT_NEAR(*part.share, part.ns / (batch_us * 1e3), 1e-12) << part.name;
        // Per op type: every event lies in its op's window, each op fully covered.
        EXPECT_EQ(p.n_unattributed, 0);
        EXPECT_DOUBLE_EQ(*p.unattributed_ns, 0);
        ASSERT_EQ(p.by_op.size(), want.by_op[s.stage].size());
        for (const NpuOpSplit& o : p.by_op) {
            SCOPED_TRACE(o.op);
            EXPECT_DOUBLE_EQ(o.wall_ns, want.by_op[s.stage][o.op] * 1e3);
            const auto& kinds = want.op_part_usec[s.stage][o.op];
            ASSERT_EQ(o.parts.size(), kinds.size() + 1);  // and untraced
            for (const auto& part : o.parts) {
                const double us = part.name == "untraced" ? 0.0 : kinds.at(part.name);
                EXPECT_NEAR(part.ns, us * 1e3, 1e-3) << part.name;
                EXPECT_NEAR(*part.share, us * 1e3 / o.wall_ns, 1e-9) << part.name;
            }
        }
        EXPECT_GE(p.by_op[0].wall_ns, p.by_op.back().wall_ns);
    }
    // The document keeps the split per op through its JSON.
    const ResultDocument back = from_json<ResultDocument>(to_json(doc), "'import.json'");
    EXPECT_EQ(back.ops->stages[0].npu_pipeline[0].by_op.size(),
              doc.ops->stages[0].npu_pipeline[0].by_op.size());
    EXPECT_EQ(to_json(back), to_json(doc));
}

INSTANTIATE_TEST_SUITE_P(Profiles, HexagonPinnedLog, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return fmt::format("profile{}", info.param); });

}  // namespace
}  // namespace sb
