#pragma once
// The result of `stagebench ops` (and of `import hexagon-profile`): per stage, every op with
// its op time and call time, aggregates by op type / layer / backend, graph splits and the
// copies between backends, ops that fell back from the requested backend, and the
// reconciliation of summed op and call times with the uninstrumented stage time. Stored in
// ResultDocument::extra["ops"]. Times in ns; fractions as fractions (0.25 = 25 %).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/warning.hpp"
#include "profile/op_record.hpp"

namespace sb {

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

// Ops of one type that ran on a backend other than the requested one.
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
    std::string note;                       // e.g. "not supported by BLAS"
};

struct Reconciliation {
    std::vector<int64_t> plain_ns;        // uninstrumented stage times, one per repetition
    std::vector<int64_t> plain_start_ns;  // when each began (sb::now_ns), parallel to plain_ns
    std::optional<double> plain_median_ns;
    std::vector<int64_t> traced_ns;        // instrumented (node by node) stage wall times
    std::vector<int64_t> traced_start_ns;  // when each began (sb::now_ns), parallel to traced_ns
    std::optional<double> traced_median_ns;
    std::optional<double> sum_op_ns;
    std::optional<double> sum_call_ns;          // every node, views included
    std::optional<double> sum_call_compute_ns;  // nodes that compute
    std::optional<double> sum_copy_ns;          // split input copies
    std::optional<double> sched_gap_ns;         // scheduler time between nodes of one split
    std::optional<double> host_ns;         // traced - calls - copies - gaps: graph build, inputs,
                                           // outputs
    std::optional<double> overhead_ns;     // traced - plain
    std::optional<double> overhead_ratio;  // traced / plain - 1
    std::optional<double> op_fraction;     // sum_op / plain
    bool op_within_stage = true;           // sum_op <= plain
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

struct StageProfile {
    std::string stage;  // prefill | decode | log (imports)
    int n_tokens = 0;
    int kv_depth = 0;
    int n_graphs = 0;     // graphs per stage repetition (micro-batches)
    int traced_reps = 0;  // repetitions the call times are medians of
    // Index into rec.traced_ns of the run whose op start/end times the records keep.
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
    Reconciliation rec;
    std::optional<Decomposition> decomposition;
    std::vector<std::string> notes;
};

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
    std::vector<StageProfile> stages;
    nlohmann::json import_info;  // imports: lines, unparsed, formats
};

// Fills the aggregates, top ops, split/copy totals and the reconciliation sums from ops,
// splits and rec.plain_ns / rec.traced_ns. Shares are of the uninstrumented stage time when
// known, else of the summed op time. Adds a note when op time exceeds the stage time.
void finalize_stage(StageProfile& s, size_t top_n = 10);

// Splits the stage (ops, splits, rec must be final) into the parts of Decomposition:
// accelerator compute (op times of computing ops on `accelerators`, less conversion),
// conversion (conversion_ns per op index, where measured), communication (one dispatch per
// accelerator split: dispatch_ns of its backend), copies (split input copies), fallback ops
// (op times of computing ops elsewhere) and host (the uninstrumented stage time left over).
// Every part but host is >= 0. A negative host says in its note that the parts overlap; a part
// larger than the uninstrumented stage time says in its note that it exceeds it.
Decomposition decompose_stage(const StageProfile& s, const std::vector<std::string>& accelerators,
                              const std::map<std::string, double>& dispatch_ns,
                              const std::vector<std::optional<double>>& conversion_ns);

// Warnings a reader must see (op time above the stage time, replays that failed).
Warnings profile_warnings(const OpsProfile& p);

nlohmann::json to_json(const SplitRecord& s);
nlohmann::json to_json(const FallbackRow& f);
nlohmann::json to_json(const Reconciliation& r);
nlohmann::json to_json(const Decomposition& d);
nlohmann::json to_json(const StageProfile& s);
nlohmann::json to_json(const OpsProfile& p);

}  // namespace sb
