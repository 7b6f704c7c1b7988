#include "profile/trace_stage.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/stats.hpp"
#include "profile/ops_profile.hpp"

namespace sb {

namespace {

// Capture call index by (graph, node).
using NodeIndex = std::map<std::pair<int, int>, size_t>;

NodeIndex index_of(const TracedRun& capture) {
    NodeIndex at;
    for (size_t e = 0; e < capture.calls.size(); ++e)
        at[{capture.calls[e].graph, capture.calls[e].node}] = e;
    return at;
}

int first_node_of(const NodeCall& c) {
    return c.node - c.n_nodes + 1;
}

// A run's calls cover the capture's graphs: per graph, consecutive ranges of nodes from the
// first to the capture's last (a run that dispatched every node alone has the capture's).
bool same_structure(const TracedRun& a, const TracedRun& b) {
    std::map<int, int> nodes, next;
    for (const auto& c : a.calls)
        nodes[c.graph] = std::max(nodes[c.graph], c.node + 1);
    for (const auto& c : b.calls) {
        if (c.n_nodes < 1 || !nodes.count(c.graph) || first_node_of(c) != next[c.graph])
            return false;
        next[c.graph] = c.node + 1;
    }
    for (const auto& [g, n] : nodes)
        if (next[g] != n)
            return false;
    return true;
}

// Per run, the call that dispatched capture call e's node alone (-1: none did).
std::vector<std::vector<int>> alone_calls(const TracedRun& capture, const NodeIndex& at,
                                          const std::vector<const TracedRun*>& runs) {
    std::vector<std::vector<int>> out;
    for (const auto* run : runs) {
        std::vector<int> ix(capture.calls.size(), -1);
        for (size_t k = 0; k < run->calls.size(); ++k) {
            const NodeCall& c = run->calls[k];
            if (c.n_nodes != 1)
                continue;
            if (auto it = at.find({c.graph, c.node}); it != at.end())
                ix[it->second] = static_cast<int>(k);
        }
        out.push_back(std::move(ix));
    }
    return out;
}

const SchedAssignment* assignment_of(const TracedRun& capture, int graph) {
    const auto g = static_cast<size_t>(graph);
    if (g >= capture.graphs.size() || capture.graphs[g].empty())
        return nullptr;
    return &capture.graphs[g];
}

// The per-node records, with their backends; counts nodes whose dump line does not match.
// A run that dispatched every node alone gives the per-op timeline (timeline: its index in
// runs); without one (Isolation), the capturing run does.
void add_records(BuiltStage& b, const TracedRun& capture, const std::vector<const TracedRun*>& runs,
                 const std::vector<std::vector<int>>& alone, std::optional<size_t> timeline) {
    StageProfile& st = b.stage;
    int mismatches = 0, capture_only = 0;
    for (size_t e = 0; e < capture.calls.size(); ++e) {
        const NodeCall& ev = capture.calls[e];
        const CapturedNode& nd = capture.nodes[e];
        OpRecord r;
        r.graph = ev.graph;
        r.node = ev.node;
        r.op = nd.op;
        r.out = nd.out;
        r.srcs = nd.srcs;
        r.layer = parse_layer(nd.out.name);
        r.no_compute = nd.no_compute;
        std::vector<int64_t> calls;
        for (size_t k = 0; k < runs.size(); ++k)
            if (alone[k][e] >= 0)
                calls.push_back(runs[k]->calls[static_cast<size_t>(alone[k][e])].call_ns);
        if (calls.empty()) {
            calls.push_back(ev.call_ns);
            ++capture_only;
        }
        r.call_ns = *median_ns(calls);
        const NodeCall& at = timeline ? runs[*timeline]->calls[e] : ev;
        r.start_ns = at.start_ns;
        r.end_ns = at.start_ns + at.call_ns;
        if (const SchedAssignment* a = assignment_of(capture, ev.graph)) {
            r.backend = a->split_of(ev.node)->backend;
            auto it = a->nodes.find(ev.node);
            if (!r.no_compute &&
                (it == a->nodes.end() || !sched_line_matches(it->second, nd.op, nd.out.name)))
                ++mismatches;
        } else {
            r.backend = nd.buffer_device.empty() ? "unknown" : nd.buffer_device;
        }
        st.ops.push_back(std::move(r));
        b.nodes.push_back(nd);
    }
    int no_dump = 0;
    for (const auto& a : capture.graphs)
        no_dump += a.empty() ? 1 : 0;
    if (capture.graphs.size() < static_cast<size_t>(st.n_graphs))
        no_dump += st.n_graphs - static_cast<int>(capture.graphs.size());
    if (capture_only > 0)
        st.notes.push_back(fmt::format(
            "{} node(s) were dispatched alone only by the capturing run: their call time is "
            "that run's",
            capture_only));
    if (mismatches > 0)
        st.notes.push_back(fmt::format(
            "{} node(s) did not match the scheduler's dump by name; their backend is the "
            "split's, which may be approximate",
            mismatches));
    if (no_dump > 0)
        st.notes.push_back(
            "no scheduler assignment dump (GGML_SCHED_DEBUG) was seen for some graphs: their "
            "backends come from the nodes' buffers (BLAS cannot be told from CPU this way)");
}

// The splits of graph g (records [first, last]): the scheduler's, or where the backend of a
// computing node changes.
std::vector<SplitRecord> graph_splits(const BuiltStage& b, const TracedRun& capture, int g,
                                      size_t first, size_t last) {
    std::vector<SplitRecord> splits;
    if (const SchedAssignment* a = assignment_of(capture, g)) {
        for (const auto& sp : a->splits) {
            SplitRecord r;
            r.graph = g;
            r.index = sp.index;
            r.backend = sp.backend;
            r.first_node = sp.first_node;
            r.n_inputs = sp.n_inputs;
            r.inputs = sp.inputs;
            splits.push_back(r);
        }
        return splits;
    }
    std::string cur;
    for (size_t e = first; e <= last; ++e) {
        const OpRecord& op = b.stage.ops[e];
        if (op.no_compute || op.backend == cur)
            continue;
        SplitRecord r;
        r.graph = g;
        r.index = static_cast<int>(splits.size());
        r.backend = op.backend;
        r.first_node = splits.empty() ? 0 : op.node;
        splits.push_back(r);
        cur = op.backend;
    }
    return splits;
}

// Splits of every graph with their input copies and copy times; returns which records start
// a split (their gap is the copy, not the scheduler's time between nodes).
std::vector<bool> add_splits(BuiltStage& b, const TracedRun& capture,
                             const std::vector<const TracedRun*>& runs) {
    StageProfile& st = b.stage;
    const size_t n_ev = capture.calls.size();
    std::vector<bool> split_start(n_ev, false);
    for (int g = 0; g < st.n_graphs; ++g) {
        size_t first = n_ev, last = 0;
        for (size_t e = 0; e < n_ev; ++e)
            if (capture.calls[e].graph == g) {
                first = std::min(first, e);
                last = e;
            }
        if (first == n_ev)
            continue;
        const bool dumped = assignment_of(capture, g) != nullptr;
        const int n_nodes = static_cast<int>(last - first + 1);
        std::vector<SplitRecord> splits = graph_splits(b, capture, g, first, last);
        for (size_t k = 0; k < splits.size(); ++k) {
            SplitRecord& r = splits[k];
            const int end = k + 1 < splits.size() ? splits[k + 1].first_node : n_nodes;
            r.n_nodes = std::max(0, end - r.first_node);
            std::map<std::string, uint64_t> copies;
            for (int i = std::max(0, r.first_node); i < end && i < n_nodes; ++i)
                for (const auto& [name, bytes] :
                     b.nodes[first + static_cast<size_t>(i)].copied_inputs)
                    copies[name] = bytes;
            if (!copies.empty() || r.n_inputs == 0) {
                uint64_t bytes = 0;
                for (const auto& [nm, nb] : copies)
                    bytes += nb;
                r.input_bytes = bytes;
            }
            if (!dumped) {
                r.n_inputs = static_cast<int>(copies.size());
                for (const auto& [nm, nb] : copies)
                    r.inputs.push_back(nm);
            }
            if (r.first_node >= 0 && r.first_node < n_nodes)
                split_start[first + static_cast<size_t>(r.first_node)] = true;
            if (k > 0 && r.first_node >= 0 && r.first_node < n_nodes) {
                std::vector<int64_t> gaps;
                for (const auto* run : runs)
                    for (const auto& c : run->calls)
                        if (c.graph == g && first_node_of(c) == r.first_node && c.gap_ns >= 0)
                            gaps.push_back(c.gap_ns);
                if (!gaps.empty())
                    r.copy_ns = *median_ns(gaps);
            }
        }
        for (auto& r : splits)
            st.splits.push_back(std::move(r));
    }
    return split_start;
}

}  // namespace

BuiltStage build_stage(const std::string& name, const TracedRun& capture,
                       const std::vector<TracedRun>& runs_in,
                       const std::vector<std::string>& coverage_devices) {
    BuiltStage b;
    StageProfile& st = b.stage;
    st.stage = name;
    if (capture.calls.empty() || capture.nodes.size() != capture.calls.size()) {
        st.notes.push_back("the capturing run recorded no graph: no ops");
        return b;
    }
    std::vector<const TracedRun*> runs;
    for (const auto& r : runs_in)
        if (same_structure(capture, r))
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
        int64_t work = 0;
        for (const auto& c : r->calls)
            work += c.work_ns;
        st.rec.tracer_ns.push_back(work);
    }
    // The timeline kept per op (start/end) is that of the run with the median wall time of
    // those that dispatched every node alone; the capturing run's when none did.
    std::vector<size_t> by_wall;
    for (size_t i = 0; i < runs.size(); ++i) {
        bool all_alone = true;
        for (const auto& c : runs[i]->calls)
            all_alone = all_alone && c.n_nodes == 1;
        if (all_alone)
            by_wall.push_back(i);
        else
            b.strided = true;
    }
    std::stable_sort(by_wall.begin(), by_wall.end(),
                     [&](size_t x, size_t y) { return runs[x]->wall_ns < runs[y]->wall_ns; });
    std::optional<size_t> timeline;
    if (!by_wall.empty())
        timeline = by_wall[by_wall.size() / 2];
    st.timeline_rep = timeline ? std::optional<int>(static_cast<int>(*timeline)) : std::nullopt;
    if (!timeline)
        st.notes.push_back(
            "the ops' timeline is the capturing run's: the timed runs dispatched only some "
            "nodes alone each");
    st.n_graphs = capture.calls.back().graph + 1;

    const NodeIndex at = index_of(capture);
    add_records(b, capture, runs, alone_calls(capture, at, runs), timeline);
    const std::vector<bool> split_start = add_splits(b, capture, runs);
    // The scheduler's time between the calls of one split, per run; with calls that computed
    // several nodes, also what is left of the run: the host's work around the graph.
    std::vector<int64_t> gap_sums, host;
    for (size_t i = 0; i < runs.size(); ++i) {
        const TracedRun& run = *runs[i];
        int64_t sum = 0, rest = run.wall_ns - st.rec.tracer_ns[i];
        for (const auto& c : run.calls) {
            const auto e = at.find({c.graph, first_node_of(c)});
            const bool copies = e != at.end() && split_start[e->second];
            if (!copies && c.gap_ns > 0)
                sum += c.gap_ns;
            rest -= c.call_ns + std::max<int64_t>(0, c.gap_ns);
        }
        gap_sums.push_back(sum);
        host.push_back(rest);
    }
    st.rec.sched_gap_ns = *median_ns(gap_sums);
    if (b.strided)
        st.rec.host_ns = *median_ns(host);
    if (!coverage_devices.empty()) {
        std::vector<uint32_t> sup, use;
        for (const auto& n : b.nodes) {
            sup.push_back(n.supports);
            use.push_back(n.usable);
        }
        st.coverage_devices = coverage_devices;
        st.coverage = coverage_rows(st.ops, coverage_devices, sup, use);
    }
    return b;
}

std::vector<TracedRun> split_steps(const TracedRun& run, const std::vector<int64_t>& walls_ns,
                                   const std::vector<int64_t>& starts_ns) {
    std::vector<TracedRun> out(std::min(walls_ns.size(), starts_ns.size()));
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].wall_ns = walls_ns[i];
        out[i].start_ns = starts_ns[i];
    }
    for (size_t e = 0; e < run.calls.size(); ++e) {
        const auto g = static_cast<size_t>(run.calls[e].graph);
        if (run.calls[e].graph < 0 || g >= out.size())
            continue;
        NodeCall c = run.calls[e];
        c.graph = 0;
        out[g].calls.push_back(c);
        if (e < run.nodes.size())
            out[g].nodes.push_back(run.nodes[e]);
    }
    for (size_t g = 0; g < out.size() && g < run.graphs.size(); ++g)
        out[g].graphs.push_back(run.graphs[g]);
    return out;
}

}  // namespace sb
