// The NPU's pipeline split from one imported profile (profile/hexagon_pipeline.hpp), and the
// stage split's graph cuts it relies on, on logs written here line by line in the pinned tree's
// formats (ggml-hexagon.cpp: ggml_hexagon_dump_batch_prof, _op_prof, _trace_events).
#include "profile/hexagon_pipeline.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace sb {
namespace {

HexagonImport parse(const std::string& log) {
    std::istringstream in(log);
    return parse_hexagon_profile(in);
}

const NpuPipelinePart* part(const NpuPipeline& p, const std::string& name) {
    for (const auto& x : p.parts)
        if (x.name == name)
            return &x;
    return nullptr;
}

// A mat-mul of layer 0's attn_q over `tokens` tokens, and the output projection (one row).
std::string matmul(const std::string& sess, int tokens, int usec, uint64_t start) {
    const std::string t = std::to_string(tokens);
    return "ggml-hex: " + sess +
           " profile-op MUL_MAT|blk.0.attn_q.weight x attn_norm-0 -> Qcur-0|256:256 x 256:" + t +
           " -> 256:" + t + "|q4_0 x f32 -> f32|4:1024 x 4:1024 -> 4:1024|hvx-tiled vtcm 0|usec " +
           std::to_string(usec) + " cycles " + std::to_string(usec * 1000) + " start " +
           std::to_string(start) + " mhz 1000.0\n";
}
std::string output(const std::string& sess, int usec, uint64_t start) {
    return "ggml-hex: " + sess +
           " profile-op MUL_MAT|output.weight x result_norm -> result_output|256:1000 x 256:1 -> "
           "1000:1|q4_0 x f32 -> f32|4:1024 x 4:1024 -> 4:4000|hvx-tiled vtcm 0|usec " +
           std::to_string(usec) + " cycles " + std::to_string(usec * 1000) + " start " +
           std::to_string(start) + " mhz 1000.0\n";
}
std::string opbatch(const std::string& sess, int n_ops, int usec, uint64_t start) {
    return "ggml-hex: " + sess + " profile-op OPBATCH|----|n-ops " + std::to_string(n_ops) +
           "|evt-cnt 0,0,0,0,0,0,0,0,0,0,0|----|----|usec " + std::to_string(usec) + " cycles " +
           std::to_string(usec * 1000) + " start " + std::to_string(start) + " mhz 1000.0\n";
}
std::string evt(const std::string& sess, const std::string& e, int thread, bool stop,
                uint64_t cycles) {
    return "ggml-hex: " + sess + " trace-evt " + e + ": thread " + std::to_string(thread) +
           " info 0 " + (stop ? "stop " : "start ") + std::to_string(cycles % (1ull << 32)) + "\n";
}

TEST(NpuPipeline, TraceEventsAreWallTimeOverThreadsPerKind) {
    // One batch at 1000 MHz whose start sits 296 cycles below 2^32: the events' 32-bit
    // counters wrap inside it.
    const uint64_t r = 4294967000ull;
    std::string log =
        opbatch("HTP0", 2, 100, r) + matmul("HTP0", 7, 60, r) + output("HTP0", 30, r + 60000);
    // Activation quantization on two threads, overlapping by 5 µs: 15 µs of wall time, not 20.
    log += evt("HTP0", "HVX_A_QUANT", 0, false, r) + evt("HTP0", "HVX_A_QUANT", 0, true, r + 10000);
    log += evt("HTP0", "HVX_A_QUANT", 1, false, r + 5000) +
           evt("HTP0", "HVX_A_QUANT", 1, true, r + 15000);
    // Compute: HVX on thread 0 for 60 µs, HMX inside it on thread 1.
    log +=
        evt("HTP0", "HVX_COMP", 0, false, r + 10000) + evt("HTP0", "HVX_COMP", 0, true, r + 70000);
    log +=
        evt("HTP0", "HMX_COMP", 1, false, r + 20000) + evt("HTP0", "HMX_COMP", 1, true, r + 50000);
    log += evt("HTP0", "DMA", 2, false, r) + evt("HTP0", "DMA", 2, true, r + 5000);
    log += evt("HTP0", "HVX_W_PREP", 3, false, r + 1000);  // its stop never came
    const HexagonImport imp = parse(log);
    ASSERT_EQ(imp.events.size(), 11u);
    EXPECT_EQ(imp.n_unparsed, 0);
    const StageSplit sp = split_stages(imp);
    const auto pipes = npu_pipelines(imp, sp, "prefill");
    ASSERT_EQ(pipes.size(), 1u);
    const NpuPipeline& p = pipes[0];
    EXPECT_EQ(p.device, "HTP0");
    EXPECT_EQ(p.n_batches, 1);
    EXPECT_EQ(p.n_events, 11);
    EXPECT_EQ(p.n_unpaired, 1);
    EXPECT_DOUBLE_EQ(*p.npu_batch_ns, 100e3);
    EXPECT_DOUBLE_EQ(*p.ops_ns, 90e3);
    EXPECT_FALSE(p.host_batch_ns);
    EXPECT_EQ(p.envelope, "NPU batch");
    EXPECT_DOUBLE_EQ(*p.traced_busy_ns, 70e3);  // [0, 70] µs: every event's union
    ASSERT_TRUE(part(p, "batch_overhead"));
    EXPECT_DOUBLE_EQ(part(p, "batch_overhead")->ns, 10e3);
    EXPECT_DOUBLE_EQ(part(p, "activation_quantization")->ns, 15e3);
    EXPECT_DOUBLE_EQ(*part(p, "activation_quantization")->share, 0.15);
    EXPECT_DOUBLE_EQ(part(p, "compute")->ns, 60e3);
    EXPECT_DOUBLE_EQ(part(p, "dma")->ns, 5e3);
    EXPECT_FALSE(part(p, "weight_preparation"));  // only an unpaired start
    EXPECT_TRUE(npu_pipelines(imp, sp, "decode").empty());
}

const NpuOpSplit* op_split(const NpuPipeline& p, const std::string& op) {
    for (const auto& x : p.by_op)
        if (x.op == op)
            return &x;
    return nullptr;
}

const NpuPipelinePart* op_part(const NpuOpSplit& o, const std::string& name) {
    for (const auto& x : o.parts)
        if (x.name == name)
            return &x;
    return nullptr;
}

// A flash attention of layer 0 over 7 queries, as the pinned op line prints it.
std::string flash_attn(const std::string& sess, int usec, uint64_t start) {
    return "ggml-hex: " + sess +
           " profile-op FLASH_ATTN_EXT|q-0 x k-0 x v-0 -> kqv-0|64:4:7:1 x 64:4:16:1 x "
           "64:4:16:1 -> 64:4:7:1|f32 x f16 x f16 -> f32|4:256:1024:7168 x 2:128:512:8192 x "
           "2:128:512:8192 -> 4:256:1024:7168|hvx vtcm 0|usec " +
           std::to_string(usec) + " cycles " + std::to_string(usec * 1000) + " start " +
           std::to_string(start % (1ull << 32)) + " mhz 1000.0\n";
}

TEST(NpuPipeline, TraceEventsAreGivenToTheOpWhoseWindowHoldsThem) {
    // One batch at 1000 MHz (1000 cycles a µs) whose counter wraps inside it: the batch's cache
    // flush and buffer set-up (0-8 µs), a mat-mul (10-50), a flash attention (50-80), the
    // output projection (80-90), the final flush (92-95).
    const uint64_t r = 4294967000ull;
    auto us = [&](int t) { return r + static_cast<uint64_t>(t) * 1000; };
    std::string log = opbatch("HTP0", 3, 100, r) + matmul("HTP0", 7, 40, us(10) % (1ull << 32)) +
                      flash_attn("HTP0", 30, us(50)) + output("HTP0", 10, us(80) % (1ull << 32));
    auto pair = [&](const std::string& e, int thread, int a, int b) {
        return evt("HTP0", e, thread, false, us(a)) + evt("HTP0", e, thread, true, us(b));
    };
    log += pair("L2FLUSH", 0, 0, 5) + pair("BUFF", 0, 5, 8);
    // The mat-mul: activations quantized on two threads (8 µs of wall time), its weights'
    // DMA, the HMX after the quantization; 2 µs of it with no event.
    log += pair("HVX_A_QUANT", 0, 10, 16) + pair("HVX_A_QUANT", 1, 12, 18) +
           pair("DMA", 2, 10, 30) + pair("HMX_COMP", 10, 16, 48);
    // Flash attention: Q prepared, QK and softmax on two threads, then HVX: all of its 30 µs.
    log += pair("HVX_Q_PREP", 0, 50, 54) + pair("HVX_QK_FA", 0, 54, 70) +
           pair("HVX_SFM_FA", 1, 56, 72) + pair("HVX_COMP", 0, 72, 80);
    // The output projection: a quantization inside it, and an HMX run past its end (82-95):
    // no op's window holds that one.
    log += pair("HVX_A_QUANT", 0, 80, 82) + pair("HMX_COMP", 10, 82, 95);
    log += pair("L2FLUSH", 0, 92, 95);
    const HexagonImport imp = parse(log);
    ASSERT_EQ(imp.n_unparsed, 0) << imp.unparsed[0].reason;
    ASSERT_EQ(imp.n_refused, 0) << imp.refused[0].reason;
    const auto pipes = npu_pipelines(imp, split_stages(imp), "prefill");
    ASSERT_EQ(pipes.size(), 1u);
    const NpuPipeline& p = pipes[0];
    EXPECT_EQ(p.n_events, 26);
    ASSERT_EQ(p.by_op.size(), 2u);
    // The largest op type first: the two mat-muls, 50 µs.
    EXPECT_EQ(p.by_op[0].op, "MUL_MAT");
    const NpuOpSplit& mm = p.by_op[0];
    EXPECT_EQ(mm.count, 2);
    EXPECT_DOUBLE_EQ(mm.wall_ns, 50e3);
    EXPECT_EQ(mm.n_events, 10);
    EXPECT_DOUBLE_EQ(op_part(mm, "activation_quantization")->ns, 10e3);  // 8 + 2
    EXPECT_DOUBLE_EQ(*op_part(mm, "activation_quantization")->share, 0.2);
    EXPECT_DOUBLE_EQ(op_part(mm, "dma")->ns, 20e3);
    EXPECT_DOUBLE_EQ(*op_part(mm, "dma")->share, 0.4);
    EXPECT_DOUBLE_EQ(op_part(mm, "compute")->ns, 32e3);
    EXPECT_DOUBLE_EQ(op_part(mm, "untraced")->ns, 10e3);  // 2 + 8
    EXPECT_FALSE(op_part(mm, "other"));
    const NpuOpSplit* fa = op_split(p, "FLASH_ATTN_EXT");
    ASSERT_TRUE(fa);
    EXPECT_EQ(fa->count, 1);
    EXPECT_EQ(fa->n_events, 8);
    EXPECT_DOUBLE_EQ(op_part(*fa, "attention_preparation")->ns, 4e3);
    EXPECT_DOUBLE_EQ(op_part(*fa, "compute")->ns, 26e3);  // [54, 80] over two threads
    EXPECT_DOUBLE_EQ(*op_part(*fa, "compute")->share, 26.0 / 30.0);
    EXPECT_DOUBLE_EQ(op_part(*fa, "untraced")->ns, 0);
    // The flushes, the buffer set-up and the HMX across the op's end: 8 events, wall time
    // [0, 8] and [82, 95].
    EXPECT_EQ(p.n_unattributed, 8);
    EXPECT_DOUBLE_EQ(*p.unattributed_ns, 21e3);
    // The stage's kinds are unchanged by it: every event counts there.
    EXPECT_DOUBLE_EQ(part(p, "other")->ns, 11e3);  // [0, 8] and [92, 95]
}

TEST(NpuPipeline, EventsWithoutABatchLineAreNotGivenToAnyOp) {
    // The op lines and the events, but no OPBATCH line (cut from the log): nothing says which
    // ops the events ran under, so none is given one.
    std::string log = matmul("HTP0", 7, 40, 1000);
    log += evt("HTP0", "HMX_COMP", 10, false, 2000) + evt("HTP0", "HMX_COMP", 10, true, 12000);
    const HexagonImport imp = parse(log);
    const auto pipes = npu_pipelines(imp, split_stages(imp), "prefill");
    ASSERT_EQ(pipes.size(), 1u);
    EXPECT_TRUE(pipes[0].by_op.empty());
    EXPECT_EQ(pipes[0].n_unattributed, 2);
    EXPECT_DOUBLE_EQ(*pipes[0].unattributed_ns, 10e3);
    EXPECT_DOUBLE_EQ(part(pipes[0], "compute")->ns, 10e3);
    // A log without trace events has no split per op at all.
    const HexagonImport plain = parse(opbatch("HTP0", 1, 50, 0) + matmul("HTP0", 7, 40, 0));
    const auto none = npu_pipelines(plain, split_stages(plain), "prefill");
    ASSERT_EQ(none.size(), 1u);
    EXPECT_TRUE(none[0].by_op.empty());
    EXPECT_FALSE(none[0].unattributed_ns);
}

TEST(NpuPipeline, SessionsAreKeptApartAndTheHostBatchIsTheEnvelope) {
    // PR 22269's asynchronous profiler: the ops, then the host's batch duration.
    std::string log =
        "ggml-hex: HTP0 profile-op MUL_MAT: blk.0.attn_q.weight x attn_norm-0 -> Qcur-0 : "
        "256:256 x 256:4 -> 256:4 : q4_0 x f32 -> f32 : 4:1024 x 4:1024 -> 4:1024 : usec 40 "
        "cycles 40000\n"
        "ggml-hex: HTP0 profile-batch n-ops 1 batch-dur-usec 100 htp-ops-usec 40\n"
        "ggml-hex: HTP1 profile-op MUL_MAT: blk.0.attn_q.weight x attn_norm-0 -> Qcur-0 : "
        "256:256 x 256:4 -> 256:4 : q4_0 x f32 -> f32 : 4:1024 x 4:1024 -> 4:1024 : usec 30 "
        "cycles 30000\n"
        "ggml-hex: HTP1 profile-batch n-ops 1 batch-dur-usec 50 htp-ops-usec 30\n";
    const HexagonImport imp = parse(log);
    const StageSplit sp = split_stages(imp);
    const auto pipes = npu_pipelines(imp, sp, "prefill");
    ASSERT_EQ(pipes.size(), 2u);
    EXPECT_EQ(pipes[0].device, "HTP0");
    EXPECT_EQ(pipes[0].envelope, "host batch");
    EXPECT_DOUBLE_EQ(*pipes[0].host_batch_ns, 100e3);
    EXPECT_DOUBLE_EQ(part(pipes[0], "communication_and_queueing")->ns, 60e3);
    EXPECT_DOUBLE_EQ(*part(pipes[0], "communication_and_queueing")->share, 0.6);
    EXPECT_EQ(pipes[1].device, "HTP1");
    EXPECT_DOUBLE_EQ(*pipes[1].host_batch_ns, 50e3);  // its own, not 150 µs
    EXPECT_DOUBLE_EQ(part(pipes[1], "communication_and_queueing")->ns, 20e3);
}

TEST(NpuPipeline, TheBatchNoteIsPerSessionAgainstTheHostNeverASum) {
    // PR 22269's format: each session's ops against the host's batch time.
    std::string log =
        "ggml-hex: HTP0 profile-op MUL_MAT: blk.0.attn_q.weight x attn_norm-0 -> Qcur-0 : "
        "256:256 x 256:4 -> 256:4 : q4_0 x f32 -> f32 : 4:1024 x 4:1024 -> 4:1024 : usec 40 "
        "cycles 40000\n"
        "ggml-hex: HTP0 profile-batch n-ops 1 batch-dur-usec 100 htp-ops-usec 40\n"
        "ggml-hex: HTP1 profile-op MUL_MAT: blk.0.attn_q.weight x attn_norm-0 -> Qcur-0 : "
        "256:256 x 256:4 -> 256:4 : q4_0 x f32 -> f32 : 4:1024 x 4:1024 -> 4:1024 : usec 30 "
        "cycles 30000\n"
        "ggml-hex: HTP1 profile-batch n-ops 1 batch-dur-usec 50 htp-ops-usec 30\n";
    HexagonImport imp = parse(log);
    EXPECT_EQ(npu_batch_note(npu_pipelines(imp, split_stages(imp), "prefill")),
              "batches in this stage, per NPU session: HTP0 1 batch(es), NPU busy 0.040 ms (its "
              "ops' usec) of host batch 0.100 ms (40.0 %); HTP1 1 batch(es), NPU busy 0.030 ms "
              "(its ops' usec) of host batch 0.050 ms (60.0 %). Sessions are never added: they "
              "run at once, each against the same host time");

    // The pinned tree's OPBATCH: the NPU's batch time, no host time; two decode steps on two
    // sessions, each session its own batches.
    log = opbatch("HTP0", 1, 100, 0) + matmul("HTP0", 1, 60, 0) + opbatch("HTP1", 1, 80, 0) +
          matmul("HTP1", 1, 50, 0) + opbatch("HTP0", 1, 110, 0) + matmul("HTP0", 1, 70, 0);
    imp = parse(log);
    const StageSplit sp = split_stages(imp);
    ASSERT_EQ(sp.order, (std::vector<std::string>{"decode"}));
    EXPECT_EQ(npu_batch_note(npu_pipelines(imp, sp, "decode")),
              "batches in this stage, per NPU session: HTP0 2 batch(es), NPU busy 0.210 ms "
              "(OPBATCH usec); HTP1 1 batch(es), NPU busy 0.080 ms (OPBATCH usec). Sessions are "
              "never added: they run at once, each against the same host time; the log holds no "
              "host time for these batches (OPBATCH lines carry only the NPU's), so the host's "
              "wall time around them is unknown");
    EXPECT_EQ(npu_batch_note(npu_pipelines(imp, sp, "prefill")), "");
    // The import's summary keeps them per session too.
    EXPECT_EQ(to_json(imp)["batch_usec_by_session"],
              (nlohmann::json{{"HTP0", 210.0}, {"HTP1", 80.0}}));
}

TEST(NpuPipeline, AnEventLineThatCannotBeTrueIsRefusedNotTimed) {
    const HexagonImport imp = parse(
        "ggml-hex: HTP0 trace-evt DMA: thread 0 info 0 start 99999999999\n"
        "ggml-hex: HTP0 trace-evt DMA: thread zero info 0 start 1\n");
    EXPECT_TRUE(imp.events.empty());
    EXPECT_EQ(imp.n_refused, 1);
    EXPECT_EQ(imp.n_unparsed, 1);
    EXPECT_EQ(imp.n_trace, 0);
    EXPECT_EQ(imp.n_lines, imp.n_ignored + imp.n_trace + imp.n_unparsed + imp.n_refused);
}

// A one-layer model with no batch lines: every graph starts at the layer the last one ended on,
// so only the output projection (or verbose logging's graph-compute line) tells graphs apart.
TEST(HexagonStageSplit, AOneLayerModelsGraphsAreCutAfterTheOutputProjection) {
    std::string log = matmul("HTP0", 7, 60, 0) + output("HTP0", 30, 0);  // the prompt
    for (int i = 0; i < 2; ++i)                                          // two decode steps
        log += matmul("HTP0", 1, 10, 0) + output("HTP0", 5, 0);
    const StageSplit sp = split_stages(parse(log));
    EXPECT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("prefill"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);
    EXPECT_EQ(sp.stage, (std::vector<std::string>{"prefill", "prefill", "decode", "decode",
                                                  "decode", "decode"}));
    EXPECT_EQ(sp.graph, (std::vector<int>{0, 0, 0, 0, 1, 1}));
}

TEST(HexagonStageSplit, AGraphComputeLineStartsAGraph) {
    // No output projection in the log (a graph cut short), but verbose logging's line.
    std::string log;
    for (int i = 0; i < 3; ++i)
        log += "llama: ggml-hex: HTP0 graph-compute n_nodes 12\n" + matmul("HTP0", 1, 10, 0);
    const HexagonImport imp = parse(log);
    EXPECT_EQ(imp.n_graph_lines, 3);
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.n_graphs.at("decode"), 3);
}

}  // namespace
}  // namespace sb
