#include "profile/tracer.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include <unistd.h>

#include "core/clock.hpp"
#include "core/utf8.hpp"
#include "engine/backends.hpp"
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include "profile/ggml_replayer.hpp"
#include "profile/op_record.hpp"
#include "profile/op_replay.hpp"

namespace sb {

namespace {

TensorInfo info_of(const TensorDesc& d) {
    TensorInfo t;
    t.name = valid_utf8(d.name);  // from the model file; ggml cuts long names by bytes
    t.type = ggml_type_name(d.type);
    t.ne.assign(d.ne.begin(), d.ne.end());
    t.contiguous = d.contiguous;
    return t;
}

// The document's description of a captured node (its ggml description stays in the store).
CapturedNode describe(const NodeDesc& nd, size_t id) {
    CapturedNode c;
    c.id = id;
    c.op = nd.op_desc;
    c.no_compute = is_no_compute_op(ggml_op_name(nd.op));
    c.out = info_of(nd.dst);
    for (const auto& src : nd.srcs) {
        c.srcs.push_back(src ? info_of(*src) : TensorInfo{});
        if (src && src->sched_copy)
            c.copied_inputs.emplace_back(valid_utf8(src->name), src->nbytes);
    }
    c.buffer_device = nd.dst.buffer_device;
    c.signature = nd.signature();
    return c;
}

class LlamaOpTracer final : public OpTracer {
  public:
    LlamaOpTracer(LlamaEngine& engine, std::shared_ptr<NodeStore> store)
        : engine_(engine), store_(std::move(store)) {
        forward_log_ = [] {
            const char* e = std::getenv("STAGEBENCH_LLAMA_LOG");
            return e && std::string(e) == "1";
        }();
        ggml_log_get(&prev_log_, &prev_log_ud_);
        llama_log_set(log_cb, this);
    }
    ~LlamaOpTracer() override { llama_log_set(prev_log_, prev_log_ud_); }
    LlamaOpTracer(const LlamaOpTracer&) = delete;
    LlamaOpTracer& operator=(const LlamaOpTracer&) = delete;

    void load(const LoadSpec& spec_in) override;
    std::vector<std::string> coverage_devices() const override { return cover_names_; }
    void begin(TraceMode mode, Isolation iso) override {
        run_ = TracedRun{};
        iso_ = iso;
        iso_.stride = std::max(1, iso_.stride);
        timed_graphs_ = 0;
        traced_graphs_ = 0;
        idle_graph_ = false;
        // Room for every call up front: no reallocation inside the traced stage.
        run_.calls.reserve(std::max<size_t>(8192, 2 * last_calls_));
        capture_ = mode != TraceMode::time;
        capture_first_ = mode == TraceMode::capture_first;
        pending_.clear();
        if (capture_) {
            pending_.reserve(4096);
            store_->nodes.reserve(store_->nodes.size() + 4096);
        }
        expect_start_ = true;
        graph_ = -1;
        node_ = 0;
        chunk_first_ = -1;
        need_.clear();
        active_ = true;
    }
    TracedRun end() override {
        active_ = false;
        last_calls_ = run_.calls.size();
        // Described now, not while the stage ran: the captured run is timed too.
        for (const auto& p : pending_) {
            CapturedNode c = describe(store_->nodes[p.id], p.id);
            c.supports = p.supports;
            c.usable = p.usable;
            run_.nodes.push_back(std::move(c));
        }
        pending_.clear();
        return std::move(run_);
    }
    void release() override { engine_.unload(); }

  private:
    static void log_cb(ggml_log_level level, const char* text, void* ud);
    static bool eval_cb(ggml_tensor* t, bool ask, void* ud);
    bool on_ask(ggml_tensor* t);
    void on_done(ggml_tensor* t);
    void capture_node(const ggml_tensor* t);
    void plan_graph();
    SchedAssignment by_device(SchedAssignment a) const;

    LlamaEngine& engine_;
    std::shared_ptr<NodeStore> store_;
    ggml_log_callback prev_log_ = nullptr;
    void* prev_log_ud_ = nullptr;
    bool forward_log_ = false;

    std::mutex mu_;  // guards log_text_ (ggml may log from other threads)
    std::string log_text_;
    std::atomic<bool> log_dirty_{false};  // a new dump began since the last ask

    bool active_ = false;
    bool capture_ = false;
    bool capture_first_ = false;  // stop capturing after the first graph
    struct Pending {
        size_t id;  // in store_
        uint32_t supports, usable;
    };
    std::vector<Pending> pending_;  // nodes captured in this run, described at end()
    bool wait_remote_ = false;      // the context has an RPC device (see on_done)
    bool expect_start_ = true;
    const ggml_tensor* first_node_ = nullptr;
    int graph_ = -1;
    int node_ = 0;  // nodes of the graph asked for so far
    // Isolation: the nodes to dispatch alone in the graphs not captured, from the nodes and
    // splits of the last graph captured (plan_nodes_ 0: none yet, every node alone).
    Isolation iso_;
    int timed_graphs_ = 0;          // graphs of this run not captured, so far
    int traced_graphs_ = 0;         // of those, the ones traced (Isolation::interleave)
    bool idle_graph_ = false;       // the current graph runs untraced (Isolation::interleave)
    std::vector<uint8_t> need_;     // per node of the current graph: end a call there
    int plan_nodes_ = 0;            // nodes of the last captured graph
    std::vector<int> plan_splits_;  // its splits' first nodes
    int chunk_first_ = -1;          // first node of the call being asked for; -1: none yet
    int64_t ask_ns_ = 0, gap_ns_ = -1, last_done_ns_ = 0;
    int64_t work_ns_ = 0;  // the tracer's work in the last ask, before its timestamp
    size_t last_calls_ = 0;
    SchedAssignment assignment_;
    TracedRun run_;
    std::vector<ggml_backend_dev_t> cover_;  // the context's devices, for op coverage
    std::vector<std::string> cover_names_;
    std::map<std::string, std::string> dev_of_backend_;  // ggml_backend_name -> device name
};

void LlamaOpTracer::log_cb(ggml_log_level level, const char* text, void* ud) {
    auto* tr = static_cast<LlamaOpTracer*>(ud);
    if (tr->forward_log_)
        std::fputs(text, stderr);
    else
        record_llama_log(level, text);  // why a load fails (engine/backends.hpp)
    if (level != GGML_LOG_LEVEL_DEBUG && level != GGML_LOG_LEVEL_CONT)
        return;
    std::lock_guard<std::mutex> lk(tr->mu_);
    const bool start = std::strstr(text, "## SPLIT #0:") != nullptr;
    if (start) {
        tr->log_text_.clear();
    } else if (tr->log_text_.empty()) {
        return;  // not part of a scheduler dump
    }
    tr->log_text_ += text;
    if (start)
        tr->log_dirty_.store(true, std::memory_order_release);
    if (tr->log_text_.size() > (64u << 20))
        tr->log_text_.clear();
}

bool LlamaOpTracer::eval_cb(ggml_tensor* t, bool ask, void* ud) {
    auto* tr = static_cast<LlamaOpTracer*>(ud);
    if (!tr->active_)
        return false;  // idle: the split is computed as one graph, as without a callback
    if (ask)
        return tr->on_ask(t);
    tr->on_done(t);
    return true;
}

// Writes each page of t's output back with its own bytes, so that the node's call does not
// take the first-touch page faults of a fresh compute buffer (the capturing run is the first
// to run each graph; the uninstrumented repetitions run after it, on touched memory). Only
// the context's compute buffers in host memory; the graph is not running (the scheduler asks
// between computations), so nothing writes the memory meanwhile.
void touch_output(const ggml_tensor* t) {
    static const size_t page = [] {
        const long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? static_cast<size_t>(p) : size_t{4096};
    }();
    const ggml_tensor* mem = t->view_src ? t->view_src : t;
    ggml_backend_buffer_t buf = mem->buffer;
    if (!t->data || !buf || !ggml_backend_buffer_is_host(buf) ||
        ggml_backend_buffer_get_usage(buf) != GGML_BACKEND_BUFFER_USAGE_COMPUTE)
        return;
    const auto begin = reinterpret_cast<uintptr_t>(t->data);
    const uintptr_t end = begin + ggml_nbytes(t);
    for (uintptr_t p = begin / page * page; p < end; p += page) {
        volatile uint8_t* b = reinterpret_cast<volatile uint8_t*>(std::max(p, begin));
        *b = *b;
    }
}

bool LlamaOpTracer::on_ask(ggml_tensor* t) {
    const bool dirty = log_dirty_.load(std::memory_order_relaxed) &&
                       log_dirty_.exchange(false, std::memory_order_acq_rel);
    const bool new_graph = dirty || expect_start_ || t == first_node_;
    // A graph left untraced (Isolation::interleave) is an uninstrumented sample: its nodes cost
    // what the idle hook costs (a load and two comparisons), no clock read.
    if (idle_graph_ && !new_graph)
        return false;
    const int64_t enter = now_ns();
    // Only the capturing run needs the assignment; timed runs skip the parsing.
    if (dirty && capture_) {
        std::string text;
        {
            std::lock_guard<std::mutex> lk(mu_);
            text = log_text_;
        }
        assignment_ = by_device(parse_sched_assignments(text));
    }
    if (new_graph) {
        // A new graph: a fresh dump, the first node after begin(), or a reused graph.
        expect_start_ = false;
        first_node_ = t;
        graph_++;
        node_ = 0;
        chunk_first_ = -1;
        if (capture_first_ && graph_ > 0)
            capture_ = false;
        if (capture_) {
            run_.graphs.push_back(assignment_);
            plan_nodes_ = 0;
            plan_splits_.clear();
            for (const auto& sp : assignment_.splits)
                plan_splits_.push_back(sp.first_node);
        }
        plan_graph();
    }
    if (idle_graph_)
        return false;  // computed whole, as without the tracer: an uninstrumented sample
    const int i = node_++;
    if (capture_)
        plan_nodes_ = node_;
    if (chunk_first_ < 0) {
        chunk_first_ = i;
        gap_ns_ = i == 0 ? -1 : enter - last_done_ns_;
    }
    if (!need_.empty() && static_cast<size_t>(i) < need_.size() && !need_[static_cast<size_t>(i)])
        return false;  // computed with the nodes after it, up to the next one asked for
    if (capture_)
        touch_output(t);
    ask_ns_ = now_ns();
    work_ns_ = ask_ns_ - enter;
    return true;
}

// The nodes of a new graph that end a call: none in a graph that Isolation::interleave leaves
// untraced, every one in a captured graph, in a timed one those that Isolation dispatches
// alone, the ones just before them and the last node of each split (a split that ends
// without a call would be computed outside every call).
void LlamaOpTracer::plan_graph() {
    need_.clear();
    idle_graph_ = false;
    if (capture_)
        return;
    idle_graph_ = iso_.interleave && timed_graphs_++ % 2 == 1;
    if (idle_graph_ || iso_.stride <= 1 || plan_nodes_ <= 0)
        return;
    const auto k = static_cast<size_t>(iso_.stride);
    const auto phase = static_cast<size_t>(std::max(0, iso_.phase) + traced_graphs_++) % k;
    const auto n = static_cast<size_t>(plan_nodes_);
    auto alone = [&](size_t j) { return (j + phase) % k == 0; };
    need_.assign(n, 0);
    for (size_t j = 0; j < n; ++j)
        need_[j] = alone(j) || j + 1 == n || alone(j + 1) ? 1 : 0;
    for (int f : plan_splits_)
        if (f > 0 && static_cast<size_t>(f) <= n)
            need_[static_cast<size_t>(f) - 1] = 1;
}

void LlamaOpTracer::on_done(ggml_tensor* t) {
    if (wait_remote_ && t->buffer && ggml_nbytes(t) > 0 &&
        std::strncmp(ggml_backend_buffer_name(t->buffer), "RPC", 3) == 0) {
        // ggml-rpc's synchronize returns once the request is sent; a read with a reply waits
        // for the server to have computed the node.
        uint8_t sink[64];
        const size_t probe =
            std::min<size_t>({sizeof sink, ggml_type_size(t->type), ggml_nbytes(t)});
        ggml_backend_tensor_get(t, sink, 0, probe);
    }
    const int64_t done = now_ns();
    if (capture_)
        capture_node(t);  // between the done timestamp and the next ask: outside every call
    last_done_ns_ = now_ns();
    const int first = chunk_first_ < 0 ? node_ - 1 : chunk_first_;
    run_.calls.push_back({graph_, node_ - 1, ask_ns_, done - ask_ns_, gap_ns_,
                          work_ns_ + (last_done_ns_ - done), node_ - first});
    chunk_first_ = -1;
}

// Describes the node and asks each device of the context, while the node is alive, whether it
// supports the op and can read the node's weights where they lie.
void LlamaOpTracer::capture_node(const ggml_tensor* t) {
    Pending c{store_->nodes.size(), 0, 0};
    store_->nodes.push_back(NodeDesc::capture(t, true));
    for (size_t k = 0; k < cover_.size() && k < 32; ++k) {
        if (ggml_backend_dev_supports_op(cover_[k], t))
            c.supports |= 1u << k;
        bool ok = true;
        for (int i = 0; i < GGML_MAX_SRC; ++i) {
            const ggml_tensor* src = t->src[i];
            if (src && src->view_src)
                src = src->view_src;
            if (src && src->buffer &&
                ggml_backend_buffer_get_usage(src->buffer) == GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
                !ggml_backend_dev_supports_buft(cover_[k],
                                                ggml_backend_buffer_get_type(src->buffer)))
                ok = false;
        }
        if (ok)
            c.usable |= 1u << k;
    }
    pending_.push_back(c);
}

SchedAssignment LlamaOpTracer::by_device(SchedAssignment a) const {
    for (auto& sp : a.splits)
        if (auto it = dev_of_backend_.find(sp.backend); it != dev_of_backend_.end())
            sp.backend = it->second;
    return a;
}

void LlamaOpTracer::load(const LoadSpec& spec_in) {
    LoadSpec spec = spec_in;
    spec.eval_callback = eval_cb;
    spec.eval_user_data = this;
    // The scheduler reads GGML_SCHED_DEBUG once, when the context creates it; its dump tells
    // each node's backend.
    std::optional<std::string> old_debug;
    if (const char* e = std::getenv("GGML_SCHED_DEBUG"))
        old_debug = e;
    setenv("GGML_SCHED_DEBUG", "2", 1);
    auto restore = [&] {
        if (old_debug)
            setenv("GGML_SCHED_DEBUG", old_debug->c_str(), 1);
        else
            unsetenv("GGML_SCHED_DEBUG");
    };
    try {
        engine_.load(spec);
    } catch (...) {
        restore();
        throw;
    }
    restore();
    cover_.clear();
    cover_names_.clear();
    dev_of_backend_.clear();
    wait_remote_ = false;
    for (const auto& name : engine_.active_backends()) {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
        if (!dev || cover_.size() >= 32)
            continue;
        cover_.push_back(dev);
        cover_names_.push_back(name);
        wait_remote_ |= name.rfind("RPC", 0) == 0;
        // The scheduler's dump names backends (ggml_backend_name); records name devices.
        if (ggml_backend_t be = ggml_backend_dev_init(dev, nullptr)) {
            dev_of_backend_[ggml_backend_name(be)] = name;
            ggml_backend_free(be);
        }
    }
}

}  // namespace

OpRig make_llama_op_rig(bool huge_pages) {
    auto engine = std::make_unique<LlamaEngine>(
        LlamaEngineOptions{.use_mmap = false, .huge_pages = huge_pages});
    auto store = std::make_shared<NodeStore>();
    auto tracer = std::make_unique<LlamaOpTracer>(*engine, store);
    return make_op_rig(std::move(engine), std::move(tracer), make_ggml_replayer(store));
}

}  // namespace sb
