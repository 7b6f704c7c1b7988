#pragma once
// Per-operator records and their aggregates: the common currency of `stagebench ops` (a traced
// llama.cpp graph) and `stagebench import hexagon-profile` (a backend's own profile log). Pure
// data and arithmetic, no ggml: every function here is deterministic and unit-tested.
//
// Times are nanoseconds (double: replayed op times are averages over many copies). Two times
// per op, after the study this tool generalises:
//   call_ns  host wall time of the op dispatched on its own and waited for (dispatch +
//            transport + synchronisation + compute);
//   op_ns    compute time with dispatch amortised (the op replayed many times back to back in
//            one graph, total / count), or the time the backend itself reports.
// Missing is not zero: an op whose time could not be measured has std::nullopt.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
};

// True for ggml ops that only reinterpret memory (NONE, VIEW, RESHAPE, PERMUTE, TRANSPOSE).
bool is_no_compute_op(const std::string& op);

// Layer index from a tensor name: "ffn_up-3", "blk.3.attn_q.weight", "cache_k_l3 (view)",
// scheduler copies "CPU#attn_norm-3#0". nullopt for names outside any layer ("norm",
// "result_output", "inp_embd").
std::optional<int> parse_layer(const std::string& name);

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

// Groups records. Op and backend groups are sorted by call time (op time when no call time),
// largest first; layer groups by layer index with "none" last. share_denominator_ns is the
// time shares are taken of (the uninstrumented stage time, or the total op time of a log);
// nullopt leaves share null.
std::vector<OpAggregate> aggregate(const std::vector<OpRecord>& records, GroupBy by,
                                   std::optional<double> share_denominator_ns);

// Indices of the n records with the largest call time (op time when absent), largest first.
std::vector<size_t> top_records(const std::vector<OpRecord>& records, size_t n);

// Sums over records; nullopt when no record has the value.
std::optional<double> sum_op_ns(const std::vector<OpRecord>& records);
std::optional<double> sum_call_ns(const std::vector<OpRecord>& records, bool compute_only);

nlohmann::json to_json(const TensorInfo& t);
nlohmann::json to_json(const OpRecord& r);
nlohmann::json to_json(const OpAggregate& a, GroupBy by);

// "256x768" (trailing 1s dropped, at least one dimension).
std::string shape_text(const std::vector<int64_t>& ne);

}  // namespace sb
