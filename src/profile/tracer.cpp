#include "profile/tracer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <span>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "core/utf8.hpp"
#include "engine/backends.hpp"
#include "engine/llama_engine.hpp"
#include "engine/workload.hpp"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "llama.h"
#include "profile/op_replay.hpp"
#include "profile/sched_log.hpp"

namespace sb {
namespace {

// ---- tracing state shared with the llama.cpp callbacks -------------------------------------

struct Event {
    int graph = 0;
    int node = 0;
    int64_t call_ns = 0;
    int64_t gap_ns = -1;   // since the previous node's done callback; -1 at a graph's start
    int64_t start_ns = 0;  // the ask callback's timestamp (sb::now_ns); done = start + call
};

struct TracedRun {
    std::vector<Event> events;
    std::vector<NodeDesc> nodes;          // one per event when capturing
    std::vector<SchedAssignment> graphs;  // the scheduler's assignment for each graph
    // When capturing, per node: bit k set when Tracer::cover[k] supports the op, and when the
    // weights it reads lie in buffers that device can use (coverage_rows).
    std::vector<uint32_t> supports, usable;
    int64_t wall_ns = 0;
    int64_t start_ns = 0;  // when the traced stage began (sb::now_ns)
};

struct Tracer {
    std::mutex mu;  // guards the log fields (ggml may log from other threads)
    std::string log_text;
    bool log_dirty = false;
    bool forward_log = false;

    bool active = false;
    bool capture = false;
    bool wait_remote = true;  // wait for RPC nodes to complete (see eval_cb)
    bool expect_start = true;
    const ggml_tensor* first_node = nullptr;
    int graph = -1;
    int node = 0;
    int64_t ask_ns = 0, gap_ns = -1, last_done_ns = 0;
    SchedAssignment assignment;
    TracedRun* run = nullptr;
    std::vector<ggml_backend_dev_t> cover;  // the context's devices, for op coverage

    void begin(TracedRun* r, bool cap) {
        run = r;
        capture = cap;
        expect_start = true;
        graph = -1;
        node = 0;
        active = true;
    }
    void end() {
        active = false;
        run = nullptr;
    }
};

void log_cb(ggml_log_level level, const char* text, void* ud) {
    auto* tr = static_cast<Tracer*>(ud);
    if (tr->forward_log)
        std::fputs(text, stderr);
    else
        record_llama_log(level, text);  // why a load fails (engine/backends.hpp)
    if (level != GGML_LOG_LEVEL_DEBUG && level != GGML_LOG_LEVEL_CONT)
        return;
    std::lock_guard<std::mutex> lk(tr->mu);
    const bool start = std::strstr(text, "## SPLIT #0:") != nullptr;
    if (start) {
        tr->log_text.clear();
    } else if (tr->log_text.empty()) {
        return;  // not part of a scheduler dump
    }
    tr->log_text += text;
    if (start)
        tr->log_dirty = true;
    if (tr->log_text.size() > (64u << 20))
        tr->log_text.clear();
}

// With every node answered "needed", ggml_backend_sched computes the nodes one at a time:
// ask(node) -> compute node alone -> synchronize -> done(node). Timestamps are taken as late as
// possible in ask and as early as possible in done, so the call time holds no callback work.
bool eval_cb(ggml_tensor* t, bool ask, void* ud) {
    auto* tr = static_cast<Tracer*>(ud);
    if (!tr->active)
        return false;
    if (ask) {
        const int64_t enter = now_ns();
        bool dirty = false;
        std::string text;
        {
            std::lock_guard<std::mutex> lk(tr->mu);
            if (tr->log_dirty) {
                dirty = true;
                if (tr->capture)
                    text = tr->log_text;
                tr->log_dirty = false;
            }
        }
        // Only the capturing run needs the assignment; timed runs skip the parsing.
        if (dirty && tr->capture)
            tr->assignment = parse_sched_assignments(text);
        if (dirty || tr->expect_start || t == tr->first_node) {
            // A new graph: a fresh dump, the first node after begin(), or a reused graph.
            tr->expect_start = false;
            tr->first_node = t;
            tr->graph++;
            tr->node = 0;
            if (tr->capture)
                tr->run->graphs.push_back(tr->assignment);
            tr->gap_ns = -1;
        } else {
            tr->gap_ns = enter - tr->last_done_ns;
        }
        tr->ask_ns = now_ns();
        return true;
    }
    if (tr->wait_remote && t->buffer && ggml_nbytes(t) > 0 &&
        std::strncmp(ggml_backend_buffer_name(t->buffer), "RPC", 3) == 0) {
        // ggml-rpc's synchronize returns once the request is sent; a read with a reply waits
        // for the server to have computed the node.
        uint8_t sink[64];
        const size_t probe =
            std::min<size_t>({sizeof sink, ggml_type_size(t->type), ggml_nbytes(t)});
        ggml_backend_tensor_get(t, sink, 0, probe);
    }
    const int64_t done = now_ns();
    tr->run->events.push_back({tr->graph, tr->node, done - tr->ask_ns, tr->gap_ns, tr->ask_ns});
    if (tr->capture) {
        tr->run->nodes.push_back(NodeDesc::capture(t, true));
        // Coverage, asked of each device while the node is alive (the capturing run is not
        // timed): its supports_op answer, and whether it can read the node's weights.
        uint32_t sup = 0, use = 0;
        for (size_t k = 0; k < tr->cover.size() && k < 32; ++k) {
            if (ggml_backend_dev_supports_op(tr->cover[k], t))
                sup |= 1u << k;
            bool ok = true;
            for (int i = 0; i < GGML_MAX_SRC; ++i) {
                const ggml_tensor* src = t->src[i];
                if (src && src->view_src)
                    src = src->view_src;
                if (src && src->buffer &&
                    ggml_backend_buffer_get_usage(src->buffer) ==
                        GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
                    !ggml_backend_dev_supports_buft(tr->cover[k],
                                                    ggml_backend_buffer_get_type(src->buffer)))
                    ok = false;
            }
            if (ok)
                use |= 1u << k;
        }
        tr->run->supports.push_back(sup);
        tr->run->usable.push_back(use);
    }
    tr->node++;
    tr->last_done_ns = now_ns();
    return true;
}

// ---- llama.cpp session ---------------------------------------------------------------------

using tp_new_t = ggml_threadpool* (*)(ggml_threadpool_params*);
using tp_free_t = void (*)(ggml_threadpool*);
using set_threads_t = void (*)(ggml_backend_t, int);
using set_tp_t = void (*)(ggml_backend_t, ggml_threadpool*);

// What the profiler holds beside the engine: the replays' backends and thread pool, and
// llama.cpp's log callback while the scheduler's dumps are read.
struct Session {
    ggml_threadpool* tp = nullptr;
    tp_free_t tp_free = nullptr;
    std::map<std::string, ggml_backend_t> replay;       // device name -> backend for replays
    std::map<std::string, std::string> dev_of_backend;  // ggml_backend_name -> device name
    std::vector<std::string> cover_names;               // Tracer::cover's device names
    ggml_log_callback prev_log = nullptr;
    void* prev_log_ud = nullptr;
    bool log_swapped = false;

    ~Session() {
        for (auto& [name, b] : replay)
            ggml_backend_free(b);
        if (tp && tp_free)
            tp_free(tp);
        if (log_swapped)
            llama_log_set(prev_log, prev_log_ud);
    }
};

// The engine's load of the profiled model: the options' placement and context settings, a
// context of n_ctx tokens and, for the traced runs, the eval callback.
LoadSpec load_spec_of(const OpsOptions& o, int threads, int n_ctx, Tracer* tr) {
    LoadSpec ls;
    ls.model_path = o.model_path;
    std::string devices;
    for (const auto& d : o.devices)
        devices += (devices.empty() ? "" : "+") + d;
    ls.devices = DeviceSet(devices);
    ls.n_gpu_layers = o.n_gpu_layers;
    ls.n_ctx = n_ctx;
    ls.n_batch = o.n_batch;
    ls.n_ubatch = o.n_ubatch;
    ls.n_threads = threads;
    ls.flash_attn = enum_from_text<FlashAttn>(o.flash_attn, "--flash-attn");
    ls.type_k = enum_from_text<KvType>(o.type_k, "--cache-type-k");
    ls.type_v = enum_from_text<KvType>(o.type_v, "--cache-type-v");
    if (tr) {
        ls.eval_callback = eval_cb;
        ls.eval_user_data = tr;
    }
    return ls;
}

// Loads the traced context: the scheduler reads GGML_SCHED_DEBUG once, when the context
// creates it, and its dump tells each node's backend (see the method in tracer.hpp).
void load_traced(LlamaEngine& engine, const LoadSpec& spec) {
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
        engine.load(spec);
    } catch (...) {
        restore();
        throw;
    }
    restore();
}

// ---- building a stage from traced runs ----------------------------------------------------

double median_of(std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? static_cast<double>(v[n / 2])
                 : 0.5 * static_cast<double>(v[n / 2 - 1] + v[n / 2]);
}

TensorInfo info_of(const TensorDesc& d) {
    TensorInfo t;
    t.name = valid_utf8(d.name);  // from the model file; ggml cuts long names by bytes
    t.type = ggml_type_name(d.type);
    t.ne.assign(d.ne.begin(), d.ne.end());
    t.contiguous = d.contiguous;
    return t;
}

bool same_structure(const TracedRun& a, const TracedRun& b) {
    if (a.events.size() != b.events.size())
        return false;
    for (size_t i = 0; i < a.events.size(); ++i)
        if (a.events[i].graph != b.events[i].graph || a.events[i].node != b.events[i].node)
            return false;
    return true;
}

std::string device_of(const Session& s, const std::string& backend_name) {
    auto it = s.dev_of_backend.find(backend_name);
    return it != s.dev_of_backend.end() ? it->second : backend_name;
}

struct BuiltStage {
    StageProfile stage;
    std::vector<NodeDesc> nodes;  // parallel to stage.ops
};

// base: the capturing run (node descriptions, the scheduler's assignment); runs_in: the timed
// runs, whose median call times and wall times are reported.
BuiltStage build_stage(const Session& s, const std::string& name, const TracedRun& base,
                       const std::vector<TracedRun>& runs_in) {
    BuiltStage b;
    StageProfile& st = b.stage;
    st.stage = name;
    if (runs_in.empty() || base.nodes.size() != base.events.size())
        return b;
    std::vector<const TracedRun*> runs;
    for (const auto& r : runs_in)
        if (same_structure(base, r))
            runs.push_back(&r);
    if (runs.size() < runs_in.size())
        st.notes.push_back(
            fmt::format("{} of {} traced repetitions ran a different graph and were left out",
                        runs_in.size() - runs.size(), runs_in.size()));
    if (runs.empty()) {
        st.notes.push_back("no traced repetition ran the captured graph: no call times");
        return b;
    }
    st.traced_reps = static_cast<int>(runs.size());
    for (const auto* r : runs) {
        st.rec.traced_ns.push_back(r->wall_ns);
        st.rec.traced_start_ns.push_back(r->start_ns);
    }
    // The timeline kept per op (start/end) is that of the run with the median wall time.
    std::vector<size_t> by_wall(runs.size());
    for (size_t i = 0; i < by_wall.size(); ++i)
        by_wall[i] = i;
    std::sort(by_wall.begin(), by_wall.end(),
              [&](size_t x, size_t y) { return runs[x]->wall_ns < runs[y]->wall_ns; });
    const size_t timeline = by_wall[by_wall.size() / 2];
    st.timeline_rep = static_cast<int>(timeline);
    st.n_graphs = base.events.empty() ? 0 : base.events.back().graph + 1;

    int mismatches = 0, no_dump_graphs = 0;
    const size_t n_ev = base.events.size();
    std::vector<std::string> backend_of(n_ev);
    for (size_t e = 0; e < n_ev; ++e) {
        const Event& ev = base.events[e];
        const NodeDesc& nd = base.nodes[e];
        OpRecord r;
        r.graph = ev.graph;
        r.node = ev.node;
        r.op = nd.op_desc;
        r.out = info_of(nd.dst);
        for (const auto& src : nd.srcs)
            r.srcs.push_back(src ? info_of(*src) : TensorInfo{});
        r.layer = parse_layer(nd.dst.name);
        r.no_compute = is_no_compute_op(ggml_op_name(nd.op));
        std::vector<int64_t> calls;
        for (const auto* run : runs)
            calls.push_back(run->events[e].call_ns);
        r.call_ns = median_of(calls);
        r.start_ns = runs[timeline]->events[e].start_ns;
        r.end_ns = *r.start_ns + runs[timeline]->events[e].call_ns;
        const SchedAssignment* a = static_cast<size_t>(ev.graph) < base.graphs.size()
                                       ? &base.graphs[static_cast<size_t>(ev.graph)]
                                       : nullptr;
        if (a && !a->empty()) {
            r.backend = device_of(s, a->split_of(ev.node)->backend);
            auto it = a->nodes.find(ev.node);
            if (!r.no_compute &&
                (it == a->nodes.end() || !sched_line_matches(it->second, nd.op_desc, nd.dst.name)))
                ++mismatches;
        } else {
            r.backend = nd.dst.buffer_device.empty() ? "unknown" : nd.dst.buffer_device;
        }
        backend_of[e] = r.backend;
        st.ops.push_back(std::move(r));
        b.nodes.push_back(nd);
    }
    for (const auto& a : base.graphs)
        if (a.empty())
            ++no_dump_graphs;
    if (mismatches > 0)
        st.notes.push_back(fmt::format(
            "{} node(s) did not match the scheduler's dump by name; their backend is the "
            "split's, which may be approximate",
            mismatches));
    if (no_dump_graphs > 0)
        st.notes.push_back(
            "no scheduler assignment dump (GGML_SCHED_DEBUG) was seen for some graphs: their "
            "backends come from the nodes' buffers (BLAS cannot be told from CPU this way)");

    // Splits, copies between backends and scheduler gaps.
    std::vector<bool> split_start(n_ev, false);
    for (int g = 0; g < st.n_graphs; ++g) {
        size_t first = n_ev, last = 0;
        for (size_t e = 0; e < n_ev; ++e)
            if (base.events[e].graph == g) {
                first = std::min(first, e);
                last = e;
            }
        if (first == n_ev)
            continue;
        const int n_nodes = static_cast<int>(last - first + 1);
        std::vector<SplitRecord> splits;
        const SchedAssignment* a = static_cast<size_t>(g) < base.graphs.size()
                                       ? &base.graphs[static_cast<size_t>(g)]
                                       : nullptr;
        if (a && !a->empty()) {
            for (const auto& sp : a->splits) {
                SplitRecord r;
                r.graph = g;
                r.index = sp.index;
                r.backend = device_of(s, sp.backend);
                r.first_node = sp.first_node;
                r.n_inputs = sp.n_inputs;
                r.inputs = sp.inputs;
                splits.push_back(r);
            }
        } else {
            // No dump: a split wherever the backend of a computing node changes.
            std::string cur;
            for (size_t e = first; e <= last; ++e) {
                if (st.ops[e].no_compute)
                    continue;
                if (backend_of[e] != cur) {
                    SplitRecord r;
                    r.graph = g;
                    r.index = static_cast<int>(splits.size());
                    r.backend = backend_of[e];
                    r.first_node = splits.empty() ? 0 : base.events[e].node;
                    splits.push_back(r);
                    cur = backend_of[e];
                }
            }
        }
        for (size_t k = 0; k < splits.size(); ++k) {
            SplitRecord& r = splits[k];
            const int end = k + 1 < splits.size() ? splits[k + 1].first_node : n_nodes;
            r.n_nodes = std::max(0, end - r.first_node);
            std::map<std::string, uint64_t> copies;
            for (int i = r.first_node; i < end; ++i) {
                const NodeDesc& nd = base.nodes[first + static_cast<size_t>(i)];
                for (const auto& src : nd.srcs)
                    if (src && src->sched_copy)
                        copies[valid_utf8(src->name)] = src->nbytes;
            }
            if (!copies.empty() || r.n_inputs == 0) {
                uint64_t bytes = 0;
                for (const auto& [nm, nb] : copies)
                    bytes += nb;
                r.input_bytes = bytes;
            }
            if (!a || a->empty()) {
                r.n_inputs = static_cast<int>(copies.size());
                for (const auto& [nm, nb] : copies)
                    r.inputs.push_back(nm);
            }
            if (r.first_node >= 0 && r.first_node < n_nodes)
                split_start[first + static_cast<size_t>(r.first_node)] = true;
            if (k > 0 && r.first_node < n_nodes) {
                std::vector<int64_t> gaps;
                for (const auto* run : runs) {
                    const int64_t gap =
                        run->events[first + static_cast<size_t>(r.first_node)].gap_ns;
                    if (gap >= 0)
                        gaps.push_back(gap);
                }
                if (!gaps.empty())
                    r.copy_ns = median_of(gaps);
            }
        }
        for (auto& r : splits)
            st.splits.push_back(std::move(r));
    }
    std::vector<int64_t> gap_sums;
    for (const auto* run : runs) {
        int64_t sum = 0;
        for (size_t e = 0; e < n_ev; ++e)
            if (!split_start[e] && run->events[e].gap_ns > 0)
                sum += run->events[e].gap_ns;
        gap_sums.push_back(sum);
    }
    if (!gap_sums.empty())
        st.rec.sched_gap_ns = median_of(gap_sums);
    if (!s.cover_names.empty() && base.supports.size() == st.ops.size()) {
        st.coverage_devices = s.cover_names;
        st.coverage = coverage_rows(st.ops, s.cover_names, base.supports, base.usable);
    }
    return b;
}

// One dispatch with no work on a backend: the median call of a one-element ADD (a 32x32
// mat-mul on backends without ADD, e.g. BLAS) less its op time.
std::optional<double> measure_dispatch(ggml_backend_t be, const ReplayConfig& cfg) {
    NodeDesc add;
    add.op = GGML_OP_ADD;
    add.op_desc = "ADD";
    add.dst = contiguous_desc("dispatch_probe", GGML_TYPE_F32, {1, 1, 1, 1});
    add.srcs = {contiguous_desc("a", GGML_TYPE_F32, {1, 1, 1, 1}),
                contiguous_desc("b", GGML_TYPE_F32, {1, 1, 1, 1})};
    NodeDesc mm;
    mm.op = GGML_OP_MUL_MAT;
    mm.op_desc = "MUL_MAT";
    mm.dst = contiguous_desc("dispatch_probe", GGML_TYPE_F32, {32, 32, 1, 1});
    mm.srcs = {contiguous_desc("a", GGML_TYPE_F32, {32, 32, 1, 1}),
               contiguous_desc("b", GGML_TYPE_F32, {32, 32, 1, 1})};
    for (const NodeDesc* nd : {&add, &mm}) {
        ReplayResult r = replay_op(*nd, be, false, cfg);
        if (r.isolated_ns && r.op_ns)
            return std::max(0.0, *r.isolated_ns - *r.op_ns);
    }
    return std::nullopt;
}

// Activation conversion inside a mat-mul: the op with F32 activations (converted by the
// kernel) against the same op with activations already in the kernel's type. Both replayed
// with fresh buffers, so repacked CPU weights are timed on the plain kernel.
std::optional<double> measure_conversion(const NodeDesc& nd, ggml_backend_t be,
                                         const ReplayConfig& cfg) {
    if (nd.op != GGML_OP_MUL_MAT && nd.op != GGML_OP_MUL_MAT_ID)
        return std::nullopt;
    if (nd.srcs.size() < 2 || !nd.srcs[0] || !nd.srcs[1])
        return std::nullopt;
    const TensorDesc& w = *nd.srcs[0];
    const TensorDesc& x = *nd.srcs[1];
    if (x.type != GGML_TYPE_F32 || !x.contiguous)
        return std::nullopt;
    const auto vt = activation_type_for(w.type);
    if (!vt || *vt == GGML_TYPE_F32 || x.ne[0] % ggml_blck_size(*vt) != 0)
        return std::nullopt;
    NodeDesc pre = nd;
    pre.srcs[1] = contiguous_desc(x.name, *vt, x.ne);
    ReplayResult a = replay_op(nd, be, false, cfg);
    ReplayResult b = replay_op(pre, be, false, cfg);
    if (!a.op_ns || !b.op_ns)
        return std::nullopt;
    return std::max(0.0, *a.op_ns - *b.op_ns);
}

}  // namespace

OpsProfile profile_ops(const OpsOptions& o, const ProgressFn& progress) {
    auto say = [&](const std::string& m) {
        if (progress)
            progress(m);
    };
    if (!o.prefill && !o.decode)
        throw usage_error("nothing to profile: no stage selected");
    if (o.n_prompt <= 0 && o.prefill)
        throw usage_error("-p must be at least 1 for prefill");
    if (o.n_depth < 0)
        throw usage_error("-d must not be negative");
    if (o.replay_copies < 0)
        throw usage_error("--replay must be 0 (no op times) or more");
    if (o.traced_reps < 1 || o.plain_reps < 1)
        throw usage_error("repetitions must be >= 1");
    init_backends();

    Session s;
    Tracer tr;
    tr.forward_log = [] {
        const char* e = std::getenv("STAGEBENCH_LLAMA_LOG");
        return e && std::string(e) == "1";
    }();
    ggml_log_get(&s.prev_log, &s.prev_log_ud);
    llama_log_set(log_cb, &tr);
    s.log_swapped = true;

    const int threads = threads_or_default(o.n_threads);
    const int plain_decode_tokens = std::max(8, 2 * o.plain_reps);
    int n_ctx = o.n_depth + std::max(0, o.n_prompt) + plain_decode_tokens + o.traced_reps + 16;
    n_ctx = (n_ctx + 255) / 256 * 256;

    // The model and its contexts are the engine's, as `stagebench run` loads them: first a
    // plain context, then one with the tracer's eval callback (the model stays loaded).
    LlamaEngine engine;
    say("loading " + o.model_path);
    engine.load(load_spec_of(o, threads, n_ctx, nullptr));
    const std::vector<std::string> active = engine.active_backends();

    OpsProfile p;
    p.source = "trace";
    p.model_path = o.model_path;
    {
        std::string joined;
        for (const auto& d : o.devices)
            joined += (joined.empty() ? "" : "+") + d;
        p.devices = joined.empty() ? "CPU" : joined;
    }
    for (const auto& d : o.devices)
        if (d != "CPU" && !d.empty())
            p.requested.push_back(d);
    if (p.requested.empty())
        p.requested.push_back("CPU");
    p.backends = active;
    p.n_threads = threads;
    p.n_prompt = o.n_prompt;
    p.n_depth = o.n_depth;
    p.replay_copies = o.replay_copies;
    p.method =
        "Call time: each node dispatched alone by the ggml scheduler (eval callback) and waited "
        "for (dispatch + transport + sync + compute), median of " +
        std::to_string(o.traced_reps) + " traced runs. " +
        (o.replay_copies > 0
             ? "Op time: the same op (shapes, types, parameters, backend) replayed once and up "
               "to " +
                   std::to_string(o.replay_copies) +
                   "+ times back to back in one graph; the slope between the two removes the "
                   "dispatch. "
             : std::string("Op time: not measured (--replay 0). ")) +
        "Backend per node: the scheduler's assignment (GGML_SCHED_DEBUG dump). "
        "Views/reshapes/permutes do not compute: op time 0.";

    const int depth = o.n_depth;
    const int prompt = std::max(0, o.n_prompt);
    const int32_t n_vocab = engine.n_vocab();
    const auto bos = engine.bos_token();
    auto tokens = [&](int n, uint64_t seed, bool with_bos) {
        return sequence_tokens(n, n_vocab, seed, with_bos ? bos : std::nullopt);
    };
    const auto depth_toks = tokens(depth, o.seed + 1, true);
    const auto prompt_toks = tokens(prompt, o.seed, depth == 0);
    const auto gen_toks = tokens(64, o.seed + 2, false);
    auto gen_tok = [&](int i) { return gen_toks[static_cast<size_t>(i) % gen_toks.size()]; };
    auto fill = [&](bool with_prompt) {
        engine.reset();
        std::vector<int32_t> t = depth_toks;
        if (with_prompt)
            t.insert(t.end(), prompt_toks.begin(), prompt_toks.end());
        if (!t.empty())
            engine.prefill(t);
    };

    // 1. Uninstrumented stage times, as `stagebench run` measures them.
    std::vector<int64_t> plain_prefill, plain_decode;
    std::vector<int64_t> plain_prefill_start, plain_decode_start;
    say("uninstrumented stages");
    if (o.prefill) {
        for (int r = -1; r < o.plain_reps && !interrupt_requested(); ++r) {
            fill(false);
            const StageTimes t = engine.prefill(prompt_toks);
            if (r >= 0) {
                plain_prefill.push_back(t.end_ns - t.start_ns);
                plain_prefill_start.push_back(t.start_ns);
            }
        }
    }
    if (o.decode && !interrupt_requested()) {
        fill(true);
        engine.decode_step(gen_tok(0));  // warm-up
        std::vector<int32_t> toks;
        for (int i = 1; i <= plain_decode_tokens; ++i)
            toks.push_back(gen_tok(i));
        plain_decode.reserve(toks.size());
        const DecodeTiming d = time_decode(engine, toks, now_ns, plain_decode);
        int64_t at = d.start_ns;
        for (int64_t lat : plain_decode) {
            plain_decode_start.push_back(at);
            at += lat;
        }
    }

    // 2. Node-by-node traced runs.
    // The first (warm-up) run of each stage captures the nodes and the scheduler's assignment;
    // the timed runs that follow only take timestamps.
    TracedRun capture_prefill, capture_decode;
    std::vector<TracedRun> traced_prefill, traced_decode;
    say("tracing node by node");
    load_traced(engine, load_spec_of(o, threads, n_ctx, &tr));
    for (const auto& name : active)
        if (ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
            dev && tr.cover.size() < 32) {
            tr.cover.push_back(dev);
            s.cover_names.push_back(name);
        }
    // One traced stage: the tracer records while it runs; start and wall time as the engine
    // reports them.
    auto traced = [&](auto&& stage, TracedRun& run, bool capture) {
        tr.begin(&run, capture);
        try {
            const StageTimes t = stage();
            run.start_ns = t.start_ns;
            run.wall_ns = t.end_ns - t.start_ns;
        } catch (...) {
            tr.end();
            throw;
        }
        tr.end();
    };
    if (o.prefill) {
        for (int r = -1; r < o.traced_reps && !interrupt_requested(); ++r) {
            fill(false);
            TracedRun& run = r < 0 ? capture_prefill : traced_prefill.emplace_back();
            traced([&] { return engine.prefill(prompt_toks); }, run, r < 0);
        }
    }
    if (o.decode) {
        fill(true);
        std::vector<int64_t> lat;
        lat.reserve(static_cast<size_t>(o.traced_reps) + 1);
        for (int r = -1; r < o.traced_reps && !interrupt_requested(); ++r) {
            const int32_t tok = gen_tok(r + 1);
            TracedRun& run = r < 0 ? capture_decode : traced_decode.emplace_back();
            traced(
                [&] {
                    const DecodeTiming d = time_decode(engine, std::span(&tok, 1), now_ns, lat);
                    return StageTimes{d.start_ns, d.end_ns};
                },
                run, r < 0);
        }
    }

    // The traced context is done; replays allocate their own buffers (the devices' modules
    // stay loaded until another selection).
    const std::optional<uint64_t> weight_bytes = engine.weight_bytes();
    engine.unload();

    // One CPU thread pool for the replays, made once llama.cpp's is gone: two pools would spin
    // against each other.
    ggml_backend_reg_t cpu_reg = ggml_backend_reg_by_name("CPU");
    if (cpu_reg) {
        auto tp_new = reinterpret_cast<tp_new_t>(
            ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_new"));
        s.tp_free = reinterpret_cast<tp_free_t>(
            ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_free"));
        if (tp_new) {
            ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
            s.tp = tp_new(&tpp);
            if (!s.tp)
                throw runtime_error("cannot create a CPU thread pool of " +
                                    std::to_string(threads) + " threads");
        }
    }

    // Backends for replays, named as the scheduler names them.
    for (const auto& name : active) {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
        if (!dev)
            continue;
        ggml_backend_t be = ggml_backend_dev_init(dev, nullptr);
        if (!be)
            continue;
        if (ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev)) {
            if (auto set_n = reinterpret_cast<set_threads_t>(
                    ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads")))
                set_n(be, threads);
            if (s.tp && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU)
                if (auto set_tp = reinterpret_cast<set_tp_t>(
                        ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool")))
                    set_tp(be, s.tp);
        }
        s.replay[name] = be;
        s.dev_of_backend[ggml_backend_name(be)] = name;
    }

    std::vector<BuiltStage> built;
    if (o.prefill)
        built.push_back(build_stage(s, "prefill", capture_prefill, traced_prefill));
    if (o.decode)
        built.push_back(build_stage(s, "decode", capture_decode, traced_decode));

    // 3. Op replay: each distinct node once, on the backend that ran it.
    ReplayConfig cfg;
    cfg.copies = o.replay_copies;
    cfg.input_budget_bytes =
        static_cast<size_t>(std::min<uint64_t>(weight_bytes.value_or(0), cfg.input_budget_bytes));
    std::map<std::string, ReplayResult> cache;
    size_t distinct = 0;
    for (auto& b : built)
        for (size_t i = 0; i < b.stage.ops.size(); ++i) {
            OpRecord& r = b.stage.ops[i];
            const NodeDesc& nd = b.nodes[i];
            auto be = s.replay.find(r.backend);
            if (r.no_compute) {
                r.op_ns = 0.0;
                r.op_method = "no compute (view of memory): zero op time";
                continue;
            }
            if (o.replay_copies == 0) {
                r.op_method = "op replay skipped (--replay 0)";
                continue;
            }
            if (be == s.replay.end()) {
                r.op_method = "no backend to replay on for " + r.backend;
                continue;
            }
            const std::string key = r.backend + "|" + nd.signature();
            auto it = cache.find(key);
            if (it == cache.end()) {
                if (interrupt_requested()) {
                    r.op_method = "interrupted before replay";
                    continue;
                }
                if (++distinct % 10 == 1)
                    say(fmt::format("replaying distinct ops ({} so far)", distinct));
                it = cache.emplace(key, replay_op(nd, be->second, true, cfg)).first;
            }
            r.op_ns = it->second.op_ns;
            r.isolated_call_ns = it->second.isolated_ns;
            r.op_method = it->second.method;
        }

    // 4. Fallback: ops off the requested devices, and what they would cost there.
    const std::set<std::string> requested(p.requested.begin(), p.requested.end());
    std::string target;
    for (const auto& d : p.requested)
        if (o.replay_copies > 0 && s.replay.count(d)) {
            target = d;
            break;
        }
    for (auto& b : built) {
        std::map<std::pair<std::string, std::string>, FallbackRow> rows;
        std::map<std::pair<std::string, std::string>, std::set<std::string>> why;
        for (size_t i = 0; i < b.stage.ops.size(); ++i) {
            const OpRecord& r = b.stage.ops[i];
            if (r.no_compute || requested.count(r.backend))
                continue;
            auto key = std::make_pair(r.op, r.backend);
            FallbackRow& f = rows[key];
            f.op = r.op;
            f.backend = r.backend;
            f.requested = target.empty() ? p.requested.front() : target;
            f.count++;
            if (r.call_ns)
                f.call_ns = f.call_ns.value_or(0) + *r.call_ns;
            if (r.op_ns)
                f.op_ns = f.op_ns.value_or(0) + *r.op_ns;
            if (target.empty())
                continue;
            ggml_backend_t tb = s.replay[target];
            const NodeDesc& nd = b.nodes[i];
            // Inputs in buffers the requested backend cannot read keep an op away from it
            // even when it supports the op (e.g. repacked CPU weights and BLAS).
            for (const auto& src : nd.srcs)
                if (src && src->buft && !src->sched_copy &&
                    !ggml_backend_supports_buft(tb, src->buft))
                    why[key].insert(std::string("inputs in ") + ggml_backend_buft_name(src->buft) +
                                    " buffers, which " + target + " cannot use");
            const std::string ckey = target + "|fresh|" + nd.signature();
            auto it = cache.find(ckey);
            if (it == cache.end() && !interrupt_requested())
                it = cache.emplace(ckey, replay_op(nd, tb, false, cfg)).first;
            if (it != cache.end() && it->second.op_ns && r.op_ns) {
                f.n_replayed++;
                f.op_ns_replayed = f.op_ns_replayed.value_or(0) + *r.op_ns;
                f.op_ns_requested = f.op_ns_requested.value_or(0) + *it->second.op_ns;
            } else if (it != cache.end()) {
                why[key].insert(it->second.method);
            }
        }
        for (auto& [key, f] : rows) {
            std::string note;
            if (f.n_replayed > 0 && f.op_ns_replayed && f.op_ns_requested &&
                *f.op_ns_requested > 0) {
                f.penalty = *f.op_ns_replayed / *f.op_ns_requested;
                note = "penalty: op time there / on " + f.requested;
                if (f.n_replayed < f.count)
                    note += fmt::format(" ({} of {} ops)", f.n_replayed, f.count);
            }
            for (const auto& w : why[key])
                note += (note.empty() ? "" : "; ") + w;
            f.note = note;
            b.stage.fallback.push_back(f);
        }
        std::sort(b.stage.fallback.begin(), b.stage.fallback.end(),
                  [](const FallbackRow& x, const FallbackRow& y) {
                      return x.call_ns.value_or(0) > y.call_ns.value_or(0);
                  });
    }

    // 5. Decomposition: each backend's no-work dispatch, the accelerator mat-muls' conversion.
    std::map<std::string, double> dispatch;
    std::map<std::string, std::optional<double>> conv_cache;
    const bool decompose = o.decompose && o.replay_copies > 0;
    if (decompose) {
        say("measuring dispatch and activation conversion");
        std::set<std::string> used;
        for (const auto& b : built)
            for (const auto& r : b.stage.ops)
                used.insert(r.backend);
        for (const auto& name : used)
            if (auto it = s.replay.find(name); it != s.replay.end())
                if (auto d = measure_dispatch(it->second, cfg))
                    dispatch[name] = *d;
    }

    for (auto& b : built) {
        StageProfile& stg = b.stage;
        if (stg.stage == "prefill") {
            stg.n_tokens = prompt;
            stg.kv_depth = depth;
            stg.rec.plain_ns = plain_prefill;
            stg.rec.plain_start_ns = plain_prefill_start;
        } else {
            stg.n_tokens = 1;
            stg.kv_depth = depth + prompt;
            stg.rec.plain_ns = plain_decode;
            stg.rec.plain_start_ns = plain_decode_start;
        }
        bool any_rpc = false;
        for (const auto& r : stg.ops)
            any_rpc |= r.backend.rfind("RPC", 0) == 0;
        if (any_rpc)
            stg.notes.push_back(
                "RPC: a node dispatched alone is sent with its source chain within the split "
                "(ggml-rpc serialises sources recursively), so call times grow along a split; "
                "isolated_call_ns in the records is the op alone with fresh inputs");
        finalize_stage(stg, o.top_n);
        if (decompose) {
            std::vector<std::optional<double>> conv(stg.ops.size());
            bool plain_kernel = false;
            for (size_t i = 0; i < stg.ops.size(); ++i) {
                const OpRecord& r = stg.ops[i];
                if (!requested.count(r.backend))
                    continue;
                auto be = s.replay.find(r.backend);
                if (be == s.replay.end() || interrupt_requested())
                    continue;
                const NodeDesc& nd = b.nodes[i];
                const std::string key = r.backend + "|" + nd.signature();
                auto it = conv_cache.find(key);
                if (it == conv_cache.end())
                    it = conv_cache.emplace(key, measure_conversion(nd, be->second, cfg)).first;
                conv[i] = it->second;
                if (conv[i] && !nd.srcs.empty() && nd.srcs[0] && nd.srcs[0]->buft &&
                    nd.srcs[0]->buft != ggml_backend_get_default_buffer_type(be->second))
                    plain_kernel = true;
            }
            stg.decomposition = decompose_stage(stg, p.requested, dispatch, conv);
            if (plain_kernel)
                stg.notes.push_back(
                    "conversion was measured with the weights in a plain buffer; the real run "
                    "keeps them repacked, whose kernels convert activations their own way");
        }
        p.stages.push_back(std::move(stg));
    }
    if (interrupt_requested())
        for (auto& stg : p.stages)
            stg.notes.push_back("interrupted: results are partial");
    return p;
}

}  // namespace sb
