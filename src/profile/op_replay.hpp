#pragma once
// Op replay: the compute time of one ggml node with dispatch removed. The node is rebuilt from
// a description captured while llama.cpp ran it (op, parameters, shapes, strides, types,
// buffer types), then copies of it with fresh inputs of the same layout are computed back to
// back in one graph on a backend (see ReplayConfig for how the op time is taken). Internal to
// src/profile (ggml types in the interface).
//
// Inputs: the real values of graph inputs and scheduler copies when captured (positions,
// masks, row indices); otherwise random floats (F32/F16/BF16), ggml-quantized random floats
// (quantized types), zeros (integer types: row indices and positions stay in range). Weights
// cycle through distinct copies (ReplayConfig::input_budget_bytes) so that a memory-bound op
// streams them as the real graph does; activations are shared, hot as in the real graph.
// Outputs of all copies share one buffer.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/repetitions.hpp"
#include "ggml-backend.h"
#include "ggml.h"

namespace sb {

struct TensorDesc {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    std::array<int64_t, GGML_MAX_DIMS> ne{};
    std::array<size_t, GGML_MAX_DIMS> nb{};
    bool contiguous = true;
    ggml_backend_buffer_type_t buft = nullptr;  // of its memory (the view source's for views)
    std::string buffer_device;  // device of that buffer type ("CPU", "RPC0"); may be empty
    size_t nbytes = 0;
    bool weight = false;      // in a weights buffer (model parameters)
    bool sched_copy = false;  // a copy the scheduler made from another backend ("CPU#x#0")
    // The real bytes (ggml_nbytes, from the tensor's data pointer) of graph inputs and
    // scheduler copies: positions, masks, row indices keep their values in replays (a
    // flash-attention kernel skips masked positions; random masks would cost it more).
    std::shared_ptr<const std::vector<uint8_t>> data;
};

struct NodeDesc {
    ggml_op op = GGML_OP_NONE;
    std::string op_desc;  // ggml_op_desc()
    std::array<int32_t, GGML_MAX_OP_PARAMS / sizeof(int32_t)> op_params{};
    TensorDesc dst;
    std::vector<std::optional<TensorDesc>> srcs;  // trailing empty sources dropped

    // with_data: also read the real data of the inputs that have it (see TensorDesc::data).
    static NodeDesc capture(const ggml_tensor* t, bool with_data);
    // Everything that decides the op's cost (op, parameters, layouts, types, buffer types);
    // not names or addresses. Equal signatures replay once.
    std::string signature() const;
};

// The nodes one profile captured, by CapturedNode::id (profile/op_trace.hpp): shared by the
// tracer that captures them and the replayer that times them.
struct NodeStore {
    std::vector<NodeDesc> nodes;
};

TensorDesc describe_tensor(const ggml_tensor* t, bool with_data = false);

// A contiguous tensor description of `type` and shape ne (no buffer type, no data).
TensorDesc contiguous_desc(const std::string& name, ggml_type type,
                           const std::array<int64_t, GGML_MAX_DIMS>& ne);

// The rows of its first source that GET_ROWS node n reads (distinct, ascending), from the
// captured row indices; nullopt when that is not known (another op, indices not captured,
// a table of more than two dimensions or not contiguous). A replay fills only these rows of
// the table: a token-embedding lookup reads a row or a prompt's rows of a table of 100k+.
std::optional<std::vector<int64_t>> rows_read(const NodeDesc& n);

// The type the CPU backend converts mat-mul activations to for weights of type w (its
// vec_dot_type): Q8_0 for Q4_0, Q8_K for the K-quants, ... nullopt for F32 (no conversion) and
// types not listed here.
std::optional<ggml_type> activation_type_for(ggml_type w);

// Op time = min(slope, average): with T(1) the op alone and T(n) n copies in one graph (each
// the minimum over repetitions: interference only ever adds time),
// slope = (T(n) - T(1)) / (n - 1) removes the one dispatch the graph still pays, average =
// T(n) / n is the upper bound used when the slope is lost in noise. When one dispatch still
// outweighs the n ops (an RPC round trip against a tiny op), n grows up to max_copies. When
// the backend's dispatch is known and T(1) is at least alone_factor times it, the op is timed
// alone: T(1) less the dispatch (the copies would only add time, not accuracy).
// Repetitions (replay_rule, through the one loop's core, core/repetitions.hpp, on clock): at
// least min_reps and min_spent_ns, then until the minimum is within settle of the median (a
// steady op: more samples would not lower it) or max_spent_ns was spent on the graph.
struct ReplayConfig {
    int copies = 16;       // nodes per replay graph
    int max_copies = 256;  // when dispatch dominates
    int max_input_sets = 32;
    // Distinct copies of the weights cycled up to about this many bytes, so that a weight is
    // as cold in the replay as in the real graph (ReplaySetup::cold_weight_bytes).
    size_t input_budget_bytes = 0;
    int64_t max_graph_ns = 500'000'000;  // fewer copies when one graph would take longer
    int min_reps = 3;                    // graph computations timed at least
    double settle = 0.02;                // (median - min) / min that ends the repetitions
    int64_t max_spent_ns = 20'000'000;   // time spent on one graph's repetitions at most
    // ... but at least this much (and max_spent_ns no longer applies below it): steadier
    // minima where two replays are subtracted (decompose's conversion, dispatch and compute).
    int64_t min_spent_ns = 0;
    int max_reps = 50;
    std::optional<double> dispatch_ns;  // the backend's no-work dispatch, when known
    double alone_factor = 50;
    // Every op timed alone (T(1) less dispatch_ns, or T(1) itself while the dispatch is being
    // measured), never in copies: on a GPU, where one op is one submission and its wait, the
    // no-work op's round trip (GgmlOpReplayer::dispatch_ns) is its T(1).
    bool alone_only = false;
    // What the repetitions are timed on; null: sb::now_ns. A simulated clock in tests.
    Clock clock;
};

// The rule of one replay graph's repetitions: at least min_reps (ReplayConfig::min_reps, or
// more for the one-node graph) and cfg.min_spent_ns, at most cfg.max_reps; in between, until
// the least sample is within cfg.settle of the median or cfg.max_spent_ns was spent.
RepeatRule replay_rule(const ReplayConfig& cfg, int min_reps);

// Memory one replay leaves to the next: a backend buffer per buffer type and slot (the replay
// graph's tensors are placed in it afresh each time; slots never share memory) and the host
// patterns generated inputs are cut from. A profile replays tens of ops, each with up to
// ReplayConfig::input_budget_bytes of weight copies: allocating, first touching and generating
// that memory for every replay took most of the profile phase (README, bench/ops_speed.sh).
// Contents are unspecified between replays (each replay writes its inputs). Owned by the
// caller; one replay at a time; frees its buffers when destroyed (after the replays).
class ReplayPool {
  public:
    ReplayPool() = default;
    ~ReplayPool();
    ReplayPool(const ReplayPool&) = delete;
    ReplayPool& operator=(const ReplayPool&) = delete;

    // A buffer of buft with at least size bytes for slot, grown (reallocated) when smaller;
    // null when it cannot be allocated. Valid until the next call for the same buft and slot.
    // The CPU's buffers are advised onto transparent huge pages when huge_pages is set
    // (engine/huge_pages.hpp), as the profiled model's weights were: a cold weight copy sits on
    // the pages the weight it stands for sat on.
    ggml_backend_buffer_t buffer(ggml_backend_buffer_type_t buft, int slot, size_t size);
    void set_huge_pages(bool on) { huge_pages_ = on; }
    // Host memory of at least size bytes, contents unspecified; valid until the next call.
    uint8_t* scratch(size_t size);
    // The generated rows (about 1 MiB of whole rows of n_per_row elements of type) that large
    // inputs of that type and row length repeat; made once.
    const std::vector<uint8_t>& pattern(ggml_type type, int64_t n_per_row);

  private:
    std::map<std::pair<ggml_backend_buffer_type_t, int>, ggml_backend_buffer_t> buffers_;
    std::unique_ptr<uint8_t[]> scratch_;
    size_t scratch_size_ = 0;
    std::map<std::pair<int, int64_t>, std::vector<uint8_t>> patterns_;
    bool huge_pages_ = false;
};

struct ReplayResult {
    std::optional<double> op_ns;        // per op, dispatch removed (see ReplayConfig)
    std::optional<double> isolated_ns;  // the op alone in a one-node graph: median wall time
    // ... and its least wall time, the one the op time's minima go with: the least
    // interference (ggml_replayer.cpp's no-work dispatch is this less the op time).
    std::optional<double> isolated_min_ns;
    int copies = 0;
    std::string method;  // "replayed 16x on CPU", or why there is no time
};

// Replays n on backend. keep_bufts: inputs go to the buffer types the original used (the
// backend that ran it: keeps repacked CPU weights repacked); else to the backend's default
// buffer type (replaying on another backend). pool: memory reused across replays (null: the
// replay allocates its own). Never throws for an op it cannot run: the result says why and
// has no time.
ReplayResult replay_op(const NodeDesc& n, ggml_backend_t backend, bool keep_bufts,
                       const ReplayConfig& cfg, ReplayPool* pool = nullptr);

}  // namespace sb
