#include "profile/fallback.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace sb {

namespace {

using Key = std::pair<std::string, std::string>;  // op, backend it ran on

struct Acc {
    FallbackRow row;
    std::set<std::string> why;  // replay failures, unusable inputs
    int not_supported = 0;      // nodes the requested device does not support
    double split_ns = 0, split_bytes = 0;
    bool split_timed = false, split_sized = false;
};

// The splits' boundary costs shared among the op types of each off-device split.
void add_split_shares(const StageProfile& st, const std::set<std::string>& req,
                      std::map<Key, Acc>& rows) {
    std::map<std::pair<int, int>, const SplitRecord*> by_index;  // (graph, index) -> split
    for (const auto& sp : st.splits)
        by_index[{sp.graph, sp.index}] = &sp;
    for (const auto& sp : st.splits) {
        if (req.count(sp.backend))
            continue;
        std::map<std::string, int> per_op;
        int n = 0;
        for (const auto& r : st.ops)
            if (r.graph == sp.graph && r.node >= sp.first_node &&
                r.node < sp.first_node + sp.n_nodes && !r.no_compute && r.backend == sp.backend) {
                per_op[r.op]++;
                ++n;
            }
        if (n == 0)
            continue;
        // Into the split (its own gap: the graph's start when it is the first) and back to a
        // requested device (the next split's gap), with the bytes those copies move.
        std::optional<double> ns;
        std::optional<double> bytes;
        auto add = [&](const SplitRecord& s) {
            if (s.copy_ns)
                ns = ns.value_or(0) + *s.copy_ns;
            if (s.input_bytes)
                bytes = bytes.value_or(0) + static_cast<double>(*s.input_bytes);
        };
        if (sp.index > 0)
            add(sp);
        auto next = by_index.find({sp.graph, sp.index + 1});
        if (next != by_index.end() && req.count(next->second->backend))
            add(*next->second);
        const bool boundary = sp.index > 0 || next != by_index.end();
        for (const auto& [op, c] : per_op) {
            auto it = rows.find({op, sp.backend});
            if (it == rows.end())
                continue;
            Acc& a = it->second;
            const double share = static_cast<double>(c) / n;
            a.row.n_splits++;
            if (ns || !boundary) {
                a.split_ns += ns.value_or(0) * share;
                a.split_timed = true;
            }
            if (bytes || !boundary) {
                a.split_bytes += bytes.value_or(0) * share;
                a.split_sized = true;
            }
        }
    }
}

// Counts the nodes the asked device does not support (the capture's coverage) and replays the
// others on target (the asked device, when it can be replayed on).
void replay_there(const StageProfile& st, const std::vector<CapturedNode>& nodes,
                  const std::set<std::string>& req, OpReplayer* replayer, const std::string& asked,
                  const std::string& target, std::map<Key, Acc>& rows) {
    const auto dev = std::find(st.coverage_devices.begin(), st.coverage_devices.end(), asked);
    const bool have_cover =
        dev != st.coverage_devices.end() && dev - st.coverage_devices.begin() < 32;
    const auto bit = have_cover ? static_cast<uint32_t>(dev - st.coverage_devices.begin()) : 0u;
    for (size_t i = 0; i < st.ops.size() && i < nodes.size(); ++i) {
        const OpRecord& r = st.ops[i];
        if (r.no_compute || req.count(r.backend))
            continue;
        Acc& a = rows[{r.op, r.backend}];
        if (have_cover && !(nodes[i].supports >> bit & 1u)) {
            a.not_supported++;
            continue;
        }
        if (!replayer || target.empty())
            continue;
        for (auto& w : replayer->unusable_inputs(nodes[i], target))
            a.why.insert(std::move(w));
        if (replayer->in_situ_only(target)) {
            // A GPU of this machine times no op on its own: the split's cost is the price.
            a.why.insert("ops are not replayed on " + target + " (a GPU): priced by the splits");
            continue;
        }
        const OpTime t = replayer->replay(nodes[i], target, false);
        if (t.op_ns && r.op_ns) {
            a.row.n_replayed++;
            a.row.op_ns_replayed = a.row.op_ns_replayed.value_or(0) + *r.op_ns;
            a.row.op_ns_requested = a.row.op_ns_requested.value_or(0) + *t.op_ns;
        } else if (!t.op_ns) {
            a.why.insert(t.method);
        } else {
            a.why.insert("no op time where it ran");
        }
    }
}

// penalty_ns, penalty and their basis, and the note, from what was measured.
void conclude(Acc& a, const std::string& target, bool replays) {
    FallbackRow& f = a.row;
    if (a.split_timed)
        f.split_ns = a.split_ns;
    if (a.split_sized)
        f.split_bytes = static_cast<uint64_t>(a.split_bytes + 0.5);
    std::vector<std::string> note;
    if (a.not_supported > 0)
        note.push_back(fmt::format("{} not supported by {}", a.not_supported, f.requested));
    if (f.n_replayed > 0 && f.op_ns_requested && *f.op_ns_requested > 0) {
        f.penalty = *f.op_ns_replayed / *f.op_ns_requested;
        // The replayed nodes' share of the splits, by count.
        const double share = static_cast<double>(f.n_replayed) / f.count;
        f.penalty_ns = *f.op_ns_replayed + f.split_ns.value_or(0) * share - *f.op_ns_requested;
        f.penalty_basis = "replayed on " + target;
        if (f.n_replayed < f.count)
            f.penalty_basis += fmt::format(" ({} of {} nodes)", f.n_replayed, f.count);
        if (!f.split_ns)
            f.penalty_basis += "; split boundaries not timed";
    } else if (f.split_ns) {
        f.penalty_ns = *f.split_ns;
        f.penalty_basis =
            "split cost only: " +
            (a.not_supported == f.count
                 ? f.requested + " cannot run it, so there is no graph without the split"
             : !replays ? "its op time on " + f.requested + " was not measured"
                        : "replaying it on " + f.requested + " gave no op time");
    } else {
        note.push_back("no penalty: the split boundaries were not timed (no traced repetition)");
    }
    for (const auto& w : a.why)
        note.push_back(w);
    std::string text;
    for (const auto& n : note)
        text += (text.empty() ? "" : "; ") + n;
    f.note = text;
}

}  // namespace

std::vector<FallbackRow> fallback_rows(const StageProfile& st,
                                       const std::vector<CapturedNode>& nodes,
                                       const std::vector<std::string>& requested,
                                       OpReplayer* replayer, const std::string& replay_on) {
    const std::set<std::string> req(requested.begin(), requested.end());
    const std::string asked =
        !replay_on.empty() ? replay_on : (requested.empty() ? std::string() : requested.front());
    std::map<Key, Acc> rows;
    for (const auto& r : st.ops) {
        if (r.no_compute || req.count(r.backend))
            continue;
        FallbackRow& f = rows[{r.op, r.backend}].row;
        f.op = r.op;
        f.backend = r.backend;
        f.requested = asked;
        f.count++;
        if (r.call_ns)
            f.call_ns = f.call_ns.value_or(0) + *r.call_ns;
        if (r.op_ns)
            f.op_ns = f.op_ns.value_or(0) + *r.op_ns;
    }
    add_split_shares(st, req, rows);
    replay_there(st, nodes, req, replayer, asked, replay_on, rows);
    std::vector<FallbackRow> out;
    for (auto& [key, a] : rows) {
        conclude(a, replay_on,
                 replayer && !replay_on.empty() && !replayer->in_situ_only(replay_on));
        out.push_back(std::move(a.row));
    }
    std::stable_sort(out.begin(), out.end(), [](const FallbackRow& x, const FallbackRow& y) {
        if (x.penalty_ns.has_value() != y.penalty_ns.has_value())
            return x.penalty_ns.has_value();
        if (x.penalty_ns && *x.penalty_ns != *y.penalty_ns)
            return *x.penalty_ns > *y.penalty_ns;
        return x.call_ns.value_or(0) > y.call_ns.value_or(0);
    });
    return out;
}

}  // namespace sb
