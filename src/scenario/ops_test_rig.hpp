#pragma once
// Test-only: the op profiler's parts scripted for the scenario tests (the pipeline's
// scenario/ops_run_test.cpp, and the runners that profile through the engine factory: run_ops,
// explain's ops level, sustained's traced passes). A fixed graph of six nodes on the CPU and an
// accelerator "ACC", a tracer that traces a FakeEngine's calls as LlamaOpTracer traces
// llama.cpp's (a graph per prefill call and per decode step while tracing), and a replayer with
// op times by op and device.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/fake_engine.hpp"
#include "profile/op_trace.hpp"
#include "scenario/test_util.hpp"

namespace sb::test {

// One node of the scripted graph: what the capture says of it and its call time per stage.
struct ScriptNode {
    std::string op;
    std::string name;
    bool no_compute;
    int64_t prefill_call_ns, decode_call_ns;
    uint32_t supports;  // bit 0: ACC, bit 1: CPU
    std::vector<std::pair<std::string, uint64_t>> copied;
};

// GET_ROWS, RMS_NORM and a view on the CPU (split 0); two mat-muls of one signature on the
// accelerator ACC (split 1, its input copied in); an ADD back on the CPU (split 2).
inline const std::vector<ScriptNode> kGraph{
    {"GET_ROWS", "inp_embd", false, 30 * kUs, 3 * kUs, 0b10, {}},
    {"RMS_NORM", "attn_norm-0", false, 5 * kUs, 2 * kUs, 0b10, {}},
    {"VIEW", "attn_norm-0 (view)", true, 1 * kUs, 1 * kUs, 0b11, {}},
    {"MUL_MAT", "attn_q-0", false, 400 * kUs, 50 * kUs, 0b11, {{"ACC#attn_norm-0#0", 8192}}},
    {"MUL_MAT", "ffn_up-1", false, 400 * kUs, 50 * kUs, 0b11, {}},
    {"ADD", "ffn_out-1", false, 3 * kUs, 1500, 0b11, {{"CPU#ffn_up-1#0", 4096}}},
};
constexpr int64_t kGap = 500;               // between nodes of one split
constexpr int64_t kBoundaryGap = 7000;      // before a split's first node (its copies)
constexpr int64_t kCaptureWork = 10 * kUs;  // the tracer's own work per node it captures

inline SchedAssignment assignment() {
    SchedAssignment a;
    a.splits = {{0, "CPU", 0, 0, {}},
                {1, "ACC", 3, 1, {"ACC#attn_norm-0#0"}},
                {2, "CPU", 5, 1, {"CPU#ffn_up-1#0"}}};
    for (int i = 0; i < static_cast<int>(kGraph.size()); ++i)
        if (!kGraph[static_cast<size_t>(i)].no_compute)
            a.nodes[i] = {kGraph[static_cast<size_t>(i)].op, kGraph[static_cast<size_t>(i)].name};
    return a;
}

// Traces the fake engine: a graph per prefill call and per decode step made while tracing.
class ScriptedTracer final : public OpTracer {
  public:
    ScriptedTracer(FakeEngine& engine, FakeTimeline& tl) : engine_(engine), tl_(tl) {}
    void load(const LoadSpec& spec) override {
        loaded = spec;
        engine_.load(spec);
    }
    std::vector<std::string> coverage_devices() const override { return {"ACC", "CPU"}; }
    void begin(TraceMode mode, Isolation iso) override {
        active = true;
        mode_ = mode;
        iso_ = iso;
        isolations.push_back(iso);
        from_ = tl_.calls().size();
        decode_from_ = static_cast<int>(tl_.calls_of(FakeOp::decode_step).size());
        ++begins;
    }
    // Whether the tracer traces this call of the engine (as LlamaOpTracer: with
    // Isolation::interleave, the decode steps after a capturing one alternate traced, untraced).
    bool traces(const FakeCall& c) const {
        if (!active || (c.op != FakeOp::prefill && c.op != FakeOp::decode_step))
            return false;
        if (c.op == FakeOp::prefill || !iso_.interleave)
            return true;
        const int i = c.index - decode_from_ - (mode_ == TraceMode::capture_first ? 1 : 0);
        return i < 0 || i % 2 == 0;
    }
    TracedRun end() override {
        active = false;
        TracedRun run;
        int graph = 0, traced = 0, timed = 0;
        for (size_t c = from_; c < tl_.calls().size(); ++c) {
            const FakeCall& call = tl_.calls()[c];
            if (call.op != FakeOp::prefill && call.op != FakeOp::decode_step)
                continue;
            const bool pre = call.op == FakeOp::prefill;
            const bool capturing =
                mode_ == TraceMode::capture || (mode_ == TraceMode::capture_first && graph == 0);
            if (!capturing && iso_.interleave && timed++ % 2 == 1) {
                ++graph;  // computed whole: no calls
                continue;
            }
            // As LlamaOpTracer: a call ends at each node dispatched alone, the node before it,
            // and a split's last node; a chunk's call is its nodes' calls back to back.
            const size_t k = capturing ? 1 : static_cast<size_t>(std::max(1, iso_.stride));
            const size_t phase = capturing ? 0 : static_cast<size_t>(iso_.phase + traced++) % k;
            auto alone = [&](size_t j) { return (j + phase) % k == 0; };
            int64_t t = call.start_ns, chunk_start = 0, chunk_ns = 0, chunk_gap = -1;
            int chunk_first = -1;
            for (size_t i = 0; i < kGraph.size(); ++i) {
                const ScriptNode& s = kGraph[i];
                const bool boundary = i == 3 || i == 5;
                const int64_t gap = i == 0 ? -1 : boundary ? kBoundaryGap : kGap;
                const int64_t call_ns = pre ? s.prefill_call_ns : s.decode_call_ns;
                if (chunk_first < 0) {
                    chunk_first = static_cast<int>(i);
                    chunk_gap = gap;
                    t += std::max<int64_t>(0, gap);
                    chunk_start = t;
                }
                chunk_ns += call_ns;
                t += call_ns;
                const bool last = i + 1 == kGraph.size() || i + 1 == 3 || i + 1 == 5;
                if (!(alone(i) || alone(i + 1) || last))
                    continue;
                run.calls.push_back({graph, static_cast<int>(i), chunk_start, chunk_ns, chunk_gap,
                                     capturing ? kCaptureWork : 0,
                                     static_cast<int>(i) - chunk_first + 1});
                chunk_first = -1;
                chunk_ns = 0;
                if (capturing) {
                    CapturedNode n;
                    n.id = i + (pre ? 0 : 100);
                    n.op = s.op;
                    n.no_compute = s.no_compute;
                    n.out.name = s.name;
                    n.out.type = "f32";
                    n.signature = s.op + (pre ? "/prefill" : "/decode");
                    n.copied_inputs = s.copied;
                    n.supports = s.supports;
                    n.usable = 0b11;
                    run.nodes.push_back(n);
                }
            }
            if (mode_ == TraceMode::capture || (mode_ == TraceMode::capture_first && graph == 0))
                run.graphs.push_back(assignment());
            ++graph;
        }
        return run;
    }
    void release() override { released = true; }

    bool active = false;
    bool released = false;
    int begins = 0;
    std::vector<Isolation> isolations;  // one per begin()
    LoadSpec loaded;

  private:
    FakeEngine& engine_;
    FakeTimeline& tl_;
    TraceMode mode_ = TraceMode::time;
    Isolation iso_;
    int decode_from_ = 0;  // decode steps of the engine before begin()
    size_t from_ = 0;
};

// Op times by op and device; a 1 µs no-work dispatch on both devices.
class ScriptedReplayer final : public OpReplayer {
  public:
    void open(const ReplaySetup& s) override { setup = s; }
    bool can_replay_on(const std::string& d) const override { return d == "CPU" || d == "ACC"; }
    bool fixed_dispatch(const std::string& d) const override {
        return can_replay_on(d) && !in_situ_only(d);
    }
    bool in_situ_only(const std::string& d) const override { return gpu && d == "ACC"; }
    OpTime replay(const CapturedNode& n, const std::string& device, bool keep) override {
        replays[device + (keep ? "|own|" : "|fresh|") + n.signature]++;
        static const std::map<std::string, double> cpu{
            {"GET_ROWS", 2000}, {"RMS_NORM", 4000}, {"ADD", 2500}};
        static const std::map<std::string, double> acc{{"ADD", 1500}};
        const auto& table = device == "ACC" ? acc : cpu;
        auto it = table.find(n.op);
        if (it == table.end())
            return {std::nullopt, std::nullopt, "not supported by " + device};
        return {it->second, it->second + 1000, "replayed on " + device};
    }
    std::vector<std::string> unusable_inputs(const CapturedNode&,
                                             const std::string&) const override {
        return {};
    }
    std::optional<double> dispatch_ns(const std::string& d) override {
        return can_replay_on(d) ? std::optional<double>(1000) : std::nullopt;
    }
    std::optional<double> conversion_ns(const CapturedNode&, const std::string&, bool*) override {
        return std::nullopt;
    }

    ReplaySetup setup;
    std::map<std::string, int> replays;  // device|keep|signature -> how many times
    bool gpu = false;                    // ACC is a GPU of this machine: never replayed
};

// The engine of a scripted rig takes 100 µs per prompt token and 10 ms per decode step
// uninstrumented, 110 µs and 10.5 ms traced, 5 ms to load.
inline void script_traced_times(FakeEngine& engine, const ScriptedTracer& tracer) {
    engine.script().duration_ns = [&tracer](const FakeCall& c) -> int64_t {
        const bool t = tracer.traces(c);
        if (c.op == FakeOp::prefill)
            return c.n_tokens * (t ? 110 * kUs : 100 * kUs);
        if (c.op == FakeOp::decode_step)
            return t ? 10'500 * kUs : 10'000 * kUs;
        return c.op == FakeOp::load ? 5'000 * kUs : 0;
    };
}

// The op rigs a FakeEngineFactory makes (its op_rigs script): each engine it hands over with a
// ScriptedTracer (its times script_traced_times) and a ScriptedReplayer. The tracer and replayer
// of every rig made are kept here too, to look at after the runner dropped the rig (then only
// their fields: the engine they traced is gone).
struct ScriptedOpRigs {
    struct Parts {
        std::string engine;  // the fake engine's name
        std::shared_ptr<ScriptedTracer> tracer;
        std::shared_ptr<ScriptedReplayer> replayer;
    };
    std::vector<Parts> made;

    // Installs the script in engines; this must outlive the rigs engines makes.
    void install(FakeEngineFactory& engines, FakeTimeline& tl) {
        engines.op_rigs = [this, &tl](std::unique_ptr<FakeEngine> e, bool) {
            auto tracer = std::make_shared<ScriptedTracer>(*e, tl);
            auto replayer = std::make_shared<ScriptedReplayer>();
            script_traced_times(*e, *tracer);
            made.push_back({e->name(), tracer, replayer});
            OpRig rig;
            rig.tracer = tracer.get();
            rig.replayer = replayer.get();
            rig.engine = std::move(e);
            rig.parts = std::make_shared<Parts>(made.back());
            return rig;
        };
    }
};

}  // namespace sb::test
