#include "profile/hexagon_import.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "profile/ops_profile.hpp"

namespace sb {
namespace {

HexagonImport parse_fixture(const std::string& name) {
    std::ifstream f(std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/" + name);
    EXPECT_TRUE(f.good()) << name;
    return parse_hexagon_profile(f);
}

const OpAggregate* find(const std::vector<OpAggregate>& v, const std::string& key) {
    for (const auto& a : v)
        if (a.key == key)
            return &a;
    return nullptr;
}

TEST(HexagonImport, OldFormatHasOpAndCallTimes) {
    HexagonImport imp = parse_fixture("opsync_old.log");
    EXPECT_EQ(imp.records.size(), 34u);
    EXPECT_EQ(imp.n_unparsed, 3);
    EXPECT_EQ(imp.n_ignored, 5);
    EXPECT_EQ(imp.formats.at("op-usec (PR 17500)"), 34);
    ASSERT_EQ(imp.unparsed.size(), 3u);
    EXPECT_NE(imp.unparsed[0].reason.find("no op name"), std::string::npos);
    EXPECT_NE(imp.unparsed[1].reason.find("bad number"), std::string::npos);

    const OpRecord& q = imp.records[2];
    EXPECT_EQ(q.op, "MUL_MAT");
    EXPECT_EQ(q.out.name, "Qcur-0");
    EXPECT_EQ(q.layer, 0);
    EXPECT_EQ(q.backend, "HTP0");
    EXPECT_EQ(q.out.type, "f32");
    EXPECT_EQ(q.out.ne, (std::vector<int64_t>{3072, 1}));
    ASSERT_EQ(q.srcs.size(), 2u);
    EXPECT_EQ(q.srcs[0].name, "blk.0.attn_q.weight");
    EXPECT_EQ(q.srcs[0].type, "q4_0");
    EXPECT_EQ(q.srcs[0].ne, (std::vector<int64_t>{3072, 3072}));
    EXPECT_DOUBLE_EQ(*q.op_ns, 188000.0);
    EXPECT_DOUBLE_EQ(*q.call_ns, 301000.0);
    EXPECT_EQ(*q.cycles, 188 * 1125);
    EXPECT_TRUE(q.pkts.has_value());
    // A line with a logcat prefix parses like the others.
    EXPECT_EQ(imp.records[3].out.name, "Kcur-0");
    EXPECT_EQ(imp.records[33].out.name, "result_output");
    EXPECT_FALSE(imp.records[33].layer.has_value());
}

TEST(HexagonImport, OldFormatAggregatesShowTheSchedulingTax) {
    HexagonImport imp = parse_fixture("opsync_old.log");
    StageProfile s;
    s.stage = "log";
    s.ops = imp.records;
    finalize_stage(s);
    const OpAggregate* mm = find(s.by_op, "MUL_MAT");
    const OpAggregate* rms = find(s.by_op, "RMS_NORM");
    ASSERT_TRUE(mm && rms);
    EXPECT_EQ(mm->count, 15);
    EXPECT_DOUBLE_EQ(*mm->op_ns, 9100e3);
    EXPECT_DOUBLE_EQ(*mm->call_ns, 10892e3);
    EXPECT_NEAR(*mm->call_op_ratio, 10892.0 / 9100.0, 1e-9);
    EXPECT_EQ(rms->count, 5);
    EXPECT_NEAR(*rms->call_op_ratio, 703.0 / 45.0, 1e-9);
    EXPECT_GT(*rms->call_op_ratio, 8 * *mm->call_op_ratio);
    double share = 0;
    for (const auto& a : s.by_op)
        share += a.share.value_or(0);
    EXPECT_NEAR(share, 1.0, 1e-9);              // no stage time: shares of the summed op time
    EXPECT_EQ(s.by_op.front().key, "MUL_MAT");  // largest call time first
    // Layers 0 and 1 are identical; the output layer has none.
    ASSERT_EQ(s.by_layer.size(), 3u);
    EXPECT_EQ(s.by_layer[0].layer, 0);
    EXPECT_DOUBLE_EQ(*s.by_layer[0].op_ns, 2020e3);
    EXPECT_DOUBLE_EQ(*s.by_layer[1].call_ns, 3870e3);
    EXPECT_EQ(s.by_layer[2].key, "none");
    EXPECT_EQ(s.ops[s.top[0]].out.name, "result_output");
}

TEST(HexagonImport, AsyncColonFormatHasNoCallTime) {
    HexagonImport imp = parse_fixture("async_pr22269.log");
    EXPECT_EQ(imp.records.size(), 16u);
    EXPECT_EQ(imp.n_unparsed, 1);
    EXPECT_EQ(imp.formats.at("usec start mhz (PR 24592)"), 16);
    const OpRecord& r = imp.records[1];
    EXPECT_EQ(r.op, "MUL");
    EXPECT_DOUBLE_EQ(*r.op_ns, 6000.0);
    EXPECT_FALSE(r.call_ns.has_value());
    EXPECT_EQ(*r.cycles, 6915);
    EXPECT_NEAR(*r.mhz, 1152.5, 1e-9);
    EXPECT_EQ(*r.start_cycles, 400011272);
    StageProfile s;
    s.stage = "log";
    s.ops = imp.records;
    finalize_stage(s);
    const OpAggregate* mm = find(s.by_op, "MUL_MAT");
    ASSERT_TRUE(mm);
    EXPECT_FALSE(mm->call_ns.has_value());
    EXPECT_FALSE(mm->call_op_ratio.has_value());
    EXPECT_DOUBLE_EQ(*mm->op_ns, 1950e3);
}

TEST(HexagonImport, PipeFormatAndBatches) {
    HexagonImport imp = parse_fixture("async_pipe.log");
    EXPECT_EQ(imp.records.size(), 16u);
    EXPECT_EQ(imp.n_unparsed, 1);
    EXPECT_EQ(imp.n_ignored, 1);
    EXPECT_EQ(imp.formats.at("pipe (PR 24954)"), 16);
    ASSERT_EQ(imp.batches.size(), 2u);
    EXPECT_EQ(imp.batches[0].n_ops, 8);
    EXPECT_DOUBLE_EQ(imp.batches[1].usec, 1308.0);
    const OpRecord& r = imp.records[2];
    EXPECT_EQ(r.op, "MUL_MAT");
    EXPECT_EQ(r.out.name, "Qcur-1");
    EXPECT_EQ(r.layer, 1);
    EXPECT_EQ(r.srcs[1].name, "attn_norm-1");
    EXPECT_DOUBLE_EQ(*r.op_ns, 188000.0);
}

TEST(HexagonImport, GarbageIsCountedNeverFatal) {
    std::istringstream in(
        "hello\n"
        "ggml-hex: HTP0 profile-op\n"
        "ggml-hex: HTP0 profile-op RMS_NORM; x\n"
        "ggml-hex: HTP0 profile-op ADD: a -> b : 4:1 -> 4:1 : f32 -> f32 : op-usec -\n"
        "\xff\xfe binary junk profile-op ???\n"
        "ggml-hex: HTP1 profile-op ADD: a x c -> b-2 : 4:1 x 4:1 -> 4:1 : f32 x f32 -> f32 : "
        "s : usec 3 cycles 9\r\n");
    HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_lines, 6);
    EXPECT_EQ(imp.n_ignored, 1);
    EXPECT_EQ(imp.n_unparsed, 4);
    ASSERT_EQ(imp.records.size(), 1u);
    EXPECT_EQ(imp.records[0].backend, "HTP1");
    EXPECT_EQ(imp.records[0].layer, 2);
    EXPECT_DOUBLE_EQ(*imp.records[0].op_ns, 3000.0);
    nlohmann::json j = to_json(imp);
    EXPECT_EQ(j["n_unparsed"], 4);
    EXPECT_EQ(j["unparsed"].size(), 4u);
}

// An old-format log (op-usec/call-usec, no OPBATCH lines): a prefill graph of 5 tokens, then two
// decode graphs, optionally with marker lines before each graph.
std::string old_format_log(const std::vector<std::string>& marks = {}) {
    std::string log;
    int g = 0;
    for (int tokens : {5, 1, 1}) {
        if (static_cast<size_t>(g) < marks.size() && !marks[g].empty())
            log += marks[g] + "\n";
        for (int l = 0; l < 2; ++l) {
            const std::string t = std::to_string(tokens), L = std::to_string(l);
            log += "ggml-hex: HTP0 profile-op RMS_NORM: x -> norm-" + L + " : 64:" + t +
                   " -> 64:" + t + " : f32 -> f32 : 4:256 -> 4:256 : HTP0 -> HTP0 : op-usec " +
                   std::to_string(2 + g) + " op-cycles 10 op-pkts 1 (1.0) call-usec " +
                   std::to_string(30 + g) + "\n";
            log += "ggml-hex: HTP0 profile-op MUL_MAT: w x norm-" + L + " -> Qcur-" + L +
                   " : 64:64 x 64:" + t + " -> 64:" + t +
                   " : q4_0 x f32 -> f32 : 1:1 x 4:256 -> 4:256 : HTP0 x HTP0 -> HTP0 : op-usec " +
                   std::to_string(tokens * 10) + " op-cycles 10 op-pkts 1 (1.0) call-usec " +
                   std::to_string(tokens * 10 + 5) + "\n";
        }
        // The output projection has one token in prefill too.
        log +=
            "ggml-hex: HTP0 profile-op MUL_MAT: output.weight x result_norm -> result_output "
            ": 64:100 x 64:1 -> 100:1 : q4_0 x f32 -> f32 : 1:1 x 4:256 -> 4:400 : HTP0 x HTP0 "
            "-> HTP0 : op-usec 7 op-cycles 10 op-pkts 1 (1.0) call-usec 9\n";
        ++g;
    }
    return log;
}

TEST(HexagonImport, SplitsByTokensAndTheLayerFallingBack) {
    std::istringstream in(old_format_log());
    HexagonImport imp = parse_hexagon_profile(in);
    ASSERT_EQ(imp.records.size(), 15u);
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.method, "tokens");
    ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("prefill"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);
    for (size_t i = 0; i < 15; ++i)
        EXPECT_EQ(sp.stage[i], i < 5 ? "prefill" : "decode") << i;
    EXPECT_EQ(sp.graph[4], 0);
    EXPECT_EQ(sp.graph[5], 0);
    EXPECT_EQ(sp.graph[10], 1);
    EXPECT_EQ(matmul_tokens(imp.records[1]), 5);
    EXPECT_EQ(matmul_tokens(imp.records[4]), 1);
    EXPECT_FALSE(matmul_tokens(imp.records[0]).has_value());
    // The totals per stage are the log's: prefill op 2+50+2+50+7, call 30+55+30+55+9.
    StageProfile pre;
    for (size_t i = 0; i < 5; ++i)
        pre.ops.push_back(imp.records[i]);
    finalize_stage(pre);
    EXPECT_DOUBLE_EQ(*pre.rec.sum_op_ns, 111e3);
    EXPECT_DOUBLE_EQ(*pre.rec.sum_call_ns, 179e3);
}

TEST(HexagonImport, MarkersNameTheStages) {
    HexagonParseOptions o;
    o.stage_marks = {{"=== warm", "warmup"}, {"=== gen", "decode"}};
    std::istringstream in(old_format_log({"", "=== warm", "=== gen"}));
    HexagonImport imp = parse_hexagon_profile(in, o);
    EXPECT_EQ(imp.n_marks, 2);
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.method, "markers+tokens");
    ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "warmup", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("warmup"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 1);
    EXPECT_EQ(sp.stage[5], "warmup");
    EXPECT_EQ(sp.stage[14], "decode");
    // Without mat-muls or markers there is nothing to split by.
    std::istringstream plain(
        "ggml-hex: HTP0 profile-op ADD: a x b -> c : 4:1 x 4:1 -> 4:1 : f32 x f32 -> f32 : s : "
        "usec 3 cycles 9\n");
    const StageSplit none = split_stages(parse_hexagon_profile(plain));
    EXPECT_EQ(none.method, "none");
    EXPECT_EQ(none.order, (std::vector<std::string>{"log"}));
}

TEST(HexagonImport, ValuesThatCannotBeTrueAreRefusedNamingTheLine) {
    const std::string good =
        "ggml-hex: HTP0 profile-op ADD|a x b -> c-0|4:1 x 4:1 -> 4:1|f32 x f32 -> f32|4:16 x 4:16 "
        "-> 4:16|----|";
    std::istringstream in(
        good + "usec 10 cycles 11000 start 5 mhz 1100.0\n" +       // 1 kept
        good + "usec 10 cycles 11000 start 5 mhz 1e23\n" +         // 2 issue #33
        good + "usec 10 cycles 11000 start 5 mhz 0.0\n" +          // 3 no clock, 10 us
        good + "usec 0 cycles 300 start 5 mhz 0.0\n" +             // 4 kept: under 1 us
        good + "usec 10 cycles 11000 start 5 mhz 2200.0\n" +       // 5 not its cycles
        good + "usec 4294967295 cycles 1 start 5 mhz 0.0\n" +      // 6 a wrapped time
        good + "usec 10 cycles 999999999 start 5 mhz 99999.9\n" +  // 7 beyond any clock
        good + "usec 10 cycles 11000 start 5 mhz nan\n" +          // 8
        "ggml-hex: HTP0 MUL x 4:1:1:1 -> y 4:1:1:1 : op-usec 5 op-cycles 5500 op-pkts 2 "
        "(2750.000000) call-usec 18446744073709551615\n" +  // 9 %llu of t2 < t1
        "ggml-hex: HTP0 profile-op OPBATCH|----|n-ops 4000000000|----|----|----|usec 3 cycles "
        "3300 start 1 mhz 1100.0\n" +  // 10 too many ops
        "ggml-hex: HTP0 profile-batch n-ops 2 batch-dur-usec -40 htp-ops-usec 10\n" +  // 11
        "ggml-hex: HTP0 MUL x 4:1:1:1 -> y 4:1:1:1 : op-usec 5 op-cycles 5500 op-pkts 0 (inf) "
        "call-usec 9\n");  // 12 kept
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    ASSERT_EQ(imp.records.size(), 3u);
    EXPECT_EQ(imp.batches.size(), 0u);
    EXPECT_DOUBLE_EQ(*imp.records[1].op_ns, 0.0);
    EXPECT_DOUBLE_EQ(*imp.records[2].call_ns, 9000.0);
    EXPECT_EQ(imp.n_refused, 9);
    ASSERT_EQ(imp.refused.size(), 9u);
    const std::vector<std::pair<int, std::string>> want = {
        {2, "implausible mhz (1e+23"},
        {3, "implausible mhz (0) for an op of 10 usec"},
        {5, "mhz 2200 disagrees with cycles/usec (11000/10 = 1100.0)"},
        {6, "implausible usec (4294967295: more than 1000 s)"},
        {7, "implausible mhz (99999.9"},
        {8, "implausible mhz (nan"},
        {9, "implausible call-usec (18446744073709551615)"},
        {10, "implausible n-ops (4000000000: more than 1000000)"},
        {11, "negative batch-dur-usec (-40)"}};
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(imp.refused[i].line, want[i].first) << i;
        EXPECT_NE(imp.refused[i].reason.find(want[i].second), std::string::npos)
            << imp.refused[i].reason;
    }
    nlohmann::json j = to_json(imp);
    EXPECT_EQ(j["n_refused"], 9);
    EXPECT_EQ(j["refused"][0]["line"], 2);
}

TEST(HexagonImport, PrefixesOfLlamaCppAndLogcatAreSkipped) {
    const std::string msg =
        "ggml-hex: HTP0 profile-op MUL: a x b -> c-1 : 4:1 x 4:1 -> 4:1 : f32 x f32 -> f32 : "
        "4:16 x 4:16 -> 4:16 : usec 2 cycles 2200";
    std::istringstream in("0.01.576.635 D " + msg + "\n" +                         // llama.cpp
                          "\033[34m0.01.577.000\033[0m \033[33mD " + msg + "\n" +  // coloured
                          "\033[0m06-18 12:34:56.789  8123  8150 D llama   : " + msg + "\n" +
                          "D/llama   ( 8123): " + msg + "\r\n");  // logcat threadtime, brief
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0);
    ASSERT_EQ(imp.records.size(), 4u);
    for (const auto& r : imp.records) {
        EXPECT_EQ(r.backend, "HTP0");
        EXPECT_EQ(r.op, "MUL");
        EXPECT_EQ(r.out.name, "c-1");
        EXPECT_DOUBLE_EQ(*r.op_ns, 2000.0);
    }
}

TEST(HexagonImport, FirstFormatDamagedTensorListsAreCounted) {
    std::istringstream in(
        "ggml-hex: HTP0 MUL_MAT w 4:4:1:1 x a 4:2:1:1 c 4:2:1:1 : op-usec 1 op-cycles 1 op-pkts 1 "
        "(1.0) call-usec 2\n"  // no '->'
        "ggml-hex: HTP0 MUL_MAT w 4:4:1:1 x a -> c 4:2:1:1 : op-usec 1 op-cycles 1 op-pkts 1 (1.0) "
        "call-usec 2\n"  // an input without dims
        "ggml-hex: HTP0 MUL_MAT -> c 4:2:1:1 : op-usec 1 op-cycles 1 op-pkts 1 (1.0) call-usec "
        "2\n"  // no input
        "ggml-hex: HTP0 MUL_MAT w 4:4:1:1 -> c : op-usec 1 op-cycles 1 op-pkts 1 (1.0) "
        "call-usec 2\n"                   // output without dims
        "ggml-hex: HTP0 : op-usec 1\n");  // nothing
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_TRUE(imp.records.empty());
    EXPECT_EQ(imp.n_unparsed, 5);
    ASSERT_EQ(imp.unparsed.size(), 5u);
    EXPECT_NE(imp.unparsed[0].reason.find("'->'"), std::string::npos) << imp.unparsed[0].reason;
    EXPECT_NE(imp.unparsed[1].reason.find("no dims"), std::string::npos) << imp.unparsed[1].reason;
}

TEST(HexagonImport, EmptyInput) {
    std::istringstream in("");
    HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_TRUE(imp.records.empty());
    EXPECT_EQ(imp.n_lines, 0);
}

}  // namespace
}  // namespace sb
