// The bookkeeping of one profiled stage from hand-made traced runs: records, backends with
// and without the scheduler's dump, splits and their copies, runs of another graph left out,
// and decode runs cut into steps.
#include "profile/trace_stage.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

CapturedNode traced_node(const std::string& op, const std::string& name, const std::string& device,
                         std::vector<std::pair<std::string, uint64_t>> copied = {}) {
    CapturedNode n;
    n.op = op;
    n.no_compute = op == "VIEW";
    n.out.name = name;
    n.buffer_device = device;
    n.signature = op;
    n.copied_inputs = std::move(copied);
    return n;
}

// Two graphs (two micro-batches) of three nodes; call i of graph g takes (g+1)*(i+1) µs plus
// `extra`, with 100 ns between nodes and 900 ns before a node whose backend differs.
TracedRun run_of(int64_t extra, bool with_nodes) {
    TracedRun r;
    const std::vector<CapturedNode> g{
        traced_node("RMS_NORM", "norm-0", "CPU"),
        traced_node("MUL_MAT", "attn_q-0", "GPU0", {{"GPU0#norm-0#0", 64}}),
        traced_node("VIEW", "attn_q-0 (view)", "GPU0")};
    int64_t t = 1000;
    for (int graph = 0; graph < 2; ++graph)
        for (int i = 0; i < 3; ++i) {
            const int64_t gap = i == 0 ? -1 : i == 1 ? 900 : 100;
            t += std::max<int64_t>(gap, 0);
            const int64_t call = (graph + 1) * (i + 1) * 1000 + extra;
            r.calls.push_back({graph, i, t, call, gap});
            t += call;
            if (with_nodes)
                r.nodes.push_back(g[static_cast<size_t>(i)]);
        }
    return r;
}

TEST(TraceStage, WithoutADumpBackendsAndSplitsComeFromTheBuffers) {
    const TracedRun capture = run_of(0, true);
    std::vector<TracedRun> runs{run_of(0, false), run_of(300, false), run_of(600, false)};
    for (size_t i = 0; i < runs.size(); ++i) {
        runs[i].start_ns = 100 * static_cast<int64_t>(i);
        runs[i].wall_ns = 50'000 - 1000 * static_cast<int64_t>(i);  // the median is runs[1]
    }
    const BuiltStage b = build_stage("prefill", capture, runs, {});
    const StageProfile& st = b.stage;
    EXPECT_EQ(st.n_graphs, 2);
    EXPECT_EQ(st.traced_reps, 3);
    EXPECT_EQ(st.timeline_rep, 1);
    EXPECT_EQ(st.rec.traced_ns, (std::vector<int64_t>{50'000, 49'000, 48'000}));
    EXPECT_EQ(st.rec.tracer_ns, (std::vector<int64_t>{0, 0, 0}));
    ASSERT_EQ(st.ops.size(), 6u);
    ASSERT_EQ(b.nodes.size(), 6u);
    EXPECT_EQ(st.ops[0].backend, "CPU");
    EXPECT_EQ(st.ops[1].backend, "GPU0");
    EXPECT_EQ(st.ops[4].layer, 0);
    // Median over the runs (extra 0, 300, 600): 300 ns above the base call.
    EXPECT_DOUBLE_EQ(*st.ops[4].call_ns, 2 * 2 * 1000 + 300);
    // The timeline is run 1's.
    EXPECT_EQ(*st.ops[0].start_ns, runs[1].calls[0].start_ns);
    EXPECT_EQ(*st.ops[0].end_ns, runs[1].calls[0].start_ns + runs[1].calls[0].call_ns);
    // A split where a computing node's backend changes (the view follows its split), in each
    // graph; the copies from the nodes' scheduler inputs, the copy time from the gap.
    ASSERT_EQ(st.splits.size(), 4u);
    const SplitRecord& s1 = st.splits[1];
    EXPECT_EQ(s1.graph, 0);
    EXPECT_EQ(s1.backend, "GPU0");
    EXPECT_EQ(s1.first_node, 1);
    EXPECT_EQ(s1.n_nodes, 2);
    EXPECT_EQ(s1.n_inputs, 1);
    EXPECT_EQ(s1.inputs, std::vector<std::string>{"GPU0#norm-0#0"});
    EXPECT_EQ(*s1.input_bytes, 64u);
    EXPECT_DOUBLE_EQ(*s1.copy_ns, 900);
    EXPECT_EQ(*st.splits[0].input_bytes, 0u);
    EXPECT_FALSE(st.splits[0].copy_ns.has_value());
    EXPECT_EQ(st.splits[3].graph, 1);
    // Scheduler time between nodes of a split: the 100 ns gaps, two per run.
    EXPECT_DOUBLE_EQ(*st.rec.sched_gap_ns, 200);
    ASSERT_EQ(st.notes.size(), 1u);
    EXPECT_NE(st.notes[0].find("no scheduler assignment dump"), std::string::npos);
    EXPECT_TRUE(st.coverage.empty());
}

TEST(TraceStage, TheDumpDecidesBackendsAndNamesThatDisagreeAreCounted) {
    TracedRun capture = run_of(0, true);
    SchedAssignment a;
    a.splits = {{0, "CPU", 0, 0, {}}, {1, "BLAS", 1, 1, {"x"}}};
    a.nodes = {{0, {"RMS_NORM", "norm-0"}}, {1, {"MUL_MAT", "other-name"}}};
    capture.graphs = {a, a};
    std::vector<TracedRun> runs{run_of(0, false)};
    const BuiltStage b = build_stage("prefill", capture, runs, {"BLAS", "CPU"});
    const StageProfile& st = b.stage;
    EXPECT_EQ(st.ops[1].backend, "BLAS");  // the dump's, not the buffer's GPU0
    EXPECT_EQ(st.ops[2].backend, "BLAS");
    ASSERT_EQ(st.splits.size(), 4u);
    EXPECT_EQ(st.splits[1].n_inputs, 1);
    EXPECT_EQ(st.splits[1].inputs, std::vector<std::string>{"x"});
    ASSERT_FALSE(st.notes.empty());
    EXPECT_EQ(st.notes[0],
              "2 node(s) did not match the scheduler's dump by name; their backend is the "
              "split's, which may be approximate");
    ASSERT_EQ(st.coverage.size(), 2u);  // RMS_NORM, MUL_MAT (the view left out)
    EXPECT_EQ(st.coverage_devices, (std::vector<std::string>{"BLAS", "CPU"}));
}

TEST(TraceStage, RunsOfAnotherGraphAreLeftOut) {
    const TracedRun capture = run_of(0, true);
    TracedRun other = run_of(0, false);
    other.calls.pop_back();
    std::vector<TracedRun> runs{run_of(0, false), other};
    const BuiltStage b = build_stage("decode", capture, runs, {});
    EXPECT_EQ(b.stage.traced_reps, 1);
    EXPECT_EQ(b.stage.notes[0],
              "1 of 2 traced repetitions ran a different graph and were left out");

    const BuiltStage none = build_stage("decode", capture, {other}, {});
    EXPECT_TRUE(none.stage.ops.empty());
    EXPECT_EQ(none.stage.notes.back(),
              "no traced repetition ran the captured graph: no call times");

    const BuiltStage empty = build_stage("decode", TracedRun{}, runs, {});
    EXPECT_EQ(empty.stage.notes.back(), "the capturing run recorded no graph: no ops");
}

TEST(TraceStage, TheTracersWorkIsSummedPerRun) {
    const TracedRun capture = run_of(0, true);
    std::vector<TracedRun> runs{run_of(0, false), run_of(0, false)};
    for (size_t i = 0; i < runs[0].calls.size(); ++i)
        runs[0].calls[i].work_ns = 10 * static_cast<int64_t>(i + 1);  // 10 + 20 + ... + 60
    runs[1].calls[4].work_ns = 7;
    EXPECT_EQ(build_stage("prefill", capture, runs, {}).stage.rec.tracer_ns,
              (std::vector<int64_t>{210, 7}));
    // Cut into steps, each step keeps the work of its own calls.
    const std::vector<TracedRun> steps = split_steps(runs[0], {7000, 8000}, {10, 20});
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[1].calls[0].work_ns, 40);
}

TEST(TraceStage, DecodeRunsAreCutIntoSteps) {
    TracedRun r = run_of(0, false);
    // A capturing run describes its first graph only.
    for (int i = 0; i < 3; ++i)
        r.nodes.push_back(traced_node("ADD", "x", "CPU"));
    r.graphs = {SchedAssignment{}};
    const std::vector<TracedRun> steps = split_steps(r, {7000, 8000}, {10, 20});
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].wall_ns, 7000);
    EXPECT_EQ(steps[1].start_ns, 20);
    ASSERT_EQ(steps[1].calls.size(), 3u);
    EXPECT_EQ(steps[1].calls[0].graph, 0);
    EXPECT_EQ(steps[1].calls[2].call_ns, 6000);
    EXPECT_EQ(steps[0].nodes.size(), 3u);
    EXPECT_TRUE(steps[1].nodes.empty());
    EXPECT_EQ(steps[0].graphs.size(), 1u);
    EXPECT_TRUE(steps[1].graphs.empty());
    // Fewer walls than graphs: the rest is dropped.
    EXPECT_EQ(split_steps(r, {7000}, {10}).size(), 1u);
}

// One graph of five nodes on one backend; node i's call alone takes (i+1) µs + extra. A run with
// Isolation{stride, phase} ends a call, as LlamaOpTracer does, at each node i with
// (i + phase) % stride == 0 (dispatched alone), at the node before it, and at the last node;
// a chunk's call is its nodes' back to back, 200 ns between calls, 50 ns of tracer work each.
TracedRun strided_run(int stride, int phase, int64_t extra) {
    TracedRun r;
    const int n = 5;
    int64_t t = 0;
    int first = -1;
    int64_t chunk = 0, gap = -1;
    auto alone = [&](int j) { return (j + phase) % stride == 0; };
    for (int i = 0; i < n; ++i) {
        if (first < 0) {
            first = i;
            gap = i == 0 ? -1 : 200;
            t += std::max<int64_t>(gap, 0);
        }
        chunk += (i + 1) * 1000 + extra;
        if (!(alone(i) || alone(i + 1) || i + 1 == n))
            continue;
        r.calls.push_back({0, i, t, chunk, gap, 50, i - first + 1});
        t += chunk;
        first = -1;
        chunk = 0;
    }
    r.wall_ns = t + 700;  // 700 ns of host work around the graph
    return r;
}

TEST(TraceStage, StridedRunsGiveEachNodeTheMedianOfTheRunsThatDispatchedItAlone) {
    TracedRun capture = strided_run(1, 0, 0);
    for (int i = 0; i < 5; ++i)
        capture.nodes.push_back(traced_node("ADD", "n-" + std::to_string(i), "CPU"));
    // Stride 3 in turn: node 1 is alone in the phase-2 runs, node 0 in phase 0, ...
    std::vector<TracedRun> runs{strided_run(3, 0, 0),   strided_run(3, 1, 0),
                                strided_run(3, 2, 0),   strided_run(3, 0, 600),
                                strided_run(3, 1, 600), strided_run(3, 2, 900)};
    // Phase 0: nodes 0 and 3 alone, [1 2] a chunk before 3, then [4] (the graph's last).
    // Phase 1: [0 1], 2 alone, [3 4]. Phase 2: 0 (before 1), 1 alone, [2 3], 4 alone.
    ASSERT_EQ(runs[0].calls.size(), 4u);
    EXPECT_EQ(runs[0].calls[1].n_nodes, 2);
    ASSERT_EQ(runs[1].calls.size(), 3u);
    const BuiltStage b = build_stage("decode", capture, runs, {});
    const StageProfile& st = b.stage;
    EXPECT_TRUE(b.strided);
    EXPECT_EQ(st.traced_reps, 6);
    ASSERT_EQ(st.ops.size(), 5u);
    // Each node: the median of the runs that dispatched it alone. Node 0: phases 0 and 2
    // (extra 0, 600, 0, 900): 300 above its 1 µs; node 1: phase 2 (0, 900); node 2: phase 1
    // (0, 600); node 3: phase 0 (0, 600); node 4: phases 0 and 2.
    EXPECT_DOUBLE_EQ(*st.ops[0].call_ns, 1000 + 300);
    EXPECT_DOUBLE_EQ(*st.ops[1].call_ns, 2000 + 450);
    EXPECT_DOUBLE_EQ(*st.ops[2].call_ns, 3000 + 300);
    EXPECT_DOUBLE_EQ(*st.ops[3].call_ns, 4000 + 300);
    EXPECT_DOUBLE_EQ(*st.ops[4].call_ns, 5000 + 300);
    // No run dispatched every node alone: the timeline is the capture's.
    EXPECT_FALSE(st.timeline_rep.has_value());
    EXPECT_EQ(*st.ops[2].start_ns, capture.calls[2].start_ns);
    EXPECT_EQ(*st.ops[2].end_ns, capture.calls[2].start_ns + capture.calls[2].call_ns);
    // Per run: the tracer's work (50 ns a call), the gaps between calls (200 ns each) and
    // the host work, the wall time less the rest: 700 - 4 * 50 (phases 0 and 2), 700 - 3 * 50.
    EXPECT_EQ(st.rec.tracer_ns, (std::vector<int64_t>{200, 150, 200, 200, 150, 200}));
    EXPECT_DOUBLE_EQ(*st.rec.sched_gap_ns, 3 * 200);
    EXPECT_DOUBLE_EQ(*st.rec.host_ns, 500);
}

TEST(TraceStage, AStridedRunThatMissesANodeIsLeftOut) {
    TracedRun capture = strided_run(1, 0, 0);
    for (int i = 0; i < 5; ++i)
        capture.nodes.push_back(traced_node("ADD", "n-" + std::to_string(i), "CPU"));
    TracedRun missing = strided_run(3, 0, 0);
    missing.calls.pop_back();  // the graph's last node computed outside every call
    const BuiltStage b = build_stage("decode", capture, {strided_run(3, 1, 0), missing}, {});
    EXPECT_EQ(b.stage.traced_reps, 1);
    // Node 0 was alone only in the run left out: its call is the capture's, said so.
    EXPECT_DOUBLE_EQ(*b.stage.ops[0].call_ns, 1000);
    bool said = false;
    for (const auto& n : b.stage.notes)
        said = said || n.find("only by the capturing run") != std::string::npos;
    EXPECT_TRUE(said);
}

}  // namespace
}  // namespace sb
