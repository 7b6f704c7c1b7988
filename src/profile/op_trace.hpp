#pragma once
// The seam of `stagebench ops`: what the ops pipeline (scenario/ops_run.hpp: capture -> replay
// -> profile -> document) needs from the engine it profiles, as two small interfaces with
// ggml-free data, so that the pipeline runs on a scripted engine in tests
// (scenario/ops_run_test.cpp) and on llama.cpp for users (profile/tracer.hpp: LlamaOpTracer and
// GgmlOpReplayer).
//
//  * OpTracer hooks an engine's graphs node by node: between begin() and end() every node the
//    engine computes is dispatched alone and timed (its call; or every k-th node in turn:
//    Isolation), and in TraceMode::capture also
//    described (op, tensors, the scheduler's backend, the devices that support it). When idle,
//    the same context runs as it would without the hook, so uninstrumented stages are measured
//    on it too, interleaved with the traced ones.
//  * OpReplayer gives a captured node's op time on a backend by replaying it in a graph of its
//    own (profile/op_replay.hpp), the cost of one dispatch with no work, and the activation
//    conversion of a mat-mul.
//
// Times are nanoseconds on the sb::now_ns clock (the engine's clock for a scripted engine).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/doc/ops_section.hpp"
#include "core/workload.hpp"
#include "engine/engine.hpp"
#include "engine/engine_factory.hpp"
#include "profile/sched_log.hpp"

namespace sb {

// What to profile and how much (`stagebench ops`, `decompose`, `sustained --trace-ops-rounds`).
struct OpsOptions {
    // The model, one device set as `run --device` spells one test ("CPU", "BLAS", "RPC0",
    // "BLAS+RPC0"; the host CPU is always present), and how it runs (n_threads 0:
    // sb::default_thread_count()).
    Workload workload;
    int n_prompt = 512;
    int n_depth = 0;
    bool prefill = true;
    bool decode = true;
    // Copies of an op per replay graph (--replay N); 0: no op times at all (call times only).
    int replay_copies = 16;
    // Repetitions of the workload: traced (a prefill, then decode steps alternating traced
    // and untraced, decode_tokens of each; call times are medians over the traced ones, the
    // untraced ones are decode's uninstrumented samples) and uninstrumented (a prefill: the
    // stage time prefill's ops reconcile with), interleaved; the first traced one captures.
    // 0 (automatic): one of each, or, when the first prefills are short, as many as add up to
    // 1.5 s of prefill per kind, at most 3 (scenario/ops_run.cpp).
    int traced_reps = 0;
    int plain_reps = 0;
    int decode_tokens = 16;  // traced decode steps per traced repetition (as many untraced)
    // Every how many nodes a traced decode step (not the capturing one) dispatches one alone,
    // in turn over the steps (Isolation; --isolate-every): dispatching a node alone costs
    // one dispatch of the backend, which is most of a decode step's short ops. 0: at most
    // every 8th, each node alone in at least two steps (min(8, traced steps / 2)); 1: every
    // node in every step.
    int isolation_stride = 0;
    size_t top_n = 10;
    // Advise the weights onto transparent huge pages as they load (--huge-pages on|off;
    // LlamaEngineOptions::huge_pages): a shorter load; the profile records what was advised.
    bool huge_pages = true;
    // `stagebench decompose`: also measure each backend's no-work dispatch and the activation
    // conversion of the accelerator's mat-muls, and fill StageProfile::decomposition.
    bool decompose = false;
    uint64_t seed = 1;
};

using ProgressFn = std::function<void(const std::string&)>;

// One node as the capturing run saw it, in the document's terms.
struct CapturedNode {
    size_t id = 0;   // the tracer's handle for it (its OpReplayer replays the node by this id)
    std::string op;  // ggml_op_desc(): "MUL_MAT", "RMS_NORM", unary ops by name
    bool no_compute = false;  // view, reshape, permute, transpose, none: nothing to compute
    TensorInfo out;
    std::vector<TensorInfo> srcs;  // an absent source has an empty name and type
    std::string buffer_device;     // device of the output's buffer ("" when unknown)
    // Equal signatures cost the same on one backend (op, parameters, shapes, strides, types,
    // buffer types; not names or addresses): they are timed once.
    std::string signature;
    // Inputs the scheduler copied in from another backend for this node: name, bytes.
    std::vector<std::pair<std::string, uint64_t>> copied_inputs;
    // Bit k for OpTracer::coverage_devices()[k]: the device supports the op; the weights the
    // node reads lie in buffers the device can use.
    uint32_t supports = 0;
    uint32_t usable = 0;
};

// One call in a traced run: a node dispatched alone, or (n_nodes > 1, in a graph that
// dispatches only some nodes alone: Isolation) the nodes before one, computed together.
struct NodeCall {
    int graph = 0;         // graph of the run: a micro-batch of prefill, a decoded token
    int node = 0;          // index of the (last) node in its graph, views included
    int64_t start_ns = 0;  // when it was asked for (the scheduler's "ask" callback)
    int64_t call_ns = 0;   // asked -> computed and synchronised ("done" callback)
    int64_t gap_ns = -1;   // since the previous call's done; -1 at a graph's start
    // The tracer's own work around this call, outside it and outside the gaps (describing the
    // node and first touching its output in a capturing run; the timestamps): time the stage
    // took only because it was traced.
    int64_t work_ns = 0;
    int n_nodes = 1;  // nodes computed in the call: node - n_nodes + 1 .. node
};

// One traced stage: every node call in order; a capturing run also has the node descriptions
// of the graphs it captured (nodes[k] describes calls[k]) and the scheduler's assignment of
// each of those graphs (backends by device name; an empty assignment when the scheduler
// printed none).
struct TracedRun {
    std::vector<NodeCall> calls;
    std::vector<CapturedNode> nodes;
    std::vector<SchedAssignment> graphs;
    int64_t start_ns = 0;  // the stage, as the repetition loop timed it
    int64_t wall_ns = 0;
};

enum class TraceMode {
    capture,        // describe every node of every graph too (outside the calls' timestamps)
    capture_first,  // describe the nodes of the first graph only, then timestamps only
    time            // timestamps only
};

// Which nodes of a graph that is timed, not captured, are dispatched alone: those whose index
// i has (i + phase) % stride == 0; the nodes between them are computed in chunks. Each traced
// graph after the first takes the next phase (phase + 1, ...), so `stride` graphs in turn
// dispatch every node alone once, at 2 / stride of the dispatches of a graph that dispatches
// all (the chunk before a node alone must end just before it). A graph that does not have the
// nodes and splits of the last captured one dispatches every node alone.
// interleave: the graphs not captured alternate, traced then untraced (computed whole, as with
// no tracer: no calls), so a run holds uninstrumented samples step by step between the traced.
struct Isolation {
    int stride = 1;
    int phase = 0;
    bool interleave = false;
};

// Hooks an engine's graphs node by node. Owns nothing of the engine; one tracer per engine.
class OpTracer {
  public:
    virtual ~OpTracer() = default;
    // Loads the engine for spec with the tracer's hook on its context (one context for the
    // traced and the uninstrumented stages). Throws what Engine::load throws.
    virtual void load(const LoadSpec& spec) = 0;
    // The devices whose answers CapturedNode::supports/usable hold, in bit order (after load).
    virtual std::vector<std::string> coverage_devices() const = 0;
    // From now until end(), every graph the engine computes is traced: each node dispatched
    // alone in the graphs it captures, the nodes `iso` picks in the others.
    virtual void begin(TraceMode mode, Isolation iso) = 0;
    // The run traced since begin() (start_ns and wall_ns are the caller's to fill).
    virtual TracedRun end() = 0;
    // The traced context is no longer needed: free it, so that replays run alone.
    virtual void release() = 0;
};

// An op time and how it was obtained (or why there is none).
struct OpTime {
    std::optional<double> op_ns;        // dispatch removed
    std::optional<double> isolated_ns;  // the op alone in a one-node graph (median wall time)
    std::string method;
};

struct ReplaySetup {
    std::vector<std::string> devices;  // the profiled context's devices
    int threads = 1;                   // CPU threads
    int copies = 16;                   // copies of an op per replay graph (OpsOptions)
    // Weights of a replayed op cycle through distinct copies up to about this many bytes, so
    // that it reads them as cold as the real graph does (0: one copy, as hot as it gets).
    uint64_t cold_weight_bytes = 0;
    // Each replay graph timed for at least this long (0: until its minimum settles, which is
    // enough for an op time; `decompose` subtracts replays from each other and asks for more).
    int64_t min_spent_ns = 0;
    // Host replay buffers on transparent huge pages, as the weights were (OpsOptions).
    bool huge_pages = false;
};

// Times captured nodes on the devices of the profiled context (after OpTracer::release()).
class OpReplayer {
  public:
    virtual ~OpReplayer() = default;
    // Backends for setup.devices (devices that are missing or fail to start are left out:
    // can_replay_on says so). Throws sb::Error(runtime) when the CPU threads cannot be had.
    virtual void open(const ReplaySetup& setup) = 0;
    virtual bool can_replay_on(const std::string& device) const = 0;
    // Whether a node dispatched alone on device costs its compute plus one fixed dispatch
    // (backends in host memory), so that a long call less that dispatch is its op time.
    virtual bool fixed_dispatch(const std::string& device) const = 0;
    // (optional, default false) A device whose ops are never replayed, a GPU of this machine:
    // each op's time is its traced call less the device's no-work round trip (dispatch_ns), and
    // replay() says why it does not time one there.
    virtual bool in_situ_only(const std::string& device) const { return false; }
    // Op time of n on device. keep_buffers: its inputs in the buffer types it ran with (the
    // device that ran it); else the device's default buffers (another device). Never throws
    // for an op it cannot run: the method says why.
    virtual OpTime replay(const CapturedNode& n, const std::string& device, bool keep_buffers) = 0;
    // Why n's inputs keep it off device although device supports the op, e.g. "inputs in
    // CPU_REPACK buffers, which BLAS cannot use"; empty when nothing does.
    virtual std::vector<std::string> unusable_inputs(const CapturedNode& n,
                                                     const std::string& device) const = 0;
    // One dispatch with no work on device (a one-node graph's call less its op); nullopt when
    // it cannot be measured.
    virtual std::optional<double> dispatch_ns(const std::string& device) = 0;
    // The activation conversion inside mat-mul n on device (F32 activations against already
    // converted ones); nullopt when not separable. *plain_buffers: the weights were replayed
    // from the device's plain buffers where the real run kept them elsewhere (repacked).
    virtual std::optional<double> conversion_ns(const CapturedNode& n, const std::string& device,
                                                bool* plain_buffers) = 0;
};

// An OpRig (engine/engine_factory.hpp) of these parts: the engine factory's op_rig puts its
// parts together with it (profile/tracer.hpp make_llama_op_rig; scripted ones in tests). The
// rig is destroyed replayer, tracer, engine.
inline OpRig make_op_rig(std::unique_ptr<Engine> engine, std::unique_ptr<OpTracer> tracer,
                         std::unique_ptr<OpReplayer> replayer) {
    struct Parts {
        std::unique_ptr<OpTracer> tracer;
        std::unique_ptr<OpReplayer> replayer;  // destroyed before the tracer
    };
    auto parts = std::make_shared<Parts>(Parts{std::move(tracer), std::move(replayer)});
    OpRig rig;
    rig.engine = std::move(engine);
    rig.tracer = parts->tracer.get();
    rig.replayer = parts->replayer.get();
    rig.parts = std::move(parts);
    return rig;
}

}  // namespace sb
