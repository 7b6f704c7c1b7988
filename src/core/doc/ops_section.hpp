#pragma once
// The "ops" section of a result document: the result of `stagebench ops` and `decompose`
// (src/profile, a traced llama.cpp graph) and of `import hexagon-profile` (a backend's own
// profile log). Per stage: every op with its op time and call time, aggregates by op type /
// layer / backend, graph splits and the copies between backends, ops that fell back from the
// requested backend, and the reconciliation of summed op and call times with the uninstrumented
// stage time. The arithmetic that fills these lives in src/profile (op_record.hpp,
// ops_profile.hpp); this header is the data and its JSON.
//
// Times are nanoseconds (double: replayed op times are averages over many copies). Two times
// per op:
//   call_ns  host wall time of the op dispatched on its own and waited for (dispatch +
//            transport + synchronisation + compute);
//   op_ns    compute time with dispatch amortised (the op replayed many times back to back in
//            one graph, total / count), or the time the backend itself reports.
// Fractions as fractions (0.25 = 25 %). Missing is not zero: a time that could not be measured
// is std::nullopt.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"

namespace sb {

struct TensorInfo {
    std::string name;
    std::string type;         // ggml type name: "f32", "q4_0"; empty when unknown
    std::vector<int64_t> ne;  // shape in ggml order (ne[0] first)
    bool contiguous = true;
};

struct OpRecord {
    int graph = 0;   // which graph of the stage (one per micro-batch); 0 for imported logs
    int node = -1;   // index of the node in its graph (or line order for imports)
    std::string op;  // ggml_op_desc(): "MUL_MAT", "RMS_NORM", "SILU" (unary ops by their name)
    TensorInfo out;  // the node itself; its name carries the layer ("ffn_up-3")
    std::vector<TensorInfo> srcs;
    std::optional<int> layer;
    std::string backend;      // device that executed it: "CPU", "BLAS", "RPC0", "HTP0"
    bool no_compute = false;  // view / reshape / permute / transpose / none: zero op time
    std::optional<double> op_ns;
    std::optional<double> call_ns;
    std::optional<double> isolated_call_ns;  // the op alone in a one-node graph (replay)
    std::optional<std::string> op_method;    // how op_ns was obtained, or why it is missing
    // When the node ran in one traced run (sb::now_ns; `ops` keeps the run of median wall
    // time, StageProfile::timeline_rep): [start_ns, end_ns] is its call. Null for imports.
    std::optional<int64_t> start_ns, end_ns;
    // Backend-reported counters (Hexagon profiler).
    std::optional<int64_t> cycles;
    std::optional<double> mhz;
    std::optional<int64_t> pkts;
    std::optional<int64_t> start_cycles;
    std::optional<std::vector<int64_t>> pmu;  // PMU counters (GGML_HEXAGON_PROFILE=2), in order
    std::optional<std::string> kernel;        // the backend's kernel path ("hvx-tiled vtcm 8192")
};

enum class GroupBy { op, layer, backend };

struct OpAggregate {
    std::string key;           // op type, layer index as text ("3", "none"), or backend
    std::optional<int> layer;  // GroupBy::layer only
    int count = 0;
    int n_no_compute = 0;
    std::optional<double> op_ns;       // sum over records that have it; nullopt if none has
    std::optional<double> call_ns;     // idem
    std::optional<double> share;       // op_ns / the denominator given to aggregate()
    std::optional<double> call_share;  // call_ns / all records' call_ns
    // sum(call) / sum(op) over the records that have both and a non-zero op time: how many
    // times the dispatched op costs its compute. The headline column.
    std::optional<double> call_op_ratio;
};

// One split of a traced graph: a run of nodes on one backend, with its input copies.
struct SplitRecord {
    int graph = 0;
    int index = 0;
    std::string backend;
    int first_node = 0;
    int n_nodes = 0;
    int n_inputs = 0;                     // tensors copied in from other backends
    std::optional<uint64_t> input_bytes;  // their size, when the traced nodes showed them
    std::vector<std::string> inputs;
    // Time between the previous split's last op and this split's first op: the scheduler
    // copying the inputs (and synchronising). Unknown for the first split of a graph.
    std::optional<double> copy_ns;
};

// Ops of one type that ran on a backend other than the requested one, and what leaving the
// requested device costs in the stage (profile/fallback.hpp says how each figure is made).
struct FallbackRow {
    std::string op;
    std::string backend;    // where they ran
    std::string requested;  // where they were asked to run
    int count = 0;
    std::optional<double> call_ns, op_ns;   // there, all of them
    int n_replayed = 0;                     // of them, replayed on the requested backend
    std::optional<double> op_ns_replayed;   // op time there of those replayed
    std::optional<double> op_ns_requested;  // their op time on the requested backend
    std::optional<double> penalty;          // op_ns_replayed / op_ns_requested
    // The off-device splits holding these nodes (per stage repetition), and this op type's
    // share (by computing nodes) of the copies and synchronisations at those splits'
    // boundaries: bytes copied in and back, and their time (the scheduler's gaps, traced).
    int n_splits = 0;
    std::optional<uint64_t> split_bytes;
    std::optional<double> split_ns;
    // What leaving the requested device costs in the stage: with the requested device's own
    // op time (replayed), time there + split_ns - op_ns_requested; where the device cannot run
    // the op, split_ns alone. Null when neither could be measured (the note says why).
    std::optional<double> penalty_ns;
    std::string penalty_basis;  // "replayed on BLAS", "split cost only: ...", "" when null
    std::string note;           // e.g. "12 not supported by BLAS"
};

// Op coverage: for one op type of a stage, which devices of the context's set could run its
// nodes (the backend's own answer, ggml_backend_dev_supports_op, per node) and where they ran.
struct CoverageRow {
    std::string op;
    int count = 0;                         // computing nodes of this op in the stage
    std::map<std::string, int> supported;  // device -> nodes it supports (every device listed)
    std::map<std::string, int> ran;        // backend -> nodes that ran there
    // Why nodes ran off a device that is not the CPU: "BLAS: 4 not supported; 2 supported,
    // weights in CPU_REPACK buffers it cannot use". Empty when none did.
    std::string note;
};

struct Reconciliation {
    std::vector<int64_t> plain_ns;        // uninstrumented stage times, one per repetition
    std::vector<int64_t> plain_start_ns;  // when each began (sb::now_ns), parallel to plain_ns
    std::optional<double> plain_median_ns;
    std::vector<int64_t> traced_ns;        // instrumented (node by node) stage wall times
    std::vector<int64_t> traced_start_ns;  // when each began (sb::now_ns), parallel to traced_ns
    // The tracer's own work inside each traced stage, between the calls (describing the nodes
    // and first touching their outputs in the capturing run; its timestamps), parallel to
    // traced_ns; empty in documents from before it was measured.
    std::vector<int64_t> tracer_ns;
    // Median of traced_ns less tracer_ns (of traced_ns alone when tracer_ns is empty): the
    // traced stage as the node-by-node dispatch leaves it.
    std::optional<double> traced_median_ns;
    std::optional<double> sum_op_ns;
    std::optional<double> sum_call_ns;          // every node, views included
    std::optional<double> sum_call_compute_ns;  // nodes that compute
    std::optional<double> sum_copy_ns;          // split input copies
    std::optional<double> sched_gap_ns;         // scheduler time between nodes of one split
    // traced - calls - copies - gaps: graph build, inputs, outputs (per run, median, when the
    // traced runs dispatched only some nodes alone: StageProfile::isolation_stride)
    std::optional<double> host_ns;
    std::optional<double> overhead_ns;     // traced - plain
    std::optional<double> overhead_ratio;  // traced / plain - 1
    std::optional<double> op_fraction;     // sum_op / plain
    bool op_within_stage = true;           // sum_op <= plain
    // When op_fraction is outside [0.95, 1.05]: what the difference is made of, from the
    // stage's own figures (host work, replayed ops slower alone, machine load); else empty.
    std::string fit_cause;
    // How the op times were taken (profile/op_times.hpp): per backend, the dispatch of a node
    // alone with no work, subtracted from the traced calls of ops timed in situ; how many
    // computing records were timed in situ and how many replayed.
    std::map<std::string, double> node_dispatch_ns;
    int n_op_in_situ = 0;
    int n_op_replayed = 0;
    // Computing records whose op time is the device's own timer (a GPU's timestamp queries,
    // profile/vk_perf_log.hpp).
    int n_op_device_timer = 0;
    std::optional<double> sum_op_in_situ_ns;  // the part of sum_op_ns timed in situ
};

// `stagebench decompose`: a stage's latency split along the accelerator path, after the
// study's OPMASK method, from measurements any ggml backend allows.
struct DecompositionPart {
    std::string name;  // accelerator_compute | conversion | communication | copies |
                       // fallback_ops | host
    std::optional<double> ns;
    std::optional<double> share;  // of the uninstrumented stage time
    std::string note;
};

struct Decomposition {
    std::vector<DecompositionPart> parts;
    std::vector<std::string> accelerators;      // the requested devices whose ops are "the path"
    std::map<std::string, double> dispatch_ns;  // per backend: one dispatch with no work
    int n_dispatches = 0;                       // splits on the accelerators per stage repetition
    int n_accel_ops = 0;                        // computing ops on them
    std::optional<double> per_op_dispatch_ns;   // n_accel_ops x dispatch: ops sent one by one
    std::optional<double> traced_tax_ns;        // sum (call - op) over them, traced node by node
    int n_conversion_ops = 0;                   // mat-muls whose activation conversion was measured
    int n_conversion_missing = 0;               // mat-muls where it could not be separated
};

// An imported NPU profile's pipeline split for one session (HTP0, HTP1, ...) in one stage
// (`import hexagon-profile`, profile/hexagon_pipeline.hpp): the host's batch time against the
// NPU's, and the NPU's trace events (GGML_HEXAGON_PROFILE=3) by kind, each kind as wall time:
// the union of its intervals over the NPU's threads, never their sum. Sessions are never added.
struct NpuPipelinePart {
    // communication_and_queueing (host batch - NPU ops) | batch_overhead (NPU batch - its ops)
    // | activation_quantization | weight_preparation | attention_preparation | dma | compute |
    // output_processing | other
    std::string name;
    double ns = 0;
    std::optional<double> share;  // of envelope_ns
    std::string events;           // the trace events or the times it is made of
};

// One op type's share of the trace events (GGML_HEXAGON_PROFILE=3) in a session's batches of a
// stage, the study's Table V: an event belongs to the op whose window (the op line's start and
// cycles, on the same 32-bit counter) holds it from its start to its stop; each kind is the
// union over the threads within each node, summed over the nodes, at the op line's clock.
// "untraced" is the op's time with no event on any thread. Shares are of wall_ns.
struct NpuOpSplit {
    std::string op;      // as the log names it: "MUL_MAT", "MUL_MAT+ADD", "MUL_MAT_NX"
    int count = 0;       // its nodes in the traced batches
    double wall_ns = 0;  // their op time (the op lines' usec), summed
    int n_events = 0;    // trace-evt lines attributed to them
    std::vector<NpuPipelinePart> parts;
};

struct NpuPipeline {
    std::string device;  // the session: "HTP0"
    int n_batches = 0;
    std::optional<double> host_batch_ns;  // profile-batch batch-dur-usec (PR 22269 to 24954)
    std::optional<double> npu_batch_ns;   // OPBATCH usec (PR 26049)
    std::optional<double> ops_ns;         // the session's op records (usec) in the stage
    // What the shares are of: "host batch", "NPU batch" or "ops" (the first the log has).
    std::string envelope;
    std::optional<double> envelope_ns;
    std::vector<NpuPipelinePart> parts;
    int n_events = 0;    // trace-evt lines of the session in the stage
    int n_unpaired = 0;  // a start without its stop or a stop without its start: not timed
    int n_no_clock = 0;  // events of a batch without a clock (no mhz): not timed
    std::optional<double> traced_busy_ns;  // the union of every timed event on every thread
    // Per op type, largest wall time first (empty without timed trace events in a batch).
    std::vector<NpuOpSplit> by_op;
    // Timed trace-evt lines no op's window holds (the batch's own cache flushes and buffer
    // set-up, an event across two ops, events without a batch line), and their wall time over
    // threads; absent without timed events.
    int n_unattributed = 0;
    std::optional<double> unattributed_ns;
};

struct StageProfile {
    std::string stage;  // prefill | decode | log (imports)
    int n_tokens = 0;
    int kv_depth = 0;
    int n_graphs = 0;     // graphs per stage repetition (micro-batches)
    int traced_reps = 0;  // repetitions the call times are medians of
    // Each traced run dispatched every isolation_stride-th node alone, in turn (the others in
    // chunks between them), so a node's call time is the median of traced_reps /
    // isolation_stride runs; 1: every node alone in every run. Absent in imports and in
    // documents from before it existed (every node alone).
    std::optional<int> isolation_stride;
    // Index into rec.traced_ns of the run whose op start/end times the records keep; absent
    // when no traced run dispatched every node alone: the capturing run's are kept.
    std::optional<int> timeline_rep;
    std::vector<OpRecord> ops;
    std::vector<OpAggregate> by_op, by_layer, by_backend;
    std::vector<size_t> top;  // indices into ops
    std::vector<SplitRecord> splits;
    int n_splits = 0;
    int n_copies = 0;
    std::optional<uint64_t> copy_bytes;
    std::optional<double> copy_ns;
    std::vector<FallbackRow> fallback;
    std::vector<std::string> coverage_devices;  // the devices asked, in the context's order
    std::vector<CoverageRow> coverage;          // by op type; empty for imports
    Reconciliation rec;
    std::optional<Decomposition> decomposition;
    std::vector<NpuPipeline> npu_pipeline;  // imports only: per NPU session
    std::vector<std::string> notes;
};

// What the op profile's load did to the pages its weights sit on (`ops --huge-pages on`,
// engine/huge_pages.hpp): the kernel's transparent-huge-page policy ("madvise", "always",
// "never", "unknown"), the bytes and stretches advised with MADV_HUGEPAGE, and what stood in
// the way ("" when nothing did).
struct HugePagesRecord {
    std::string policy;
    uint64_t advised_bytes = 0;
    int ranges = 0;
    std::string error;
    bool operator==(const HugePagesRecord&) const = default;
};

// The device's own op timer (`ops` on a Vulkan device, profile/vk_perf_log.hpp): a pass of
// its own, in a child process with ggml-vulkan's timestamp-query logger on, whose output is a
// claim read strictly. Op times it gives are marked in each op's op_method.
struct DeviceTimerRecord {
    std::string device;  // "Vulkan0"
    std::string source;  // what timed the ops: "Vulkan timestamp queries (GGML_VK_PERF_LOGGER)"
    std::string error;   // why the pass gave no times ("" when it ran to the end)
    int n_blocks = 0;    // the logger's blocks read (one per graph split on the device)
    int n_sections = 0;  // marked stages read (prefills and decode steps)
    // Lines of its output that could not be read or cannot be true, and blocks dropped
    // ("line N: why: text"), the first kMaxDeviceTimerRejected; n_rejected counts them all.
    std::vector<std::string> rejected;
    int n_rejected = 0;
    std::optional<int64_t> duration_ns;  // the pass's wall time, the child's start to its end
    bool operator==(const DeviceTimerRecord&) const = default;
};
inline constexpr size_t kMaxDeviceTimerRejected = 20;

struct OpsProfile {
    std::string source;  // "trace" (llama.cpp graph) | "hexagon-profile" (imported log)
    std::string model_path;
    std::string devices;                 // as asked, '+'-joined
    std::vector<std::string> requested;  // devices asked for (fallback is measured against)
    std::vector<std::string> backends;   // devices that ran ops
    int n_threads = 0;
    int n_prompt = 0, n_depth = 0;
    int replay_copies = 0;  // copies per replay graph
    std::string method;     // how call and op times were obtained
    // `ops`: the profile's own wall time (model load to the last replay) and its phases
    // ("load"; "stages": the traced and uninstrumented repetitions, the first traced one
    // capturing the graphs; "profile": the stages built, op times, fallback, decomposition); the
    // last-level cache the cold-weight budget was sized from (null: unknown, 64 MiB assumed)
    // and that budget (bytes of weight copies a replayed op cycles through).
    std::optional<int64_t> duration_ns;
    std::map<std::string, int64_t> phase_ns;
    std::optional<uint64_t> llc_bytes;
    std::optional<uint64_t> cold_weight_bytes;
    // `ops`: the weights' pages (null: not advised, --huge-pages off).
    std::optional<HugePagesRecord> huge_pages;
    // `ops` on a device with its own op timer: the pass that read it (null: none ran).
    std::optional<DeviceTimerRecord> device_timer;
    std::vector<StageProfile> stages;
    nlohmann::json import_info;  // imports: lines, unparsed, formats
};

// The result document's name for it.
using OpsSection = OpsProfile;

nlohmann::json to_json(const HugePagesRecord& h);
nlohmann::json to_json(const DeviceTimerRecord& d);
nlohmann::json to_json(const TensorInfo& t);
nlohmann::json to_json(const OpRecord& r);
// The key goes under "op", "layer" (the layer index, null for "none") or "backend".
nlohmann::json to_json(const OpAggregate& a, GroupBy by);
nlohmann::json to_json(const SplitRecord& s);
nlohmann::json to_json(const FallbackRow& f);
nlohmann::json to_json(const CoverageRow& c);
nlohmann::json to_json(const Reconciliation& r);
nlohmann::json to_json(const Decomposition& d);
nlohmann::json to_json(const StageProfile& s);
// "import" only for imports (import_info not null).
nlohmann::json to_json(const OpsProfile& p);

void read(const JsonIn&, HugePagesRecord&);
void read(const JsonIn&, DeviceTimerRecord&);
void read(const JsonIn&, TensorInfo&);
void read(const JsonIn&, OpRecord&);
void read(const JsonIn&, OpAggregate&, GroupBy by);
void read(const JsonIn&, SplitRecord&);
void read(const JsonIn&, FallbackRow&);
void read(const JsonIn&, CoverageRow&);
void read(const JsonIn&, Reconciliation&);
void read(const JsonIn&, DecompositionPart&);
void read(const JsonIn&, Decomposition&);
void read(const JsonIn&, StageProfile&);
void read(const JsonIn&, OpsProfile&);

}  // namespace sb
