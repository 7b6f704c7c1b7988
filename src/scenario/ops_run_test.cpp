// The op profile's pipeline on a scripted engine (engine/fake_engine.hpp), a scripted tracer
// and a scripted replayer: no llama.cpp, no wall clock. Every figure of the profile's
// bookkeeping is asserted exactly: nodes, layers, backends, splits and copies, coverage, op
// times (in situ and replayed), fallback and its penalty, reconciliation, the interleaving of
// the traced and uninstrumented repetitions, and the profile's own duration.
#include "scenario/ops_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/fake_engine.hpp"
#include "profile/ops_profile.hpp"
#include "profile/vk_perf_log.hpp"
#include "scenario/ops_test_rig.hpp"
#include "scenario/test_util.hpp"

using namespace sb;
using namespace sb::test;

namespace {

// The engine's times: script_traced_times (scenario/ops_test_rig.hpp).
struct ScriptedOpsRig {
    FakeTimeline tl;
    FakeEngine engine{tl, "E"};
    ScriptedTracer tracer{engine, tl};
    ScriptedReplayer replayer;
    std::vector<std::string> traced_calls;  // "prefill traced", "decode_step plain", ...
    ScriptedOpsRig() {
        engine.weights = 64ull << 30;  // larger than any cache: cold weights
        script_traced_times(engine, tracer);
        engine.script().before = [this](const FakeCall& c) {
            if (c.op == FakeOp::prefill || c.op == FakeOp::decode_step)
                traced_calls.push_back(std::string(fake_op_name(c.op)) +
                                       (tracer.traces(c) ? " traced" : " plain"));
        };
    }
    OpsProfile run(const OpsOptions& o) {
        OpsHooks h;
        h.clock = tl.clock();
        h.interrupted = [] { return false; };
        return profile_ops({engine, tracer, replayer}, o, h);
    }
};

OpsOptions options() {
    OpsOptions o;
    o.workload.model_path = "m.gguf";
    o.workload.devices = "ACC";
    o.n_prompt = 16;
    o.workload.n_threads = 2;
    o.traced_reps = 2;
    o.plain_reps = 2;
    o.decode_tokens = 3;
    o.isolation_stride = 1;  // every node alone in every step (Isolation: the tests below)
    return o;
}

const StageProfile& stage_named(const OpsProfile& p, const std::string& name) {
    for (const auto& s : p.stages)
        if (s.stage == name)
            return s;
    throw std::runtime_error("no stage " + name);
}

}  // namespace

TEST(OpsPipeline, InterleavesTracedAndUninstrumentedRepetitionsTheFirstTracedOneCapturing) {
    ScriptedOpsRig rig;
    const OpsProfile p = rig.run(options());
    // Traced (its first decode step captures), plain, plain, traced: a traced repetition is a
    // prefill and its decode steps alternating traced and untraced after the first (three
    // of each: the untraced ones are decode's uninstrumented samples), a plain one a prefill.
    // The tracer is on exactly during the traced prefills and decode steps.
    const std::vector<std::string> plain{"prefill plain"};
    std::vector<std::string> traced{"prefill traced", "decode_step traced"};
    for (int i = 0; i < 3; ++i)
        traced.insert(traced.end(), {"decode_step traced", "decode_step plain"});
    // The second traced repetition has no capturing step: traced, untraced, ..., traced.
    std::vector<std::string> traced2{"prefill traced"};
    for (int i = 0; i < 3; ++i)
        traced2.insert(traced2.end(), {"decode_step traced", "decode_step plain"});
    traced2.push_back("decode_step traced");
    // The warm-up first: on an accelerator, an untraced prefill (of min(16, 32) tokens).
    std::vector<std::string> want{"prefill plain"};
    for (const auto* r :
         std::initializer_list<const std::vector<std::string>*>{&traced, &plain, &plain, &traced2})
        want.insert(want.end(), r->begin(), r->end());
    EXPECT_EQ(rig.traced_calls, want);
    EXPECT_EQ(rig.tracer.begins, 4);  // a prefill and a decode stage per traced repetition
    EXPECT_FALSE(rig.tracer.active);
    EXPECT_TRUE(rig.tracer.released);
    EXPECT_EQ(rig.tracer.loaded.n_ctx, 256);  // 16 + 2 x 3 + 1 + 16, rounded up to 256
    EXPECT_EQ(rig.tracer.loaded.n_threads, 2);
    // The engine loads the options' workload, whole (load_spec).
    EXPECT_EQ(static_cast<const Workload&>(rig.tracer.loaded), options().workload);
    EXPECT_EQ(rig.replayer.setup.devices, std::vector<std::string>{"CPU"});  // the fake's
    EXPECT_EQ(rig.replayer.setup.threads, 2);
    EXPECT_EQ(rig.replayer.setup.copies, 16);

    EXPECT_EQ(p.requested, std::vector<std::string>{"ACC"});
    ASSERT_EQ(p.stages.size(), 2u);
    const StageProfile& pre = stage_named(p, "prefill");
    const StageProfile& dec = stage_named(p, "decode");
    // Uninstrumented and traced stage times, as the repetition loop took them: the capturing
    // prefill is a traced sample, the capturing decode step is not.
    EXPECT_EQ(pre.rec.plain_ns, (std::vector<int64_t>{1'600 * kUs, 1'600 * kUs}));
    EXPECT_EQ(pre.rec.traced_ns, (std::vector<int64_t>{1'760 * kUs, 1'760 * kUs}));
    EXPECT_EQ(dec.rec.plain_ns, std::vector<int64_t>(6, 10'000 * kUs));
    EXPECT_EQ(dec.rec.traced_ns, std::vector<int64_t>(7, 10'500 * kUs));
    // The tracer's own work: the capturing prefill's six nodes; none in the decode samples.
    EXPECT_EQ(pre.rec.tracer_ns, (std::vector<int64_t>{6 * kCaptureWork, 0}));
    EXPECT_EQ(dec.rec.tracer_ns, std::vector<int64_t>(7, 0));
    EXPECT_EQ(pre.traced_reps, 2);
    EXPECT_EQ(dec.traced_reps, 7);
    // The traced prefill less the tracer's work: median of 1700 and 1760 µs.
    EXPECT_DOUBLE_EQ(*pre.rec.traced_median_ns, 1'730.0 * kUs);
    EXPECT_NEAR(*pre.rec.overhead_ratio, 1'730.0 / 1'600.0 - 1.0, 1e-12);
    EXPECT_NEAR(*dec.rec.overhead_ratio, 0.05, 1e-12);
    // Where the samples lie on the clock: the first traced prefill after the load and the
    // warm-up step, the first plain prefill right after the first traced repetition, the
    // decode steps one after the other, untraced and traced in turn.
    const int64_t t_load = 1'000'000'000 + 5'000 * kUs + 1'600 * kUs;
    EXPECT_EQ(pre.rec.traced_start_ns[0], t_load);
    EXPECT_EQ(pre.rec.plain_start_ns[0],
              t_load + 1'760 * kUs + 4 * 10'500 * kUs + 3 * 10'000 * kUs);
    EXPECT_EQ(dec.rec.traced_start_ns[0], t_load + 1'760 * kUs + 10'500 * kUs);
    EXPECT_EQ(dec.rec.plain_start_ns[0], dec.rec.traced_start_ns[0] + 10'500 * kUs);
    EXPECT_EQ(dec.rec.traced_start_ns[1], dec.rec.plain_start_ns[0] + 10'000 * kUs);
    EXPECT_EQ(dec.rec.plain_start_ns[1] - dec.rec.plain_start_ns[0], 20'500 * kUs);
    EXPECT_EQ(pre.n_tokens, 16);
    EXPECT_EQ(dec.kv_depth, 16);
    // The profile's own duration: the fake clock from the load to the end.
    const int64_t stages_ns = 1'600 * kUs        // warm-up
                              + 2 * 1'600 * kUs  // plain
                              + 2 * (1'760 * kUs + 4 * 10'500 * kUs + 3 * 10'000 * kUs);
    EXPECT_EQ(*p.duration_ns, 5'000 * kUs + stages_ns);
    EXPECT_EQ(p.phase_ns, (std::map<std::string, int64_t>{
                              {"load", 5'000 * kUs}, {"stages", stages_ns}, {"profile", 0}}));
}

// What the load did to the weights' pages is the engine's to say, and the profile records it
// as said; an engine that was not asked says nothing, and the profile records null.
TEST(OpsPipeline, RecordsTheHugePageAdviceTheEngineGave) {
    ScriptedOpsRig rig;
    EXPECT_FALSE(rig.run(options()).huge_pages);
    HugePageAdvice a;
    a.policy = "madvise";
    a.advised_bytes = 700ull << 20;
    a.ranges = {{0x7f0000000000, 0x7f0020000000}, {0x7f1000000000, 0x7f100bc00000}};
    rig.engine.page_advice = a;
    const OpsProfile p = rig.run(options());
    EXPECT_EQ(p.huge_pages, (HugePagesRecord{"madvise", 700ull << 20, 2, ""}));
    // The replay's weight copies go on the pages the weights went on.
    EXPECT_TRUE(rig.replayer.setup.huge_pages);
    OpsOptions off = options();
    off.huge_pages = false;
    rig.run(off);
    EXPECT_FALSE(rig.replayer.setup.huge_pages);
}

TEST(OpsPipeline, OnTheCpuAloneOneDecodeStepWarmsUp) {
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.workload.devices = "CPU";
    o.traced_reps = 1;
    o.plain_reps = 1;
    rig.run(o);
    ASSERT_FALSE(rig.traced_calls.empty());
    EXPECT_EQ(rig.traced_calls[0], "decode_step plain");
    EXPECT_EQ(rig.traced_calls[1], "prefill traced");
    // Cleared before the warm-up (each repetition's fill to its depth clears it again).
    EXPECT_EQ(rig.tl.calls_of(FakeOp::reset).size(), 1u);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::fill_to_depth).size(), 2u);
}

TEST(OpsPipeline, RecordsSplitsAndCoverageComeFromTheCapture) {
    ScriptedOpsRig rig;
    const OpsProfile p = rig.run(options());
    const StageProfile& pre = stage_named(p, "prefill");
    ASSERT_EQ(pre.ops.size(), kGraph.size());
    std::vector<std::string> backends;
    for (const auto& r : pre.ops)
        backends.push_back(r.backend);
    EXPECT_EQ(backends, (std::vector<std::string>{"CPU", "CPU", "CPU", "ACC", "ACC", "CPU"}));
    EXPECT_EQ(pre.ops[1].layer, 0);
    EXPECT_EQ(pre.ops[4].layer, 1);
    EXPECT_FALSE(pre.ops[0].layer.has_value());
    EXPECT_TRUE(pre.ops[2].no_compute);
    EXPECT_DOUBLE_EQ(*pre.ops[3].call_ns, 400 * kUs);
    EXPECT_EQ(pre.n_graphs, 1);
    ASSERT_EQ(pre.splits.size(), 3u);
    EXPECT_EQ(pre.splits[1].backend, "ACC");
    EXPECT_EQ(pre.splits[1].n_nodes, 2);
    EXPECT_EQ(*pre.splits[1].input_bytes, 8192u);
    EXPECT_DOUBLE_EQ(*pre.splits[1].copy_ns, kBoundaryGap);
    EXPECT_FALSE(pre.splits[0].copy_ns.has_value());  // a graph's first split
    EXPECT_EQ(pre.n_copies, 2);
    EXPECT_EQ(*pre.copy_bytes, 8192u + 4096u);
    EXPECT_DOUBLE_EQ(*pre.rec.sum_copy_ns, 2 * kBoundaryGap);
    EXPECT_DOUBLE_EQ(*pre.rec.sched_gap_ns, 3 * kGap);
    // The timeline is the traced run of median wall time; its calls start after the gaps.
    EXPECT_EQ(*pre.ops[1].start_ns - *pre.ops[0].end_ns, kGap);
    // Coverage: ACC supports the mat-muls and the ADD, not GET_ROWS or RMS_NORM.
    EXPECT_EQ(pre.coverage_devices, (std::vector<std::string>{"ACC", "CPU"}));
    ASSERT_EQ(pre.coverage.size(), 4u);
    EXPECT_EQ(pre.coverage[0].op, "GET_ROWS");
    EXPECT_EQ(pre.coverage[0].note, "ACC: 1 not supported");
    EXPECT_EQ(pre.coverage[2].op, "MUL_MAT");
    EXPECT_EQ(pre.coverage[2].ran, (std::map<std::string, int>{{"ACC", 2}}));
    EXPECT_EQ(pre.coverage[3].note, "ACC: 1 supported, placed on CPU by the scheduler");
}

TEST(OpsPipeline, LongCallsAreTimedInSituAndLightOpsReplayedOncePerSignature) {
    ScriptedOpsRig rig;
    const OpsProfile p = rig.run(options());
    const StageProfile& pre = stage_named(p, "prefill");
    const StageProfile& dec = stage_named(p, "decode");
    // Prefill: GET_ROWS (30 µs) and the mat-muls (400 µs) are at least 20 dispatches: their
    // calls less the 1 µs dispatch. RMS_NORM (5 µs) and ADD (3 µs) are replayed.
    EXPECT_DOUBLE_EQ(*pre.ops[0].op_ns, 29 * kUs);
    EXPECT_DOUBLE_EQ(*pre.ops[3].op_ns, 399 * kUs);
    EXPECT_DOUBLE_EQ(*pre.ops[4].op_ns, 399 * kUs);
    EXPECT_EQ(*pre.ops[3].op_method,
              "traced call less the 1.00 µs dispatch of a node alone on ACC (the calls of this "
              "op are 400x it)");
    EXPECT_DOUBLE_EQ(*pre.ops[1].op_ns, 4000);
    EXPECT_DOUBLE_EQ(*pre.ops[1].isolated_call_ns, 5000);
    EXPECT_EQ(*pre.ops[1].op_method, "replayed on CPU");
    EXPECT_DOUBLE_EQ(*pre.ops[2].op_ns, 0);
    EXPECT_EQ(pre.rec.n_op_in_situ, 3);
    EXPECT_EQ(pre.rec.n_op_replayed, 2);
    EXPECT_DOUBLE_EQ(*pre.rec.sum_op_in_situ_ns, (29 + 399 + 399) * kUs);
    EXPECT_EQ(pre.rec.node_dispatch_ns,
              (std::map<std::string, double>{{"ACC", 1000}, {"CPU", 1000}}));
    // Decode: the mat-muls (50 µs) in situ; GET_ROWS (3 µs) is replayed now.
    EXPECT_DOUBLE_EQ(*dec.ops[3].op_ns, 49 * kUs);
    EXPECT_DOUBLE_EQ(*dec.ops[0].op_ns, 2000);
    // Each signature replayed once on its own backend, whatever the number of its nodes.
    for (const char* sig :
         {"CPU|own|RMS_NORM/prefill", "CPU|own|ADD/prefill", "CPU|own|GET_ROWS/decode",
          "CPU|own|RMS_NORM/decode", "CPU|own|ADD/decode"})
        EXPECT_EQ(rig.replayer.replays[sig], 1) << sig;
    EXPECT_EQ(rig.replayer.replays.count("ACC|own|MUL_MAT/prefill"), 0u);
    // Reconciliation: the sum of op times against the median uninstrumented stage.
    const double sum = (29 + 399 + 399) * kUs + 4000 + 2500;
    EXPECT_DOUBLE_EQ(*pre.rec.sum_op_ns, sum);
    EXPECT_DOUBLE_EQ(*pre.rec.op_fraction, sum / (1'600 * kUs));
    EXPECT_TRUE(pre.rec.op_within_stage);
    // 52 % of the stage is in no op: the cause is named from the stage's own figures.
    EXPECT_NE(pre.rec.fit_cause.find("of the stage is in no op"), std::string::npos)
        << pre.rec.fit_cause;
    EXPECT_NE(pre.rec.fit_cause.find("copies between backends 0.014 ms (traced)"),
              std::string::npos)
        << pre.rec.fit_cause;
}

// On a GPU of this machine (OpReplayer::in_situ_only) every op, the light ones too, is its
// traced call less the device's no-work round trip, and nothing is replayed there.
TEST(OpsPipeline, AGpusOpsAreAllInSituNeverReplayed) {
    ScriptedOpsRig rig;
    rig.replayer.gpu = true;
    const OpsProfile p = rig.run(options());
    int on_gpu = 0;
    for (const auto& st : p.stages)
        for (const auto& op : st.ops) {
            if (op.backend != "ACC" || op.no_compute)
                continue;
            ++on_gpu;
            ASSERT_TRUE(op.op_ns && op.call_ns);
            EXPECT_DOUBLE_EQ(*op.op_ns, std::max(0.0, *op.call_ns - 1000));
            EXPECT_EQ(*op.op_method,
                      "traced call less the 1.00 µs round trip of a no-work op on ACC (a GPU's "
                      "ops are not replayed)");
        }
    EXPECT_GT(on_gpu, 0);
    for (const auto& [key, n] : rig.replayer.replays)
        EXPECT_NE(key.rfind("ACC|", 0), 0u) << key;
    // The CPU's ops are timed as before (in situ or replayed).
    EXPECT_GT(rig.replayer.replays["CPU|own|RMS_NORM/prefill"], 0);
}

// With a device-timer pass (the launcher scripted: the text ggml-vulkan's logger prints, read
// by profile/vk_perf_log.hpp), the GPU's ops take the device's time where name and count
// match; the request carries the profile's workload; a damaged line is recorded and warned
// about; a pass that fails leaves the round-trip method and a warning.
TEST(OpsPipeline, AGpusOpsTakeTheDeviceTimerWhereItMatches) {
    ScriptedOpsRig rig;
    rig.replayer.gpu = true;
    rig.engine.backends = {"ACC", "CPU"};  // the devices that ran ops
    std::vector<DeviceTimerRequest> asked;
    auto block = [](const std::string& stage, int i, double mm_us) {
        return vk_perf_marker(stage, i, true) + "\n----------------\nVulkan Timings:\n" +
               fmt::format("MUL_MAT: 2 x {} us = {} us\nTotal time: {} us.\n", mm_us, 2 * mm_us,
                           2 * mm_us) +
               vk_perf_marker(stage, i, false) + "\n";
    };
    OpsHooks h;
    h.clock = rig.tl.clock();
    h.interrupted = [] { return false; };
    h.timed_device = [](const std::string& d) { return d == "ACC"; };
    h.device_timer = [&](const DeviceTimerRequest& q) {
        asked.push_back(q);
        DeviceTimerRun r;
        r.output = block("prefill", 0, 300) + block("prefill", 1, 320) + "Vulkan Timings:\n" +
                   "MUL_MAT: two x 1 us = 2 us\nTotal time: 2 us.\n";
        for (int k = 0; k < q.ops.decode_tokens; ++k)
            r.output += block("decode", k, 40 + k);
        r.duration_ns = 5'000'000;
        return r;
    };
    const OpsProfile p = profile_ops({rig.engine, rig.tracer, rig.replayer}, options(), h);
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0].prefill_reps, 2);  // the traced repetitions
    EXPECT_EQ(asked[0].ops.n_prompt, 16);
    EXPECT_EQ(asked[0].threads, 2);
    ASSERT_TRUE(p.device_timer);
    EXPECT_EQ(p.device_timer->device, "ACC");
    EXPECT_EQ(p.device_timer->error, "");
    EXPECT_EQ(p.device_timer->n_sections, 5);
    EXPECT_EQ(p.device_timer->n_rejected, 2);  // the line and its block
    EXPECT_EQ(p.device_timer->rejected[0],
              "line 14: a count or time that is not a number: MUL_MAT: two x 1 us = 2 us");
    // Prefill: median of 300 and 320 µs; decode: of 40, 41 and 42 µs.
    for (const auto& [stage, want] : {std::pair{"prefill", 310'000.0}, {"decode", 41'000.0}}) {
        const StageProfile& st = stage_named(p, stage);
        int timed = 0;
        for (const auto& op : st.ops)
            if (op.backend == "ACC" && !op.no_compute) {
                ++timed;
                EXPECT_DOUBLE_EQ(*op.op_ns, want) << stage;
                EXPECT_NE(op.op_method->find("mean of the 2 MUL_MAT on ACC"), std::string::npos)
                    << *op.op_method;
            }
        EXPECT_EQ(timed, 2);
        EXPECT_EQ(st.rec.n_op_device_timer, 2);
    }
    bool warned = false;
    for (const auto& w : profile_warnings(p))
        warned |= w.code == "device_timer_unreadable_lines";
    EXPECT_TRUE(warned);

    // A pass that fails: no device times, the round trip for every GPU op, a warning.
    h.device_timer = [](const DeviceTimerRequest&) {
        DeviceTimerRun r;
        r.error = "the pass exited with 2: stagebench: error: no such device";
        return r;
    };
    ScriptedOpsRig again;
    again.replayer.gpu = true;
    again.engine.backends = {"ACC", "CPU"};
    h.clock = again.tl.clock();
    const OpsProfile q = profile_ops({again.engine, again.tracer, again.replayer}, options(), h);
    ASSERT_TRUE(q.device_timer);
    EXPECT_EQ(q.device_timer->error, "the pass exited with 2: stagebench: error: no such device");
    for (const auto& st : q.stages)
        for (const auto& op : st.ops)
            if (op.backend == "ACC" && !op.no_compute) {
                EXPECT_EQ(op.op_method->rfind("traced call less the", 0), 0u) << *op.op_method;
            }
    warned = false;
    for (const auto& w : profile_warnings(q))
        warned |= w.code == "device_timer_failed";
    EXPECT_TRUE(warned);
}

TEST(OpsPipeline, FallbackPricesEachOpTypeBySplitsAndReplaysOnTheAskedDevice) {
    ScriptedOpsRig rig;
    const OpsProfile p = rig.run(options());
    const StageProfile& pre = stage_named(p, "prefill");
    ASSERT_EQ(pre.fallback.size(), 3u);
    // ADD: ACC can run it (replayed there, 1.5 µs): its CPU op time (2.5 µs) and its split's
    // boundaries (the 7 µs gap into the CPU split) against ACC's op time.
    const FallbackRow& add = pre.fallback[0];
    EXPECT_EQ(add.op, "ADD");
    EXPECT_EQ(add.backend, "CPU");
    EXPECT_EQ(add.requested, "ACC");
    EXPECT_EQ(add.count, 1);
    EXPECT_EQ(add.n_splits, 1);
    EXPECT_DOUBLE_EQ(*add.split_ns, kBoundaryGap);
    EXPECT_EQ(*add.split_bytes, 4096u);
    EXPECT_EQ(add.n_replayed, 1);
    EXPECT_DOUBLE_EQ(*add.op_ns_requested, 1500);
    EXPECT_DOUBLE_EQ(*add.penalty, 2500.0 / 1500.0);
    EXPECT_DOUBLE_EQ(*add.penalty_ns, 2500 + kBoundaryGap - 1500);
    EXPECT_EQ(add.penalty_basis, "replayed on ACC");
    EXPECT_EQ(add.note, "");
    // GET_ROWS and RMS_NORM: ACC cannot run them; they share split 0, whose way back to ACC
    // (the gap before split 1, its 8192 bytes) is their split's own cost, half each.
    for (size_t i : {1u, 2u}) {
        const FallbackRow& f = pre.fallback[i];
        SCOPED_TRACE(f.op);
        EXPECT_EQ(f.n_splits, 1);
        EXPECT_DOUBLE_EQ(*f.split_ns, kBoundaryGap / 2.0);
        EXPECT_EQ(*f.split_bytes, 4096u);
        EXPECT_DOUBLE_EQ(*f.penalty_ns, kBoundaryGap / 2.0);
        EXPECT_EQ(f.penalty_basis,
                  "split cost only: ACC cannot run it, so there is no graph without the split");
        EXPECT_EQ(f.note, "1 not supported by ACC");
        EXPECT_FALSE(f.penalty.has_value());
    }
    EXPECT_EQ(pre.fallback[1].op, "GET_ROWS");  // equal penalties: the larger call first
    EXPECT_EQ(pre.fallback[2].op, "RMS_NORM");
    EXPECT_EQ(rig.replayer.replays["ACC|fresh|ADD/prefill"], 1);
    EXPECT_EQ(rig.replayer.replays.count("ACC|fresh|RMS_NORM/prefill"), 0u);
}

TEST(OpsPipeline, WithoutReplaysOnlyCallTimesAndSplitCosts) {
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.replay_copies = 0;
    const OpsProfile p = rig.run(o);
    EXPECT_TRUE(rig.replayer.replays.empty());
    EXPECT_TRUE(rig.replayer.setup.devices.empty());  // never opened
    const StageProfile& pre = stage_named(p, "prefill");
    EXPECT_FALSE(pre.ops[3].op_ns.has_value());
    EXPECT_EQ(*pre.ops[3].op_method, "op replay skipped (--replay 0)");
    EXPECT_DOUBLE_EQ(*pre.ops[2].op_ns, 0);
    const FallbackRow& add = pre.fallback[0];
    EXPECT_EQ(add.op, "ADD");
    EXPECT_DOUBLE_EQ(*add.penalty_ns, kBoundaryGap);
    EXPECT_EQ(add.penalty_basis, "split cost only: its op time on ACC was not measured");
}

TEST(OpsPipeline, DecodeOnlyFillsTheCacheUntimedAndTracesEachStep) {
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.prefill = false;
    o.traced_reps = 1;
    o.plain_reps = 1;
    const OpsProfile p = rig.run(o);
    ASSERT_EQ(p.stages.size(), 1u);
    const StageProfile& dec = p.stages[0];
    EXPECT_EQ(dec.stage, "decode");
    EXPECT_EQ(dec.kv_depth, 16);
    EXPECT_EQ(dec.rec.traced_ns.size(), 3u);
    EXPECT_EQ(dec.rec.plain_ns.size(), 3u);
    // One repetition: its capturing step, then traced and untraced steps in turn (no
    // uninstrumented repetition: decode's plain samples are the untraced steps).
    EXPECT_EQ(
        rig.traced_calls,
        (std::vector<std::string>{"decode_step plain",  // the warm-up
                                  "decode_step traced", "decode_step traced", "decode_step plain",
                                  "decode_step traced", "decode_step plain", "decode_step traced",
                                  "decode_step plain"}));
    // The cache was filled to the prompt's depth before the repetition, never traced.
    const auto fills = rig.tl.calls_of(FakeOp::fill_to_depth);
    ASSERT_EQ(fills.size(), 1u);
    for (const auto& c : fills)
        EXPECT_EQ(c.n_tokens, 16);
}

// The automatic stride puts each node alone in two steps, every 8th node at most: 16 traced
// steps (the default) -> 8, and no more with more steps.
TEST(OpsPipeline, TheAutomaticStrideIsHalfTheTracedStepsAtMostEight) {
    for (const auto& [reps, tokens, want] :
         std::vector<std::tuple<int, int, int>>{{1, 16, 8}, {1, 40, 8}, {2, 4, 4}, {1, 1, 1}}) {
        ScriptedOpsRig rig;
        OpsOptions o = options();
        o.isolation_stride = 0;
        o.traced_reps = reps;
        o.plain_reps = 1;
        o.decode_tokens = tokens;
        rig.run(o);
        ASSERT_FALSE(rig.tracer.isolations.empty());
        EXPECT_EQ(rig.tracer.isolations.back().stride, want) << reps << " x " << tokens;
    }
    EXPECT_EQ(OpsOptions{}.decode_tokens, 16);
}

TEST(OpsPipeline, DecodeStepsDispatchEveryKthNodeAloneInTurnAcrossTheRepetitions) {
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.isolation_stride = 0;  // automatic: 2 x 3 traced steps -> every 3rd node, each twice
    const OpsProfile p = rig.run(o);
    // Prefill dispatches every node alone; decode every 3rd, the phase going on from the
    // first repetition's three timed steps (its first step captures: every node alone).
    ASSERT_EQ(rig.tracer.isolations.size(), 4u);
    const std::vector<std::pair<int, int>> want{{1, 0}, {3, 0}, {1, 0}, {3, 3}};
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(rig.tracer.isolations[i].stride, want[i].first) << i;
        EXPECT_EQ(rig.tracer.isolations[i].phase, want[i].second) << i;
    }
    const StageProfile& pre = stage_named(p, "prefill");
    const StageProfile& dec = stage_named(p, "decode");
    EXPECT_EQ(pre.isolation_stride, 1);
    EXPECT_EQ(dec.isolation_stride, 3);
    EXPECT_EQ(dec.traced_reps, 7);
    // Every node was dispatched alone in some step: its scripted call time, not a chunk's.
    ASSERT_EQ(dec.ops.size(), kGraph.size());
    for (size_t i = 0; i < kGraph.size(); ++i)
        EXPECT_DOUBLE_EQ(*dec.ops[i].call_ns, kGraph[i].decode_call_ns) << i;
    // The split copies come from the steps whose call starts at the split: as before.
    ASSERT_EQ(dec.splits.size(), 3u);
    EXPECT_DOUBLE_EQ(*dec.splits[1].copy_ns, kBoundaryGap);
    // Phase 2 (nodes 1 and 4 alone) ends a call at every node: the timeline is such a step's.
    EXPECT_TRUE(dec.timeline_rep.has_value());
    EXPECT_NEAR(*dec.rec.overhead_ratio, 0.05, 1e-12);
    // What a step spends outside its calls and the gaps between them, median over the steps:
    // 10.5 ms less every node's call (a chunk's is its nodes') and the gaps before the calls:
    // phase 0 ([0] [1 2] [3] [4] [5]) 500 + 7000 + 500 + 7000 ns, three of the seven steps;
    // phase 1 ([0 1] [2] [3 4] [5]) 14.5 µs and phase 2 (all alone) 15.5 µs, two each.
    int64_t calls = 0;
    for (const auto& n : kGraph)
        calls += n.decode_call_ns;
    EXPECT_DOUBLE_EQ(*dec.rec.host_ns, static_cast<double>(10'500 * kUs - calls - 15'000));
}

TEST(OpsPipeline, AFailureWhileMeasuringIsThrownWithItsKindAndTheTracerStopped) {
    ScriptedOpsRig rig;
    auto before = rig.engine.script().before;
    rig.engine.script().before = [&, before](const FakeCall& c) {
        before(c);
        if (c.op == FakeOp::prefill && c.index == 0)  // the capturing (traced) repetition's
            throw runtime_error("the RPC server went away");
    };
    try {
        rig.run(options());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        EXPECT_STREQ(e.what(), "the RPC server went away");
    }
    EXPECT_FALSE(rig.tracer.active);
}

TEST(OpsPipeline, AutomaticRepetitionsRepeatShortPrefillsUpToThreeOfEachKind) {
    // The scripted prefills take 1.76 ms traced and 1.6 ms plain: three of each (as many as
    // would add up to 1.5 s, at most three), in the A B B A order.
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.traced_reps = o.plain_reps = 0;
    const OpsProfile p = rig.run(o);
    std::vector<std::string> prefills;
    for (const auto& c : rig.traced_calls)
        if (c.rfind("prefill", 0) == 0)
            prefills.push_back(c);
    EXPECT_EQ(prefills,
              (std::vector<std::string>{"prefill plain",  // the warm-up
                                        "prefill traced", "prefill plain", "prefill plain",
                                        "prefill traced", "prefill traced", "prefill plain"}));
    const StageProfile& pre = stage_named(p, "prefill");
    EXPECT_EQ(pre.traced_reps, 3);
    EXPECT_EQ(pre.rec.plain_ns.size(), 3u);
    EXPECT_NE(p.method.find("median of 3 traced repetition(s)"), std::string::npos);
    EXPECT_NE(p.method.find("interleaved with 3 uninstrumented"), std::string::npos);
    // Decode's samples come with the traced repetitions: 3 traced steps after the capturing
    // one in the first, 4 in each other (traced, untraced, ..., traced).
    EXPECT_EQ(stage_named(p, "decode").traced_reps, 3 + 4 + 4);

    // Prefills of 1.6 s and more: one of each.
    ScriptedOpsRig slow;
    slow.engine.script().duration_ns = [&slow](const FakeCall& c) -> int64_t {
        if (c.op == FakeOp::prefill)
            return c.n_tokens * (slow.tracer.traces(c) ? 110'000 * kUs : 100'000 * kUs);
        return c.op == FakeOp::decode_step ? 10'000 * kUs : 0;
    };
    const OpsProfile q = slow.run(o);
    EXPECT_EQ(stage_named(q, "prefill").traced_reps, 1);
    EXPECT_EQ(stage_named(q, "prefill").rec.plain_ns.size(), 1u);
}

TEST(OpsPipeline, BadOptionsAreUsageErrorsBeforeAnythingLoads) {
    ScriptedOpsRig rig;
    OpsOptions o = options();
    o.prefill = o.decode = false;
    EXPECT_THROW(rig.run(o), Error);
    o = options();
    o.decode_tokens = 0;
    EXPECT_THROW(rig.run(o), Error);
    o = options();
    o.n_prompt = 0;
    EXPECT_THROW(rig.run(o), Error);
    o = options();
    o.plain_reps = -1;  // 0 is automatic
    EXPECT_THROW(rig.run(o), Error);
    o = options();
    o.isolation_stride = -1;
    EXPECT_THROW(rig.run(o), Error);
    EXPECT_TRUE(rig.tl.calls().empty());
}

TEST(OpsPipeline, AnInterruptKeepsWhatWasTracedAndMarksItPartial) {
    ScriptedOpsRig rig;
    OpsHooks h;
    h.clock = rig.tl.clock();
    // From the first plain repetition on: after the traced repetition's 2 x 3 + 1 decode steps
    // (the warm-up on ACC is a prefill; the decode steps poll it too, between the steps).
    h.interrupted = [&] { return rig.tl.calls_of(FakeOp::decode_step).size() >= 7; };
    const OpsProfile p = profile_ops({rig.engine, rig.tracer, rig.replayer}, options(), h);
    ASSERT_EQ(p.stages.size(), 2u);
    const StageProfile& pre = p.stages[0];
    ASSERT_EQ(pre.ops.size(), kGraph.size());
    EXPECT_EQ(pre.rec.traced_ns.size(), 1u);
    EXPECT_TRUE(pre.rec.plain_ns.empty());
    EXPECT_FALSE(pre.rec.op_fraction.has_value());
    EXPECT_DOUBLE_EQ(*pre.ops[3].op_ns, 399 * kUs);  // in situ: no replay needed
    EXPECT_EQ(*pre.ops[1].op_method, "interrupted before replay");
    EXPECT_EQ(pre.notes.back(), "interrupted: results are partial");
    EXPECT_EQ(p.stages[1].rec.traced_ns.size(), 3u);
}

TEST(OpsPipeline, AnInterruptInsideTheDecodeStepsKeepsTheStepsTracedBeforeIt) {
    ScriptedOpsRig rig;
    OpsHooks h;
    h.clock = rig.tl.clock();
    OpsOptions o = options();
    o.decode_tokens = 1000;  // 2001 steps in the traced repetition
    o.prefill = false;
    // After the warm-up's step, the capturing one and 4 more: traced, untraced, traced, untraced.
    h.interrupted = [&] { return rig.tl.calls_of(FakeOp::decode_step).size() >= 6; };
    const OpsProfile p = profile_ops({rig.engine, rig.tracer, rig.replayer}, o, h);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::decode_step).size(), 6u);  // not 2002
    ASSERT_EQ(p.stages.size(), 1u);
    const StageProfile& dec = p.stages[0];
    EXPECT_EQ(dec.stage, "decode");
    EXPECT_EQ(dec.ops.size(), kGraph.size());
    EXPECT_EQ(dec.rec.traced_ns.size(), 2u);
    EXPECT_EQ(dec.rec.plain_ns.size(), 2u);
    EXPECT_EQ(dec.notes.back(), "interrupted: results are partial");
}

// `stagebench ops` as a run, its rig from the run's engine factory: the profile is made on the
// parts the factory hands over, asked with the options' huge-page choice, timed on the run's
// clock (the load is the fake engine's 5 ms exactly), and kept in the document with the
// outcome ok.
TEST(OpsRun, ProfilesOnTheRigOfTheRunsEngineFactoryOnTheRunsClock) {
    test::RunRig rr;
    ScriptedOpRigs rigs;
    rigs.install(rr.engines, rr.tl);
    OpsCommandOptions o;
    o.ops = options();
    o.ops.workload.model_path = test::tiny_gguf();
    o.ops.workload.devices = "CPU";  // the run checks device names against llama.cpp's
    o.ops.huge_pages = false;
    const RunResult r = run_ops(o, rr.env("ops"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_FALSE(r.error.has_value());
    EXPECT_EQ(rr.engines.rig_huge_pages(), std::vector<bool>{false});
    ASSERT_EQ(rigs.made.size(), 1u);
    const auto& made = rigs.made[0];
    EXPECT_EQ(made.tracer->loaded.model_path, test::tiny_gguf());
    EXPECT_EQ(made.tracer->begins, 4);  // two traced repetitions, a prefill and decode each
    EXPECT_TRUE(made.tracer->released);
    EXPECT_EQ(made.replayer->setup.threads, 2);
    ASSERT_TRUE(r.doc.ops.has_value());
    const OpsProfile& p = *r.doc.ops;
    EXPECT_EQ(p.devices, "CPU");
    ASSERT_EQ(p.stages.size(), 2u);
    EXPECT_EQ(p.stages[0].stage, "prefill");
    EXPECT_EQ(p.stages[0].rec.traced_ns.size(), 2u);
    EXPECT_EQ(p.stages[0].rec.plain_ns.size(), 2u);
    EXPECT_EQ(p.stages[1].stage, "decode");
    // Every call the profile made is on the fake timeline, which started at 1 s.
    EXPECT_EQ(p.phase_ns.at("load"), 5'000 * kUs);
    EXPECT_EQ(p.duration_ns, rr.tl.now_ns() - 1'000'000'000);
    EXPECT_EQ(rr.tl.calls_of(FakeOp::load).size(), 1u);
}

// Ctrl-C in the middle of the profile: what was traced is kept, the document warns that it is
// partial, and the run's outcome is interrupted.
TEST(OpsRun, AnInterruptKeepsThePartialProfileAndTheOutcomeSaysSo) {
    test::RunRig rr;
    ScriptedOpRigs rigs;
    rigs.install(rr.engines, rr.tl);
    rr.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::decode_step && c.index == 7)
                request_interrupt();
        };
    };
    OpsCommandOptions o;
    o.ops = options();
    o.ops.workload.model_path = test::tiny_gguf();
    o.ops.workload.devices = "CPU";
    const RunResult r = run_ops(o, rr.env("ops"));
    clear_interrupt();
    EXPECT_EQ(r.outcome, Outcome::interrupted);
    ASSERT_TRUE(r.doc.ops.has_value());
    ASSERT_FALSE(r.doc.ops->stages.empty());
    EXPECT_EQ(r.doc.ops->stages[0].notes.back(), "interrupted: results are partial");
    EXPECT_TRUE(std::any_of(r.doc.warnings.begin(), r.doc.warnings.end(),
                            [](const Warning& w) { return w.code == "interrupted"; }));
}

// A rig whose engine cannot load the model (as llama.cpp refuses a device) is bad input of the
// command, thrown before anything is measured.
TEST(OpsRun, AnEngineThatRefusesTheModelIsBadInput) {
    test::RunRig rr;
    ScriptedOpRigs rigs;
    rigs.install(rr.engines, rr.tl);
    rr.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::load)
                throw input_error("unknown device");
        };
    };
    OpsCommandOptions o;
    o.ops = options();
    o.ops.workload.model_path = test::tiny_gguf();
    o.ops.workload.devices = "CPU";
    try {
        run_ops(o, rr.env("ops"));
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_STREQ(e.what(), "unknown device");
    }
    EXPECT_TRUE(rr.tl.calls_of(FakeOp::prefill).empty());
}
