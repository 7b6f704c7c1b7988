#include "profile/op_replay.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include <fmt/format.h>

#include "engine/huge_pages.hpp"
#include "ggml-alloc.h"

#include "core/repetitions.hpp"
#include "core/stats.hpp"

namespace sb {

namespace {

bool is_empty_op(ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE ||
           op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

bool is_custom_op(ggml_op op) {
    return op == GGML_OP_MAP_CUSTOM1 || op == GGML_OP_MAP_CUSTOM2 || op == GGML_OP_MAP_CUSTOM3 ||
           op == GGML_OP_CUSTOM;
}

// Bytes a tensor with this layout spans (ggml_nbytes of a tensor with these fields).
size_t span_bytes(const TensorDesc& d) {
    ggml_tensor t{};
    t.type = d.type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        t.ne[i] = d.ne[i];
        t.nb[i] = d.nb[i];
    }
    return ggml_nbytes(&t);
}

size_t dense_bytes(const TensorDesc& d) {
    return ggml_row_size(d.type, d.ne[0]) * static_cast<size_t>(d.ne[1] * d.ne[2] * d.ne[3]);
}

// Host bytes for a tensor of `type` holding n_rows x n_per_row elements in nbytes.
std::vector<uint8_t> make_rows(ggml_type type, int64_t n_per_row, int64_t n_rows, size_t nbytes,
                               std::mt19937& rng) {
    std::vector<uint8_t> out(nbytes, 0);
    const int64_t n = n_per_row * n_rows;
    auto floats = [&](int64_t count) {
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> f(static_cast<size_t>(count));
        for (auto& v : f)
            v = dist(rng);
        return f;
    };
    switch (type) {
        case GGML_TYPE_F32: {
            auto f = floats(static_cast<int64_t>(nbytes / sizeof(float)));
            std::memcpy(out.data(), f.data(), f.size() * sizeof(float));
            return out;
        }
        case GGML_TYPE_F16: {
            auto f = floats(static_cast<int64_t>(nbytes / sizeof(ggml_fp16_t)));
            ggml_fp32_to_fp16_row(f.data(), reinterpret_cast<ggml_fp16_t*>(out.data()),
                                  static_cast<int64_t>(f.size()));
            return out;
        }
        case GGML_TYPE_BF16: {
            auto f = floats(static_cast<int64_t>(nbytes / sizeof(ggml_bf16_t)));
            ggml_fp32_to_bf16_row(f.data(), reinterpret_cast<ggml_bf16_t*>(out.data()),
                                  static_cast<int64_t>(f.size()));
            return out;
        }
        case GGML_TYPE_I8:
        case GGML_TYPE_I16:
        case GGML_TYPE_I32:
        case GGML_TYPE_I64:
            return out;  // zeros: valid row indices, positions and expert ids
        default:
            break;
    }
    // Types ggml_quantize_chunk can produce without an importance matrix (others: zeros).
    static const ggml_type quantizable[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,   GGML_TYPE_Q5_0,
                                            GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,   GGML_TYPE_Q2_K,
                                            GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,   GGML_TYPE_Q5_K,
                                            GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS};
    const bool can_quantize =
        std::find(std::begin(quantizable), std::end(quantizable), type) != std::end(quantizable);
    if (can_quantize && !ggml_quantize_requires_imatrix(type) && n > 0 &&
        n_per_row % ggml_blck_size(type) == 0 &&
        ggml_row_size(type, n_per_row) * static_cast<size_t>(n_rows) <= nbytes) {
        auto f = floats(n);
        ggml_quantize_chunk(type, f.data(), out.data(), 0, n_rows, n_per_row, nullptr);
    }
    return out;
}

// Inputs larger than this repeat a pattern of whole rows about this large (make_data).
constexpr size_t kPatternBytes = 1u << 20;

// make_rows for any size, in time proportional to the bytes: beyond 1 MiB, whole rows of a
// 1 MiB pattern repeated (kernels do not run faster on repeated values; what keeps weights
// cold is cycling through copies larger than the cache, ReplayConfig::input_budget_bytes).
std::vector<uint8_t> make_data(ggml_type type, int64_t n_per_row, int64_t n_rows, size_t nbytes,
                               std::mt19937& rng) {
    const size_t row = n_per_row > 0 ? ggml_row_size(type, n_per_row) : 0;
    if (nbytes <= kPatternBytes || row == 0 || row > kPatternBytes)
        return make_rows(type, n_per_row, n_rows, nbytes, rng);
    const int64_t pat_rows = static_cast<int64_t>(kPatternBytes / row);
    const std::vector<uint8_t> pat =
        make_rows(type, n_per_row, pat_rows, static_cast<size_t>(pat_rows) * row, rng);
    std::vector<uint8_t> out(nbytes);
    for (size_t at = 0; at < nbytes; at += pat.size())
        std::memcpy(out.data() + at, pat.data(), std::min(pat.size(), nbytes - at));
    return out;
}

// Whether t's memory is host memory the process can copy with memcpy: buffers of the CPU
// device, repacked ones included (whose set_tensor repacks, and takes whole tensors only).
bool in_host_memory(const ggml_tensor* t) {
    if (!t->buffer || !t->data)
        return false;
    if (ggml_backend_buffer_is_host(t->buffer))
        return true;
    ggml_backend_dev_t dev = ggml_backend_buft_get_device(ggml_backend_buffer_get_type(t->buffer));
    return dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

// The tensors of one or more no-alloc contexts (one per buffer type), allocated together: in
// buffers of their own, or at the start of a pool's buffer for (buffer type, slot).
class Arena {
  public:
    Arena(ReplayPool* pool, int slot) : pool_(pool), slot_(slot) {}
    ~Arena() {
        for (auto* b : buffers_)
            ggml_backend_buffer_free(b);
        for (auto& [buft, ctx] : ctxs_)
            ggml_free(ctx);
    }
    ggml_context* ctx_for(ggml_backend_buffer_type_t buft, size_t max_tensors) {
        for (auto& [b, c] : ctxs_)
            if (b == buft)
                return c;
        ggml_init_params p{ggml_tensor_overhead() * max_tensors, nullptr, true};
        ggml_context* c = ggml_init(p);
        ctxs_.emplace_back(buft, c);
        return c;
    }
    bool allocate() {
        for (auto& [buft, ctx] : ctxs_) {
            if (!ggml_get_first_tensor(ctx))
                continue;
            if (ggml_backend_buffer_t b = pooled(buft, ctx)) {
                if (!place(b, ctx))
                    return false;
                continue;
            }
            ggml_backend_buffer_t b = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
            if (!b)
                return false;
            buffers_.push_back(b);
        }
        return true;
    }

  private:
    // The pool's buffer for the context's tensors; null when there is no pool or it cannot
    // hold them (larger than the buffer type allows, or out of memory).
    ggml_backend_buffer_t pooled(ggml_backend_buffer_type_t buft, ggml_context* ctx) {
        if (!pool_)
            return nullptr;
        const size_t need = ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, buft) +
                            ggml_backend_buft_get_alignment(buft);
        if (need > ggml_backend_buft_get_max_size(buft))
            return nullptr;
        return pool_->buffer(buft, slot_, need);
    }
    // The context's tensors from the start of b, as ggml_backend_alloc_ctx_tensors_from_buft
    // places them in a buffer of its own.
    static bool place(ggml_backend_buffer_t b, ggml_context* ctx) {
        ggml_tallocr ta = ggml_tallocr_new(b);
        for (ggml_tensor* t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (!t->data && !t->view_src && ggml_tallocr_alloc(&ta, t) != GGML_STATUS_SUCCESS)
                return false;
        for (ggml_tensor* t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            if (!t->data && t->view_src && ggml_backend_view_init(t) != GGML_STATUS_SUCCESS)
                return false;
        return true;
    }

    ReplayPool* pool_;
    int slot_;
    std::vector<std::pair<ggml_backend_buffer_type_t, ggml_context*>> ctxs_;
    std::vector<ggml_backend_buffer_t> buffers_;
};

struct Replica {
    ggml_tensor* tensor = nullptr;  // what the node reads
    ggml_tensor* holder = nullptr;  // what owns the memory (itself or its base)
};

Replica make_replica(ggml_context* ctx, const TensorDesc& d) {
    Replica r;
    if (d.contiguous) {
        r.tensor = ggml_new_tensor(ctx, d.type, GGML_MAX_DIMS, d.ne.data());
        r.holder = r.tensor;
        return r;
    }
    const size_t need = std::max(span_bytes(d), dense_bytes(d));
    const size_t ts = ggml_type_size(d.type);
    const int64_t blck = ggml_blck_size(d.type);
    const int64_t n_el = static_cast<int64_t>((need + ts - 1) / ts) * blck;
    ggml_tensor* base = ggml_new_tensor_1d(ctx, d.type, n_el);
    ggml_tensor* v =
        ggml_view_4d(ctx, base, d.ne[0], d.ne[1], d.ne[2], d.ne[3], d.nb[1], d.nb[2], d.nb[3], 0);
    for (int i = 0; i < GGML_MAX_DIMS; ++i)
        v->nb[i] = d.nb[i];
    // A leaf that aliases base's memory, not a VIEW node to compute.
    v->op = GGML_OP_NONE;
    v->src[0] = nullptr;
    std::memset(v->op_params, 0, sizeof v->op_params);
    r.tensor = v;
    r.holder = base;
    return r;
}

// Computes g and waits for it; false when the backend fails. Reading back a few bytes of the
// last node makes the wait real on backends whose synchronize returns before the work is done
// (ggml-rpc sends the graph and returns; only a request with a reply waits for the server).
bool compute(ggml_backend_t backend, ggml_cgraph* g) {
    ggml_tensor* last = ggml_graph_node(g, -1);
    uint8_t sink[64];
    const size_t probe =
        std::min<size_t>({sizeof sink, ggml_type_size(last->type), ggml_nbytes(last)});
    if (ggml_backend_graph_compute(backend, g) != GGML_STATUS_SUCCESS)
        return false;
    if (probe > 0)
        ggml_backend_tensor_get(last, sink, 0, probe);
    return true;
}

// The graphs of one replay: the first input set, the output and every node (views of one
// output) allocated at once; the further input sets (weights only) only when the op is timed
// with copies, after its one-node time said it must be.
class ReplayGraph {
  public:
    ReplayGraph(const NodeDesc& n, ggml_backend_buffer_type_t def, bool keep_bufts, int n_alloc,
                ReplayPool* pool)
        : n_(n),
          def_(def),
          keep_(keep_bufts),
          n_alloc_(n_alloc),
          rng_(12345),
          pool_(pool),
          rows_(rows_read(n)),
          first_(pool, 0),
          more_(pool, 1) {}
    ~ReplayGraph() {
        if (gctx_)
            ggml_free(gctx_);
    }
    ReplayGraph(const ReplayGraph&) = delete;
    ReplayGraph& operator=(const ReplayGraph&) = delete;

    std::vector<ggml_tensor*> nodes;

    // Set 0, the output and the nodes (reading set 0).
    bool build_first() {
        const size_t max_tensors = 2 * n_.srcs.size() + static_cast<size_t>(n_alloc_) + 8;
        sets_.emplace_back();
        for (const auto& src : n_.srcs)
            sets_[0].push_back(src ? make_replica(first_.ctx_for(buft_for(*src), max_tensors), *src)
                                   : Replica{});
        ggml_context* dctx = first_.ctx_for(
            keep_ && n_.dst.buft && usable(n_.dst.buft) ? n_.dst.buft : def_, max_tensors);
        const size_t out_need = std::max(span_bytes(n_.dst), dense_bytes(n_.dst));
        const size_t ts = ggml_type_size(n_.dst.type);
        const int64_t out_el =
            static_cast<int64_t>((out_need + ts - 1) / ts) * ggml_blck_size(n_.dst.type);
        ggml_tensor* out_base = ggml_new_tensor_1d(dctx, n_.dst.type, out_el);
        const auto& d = n_.dst;
        for (int i = 0; i < n_alloc_; ++i) {
            ggml_tensor* t = ggml_view_4d(dctx, out_base, d.ne[0], d.ne[1], d.ne[2], d.ne[3],
                                          d.nb[1], d.nb[2], d.nb[3], 0);
            for (int j = 0; j < GGML_MAX_DIMS; ++j)
                t->nb[j] = d.nb[j];
            t->op = n_.op;
            std::memcpy(t->op_params, n_.op_params.data(), sizeof t->op_params);
            for (int j = 0; j < GGML_MAX_SRC; ++j)
                t->src[j] = nullptr;
            for (size_t j = 0; j < sets_[0].size(); ++j)
                t->src[j] = sets_[0][j].tensor;
            t->flags |= GGML_TENSOR_FLAG_COMPUTE;  // backends skip nodes without it
            ggml_format_name(t, "replay_%d", i);
            nodes.push_back(t);
        }
        ggml_init_params gp{
            ggml_graph_overhead_custom(1, false) +
                3 * ggml_graph_overhead_custom(static_cast<size_t>(n_alloc_), false) + 1024,
            nullptr, true};
        gctx_ = ggml_init(gp);
        return first_.allocate();
    }

    // Input sets 1..k-1 (distinct weights; other inputs shared with set 0), node i reading set
    // i % k.
    bool add_sets(int k) {
        const size_t max_tensors = 2 * n_.srcs.size() * static_cast<size_t>(k) + 8;
        for (int s = 1; s < k; ++s) {
            sets_.emplace_back();
            for (size_t j = 0; j < n_.srcs.size(); ++j) {
                const auto& src = n_.srcs[j];
                sets_[s].push_back(
                    src && src->weight
                        ? make_replica(more_.ctx_for(buft_for(*src), max_tensors), *src)
                        : sets_[0][j]);
            }
        }
        if (!more_.allocate())
            return false;
        for (size_t i = 0; i < nodes.size(); ++i)
            for (size_t j = 0; j < sets_[0].size(); ++j)
                nodes[i]->src[j] = sets_[i % sets_.size()][j].tensor;
        return true;
    }

    // Input data of sets [from, to): the real bytes where captured, else generated once per
    // source; sets past 0 get only the weights (the rest is shared), copied from set 0 where
    // both lie in host memory (a repacked weight is then repacked once, not once per set).
    void fill_inputs(int from, int to) {
        host_.resize(n_.srcs.size());
        for (size_t j = 0; j < n_.srcs.size(); ++j) {
            if (!n_.srcs[j] || (from > 0 && !n_.srcs[j]->weight))
                continue;
            ggml_tensor* h0 = sets_[0][j].holder;
            const size_t nb = ggml_nbytes(h0);
            for (int s = from; s < to && s < static_cast<int>(sets_.size()); ++s) {
                ggml_tensor* h = sets_[s][j].holder;
                if (s > 0 && in_host_memory(h) && in_host_memory(h0))
                    std::memcpy(h->data, h0->data, nb);
                else
                    set_data(j, h, nb);
            }
        }
    }

    // Wall time of computing the first `count` copies in one graph: {minimum, median}. The
    // minimum is the op's cost with the least interference (other load preempts, never speeds
    // up); slopes are taken between minima. One untimed computation warms up, then the
    // repetitions run through the one loop's core (core/repetitions.hpp) on cfg.clock, under
    // replay_rule.
    std::pair<double, double> measure(ggml_backend_t backend, int count, int min_reps,
                                      const ReplayConfig& cfg, bool& ok) {
        ggml_cgraph* g = ggml_new_graph_custom(gctx_, static_cast<size_t>(count), false);
        for (int i = 0; i < count; ++i)
            ggml_graph_add_node(g, nodes[static_cast<size_t>(i)]);
        ok = compute(backend, g);  // warm: work buffers, caches, the remote graph
        Repetitions reps(replay_rule(cfg, min_reps), cfg.clock);
        while (ok && reps.has_repeats_remaining())
            ok = reps.time([&] { return compute(backend, g); });
        if (reps.samples_ns().empty())
            return {0.0, 0.0};
        return {static_cast<double>(*reps.min_ns()), *median_ns(reps.samples_ns())};
    }

  private:
    // Source j's data into h (nb bytes): the captured bytes, else generated (make_data). Large
    // inputs repeat the pool's pattern for their type and row length, written straight into
    // host buffers; a buffer that takes whole tensors only (repacked) gets them from the pool's
    // scratch.
    void set_data(size_t j, ggml_tensor* h, size_t nb) {
        const auto& real = n_.srcs[j]->data;
        if (real && real->size() <= nb) {
            ggml_backend_tensor_set(h, real->data(), 0, real->size());
            return;
        }
        const int64_t per_row = h->ne[0];
        const size_t row = per_row > 0 ? ggml_row_size(h->type, per_row) : 0;
        if (!pool_ || !host_[j].empty() || nb <= kPatternBytes || row == 0 || row > kPatternBytes) {
            if (host_[j].empty()) {
                const int64_t rows = ggml_nelements(h) / std::max<int64_t>(1, per_row);
                host_[j] = make_data(h->type, per_row, rows, nb, rng_);
            }
            ggml_backend_tensor_set(h, host_[j].data(), 0, nb);
            return;
        }
        const std::vector<uint8_t>& pat = pool_->pattern(h->type, per_row);
        if (j == 0 && rows_ && h->nb[1] == row && ggml_backend_buffer_is_host(h->buffer)) {
            // Only the rows the op reads: the rest of the table is never touched.
            const size_t pat_rows = pat.size() / row;
            for (int64_t r : *rows_)
                ggml_backend_tensor_set(h, pat.data() + static_cast<size_t>(r) % pat_rows * row,
                                        static_cast<size_t>(r) * row, row);
            return;
        }
        if (ggml_backend_buffer_is_host(h->buffer)) {
            for (size_t at = 0; at < nb; at += pat.size())
                ggml_backend_tensor_set(h, pat.data(), at, std::min(pat.size(), nb - at));
            return;
        }
        uint8_t* buf = pool_->scratch(nb);
        for (size_t at = 0; at < nb; at += pat.size())
            std::memcpy(buf + at, pat.data(), std::min(pat.size(), nb - at));
        ggml_backend_tensor_set(h, buf, 0, nb);
    }

    // Where a replica of d goes: its own buffer type when the replay keeps them and the device
    // can use it, else the device's default. A device cannot compute on memory it cannot use:
    // in the real graph the scheduler copied such an input to it first.
    ggml_backend_buffer_type_t buft_for(const TensorDesc& d) const {
        return keep_ && d.buft && d.contiguous && usable(d.buft) ? d.buft : def_;
    }
    bool usable(ggml_backend_buffer_type_t buft) const {
        ggml_backend_dev_t dev = ggml_backend_buft_get_device(def_);
        return !dev || buft == def_ || ggml_backend_dev_supports_buft(dev, buft);
    }

    const NodeDesc& n_;
    ggml_backend_buffer_type_t def_;
    bool keep_;
    int n_alloc_;
    std::mt19937 rng_;
    ReplayPool* pool_;
    std::optional<std::vector<int64_t>> rows_;  // the only rows of source 0 read (GET_ROWS)
    Arena first_, more_;
    std::vector<std::vector<Replica>> sets_;
    std::vector<std::vector<uint8_t>> host_;
    ggml_context* gctx_ = nullptr;
};

}  // namespace

TensorDesc describe_tensor(const ggml_tensor* t, bool with_data) {
    TensorDesc d;
    d.name = t->name;
    d.type = t->type;
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        d.ne[i] = t->ne[i];
        d.nb[i] = t->nb[i];
    }
    d.contiguous = ggml_is_contiguous(t);
    const ggml_tensor* mem = t->view_src ? t->view_src : t;
    ggml_backend_buffer_t buf = mem->buffer ? mem->buffer : t->buffer;
    if (buf) {
        d.buft = ggml_backend_buffer_get_type(buf);
        if (ggml_backend_dev_t dev = d.buft ? ggml_backend_buft_get_device(d.buft) : nullptr)
            d.buffer_device = ggml_backend_dev_name(dev);
    }
    d.nbytes = ggml_nbytes(t);
    d.weight = buf && ggml_backend_buffer_get_usage(buf) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS;
    d.sched_copy = std::count(d.name.begin(), d.name.end(), '#') >= 2;
    // Leaves of the compute buffer are graph inputs or scheduler copies: small, and their
    // values can matter (masks, indices). Weights and the KV cache keep random data.
    const bool input = (t->flags & GGML_TENSOR_FLAG_INPUT) ||
                       (mem->op == GGML_OP_NONE && buf &&
                        ggml_backend_buffer_get_usage(buf) == GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    if (with_data && input && buf && t->data && d.nbytes > 0 && d.nbytes <= (64u << 20)) {
        auto bytes = std::make_shared<std::vector<uint8_t>>(d.nbytes);
        ggml_backend_tensor_get(t, bytes->data(), 0, d.nbytes);
        d.data = std::move(bytes);
    }
    return d;
}

TensorDesc contiguous_desc(const std::string& name, ggml_type type,
                           const std::array<int64_t, GGML_MAX_DIMS>& ne) {
    TensorDesc d;
    d.name = name;
    d.type = type;
    d.ne = ne;
    d.nb[0] = ggml_type_size(type);
    d.nb[1] = ggml_row_size(type, ne[0]);
    for (int i = 2; i < GGML_MAX_DIMS; ++i)
        d.nb[i] = d.nb[i - 1] * static_cast<size_t>(ne[i - 1]);
    d.contiguous = true;
    d.nbytes = d.nb[3] * static_cast<size_t>(ne[3]);
    return d;
}

std::optional<std::vector<int64_t>> rows_read(const NodeDesc& n) {
    if (n.op != GGML_OP_GET_ROWS || n.srcs.size() < 2 || !n.srcs[0] || !n.srcs[1])
        return std::nullopt;
    const TensorDesc& table = *n.srcs[0];
    const TensorDesc& idx = *n.srcs[1];
    if (!table.contiguous || table.ne[2] != 1 || table.ne[3] != 1 || idx.type != GGML_TYPE_I32 ||
        !idx.contiguous || !idx.data)
        return std::nullopt;
    const int64_t n_idx = idx.ne[0] * idx.ne[1] * idx.ne[2] * idx.ne[3];
    if (n_idx < 0 || idx.data->size() < static_cast<size_t>(n_idx) * sizeof(int32_t))
        return std::nullopt;
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < n_idx; ++i) {
        int32_t r = 0;
        std::memcpy(&r, idx.data->data() + static_cast<size_t>(i) * sizeof r, sizeof r);
        if (r >= 0 && r < table.ne[1])
            rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return rows;
}

std::optional<ggml_type> activation_type_for(ggml_type w) {
    switch (w) {
        case GGML_TYPE_F16:
            return GGML_TYPE_F16;
        case GGML_TYPE_BF16:
            return GGML_TYPE_BF16;
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_IQ4_NL:
            return GGML_TYPE_Q8_0;
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_1:
            return GGML_TYPE_Q8_1;
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_IQ4_XS:
            return GGML_TYPE_Q8_K;
        default:
            return std::nullopt;
    }
}

NodeDesc NodeDesc::capture(const ggml_tensor* t, bool with_data) {
    NodeDesc n;
    n.op = t->op;
    n.op_desc = ggml_op_desc(t);
    std::memcpy(n.op_params.data(), t->op_params, sizeof t->op_params);
    n.dst = describe_tensor(t);
    int last = -1;
    for (int i = 0; i < GGML_MAX_SRC; ++i)
        if (t->src[i])
            last = i;
    for (int i = 0; i <= last; ++i) {
        if (t->src[i])
            n.srcs.push_back(describe_tensor(t->src[i], with_data));
        else
            n.srcs.push_back(std::nullopt);
    }
    return n;
}

std::string NodeDesc::signature() const {
    auto tensor_sig = [](const TensorDesc& d) {
        return fmt::format("{}[{},{},{},{}|{},{},{},{}]@{}{}", static_cast<int>(d.type), d.ne[0],
                           d.ne[1], d.ne[2], d.ne[3], d.nb[0], d.nb[1], d.nb[2], d.nb[3],
                           fmt::ptr(d.buft), d.weight ? "w" : "");
    };
    std::string s = fmt::format("{}:", static_cast<int>(op));
    for (int32_t p : op_params)
        s += fmt::format("{:x},", static_cast<uint32_t>(p));
    s += " -> " + tensor_sig(dst);
    for (const auto& src : srcs)
        s += " | " + (src ? tensor_sig(*src) : std::string("null"));
    return s;
}

ReplayPool::~ReplayPool() {
    for (auto& [key, b] : buffers_)
        ggml_backend_buffer_free(b);
}

ggml_backend_buffer_t ReplayPool::buffer(ggml_backend_buffer_type_t buft, int slot, size_t size) {
    ggml_backend_buffer_t& b = buffers_[{buft, slot}];
    if (b && ggml_backend_buffer_get_size(b) >= size)
        return b;
    if (b)
        ggml_backend_buffer_free(b);
    b = ggml_backend_buft_alloc_buffer(buft, size);
    // The CPU's buffer types (its repacking one too, which is not "host") hold process memory;
    // one smaller than two huge pages may lie in the malloc heap and holds no whole one anyway.
    constexpr size_t kMinAdvised = size_t{4} << 20;
    ggml_backend_dev_t dev = b ? ggml_backend_buft_get_device(buft) : nullptr;
    if (b && huge_pages_ && dev && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU &&
        ggml_backend_buffer_get_size(b) >= kMinAdvised)
        advise_huge_pages(ggml_backend_buffer_get_base(b), ggml_backend_buffer_get_size(b));
    return b;
}

uint8_t* ReplayPool::scratch(size_t size) {
    if (size > scratch_size_) {
        scratch_.reset();  // the old one goes first: peak memory is the larger one alone
        scratch_.reset(new uint8_t[size]);
        scratch_size_ = size;
    }
    return scratch_.get();
}

const std::vector<uint8_t>& ReplayPool::pattern(ggml_type type, int64_t n_per_row) {
    auto [it, fresh] = patterns_.try_emplace({static_cast<int>(type), n_per_row});
    if (fresh) {
        std::mt19937 rng(12345);
        const size_t row = ggml_row_size(type, n_per_row);
        const int64_t rows = static_cast<int64_t>(std::max<size_t>(1, kPatternBytes / row));
        it->second = make_rows(type, n_per_row, rows, static_cast<size_t>(rows) * row, rng);
    }
    return it->second;
}

RepeatRule replay_rule(const ReplayConfig& cfg, int min_reps) {
    RepeatRule rule;
    rule.min_reps = min_reps;
    rule.max_reps = cfg.max_reps;
    rule.min_spent_ns = cfg.min_spent_ns;
    rule.max_spent_ns = cfg.max_spent_ns;
    const double settle = cfg.settle;
    rule.enough = [settle](const std::vector<int64_t>& samples) {
        const double lo = static_cast<double>(*std::min_element(samples.begin(), samples.end()));
        return *median_ns(samples) <= lo * (1.0 + settle);
    };
    return rule;
}

ReplayResult replay_op(const NodeDesc& n, ggml_backend_t backend, bool keep_bufts,
                       const ReplayConfig& cfg, ReplayPool* pool) {
    ReplayResult res;
    const std::string where = ggml_backend_name(backend);
    if (is_empty_op(n.op)) {
        res.op_ns = 0.0;
        res.method = "no compute (view of memory): zero op time";
        return res;
    }
    if (is_custom_op(n.op)) {
        res.method = "custom op: not replayable";
        return res;
    }
    const int copies = std::max(1, cfg.copies);
    const int n_alloc = std::max(copies, cfg.max_copies);
    ggml_backend_buffer_type_t def = ggml_backend_get_default_buffer_type(backend);
    ReplayGraph rg(n, def, keep_bufts, n_alloc, pool);
    if (!rg.build_first()) {
        res.method = "cannot allocate replay buffers on " + where;
        return res;
    }
    if (!ggml_backend_supports_op(backend, rg.nodes[0])) {
        res.method = "not supported by " + where;
        return res;
    }
    rg.fill_inputs(0, 1);
    bool ok = true;
    const auto [t1, t1_median] = rg.measure(backend, 1, std::max(5, cfg.min_reps), cfg, ok);
    if (!ok) {
        res.method = "compute failed on " + where;
        return res;
    }
    res.isolated_ns = t1_median;
    res.isolated_min_ns = t1;
    if (cfg.alone_only) {
        res.copies = 1;
        res.op_ns = std::max(0.0, t1 - cfg.dispatch_ns.value_or(0.0));
        res.method = cfg.dispatch_ns
                         ? fmt::format(
                               "replayed alone on {}, less its {:.1f} µs "
                               "round trip (a no-work op's)",
                               where, *cfg.dispatch_ns / 1e3)
                         : fmt::format("replayed alone on {} (round trip included)", where);
        return res;
    }
    if (cfg.dispatch_ns && *cfg.dispatch_ns > 0 && t1 >= cfg.alone_factor * *cfg.dispatch_ns) {
        // The one dispatch is a small fraction of the op: copies would add time, not accuracy.
        res.copies = 1;
        res.op_ns = std::max(0.0, t1 - *cfg.dispatch_ns);
        res.method = fmt::format("replayed alone on {}, less its {:.1f} µs dispatch", where,
                                 *cfg.dispatch_ns / 1e3);
        return res;
    }
    // Only weights cycle through distinct copies: in the real graph a weight comes back only
    // after the rest of the model went through the caches, while activations come straight
    // from the op before (hot).
    size_t set_bytes = 0;
    for (const auto& src : n.srcs)
        if (src && src->weight)
            set_bytes += std::max(span_bytes(*src), dense_bytes(*src));
    const size_t budget_sets = set_bytes > 0 ? cfg.input_budget_bytes / set_bytes : 1;
    const int k = static_cast<int>(std::clamp<size_t>(
        budget_sets, 1, static_cast<size_t>(std::min(n_alloc, std::max(1, cfg.max_input_sets)))));
    if (!rg.add_sets(k)) {
        res.method = "cannot allocate replay buffers on " + where;
        return res;
    }
    rg.fill_inputs(1, k);
    int count = copies;
    if (t1 * copies > static_cast<double>(cfg.max_graph_ns))
        count = std::max(
            1, static_cast<int>(static_cast<double>(cfg.max_graph_ns) / std::max(1.0, t1)));
    double tn = count > 1 ? rg.measure(backend, count, cfg.min_reps, cfg, ok).first : t1;
    double slope = count > 1 ? (tn - t1) / (count - 1) : tn;
    if (ok && count > 1 && count < n_alloc && tn - t1 < t1) {
        // One dispatch still outweighs the copies' compute: more copies.
        int more = slope > 0 ? static_cast<int>(std::ceil(2.0 * t1 / slope)) : n_alloc;
        more = std::clamp(more, count + 1, n_alloc);
        tn = rg.measure(backend, more, cfg.min_reps, cfg, ok).first;
        count = more;
        slope = (tn - t1) / (count - 1);
    }
    if (!ok) {
        res.method = "compute failed on " + where;
        return res;
    }
    const double avg = tn / count;
    if (std::getenv("STAGEBENCH_REPLAY_DEBUG"))
        std::fprintf(stderr, "replay %s on %s: t1 %.0f ns, t%d %.0f ns, slope %.1f, avg %.1f\n",
                     n.op_desc.c_str(), where.c_str(), t1, count, tn, slope, avg);
    res.copies = count;
    if (count > 1 && slope > 0) {
        res.op_ns = std::min(slope, avg);
        res.method =
            fmt::format("replayed 1x and {}x on {} ({} input set{}); {}", count, where, k,
                        k == 1 ? "" : "s", slope < avg ? "slope (dispatch removed)" : "average");
    } else {
        res.op_ns = avg;
        res.method = fmt::format("replayed {}x on {} ({} input set{}); average (upper bound)",
                                 count, where, k, k == 1 ? "" : "s");
    }
    return res;
}

}  // namespace sb
