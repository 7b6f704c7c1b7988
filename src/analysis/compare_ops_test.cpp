#include <gtest/gtest.h>

#include "analysis/compare.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"
#include "core/stats_bootstrap.hpp"

namespace sb {
namespace {

using nlohmann::json;

TensorInfo tensor(const std::string& name, const std::string& type, std::vector<int64_t> ne) {
    TensorInfo t;
    t.name = name;
    t.type = type;
    t.ne = std::move(ne);
    return t;
}

// A node of layer `layer`: a mat-mul of role's weight (q4_0, rows x 64) with the activations
// (f32, 64 x tokens); any other op on the activations alone.
OpRecord rec(const std::string& op, const std::string& role, int64_t rows, int layer, double op_us,
             std::optional<double> call_us, const std::string& backend, int64_t tokens = 1) {
    OpRecord r;
    r.op = op;
    r.backend = backend;
    r.layer = layer;
    r.op_ns = op_us * 1e3;
    if (call_us)
        r.call_ns = *call_us * 1e3;
    const std::string l = std::to_string(layer);
    if (op == "MUL_MAT") {
        r.srcs = {tensor("blk." + l + "." + role + ".weight", "q4_0", {64, rows}),
                  tensor("attn_norm-" + l, "f32", {64, tokens})};
        r.out = tensor(role + "_out-" + l, "f32", {rows, tokens});
    } else {
        r.srcs = {tensor("l_out-" + l, "f32", {64, tokens})};
        r.out = tensor(role + "-" + l, "f32", {64, tokens});
    }
    return r;
}

// n nodes (layers 0..n-1) of one op and role with the given times (µs); the times list is
// cycled over the layers.
struct OpTimes {
    std::string op, role;
    int64_t rows;
    int n;
    std::vector<double> op_us;
    std::vector<std::optional<double>> call_us;
};

ResultDocument ops_doc(const std::string& devices,
                       const std::map<std::string, std::vector<OpTimes>>& st,
                       const std::string& source = "trace") {
    ResultDocument d;
    d.command = "ops";
    d.started_at = "2026-12-01T00:00:00Z";
    OpsProfile p;
    p.source = source;
    p.devices = devices;
    for (const auto& [name, ops] : st) {
        StageProfile s;
        s.stage = name;
        s.n_tokens = name == "prefill" ? 32 : 1;
        for (const auto& o : ops)
            for (int i = 0; i < o.n; ++i)
                s.ops.push_back(rec(o.op, o.role, o.rows, i, o.op_us[i % o.op_us.size()],
                                    o.call_us[i % o.call_us.size()], devices, s.n_tokens));
        // A view never counts.
        OpRecord v = rec("VIEW", "view", 64, 0, 0, 1, devices);
        v.no_compute = true;
        s.ops.push_back(v);
        p.stages.push_back(s);
    }
    d.ops = p;
    return d;
}

const CompareRow* ops_row(const CompareResult& r, const std::string& stage, const std::string& test,
                          const std::string& metric) {
    for (const auto& x : r.rows)
        if (x.stage == stage && x.test == test && x.metric == metric)
            return &x;
    return nullptr;
}

const std::string kQ = "MUL_MAT attn_q: q4_0 64×64, f32 64 → f32 64";
const std::string kDown = "MUL_MAT ffn_down: q4_0 64×128, f32 64 → f32 128";

TEST(CompareOps, SignatureOfARecord) {
    const OpRecord q = rec("MUL_MAT", "attn_q", 64, 3, 1, 1, "CPU", 32);
    EXPECT_EQ(compare_op_signature(q),
              (CompareOpSignature{"MUL_MAT", "attn_q", "q4_0 64×64, f32 64×32 → f32 64×32"}));
    EXPECT_EQ(compare_signature_text(compare_op_signature(q)),
              "MUL_MAT attn_q: q4_0 64×64, f32 64×32 → f32 64×32");
    // The output projection's weight has no block.
    OpRecord out = q;
    out.srcs[0].name = "output.weight";
    EXPECT_EQ(compare_op_signature(out).role, "output");
    // No weight: the node's own name without its layer and annotations.
    OpRecord kq = q;
    kq.srcs = {tensor("cache_k_l3 (view) (permuted)", "f16", {64, 32, 1, 1}),
               tensor("q-3 (permuted)", "f32", {64, 32})};
    kq.out.name = "kq-3 (reshaped)";
    EXPECT_EQ(compare_op_signature(kq).role, "kq");
    EXPECT_EQ(compare_op_signature(kq).shape, "f16 64×32, f32 64×32 → f32 64×32");
    // ggml's default names and none give no role.
    OpRecord anon = kq;
    anon.srcs[0].name = "leaf_2";
    anon.out.name = "node_17";
    EXPECT_EQ(compare_op_signature(anon).role, "");
    anon.out.name = "";
    EXPECT_EQ(compare_signature_text(compare_op_signature(anon)),
              "MUL_MAT: f16 64×32, f32 64×32 → f32 64×32");
}

TEST(CompareOps, OneRowPerShapeThenTheOpTypeRolledUp) {
    const ResultDocument a =
        ops_doc("CPU", {{"decode",
                         {{"MUL_MAT", "attn_q", 64, 4, {100}, {110}},
                          {"MUL_MAT", "ffn_down", 128, 4, {300}, {320}},
                          {"RMS_NORM", "norm", 0, 3, {10}, {20}}}},
                        {"prefill", {{"MUL_MAT", "attn_q", 64, 4, {1000}, {1100}}}}});
    const ResultDocument b =
        ops_doc("RPC0", {{"decode",
                          {{"MUL_MAT", "attn_q", 64, 4, {155}, {300}},
                           {"MUL_MAT", "ffn_down", 128, 4, {330}, {400}},
                           {"RMS_NORM", "norm", 0, 3, {10}, {150}},
                           {"GET_ROWS", "inp_embd", 0, 1, {5}, {50}}}},
                         {"prefill", {{"MUL_MAT", "attn_q", 64, 4, {1670}, {2000}}}}});
    const CompareResult r = compare_documents({{"A", "a.json", a}, {"B", "b.json", b}});
    EXPECT_EQ(r.match, (std::vector<std::string>{"stage", "op", "signature"}));
    // decode: MUL_MAT 3 totals + 2 shapes x 3, RMS_NORM 3 totals + 1 shape x 3; prefill: 3 + 3.
    EXPECT_EQ(r.rows.size(), 3u + 6 + 3 + 3 + 3 + 3);

    // Each shape its own ratio: attn_q 1.55x, ffn_down 1.1x.
    const CompareRow* q = ops_row(r, "decode", kQ, "op_us");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->key, "decode/" + kQ);
    EXPECT_EQ(q->op, "MUL_MAT");
    ASSERT_TRUE(q->signature);
    EXPECT_EQ(q->signature->role, "attn_q");
    EXPECT_DOUBLE_EQ(*q->sides[0].median, 100.0);
    EXPECT_EQ(q->sides[0].n, 4u);                         // the view is left out
    EXPECT_DOUBLE_EQ(*q->sides[0].median_ci_low, 100.0);  // the median's CI: equal records
    EXPECT_DOUBLE_EQ(*q->sides[0].median_ci_high, 100.0);
    EXPECT_DOUBLE_EQ(*q->sides[1].median, 155.0);
    ASSERT_EQ(q->ratios.size(), 1u);
    EXPECT_EQ(q->ratios[0].label, "B/A");
    EXPECT_DOUBLE_EQ(*q->ratios[0].median, 1.55);
    // Every record equal on both sides: nothing varies, so there is no interval, and no
    // verdict beyond the ratio (a bootstrap would give a point and call any difference).
    EXPECT_FALSE(q->ratios[0].ci_low);
    EXPECT_FALSE(q->ratios[0].ci_high);
    EXPECT_EQ(q->ratios[0].verdict, "no CI: no records that vary");
    EXPECT_EQ(q->differs.at("devices"), (std::vector<CompareValue>{"CPU", "RPC0"}));
    const CompareRow* down = ops_row(r, "decode", kDown, "op_us");
    ASSERT_TRUE(down);
    EXPECT_NEAR(*down->ratios[0].median, 1.1, 1e-12);

    // The op type rolled up: summed op time over both shapes, (4x155 + 4x330) / (4x100 +
    // 4x300), the first MUL_MAT ops_row of the stage.
    const CompareRow* mm = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm);
    EXPECT_EQ(mm, &r.rows[0]);
    EXPECT_FALSE(mm->signature);
    EXPECT_EQ(mm->op, "MUL_MAT");
    EXPECT_DOUBLE_EQ(*mm->sides[0].total, 1600.0);
    EXPECT_DOUBLE_EQ(*mm->sides[1].total, 1940.0);
    EXPECT_FALSE(mm->sides[0].median);
    EXPECT_EQ(mm->sides[0].n, 8u);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 1940.0 / 1600.0);
    EXPECT_FALSE(mm->ratios[0].ci_low);
    EXPECT_EQ(mm->ratios[0].verdict, "no CI: no records that vary");
    const CompareRow* mm_tax = ops_row(r, "decode", "MUL_MAT", "call_per_op_total");
    ASSERT_TRUE(mm_tax);
    EXPECT_DOUBLE_EQ(*mm_tax->sides[0].total, (4 * 110.0 + 4 * 320) / 1600.0);
    EXPECT_DOUBLE_EQ(*mm_tax->sides[1].total, (4 * 300.0 + 4 * 400) / 1940.0);

    // The dispatch tax: RMS_NORM's call is 15x its op on B, 2x on A.
    const std::string norm = "RMS_NORM norm: f32 64 → f32 64";
    const CompareRow* tax = ops_row(r, "decode", norm, "call_per_op");
    ASSERT_TRUE(tax);
    EXPECT_DOUBLE_EQ(*tax->sides[0].median, 2.0);
    EXPECT_DOUBLE_EQ(*tax->sides[1].median, 15.0);
    EXPECT_DOUBLE_EQ(*tax->ratios[0].median, 7.5);
    EXPECT_EQ(tax->ratios[0].verdict, "no CI: no records that vary");
    const CompareRow* same = ops_row(r, "decode", norm, "op_us");
    ASSERT_TRUE(same);
    EXPECT_DOUBLE_EQ(*same->ratios[0].median, 1.0);

    const CompareRow* pf =
        ops_row(r, "prefill", "MUL_MAT attn_q: q4_0 64×64, f32 64×32 → f32 64×32", "op_us");
    ASSERT_TRUE(pf);
    EXPECT_DOUBLE_EQ(*pf->ratios[0].median, 1.67);

    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "B");
    EXPECT_EQ(r.unmatched[0].test, "decode GET_ROWS inp_embd: f32 64 → f32 64 (1 node, 5.0 µs op)");
}

TEST(CompareOps, ShapesOnlyOneSideHasAreListedNotDropped) {
    // A ran an ffn_up mat-mul B did not (and B one A did not): both are listed, and the op
    // type's totals are over the shape both ran.
    const ResultDocument a = ops_doc("CPU", {{"decode",
                                              {{"MUL_MAT", "attn_q", 64, 2, {100}, {110}},
                                               {"MUL_MAT", "ffn_up", 256, 2, {400}, {410}}}}});
    const ResultDocument b = ops_doc(
        "BLAS",
        {{"decode",
          {{"MUL_MAT", "attn_q", 64, 2, {50}, {60}}, {"MUL_MAT", "ffn_gate", 96, 1, {70}, {80}}}}});
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}});
    const CompareRow* mm = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm);
    EXPECT_DOUBLE_EQ(*mm->sides[0].total, 200.0);
    EXPECT_DOUBLE_EQ(*mm->sides[1].total, 100.0);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 0.5);
    EXPECT_EQ(mm->ratios[0].verdict, "no CI: no records that vary");
    ASSERT_EQ(r.unmatched.size(), 2u);
    EXPECT_EQ(r.unmatched[0].label, "A");
    EXPECT_EQ(r.unmatched[0].test,
              "decode MUL_MAT ffn_up: q4_0 64×256, f32 64 → f32 256 (2 nodes, 800.0 µs op)");
    EXPECT_EQ(r.unmatched[1].label, "B");
    EXPECT_EQ(r.unmatched[1].test,
              "decode MUL_MAT ffn_gate: q4_0 64×96, f32 64 → f32 96 (1 node, 70.0 µs op)");
}

TEST(CompareOps, ASideWithoutNamesMeetsByOpAndShape) {
    // An imported log whose lines name no tensors: its mat-mul meets the only one of that shape.
    ResultDocument a =
        ops_doc("HTP0", {{"decode", {{"MUL_MAT", "attn_q", 64, 3, {100}, {std::nullopt}}}}},
                "hexagon-profile");
    for (auto& op : a.ops->stages[0].ops) {
        for (auto& src : op.srcs)
            src.name.clear();
        op.out.name.clear();
    }
    const ResultDocument b = ops_doc("CPU", {{"decode",
                                              {{"MUL_MAT", "attn_q", 64, 3, {150}, {160}},
                                               {"MUL_MAT", "ffn_down", 128, 3, {300}, {310}}}}});
    const CompareResult r = compare_documents({{"NPU", "n", a}, {"CPU", "c", b}});
    const CompareRow* q = ops_row(r, "decode", "MUL_MAT: q4_0 64×64, f32 64 → f32 64", "op_us");
    ASSERT_TRUE(q);
    EXPECT_DOUBLE_EQ(*q->ratios[0].median, 1.5);
    // No call times in the log: op rows only.
    for (const auto& x : r.rows)
        EXPECT_TRUE(x.metric == "op_us" || x.metric == "op_total_us") << x.metric;
    EXPECT_EQ(q->differs.at("source"), (std::vector<CompareValue>{"hexagon-profile", "trace"}));
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "CPU");
    EXPECT_NE(r.unmatched[0].test.find("ffn_down"), std::string::npos);
}

TEST(CompareOps, SpreadSamplesGiveTheBootstrapInterval) {
    // Records of one shape with different times (its layers): the CI is compare's
    // ratio-of-medians bootstrap over the records, with its seed; each side's median has its
    // own interval.
    const ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 4, {100, 120, 90, 110}, {200}}}}});
    const ResultDocument b =
        ops_doc("BLAS", {{"decode", {{"MUL_MAT", "attn_q", 64, 4, {60, 70, 50, 65}, {150}}}}});
    CompareOptions o;
    o.resamples = 3000;
    o.seed = 7;
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, o);
    const CompareRow* mm = ops_row(r, "decode", kQ, "op_us");
    ASSERT_TRUE(mm);
    const std::vector<double> va{100, 120, 90, 110}, vb{60, 70, 50, 65};
    const RatioCi want = ratio_of_medians(vb, va, 3000, 7);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, want.ratio);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 62.5 / 105.0);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_low, want.lo);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].ci_high, want.hi);
    EXPECT_EQ(mm->ratios[0].verdict, want.no_difference ? "no difference" : "faster");
    const MedianCi ma = median_ci(va, {}, kSummaryResamples, 7);
    EXPECT_EQ(mm->sides[0].median_ci_low, ma.ci95_lo);
    EXPECT_EQ(mm->sides[0].median_ci_high, ma.ci95_hi);
    EXPECT_GE(*mm->sides[0].median_ci_low, 90.0);
    // The roll-up's interval: the stratified bootstrap of the totals.
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(tot);
    const RatioCi t = ratio_of_totals(Strata{{vb}, {}}, Strata{{va}, {}}, 3000, 7);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].median, 245.0 / 420.0);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].ci_low, t.lo);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].ci_high, t.hi);
}

TEST(CompareOps, ReplayedOpTimesAreOneMeasurementNotASpread) {
    // Every node of a shape carries its one replay's op time (isolated_call_ns set): four
    // records that agree are one sample, so a 0.3 % difference is no finding.
    ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 4, {100}, {200, 210, 190, 205}}}}});
    ResultDocument b = ops_doc(
        "BLAS", {{"decode", {{"MUL_MAT", "attn_q", 64, 4, {100.3}, {201, 211, 191, 206}}}}});
    for (ResultDocument* d : {&a, &b})
        for (OpRecord& r : d->ops->stages[0].ops)
            if (!r.no_compute)
                r.isolated_call_ns = *r.op_ns + 5e3;
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, CompareOptions{});
    const CompareRow* mm = ops_row(r, "decode", kQ, "op_us");
    ASSERT_TRUE(mm);
    EXPECT_EQ(mm->sides[0].n, 1u);
    EXPECT_DOUBLE_EQ(*mm->ratios[0].median, 1.003);
    EXPECT_FALSE(mm->ratios[0].ci_low);
    EXPECT_EQ(mm->ratios[0].verdict, "no CI: a replayed op time is one measurement");
    // The roll-up over copies of one replayed time has nothing that varies either.
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].median, 1.003);
    EXPECT_FALSE(tot->ratios[0].ci_low);
    EXPECT_EQ(tot->ratios[0].verdict, "no CI: no records that vary");
    // The call times were traced per node: they still vary, and still give an interval.
    const CompareRow* call = ops_row(r, "decode", kQ, "call_us");
    ASSERT_TRUE(call);
    EXPECT_EQ(call->sides[0].n, 4u);
    EXPECT_TRUE(call->ratios[0].ci_low);
}

TEST(CompareOps, DecodeTotalsArePerDecodeStep) {
    // The baseline traced one decode step; the other side is an imported log of 8 decode
    // graphs (8 records per layer's shape). Per node the times are equal, and so is the step.
    const ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 4, {100, 110, 90, 105}, {200}}}}});
    ResultDocument b =
        ops_doc("HTP0", {{"decode", {{"MUL_MAT", "attn_q", 64, 32, {100, 110, 90, 105}, {200}}}}},
                "hexagon-profile");
    b.ops->stages[0].n_graphs = 8;
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, CompareOptions{});
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->sides[0].total, 405.0);
    EXPECT_DOUBLE_EQ(*tot->sides[1].total, 405.0);  // 8 x 405 over 8 steps, not 8x the CPU's
    EXPECT_DOUBLE_EQ(*tot->ratios[0].median, 1.0);
    bool said = false;
    for (const auto& n : r.notes)
        said = said || n.find("B's decode holds 8 graphs") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST(CompareOps, PrefillTotalsArePerTokenWhereTheTokenCountsDiffer) {
    // A traced one prompt of 32 tokens; B is a log of two prompts of 32 (two graphs, 64 tokens):
    // per token the mat-muls cost the same.
    const ResultDocument a =
        ops_doc("CPU", {{"prefill", {{"MUL_MAT", "attn_q", 64, 4, {100}, {std::nullopt}}}}});
    ResultDocument b =
        ops_doc("HTP0", {{"prefill", {{"MUL_MAT", "attn_q", 64, 8, {100}, {std::nullopt}}}}},
                "hexagon-profile");
    b.ops->stages[0].n_tokens = 64;
    b.ops->stages[0].n_graphs = 2;
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, CompareOptions{});
    const CompareRow* tot = ops_row(r, "prefill", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->sides[0].total, 400.0 / 32);
    EXPECT_DOUBLE_EQ(*tot->sides[1].total, 800.0 / 64);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].median, 1.0);
    EXPECT_EQ(tot->differs.at("n_tokens"), (std::vector<CompareValue>{int64_t{32}, int64_t{64}}));
    EXPECT_NE(std::find(r.notes.begin(), r.notes.end(),
                        "prefill holds different token counts on the sides (A 32, B 64): its Σ "
                        "rows are per token (each side's totals divided by its tokens)"),
              r.notes.end());
    // Per shape, the records themselves: 100 µs each on both sides.
    const CompareRow* q =
        ops_row(r, "prefill", "MUL_MAT attn_q: q4_0 64×64, f32 64×32 → f32 64×32", "op_us");
    ASSERT_TRUE(q);
    EXPECT_DOUBLE_EQ(*q->ratios[0].median, 1.0);

    // Decode: a log's 8 graphs of one token are 8 tokens, one a step: n_tokens does not differ.
    const ResultDocument c =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 2, {10}, {std::nullopt}}}}});
    ResultDocument d =
        ops_doc("HTP0", {{"decode", {{"MUL_MAT", "attn_q", 64, 16, {10}, {std::nullopt}}}}},
                "hexagon-profile");
    d.ops->stages[0].n_tokens = 8;
    d.ops->stages[0].n_graphs = 8;
    const CompareResult rd = compare_documents({{"A", "c", c}, {"B", "d", d}}, CompareOptions{});
    const CompareRow* dt = ops_row(rd, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(dt);
    EXPECT_DOUBLE_EQ(*dt->sides[1].total, 20.0);
    EXPECT_EQ(dt->differs.count("n_tokens"), 0u);
}

// A fused NPU node against the CPU's two nodes: per layer, a MUL_MAT of attn_output's weight
// and the ADD of its output to the residual.
ResultDocument fused_docs(bool fused, int graphs, double mm_us, double add_us) {
    ResultDocument d;
    d.command = fused ? "import" : "ops";
    OpsProfile p;
    p.source = fused ? "hexagon-profile" : "trace";
    p.devices = fused ? "HTP0" : "CPU";
    StageProfile s;
    s.stage = "decode";
    s.n_tokens = graphs;
    s.n_graphs = graphs;
    for (int g = 0; g < graphs; ++g)
        for (int l = 0; l < 2; ++l) {
            const std::string L = std::to_string(l);
            OpRecord q = rec("MUL_MAT", "attn_q", 64, l, 40, std::nullopt, p.devices);
            q.graph = g;
            s.ops.push_back(q);
            OpRecord mm = rec("MUL_MAT", "attn_output", 64, l, mm_us, std::nullopt, p.devices);
            mm.graph = g;
            mm.srcs[1].name = "kqv_out-" + L;
            const TensorInfo residual = tensor("l_in-" + L, "f32", {64});
            const TensorInfo sum = tensor("ffn_inp-" + L, "f32", {64});
            if (fused) {
                mm.op = "MUL_MAT+ADD";
                mm.srcs.push_back(residual);
                mm.out = sum;
                s.ops.push_back(mm);
                continue;
            }
            s.ops.push_back(mm);
            OpRecord view = rec("VIEW", "view", 64, l, 0, std::nullopt, p.devices);
            view.no_compute = true;
            s.ops.push_back(view);
            OpRecord add = rec("ADD", "ffn_inp", 64, l, add_us, std::nullopt, p.devices);
            add.graph = g;
            add.srcs = {mm.out, residual};
            add.out = sum;
            s.ops.push_back(add);
            // An ADD of no mat-mul's output stays an ADD.
            OpRecord other = rec("ADD", "l_out", 64, l, 5, std::nullopt, p.devices);
            other.graph = g;
            other.srcs = {tensor("ffn_out-" + L, "f32", {64}), sum};
            s.ops.push_back(other);
        }
    p.stages.push_back(s);
    d.ops = p;
    return d;
}

TEST(CompareOps, AFusedNodeMeetsThePartsItFusesSummed) {
    const ResultDocument cpu = fused_docs(false, 1, 100, 10);
    const ResultDocument npu = fused_docs(true, 8, 80, 0);
    const std::string sig = "MUL_MAT+ADD attn_output: q4_0 64×64, f32 64, f32 64 → f32 64";
    const CompareResult r = compare_documents({{"A", "a", cpu}, {"B", "b", npu}}, CompareOptions{});
    // The op type: A's two MUL_MAT + ADD pairs (110 µs each) against B's 16 fused nodes over
    // its 8 decode steps.
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->sides[0].total, 220.0);
    EXPECT_EQ(tot->sides[0].n, 2u);
    EXPECT_DOUBLE_EQ(*tot->sides[1].total, 160.0);
    EXPECT_DOUBLE_EQ(*tot->ratios[0].median, 160.0 / 220.0);
    EXPECT_EQ(tot->fused, "A: MUL_MAT + ADD summed");
    const CompareRow* one = ops_row(r, "decode", sig, "op_us");
    ASSERT_TRUE(one);
    EXPECT_DOUBLE_EQ(*one->sides[0].median, 110.0);
    EXPECT_DOUBLE_EQ(*one->sides[1].median, 80.0);
    EXPECT_EQ(one->fused, "A: MUL_MAT + ADD summed");
    EXPECT_EQ(one->signature->role, "attn_output");
    // The parts left their own op types: MUL_MAT is attn_q's alone, and the ADD of no mat-mul's
    // output is A's only unmatched signature.
    const CompareRow* mm = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm);
    EXPECT_DOUBLE_EQ(*mm->sides[0].total, 80.0);
    EXPECT_DOUBLE_EQ(*mm->sides[1].total, 80.0);
    EXPECT_FALSE(mm->fused);
    ASSERT_EQ(r.unmatched.size(), 1u);
    EXPECT_EQ(r.unmatched[0].label, "A");
    EXPECT_EQ(r.unmatched[0].test,
              "decode ADD l_out: f32 64, f32 64 → f32 64 (2 nodes, 10.0 µs op)");

    // The NPU as the baseline: its own op types, the summed side named B.
    const CompareResult back =
        compare_documents({{"A", "b", npu}, {"B", "a", cpu}}, CompareOptions{});
    const CompareRow* t2 = ops_row(back, "decode", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(t2);
    EXPECT_DOUBLE_EQ(*t2->ratios[0].median, 220.0 / 160.0);
    EXPECT_EQ(t2->fused, "B: MUL_MAT + ADD summed");
    ASSERT_EQ(back.unmatched.size(), 1u);
    EXPECT_EQ(back.unmatched[0].label, "B");

    // Every side fused: one node on each, nothing summed.
    const CompareResult both =
        compare_documents({{"A", "b", npu}, {"B", "b2", npu}}, CompareOptions{});
    const CompareRow* t3 = ops_row(both, "decode", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(t3);
    EXPECT_EQ(t3->fused, "one node on every side");

    // The JSON keeps the label.
    EXPECT_EQ(to_json(r)["rows"][0]["fused"].is_null(), tot != &r.rows[0]);
    EXPECT_EQ(from_json<CompareResult>(to_json(r), "'cmp.json'"), r);
}

TEST(CompareOps, FusedPartsMeetByShapeWhereTheLogHasNoNames) {
    // A log without tensor names: the fused node meets the parts of its op and shape.
    ResultDocument npu = fused_docs(true, 1, 80, 0);
    for (auto& op : npu.ops->stages[0].ops) {
        for (auto& src : op.srcs)
            src.name.clear();
        op.out.name.clear();
    }
    const ResultDocument cpu = fused_docs(false, 1, 100, 10);
    const CompareResult r = compare_documents({{"A", "a", cpu}, {"B", "b", npu}}, CompareOptions{});
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT+ADD", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->sides[0].total, 220.0);
    EXPECT_DOUBLE_EQ(*tot->sides[1].total, 160.0);
}

// The NPU's MUL_MAT_NX against the CPU's mat-muls: per layer, attention's q, k and v and the
// FFN's gate and up each share their activations (attn_norm, ffn_norm); the CPU computes q's
// rope between q and k, as llama.cpp's graph orders them; the NPU stacks and fuses them
// (ggml-hexagon.cpp: ggml_hexagon_graph_optimize_reorder, try_fuse_mul_mat_nx) and prints one
// node: the weights, then the shared input, and the last mat-mul's output.
ResultDocument nx_docs(bool fused, int graphs, bool names = true) {
    ResultDocument d;
    d.command = fused ? "import" : "ops";
    OpsProfile p;
    p.source = fused ? "hexagon-profile" : "trace";
    p.devices = fused ? "HTP0" : "CPU";
    StageProfile s;
    s.stage = "decode";
    s.n_tokens = graphs;
    s.n_graphs = graphs;
    for (int g = 0; g < graphs; ++g)
        for (int l = 0; l < 2; ++l) {
            const std::string L = std::to_string(l);
            auto mm = [&](const std::string& role, int64_t rows, const std::string& input,
                          double us) {
                OpRecord r = rec("MUL_MAT", role, rows, l, us, std::nullopt, p.devices);
                r.graph = g;
                r.srcs[1].name = input + "-" + L;
                return r;
            };
            std::vector<OpRecord> attn = {mm("attn_q", 64, "attn_norm", 30),
                                          mm("attn_k", 32, "attn_norm", 20),
                                          mm("attn_v", 32, "attn_norm", 21)};
            std::vector<OpRecord> ffn = {mm("ffn_gate", 128, "ffn_norm", 50),
                                         mm("ffn_up", 128, "ffn_norm", 51)};
            OpRecord view = rec("RESHAPE", "Qcur", 64, l, 0, std::nullopt, p.devices);
            view.no_compute = true;
            OpRecord rope = rec("ROPE", "Qcur", 64, l, 4, std::nullopt, p.devices);
            rope.graph = g;
            // attn_output's mat-mul has an input of its own: it stays a MUL_MAT.
            OpRecord out = mm("attn_output", 64, "kqv_out", 40);
            auto nx = [&](const std::vector<OpRecord>& parts, double us) {
                OpRecord r = parts[0];
                r.op = "MUL_MAT_NX";
                r.srcs.clear();
                for (const auto& x : parts)
                    r.srcs.push_back(x.srcs[0]);
                r.srcs.push_back(parts[0].srcs[1]);
                r.out = parts.back().out;
                r.op_ns = us * 1e3;
                return r;
            };
            if (fused) {
                s.ops.push_back(nx(attn, 60));
                s.ops.push_back(rope);
                s.ops.push_back(out);
                s.ops.push_back(nx(ffn, 90));
            } else {
                s.ops.insert(s.ops.end(), {attn[0], view, rope, attn[1], attn[2], out});
                s.ops.insert(s.ops.end(), ffn.begin(), ffn.end());
            }
        }
    if (!names)
        for (auto& op : s.ops) {
            for (auto& src : op.srcs)
                src.name.clear();
            op.out.name.clear();
        }
    p.stages.push_back(s);
    d.ops = p;
    return d;
}

TEST(CompareOps, AMulMatNxNodeMeetsTheMatMulsSharingItsInputSummed) {
    const ResultDocument cpu = nx_docs(false, 1);
    const ResultDocument npu = nx_docs(true, 4);
    const CompareResult r = compare_documents({{"A", "a", cpu}, {"B", "b", npu}}, CompareOptions{});
    // Every node meets one on the other side: q, k and v (71 µs) and gate and up (101 µs) per
    // layer, against the NPU's 60 and 90 µs nodes over its 4 decode steps.
    EXPECT_TRUE(r.unmatched.empty()) << r.unmatched[0].test;
    const CompareRow* tot = ops_row(r, "decode", "MUL_MAT_NX", "op_total_us");
    ASSERT_TRUE(tot);
    EXPECT_DOUBLE_EQ(*tot->sides[0].total, 2 * (71.0 + 101.0));
    EXPECT_EQ(tot->sides[0].n, 4u);
    EXPECT_DOUBLE_EQ(*tot->sides[1].total, 2 * (60.0 + 90.0));
    EXPECT_EQ(tot->fused, "A: the MUL_MATs sharing its input summed");
    const CompareRow* qkv =
        ops_row(r, "decode",
                "MUL_MAT_NX attn_q: q4_0 64×64, q4_0 64×32, q4_0 64×32, f32 64 → f32 32", "op_us");
    ASSERT_TRUE(qkv);
    EXPECT_DOUBLE_EQ(*qkv->sides[0].median, 71.0);
    EXPECT_DOUBLE_EQ(*qkv->sides[1].median, 60.0);
    EXPECT_EQ(qkv->signature->role, "attn_q");
    const CompareRow* ffn = ops_row(
        r, "decode", "MUL_MAT_NX ffn_gate: q4_0 64×128, q4_0 64×128, f32 64 → f32 128", "op_us");
    ASSERT_TRUE(ffn);
    EXPECT_DOUBLE_EQ(*ffn->sides[0].median, 101.0);
    // The mat-mul of an input of its own stays one, on both sides.
    const CompareRow* mm = ops_row(r, "decode", "MUL_MAT", "op_total_us");
    ASSERT_TRUE(mm);
    EXPECT_DOUBLE_EQ(*mm->sides[0].total, 80.0);
    EXPECT_DOUBLE_EQ(*mm->sides[1].total, 80.0);
    EXPECT_FALSE(mm->fused);

    // Without names (a log that prints none), by shapes and types.
    const CompareResult anon = compare_documents(
        {{"A", "a", nx_docs(false, 1, false)}, {"B", "b", nx_docs(true, 4, false)}},
        CompareOptions{});
    const CompareRow* at = ops_row(anon, "decode", "MUL_MAT_NX", "op_total_us");
    ASSERT_TRUE(at);
    EXPECT_DOUBLE_EQ(*at->sides[0].total, 2 * (71.0 + 101.0));

    // The CPU as the other side: the summed side is B.
    const CompareResult back =
        compare_documents({{"A", "b", npu}, {"B", "a", cpu}}, CompareOptions{});
    const CompareRow* t2 = ops_row(back, "decode", "MUL_MAT_NX", "op_total_us");
    ASSERT_TRUE(t2);
    EXPECT_EQ(t2->fused, "B: the MUL_MATs sharing its input summed");
    EXPECT_TRUE(back.unmatched.empty());
}

TEST(CompareOps, AFallbackIsPricedAgainstTheRunOnItsDeviceAlone) {
    // A asked BLAS, which cannot run RMS_NORM: its 2 nodes fell back to the CPU, 15 µs each
    // there, with 10 µs of copies at the splits they forced. B ran on the CPU alone: the same
    // 2 nodes took 10 µs each.
    ResultDocument a = ops_doc("BLAS", {{"decode", {{"MUL_MAT", "attn_q", 64, 2, {50}, {60}}}}});
    a.ops->requested = {"BLAS"};
    FallbackRow f;
    f.op = "RMS_NORM";
    f.backend = "CPU";
    f.requested = "BLAS";
    f.count = 2;
    f.op_ns = 30e3;
    f.call_ns = 40e3;
    f.split_ns = 10e3;
    f.penalty_ns = 10e3;
    f.penalty_basis = "split cost only: BLAS cannot run it, so there is no graph without the split";
    a.ops->stages[0].fallback = {f};
    for (int l = 0; l < 2; ++l)
        a.ops->stages[0].ops.push_back(rec("RMS_NORM", "norm", 0, l, 15, 20, "CPU"));
    ResultDocument b = ops_doc(
        "CPU",
        {{"decode",
          {{"MUL_MAT", "attn_q", 64, 2, {80}, {90}}, {"RMS_NORM", "norm", 0, 2, {10}, {12}}}}});
    b.ops->requested = {"CPU"};
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}}, CompareOptions{});
    const CompareRow* fb = ops_row(r, "decode", "RMS_NORM on CPU (asked BLAS)", "fallback_us");
    ASSERT_TRUE(fb);
    EXPECT_EQ(fb->key, "decode/fallback/RMS_NORM/CPU");
    EXPECT_EQ(fb->op, "RMS_NORM");
    EXPECT_DOUBLE_EQ(*fb->sides[0].total, 40.0);  // 30 there + 10 of splits
    EXPECT_EQ(fb->sides[0].n, 2u);
    EXPECT_DOUBLE_EQ(*fb->sides[1].total, 20.0);  // 2 x 10 on the CPU alone
    EXPECT_DOUBLE_EQ(*fb->ratios[0].median, 0.5);
    EXPECT_EQ(fb->ratios[0].verdict, "no CI: totals of one stage");
    EXPECT_NE(std::find(r.notes.begin(), r.notes.end(),
                        "A's decode RMS_NORM on CPU (asked BLAS): fallback_us is A's 2 nodes "
                        "there (op time 30.0 µs) plus their share of the splits' copies (10.0 µs), "
                        "against B's RMS_NORM in its run on CPU alone (the same 2 node "
                        "shape(s): 20.0 µs): the fallback's cost against running there alone"),
              r.notes.end());
    // A fallback node whose shape the run alone lacks: the op type's mean per node.
    ResultDocument odd = a;
    odd.ops->stages[0].ops.back().out.ne = {32};
    odd.ops->stages[0].ops.back().srcs[0].ne = {32};
    const CompareResult r2 = compare_documents({{"A", "a", odd}, {"B", "b", b}}, CompareOptions{});
    const CompareRow* fb3 = ops_row(r2, "decode", "RMS_NORM on CPU (asked BLAS)", "fallback_us");
    ASSERT_TRUE(fb3);
    EXPECT_DOUBLE_EQ(*fb3->sides[1].total, 20.0);
    EXPECT_NE(std::find(r2.notes.begin(), r2.notes.end(),
                        "A's decode RMS_NORM on CPU (asked BLAS): fallback_us is A's 2 nodes "
                        "there (op time 30.0 µs) plus their share of the splits' copies (10.0 µs), "
                        "against B's RMS_NORM in its run on CPU alone (2 node(s), 20.0 µs, per "
                        "node times 2: 1 of the fallback's node shapes not in that run): the "
                        "fallback's cost against running there alone"),
              r2.notes.end());
    // The CPU-only run as the baseline: the fallback costs twice its time there.
    const CompareResult back = compare_documents({{"A", "b", b}, {"B", "a", a}}, CompareOptions{});
    const CompareRow* fb2 = ops_row(back, "decode", "RMS_NORM on CPU (asked BLAS)", "fallback_us");
    ASSERT_TRUE(fb2);
    EXPECT_DOUBLE_EQ(*fb2->ratios[0].median, 2.0);

    // Without a run on the CPU alone: no ops_row, a note saying how it stays priced.
    ResultDocument c = b;
    c.ops->requested = {"RPC0"};
    const CompareResult none = compare_documents({{"A", "a", a}, {"B", "c", c}}, CompareOptions{});
    EXPECT_FALSE(ops_row(none, "decode", "RMS_NORM on CPU (asked BLAS)", "fallback_us"));
    EXPECT_NE(std::find(none.notes.begin(), none.notes.end(),
                        "A's decode RMS_NORM on CPU (asked BLAS): priced by its splits only; no "
                        "input ran on CPU alone (give one: `ops` with --device CPU) to price it "
                        "against"),
              none.notes.end());
}

TEST(CompareOps, JsonRoundTripKeepsSignaturesAndTotals) {
    const ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 3, {100, 90}, {110}}}}});
    const ResultDocument b =
        ops_doc("BLAS", {{"decode", {{"MUL_MAT", "attn_q", 64, 3, {50, 60}, {70}}}}});
    const CompareResult r = compare_documents({{"A", "a", a}, {"B", "b", b}});
    const json j = to_json(r);
    EXPECT_EQ(j["rows"][0]["metric"], "op_total_us");
    EXPECT_EQ(j["rows"][0]["sides"][0]["total"], 290.0);
    EXPECT_TRUE(j["rows"][0]["sides"][0]["median"].is_null());
    EXPECT_TRUE(j["rows"][0]["signature"].is_null());
    EXPECT_EQ(j["rows"][3]["signature"]["role"], "attn_q");
    EXPECT_EQ(j["rows"][3]["op"], "MUL_MAT");
    EXPECT_EQ(from_json<CompareResult>(j, "'cmp.json'"), r);
}

TEST(CompareOps, MixingOpsAndRunDocumentsIsBadInput) {
    const ResultDocument a =
        ops_doc("CPU", {{"decode", {{"MUL_MAT", "attn_q", 64, 2, {100}, {110}}}}});
    ResultDocument run;
    run.command = "run";
    try {
        compare_documents({{"A", "a.json", a}, {"B", "r.json", run}});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("B (r.json): not an ops document"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sb
