#include "profile/op_record.hpp"

#include <gtest/gtest.h>

#include <map>

#include "profile/ops_profile.hpp"

namespace sb {
namespace {

OpRecord rec(const std::string& op, const std::string& name, std::optional<double> op_ns,
             std::optional<double> call_ns, const std::string& backend = "CPU") {
    OpRecord r;
    r.op = op;
    r.out.name = name;
    r.layer = parse_layer(name);
    r.backend = backend;
    r.no_compute = is_no_compute_op(op);
    r.op_ns = op_ns;
    r.call_ns = call_ns;
    return r;
}

TEST(OpRecord, ParsesLayersFromLlamaNames) {
    EXPECT_EQ(parse_layer("ffn_up-3"), 3);
    EXPECT_EQ(parse_layer("attn_norm-12"), 12);
    EXPECT_EQ(parse_layer("blk.7.attn_q.weight"), 7);
    EXPECT_EQ(parse_layer("cache_k_l5 (view)"), 5);
    EXPECT_EQ(parse_layer("Qcur-0 (reshaped) (permuted)"), 0);
    EXPECT_EQ(parse_layer("CPU#attn_norm-3#0"), 3);
    EXPECT_EQ(parse_layer("RPC0[127.0.0.1:5]#inp_embd#0"), std::nullopt);
    EXPECT_EQ(parse_layer("result_output"), std::nullopt);
    EXPECT_EQ(parse_layer("norm"), std::nullopt);
    EXPECT_EQ(parse_layer("inp_embd"), std::nullopt);
    EXPECT_EQ(parse_layer("a-"), std::nullopt);
    EXPECT_EQ(parse_layer(""), std::nullopt);
}

TEST(OpRecord, NoComputeOps) {
    EXPECT_TRUE(is_no_compute_op("VIEW"));
    EXPECT_TRUE(is_no_compute_op("RESHAPE"));
    EXPECT_TRUE(is_no_compute_op("PERMUTE"));
    EXPECT_TRUE(is_no_compute_op("TRANSPOSE"));
    EXPECT_TRUE(is_no_compute_op("NONE"));
    EXPECT_FALSE(is_no_compute_op("CPY"));
    EXPECT_FALSE(is_no_compute_op("MUL_MAT"));
}

TEST(OpRecord, AggregatesByOpWithRatioAndShares) {
    std::vector<OpRecord> v{rec("MUL_MAT", "Qcur-0", 100, 150), rec("MUL_MAT", "Kcur-0", 50, 90),
                            rec("RMS_NORM", "norm-0", 2, 40), rec("VIEW", "x-0 (view)", 0, 30),
                            rec("ADD", "l_out-0", std::nullopt, 20)};
    auto by = aggregate(v, GroupBy::op, 400.0);
    ASSERT_EQ(by.size(), 4u);
    EXPECT_EQ(by[0].key, "MUL_MAT");  // by call time
    EXPECT_EQ(by[0].count, 2);
    EXPECT_DOUBLE_EQ(*by[0].op_ns, 150);
    EXPECT_DOUBLE_EQ(*by[0].call_ns, 240);
    EXPECT_DOUBLE_EQ(*by[0].call_op_ratio, 240.0 / 150.0);
    EXPECT_DOUBLE_EQ(*by[0].share, 150.0 / 400.0);
    EXPECT_DOUBLE_EQ(*by[0].call_share, 240.0 / 330.0);
    EXPECT_EQ(by[1].key, "RMS_NORM");
    EXPECT_DOUBLE_EQ(*by[1].call_op_ratio, 20.0);
    EXPECT_EQ(by[2].key, "VIEW");
    EXPECT_EQ(by[2].n_no_compute, 1);
    EXPECT_FALSE(by[2].call_op_ratio.has_value());  // zero op time: no ratio
    EXPECT_EQ(by[3].key, "ADD");
    EXPECT_FALSE(by[3].op_ns.has_value());  // missing is not zero
    EXPECT_FALSE(by[3].share.has_value());
}

TEST(OpRecord, AggregatesByLayerAndBackend) {
    std::vector<OpRecord> v{
        rec("MUL_MAT", "ffn_up-1", 10, 20, "RPC0"), rec("ADD", "l_out-0", 1, 5, "RPC0"),
        rec("GET_ROWS", "inp_embd", 3, 4, "CPU"), rec("MUL", "ffn_norm-1", 2, 6, "RPC0")};
    auto layers = aggregate(v, GroupBy::layer, std::nullopt);
    ASSERT_EQ(layers.size(), 3u);
    EXPECT_EQ(layers[0].layer, 0);
    EXPECT_EQ(layers[1].layer, 1);
    EXPECT_EQ(layers[1].count, 2);
    EXPECT_DOUBLE_EQ(*layers[1].call_ns, 26);
    EXPECT_EQ(layers[2].key, "none");
    EXPECT_FALSE(layers[2].share.has_value());
    auto backends = aggregate(v, GroupBy::backend, 100.0);
    ASSERT_EQ(backends.size(), 2u);
    EXPECT_EQ(backends[0].key, "RPC0");
    EXPECT_DOUBLE_EQ(*backends[0].op_ns, 13);
    nlohmann::json j = to_json(layers[2], GroupBy::layer);
    EXPECT_TRUE(j["layer"].is_null());
    EXPECT_EQ(to_json(backends[1], GroupBy::backend)["backend"], "CPU");
}

TEST(OpRecord, TopRecordsAndSums) {
    std::vector<OpRecord> v{rec("A", "a", 1, 5), rec("B", "b", 9, std::nullopt),
                            rec("C", "c", 2, 30), rec("VIEW", "v", 0, 7)};
    auto top = top_records(v, 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0], 2u);
    EXPECT_EQ(top[1], 1u);  // no call time: ranked by op time
    EXPECT_DOUBLE_EQ(*sum_op_ns(v), 12);
    EXPECT_DOUBLE_EQ(*sum_call_ns(v, false), 42);
    EXPECT_DOUBLE_EQ(*sum_call_ns(v, true), 35);
    EXPECT_FALSE(sum_op_ns({}).has_value());
    EXPECT_EQ(shape_text({256, 768, 1, 1}), "256x768");
    EXPECT_EQ(shape_text({1, 1, 1, 1}), "1");
    EXPECT_EQ(shape_text({32, 1, 8, 1}), "32x1x8");
}

TEST(OpsProfile, ReconciliationFlagsOpTimeAboveTheStage) {
    StageProfile s;
    s.stage = "decode";
    s.ops = {rec("MUL_MAT", "a-0", 600, 900), rec("ADD", "b-0", 100, 300)};
    s.rec.plain_ns = {1000, 1100, 900};
    s.rec.traced_ns = {2000, 2100};
    s.rec.sched_gap_ns = 50;
    SplitRecord a, b;
    a.index = 0;
    b.index = 1;
    b.n_inputs = 2;
    b.input_bytes = 4096;
    b.copy_ns = 120;
    s.splits = {a, b};
    finalize_stage(s);
    EXPECT_DOUBLE_EQ(*s.rec.plain_median_ns, 1000);
    EXPECT_DOUBLE_EQ(*s.rec.traced_median_ns, 2050);
    EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, 700);
    EXPECT_DOUBLE_EQ(*s.rec.op_fraction, 0.7);
    EXPECT_TRUE(s.rec.op_within_stage);
    EXPECT_DOUBLE_EQ(*s.rec.overhead_ratio, 1.05);
    EXPECT_DOUBLE_EQ(*s.rec.host_ns, 2050 - 1200 - 120 - 50);
    EXPECT_EQ(s.n_splits, 2);
    EXPECT_EQ(s.n_copies, 2);
    EXPECT_EQ(*s.copy_bytes, 4096u);
    EXPECT_DOUBLE_EQ(*s.by_op[0].share, 0.6);

    StageProfile t = s;
    t.notes.clear();
    t.rec.plain_ns = {500};
    finalize_stage(t);
    EXPECT_FALSE(t.rec.op_within_stage);
    ASSERT_EQ(t.notes.size(), 1u);
    EXPECT_EQ(t.notes[0],
              "summed op time is 140% of the uninstrumented stage time: 0.000 ms more op time "
              "than the stage: ops timed on their own ran slower than inside the graph; treat "
              "op times of this stage as upper bounds");
    // Where the device's own timer priced ops, its pass is where they may have run slower.
    StageProfile g = t;
    g.notes.clear();
    g.rec.n_op_device_timer = 2;
    finalize_stage(g);
    ASSERT_EQ(g.notes.size(), 1u);
    EXPECT_NE(g.notes[0].find("ops timed on their own or in the device timer's pass ran slower "
                              "than inside the graph"),
              std::string::npos)
        << g.notes[0];
    OpsProfile p;
    p.stages = {t};
    auto w = profile_warnings(p);
    ASSERT_FALSE(w.empty());
    EXPECT_EQ(w[0].code, "op_time_exceeds_stage");
    nlohmann::json j = to_json(p);
    EXPECT_EQ(j["stages"][0]["reconciliation"]["op_within_stage"], false);
}

TEST(OpsProfile, TheTracedStageIsTakenLessTheTracersOwnWork) {
    StageProfile s;
    s.stage = "prefill";
    s.ops = {rec("MUL_MAT", "a-0", 600, 900)};
    s.rec.plain_ns = {1000};
    s.rec.traced_ns = {1400, 1100, 1120};
    s.rec.tracer_ns = {350, 0, 0};  // the capturing run described its nodes
    finalize_stage(s);
    EXPECT_DOUBLE_EQ(*s.rec.traced_median_ns, 1100);  // median of 1050, 1100, 1120
    EXPECT_NEAR(*s.rec.overhead_ratio, 0.1, 1e-12);
    EXPECT_DOUBLE_EQ(*s.rec.host_ns, 1100 - 900);
    // Documents from before the tracer's work was measured: the walls alone.
    s.rec.tracer_ns.clear();
    finalize_stage(s);
    EXPECT_DOUBLE_EQ(*s.rec.traced_median_ns, 1120);
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

TEST(OpsProfile, DecompositionSplitsTheStageAlongTheAcceleratorPath) {
    StageProfile s;
    s.stage = "decode";
    OpRecord mm = rec("MUL_MAT", "Qcur-0", 300, 900, "RPC0");
    OpRecord rms = rec("RMS_NORM", "norm-0", 20, 500, "RPC0");
    OpRecord view = rec("VIEW", "x-0 (view)", 0, 400, "RPC0");
    OpRecord emb = rec("GET_ROWS", "inp_embd", 50, 60, "CPU");
    s.ops = {emb, mm, rms, view};
    SplitRecord cpu, rpc;
    cpu.backend = "CPU";
    rpc.index = 1;
    rpc.backend = "RPC0";
    rpc.n_inputs = 1;
    rpc.copy_ns = 100;
    s.splits = {cpu, rpc};
    s.rec.plain_ns = {1000};
    finalize_stage(s);
    std::vector<std::optional<double>> conv{std::nullopt, 40.0, std::nullopt, std::nullopt};
    Decomposition d = decompose_stage(s, {"RPC0"}, {{"RPC0", 150.0}, {"CPU", 1.0}}, conv);
    ASSERT_EQ(d.parts.size(), 6u);
    auto part = [&](const std::string& name) {
        for (const auto& p : d.parts)
            if (p.name == name)
                return p;
        ADD_FAILURE() << name;
        return DecompositionPart{};
    };
    EXPECT_DOUBLE_EQ(*part("accelerator_compute").ns, 300 + 20 - 40);
    EXPECT_DOUBLE_EQ(*part("conversion").ns, 40);
    EXPECT_DOUBLE_EQ(*part("communication").ns, 150);  // one RPC0 split
    EXPECT_DOUBLE_EQ(*part("copies").ns, 100);
    EXPECT_DOUBLE_EQ(*part("fallback_ops").ns, 50);
    EXPECT_DOUBLE_EQ(*part("host").ns, 1000 - 280 - 40 - 150 - 100 - 50);
    EXPECT_DOUBLE_EQ(*part("host").share, 0.38);
    EXPECT_EQ(d.n_accel_ops, 2);
    EXPECT_EQ(d.n_dispatches, 1);
    EXPECT_EQ(d.n_conversion_ops, 1);
    EXPECT_DOUBLE_EQ(*d.per_op_dispatch_ns, 300);
    EXPECT_DOUBLE_EQ(*d.traced_tax_ns, (900 - 300) + (500 - 20));
    nlohmann::json j = to_json(d);
    EXPECT_EQ(j["parts"][0]["name"], "accelerator_compute");
}

// The stage of the test above with the uninstrumented time given: 1000 ns (the parts fit),
// 400 ns (they sum to more: host < 0) and 250 ns (accelerator compute alone exceeds it).
Decomposition decomposed_at(int64_t plain_ns) {
    StageProfile s;
    s.stage = "decode";
    s.ops = {rec("GET_ROWS", "inp_embd", 50, 60, "CPU"), rec("MUL_MAT", "Qcur-0", 300, 900, "RPC0"),
             rec("RMS_NORM", "norm-0", 20, 500, "RPC0")};
    SplitRecord cpu, rpc;
    cpu.backend = "CPU";
    rpc.index = 1;
    rpc.backend = "RPC0";
    rpc.n_inputs = 1;
    rpc.copy_ns = 100;
    s.splits = {cpu, rpc};
    s.rec.plain_ns = {plain_ns};
    finalize_stage(s);
    return decompose_stage(s, {"RPC0"}, {{"RPC0", 150.0}}, {std::nullopt, 40.0, std::nullopt});
}

TEST(OpsProfile, DecompositionPartsAreNonNegativeOrSayWhyTheyAreNot) {
    auto note_of = [](const Decomposition& d, const std::string& name) {
        for (const auto& p : d.parts)
            if (p.name == name)
                return p.note;
        ADD_FAILURE() << name;
        return std::string();
    };
    const std::string overlap = "overlap", exceeds = "exceeds the uninstrumented stage time";
    for (int64_t plain : {1000, 400, 250}) {
        SCOPED_TRACE(plain);
        const Decomposition d = decomposed_at(plain);
        for (const auto& p : d.parts) {
            SCOPED_TRACE(p.name);
            ASSERT_TRUE(p.ns);
            if (p.name != "host") {
                EXPECT_GE(*p.ns, 0);
            }
            // Exactly the parts larger than the stage say so.
            EXPECT_EQ(p.note.find(exceeds) != std::string::npos, *p.ns > plain) << p.note;
        }
    }
    // 1000 ns: host 1000 - 280 - 40 - 150 - 100 - 50 = 380, no note of overlap or excess.
    EXPECT_EQ(note_of(decomposed_at(1000), "host").find(overlap), std::string::npos);
    // 400 ns: host -220, and it says the parts overlap; none exceeds the stage alone.
    const Decomposition at400 = decomposed_at(400);
    EXPECT_DOUBLE_EQ(*at400.parts.back().ns, -220);
    EXPECT_NE(note_of(at400, "host").find(overlap), std::string::npos);
    EXPECT_EQ(note_of(at400, "accelerator_compute").find(exceeds), std::string::npos);
    // 250 ns: accelerator compute (280) exceeds the stage and says so.
    EXPECT_NE(note_of(decomposed_at(250), "accelerator_compute").find(exceeds), std::string::npos);
}

// A mat-mul's conversion, two replays subtracted, can come out above the op's own time under
// load; it is part of the op, so it is capped there and the note counts the capped ones. The
// accelerator's compute keeps the other ops' time instead of dropping to zero.
TEST(OpsProfile, DecompositionCapsAConversionAtItsOpsTime) {
    StageProfile s;
    s.stage = "decode";
    s.ops = {rec("MUL_MAT", "Qcur-0", 300, 900, "RPC0"), rec("RMS_NORM", "norm-0", 20, 500, "RPC0"),
             rec("MUL_MAT", "Kcur-0", 100, 400, "RPC0")};
    s.rec.plain_ns = {2000};
    finalize_stage(s);
    const Decomposition d =
        decompose_stage(s, {"RPC0"}, {{"RPC0", 150.0}}, {500.0, std::nullopt, 30.0});
    std::map<std::string, DecompositionPart> parts;
    for (const auto& p : d.parts)
        parts[p.name] = p;
    EXPECT_DOUBLE_EQ(*parts["conversion"].ns, 300 + 30);
    EXPECT_DOUBLE_EQ(*parts["accelerator_compute"].ns, 300 + 20 + 100 - 330);
    EXPECT_EQ(d.n_conversion_ops, 2);
    EXPECT_NE(parts["conversion"].note.find("; 1 capped at the op's own time"), std::string::npos)
        << parts["conversion"].note;
}

}  // namespace
}  // namespace sb
