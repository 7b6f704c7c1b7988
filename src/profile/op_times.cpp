#include "profile/op_times.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/stats.hpp"

namespace sb {

namespace {

// A call holds its op (the submission, the op's work, the fence), so the device's times of the
// ops its timer priced sum to at most their calls. More says that the timer's pass, which runs
// apart from the traced calls (another moment, the stage's ops in one command buffer), was
// slowed where the calls were not: one note per device, naming the op type with the largest
// excess, so that a call/op below 1x is read for what it is.
void note_device_times_above_calls(StageProfile& st, const std::vector<size_t>& timed) {
    struct Sums {
        double device = 0, calls = 0;
    };
    std::map<std::string, Sums> by_backend;
    std::map<std::pair<std::string, std::string>, Sums> by_op;  // (backend, op)
    for (size_t i : timed) {
        const OpRecord& r = st.ops[i];
        if (!r.op_ns || !r.call_ns)
            continue;
        for (Sums* s : {&by_backend[r.backend], &by_op[{r.backend, r.op}]}) {
            s->device += *r.op_ns;
            s->calls += *r.call_ns;
        }
    }
    for (const auto& [backend, sum] : by_backend) {
        if (sum.calls <= 0 || sum.device <= sum.calls)
            continue;
        const std::pair<const std::pair<std::string, std::string>, Sums>* worst = nullptr;
        for (const auto& e : by_op)
            if (e.first.first == backend && e.second.calls > 0 &&
                (!worst ||
                 e.second.device - e.second.calls > worst->second.device - worst->second.calls))
                worst = &e;
        st.notes.push_back(fmt::format(
            "on {} the device timer's op times sum to {:.0f} % of the same ops' traced calls, "
            "which hold them: its pass ran apart from the calls and was slowed where they were "
            "not (most in {}, {:.2f}x its calls); an op's call bounds it better where its device "
            "time is the larger",
            backend, 100.0 * sum.device / sum.calls, worst->first.second,
            worst->second.device / worst->second.calls));
    }
}

}  // namespace

void assign_op_times(BuiltStage& b, OpReplayer& replayer, const OpTimeOptions& opts) {
    StageProfile& st = b.stage;
    // Computing records by (backend, signature), in order of first appearance.
    std::vector<std::string> order;
    std::map<std::string, std::vector<size_t>> groups;
    for (size_t i = 0; i < st.ops.size() && i < b.nodes.size(); ++i) {
        OpRecord& r = st.ops[i];
        if (r.no_compute) {
            r.op_ns = 0.0;
            r.op_method = "no compute (view of memory): zero op time";
            continue;
        }
        const std::string key = r.backend + "|" + b.nodes[i].signature;
        auto [it, fresh] = groups.try_emplace(key);
        if (fresh)
            order.push_back(key);
        it->second.push_back(i);
    }
    std::map<std::string, std::optional<double>> dispatch;  // backend -> no-work dispatch
    auto dispatch_of = [&](const std::string& backend) {
        auto it = dispatch.find(backend);
        if (it == dispatch.end()) {
            std::optional<double> d;
            if (replayer.fixed_dispatch(backend) || replayer.in_situ_only(backend))
                d = replayer.dispatch_ns(backend);
            it = dispatch.emplace(backend, d).first;
            if (d)
                st.rec.node_dispatch_ns[backend] = *d;
        }
        return it->second;
    };
    size_t replays = 0;
    std::vector<size_t> timed;  // ops priced by the device's own timer
    for (const auto& key : order) {
        const std::vector<size_t>& idx = groups[key];
        const std::string& backend = st.ops[idx.front()].backend;
        std::vector<double> calls;
        for (size_t i : idx)
            if (st.ops[i].call_ns)
                calls.push_back(*st.ops[i].call_ns);
        const std::optional<double> d = dispatch_of(backend);
        const double call = median(calls).value_or(0.0);
        if (replayer.in_situ_only(backend)) {
            // A GPU's: every op in situ, however light (a light op's is then 0 or near it: its
            // work is below what one round trip resolves).
            const std::string method =
                d ? fmt::format(
                        "traced call less the {:.2f} µs round trip of a no-work op on {} "
                        "(a GPU's ops are not replayed)",
                        *d / 1e3, backend)
                  : "no op time: the no-work round trip on " + backend + " could not be measured";
            for (size_t i : idx) {
                const std::optional<OpTime>* dev =
                    opts.device_times && i < opts.device_times->size() ? &(*opts.device_times)[i]
                                                                       : nullptr;
                if (dev && *dev && (*dev)->op_ns) {
                    st.ops[i].op_ns = (*dev)->op_ns;
                    st.ops[i].op_method = (*dev)->method;
                    st.rec.n_op_device_timer++;
                    timed.push_back(i);
                    continue;
                }
                st.ops[i].op_method = dev && *dev ? method + "; " + (*dev)->method : method;
                if (!d || !st.ops[i].call_ns)
                    continue;
                st.ops[i].op_ns = std::max(0.0, *st.ops[i].call_ns - *d);
                st.rec.sum_op_in_situ_ns = st.rec.sum_op_in_situ_ns.value_or(0) + *st.ops[i].op_ns;
                st.rec.n_op_in_situ++;
            }
            continue;
        }
        if (d && *d > 0 && calls.size() == idx.size() && call >= opts.in_situ_factor * *d) {
            const std::string method = fmt::format(
                "traced call less the {:.2f} µs dispatch of a node alone on {} (the "
                "calls of this op are {:.0f}x it)",
                *d / 1e3, backend, call / *d);
            for (size_t i : idx) {
                st.ops[i].op_ns = std::max(0.0, *st.ops[i].call_ns - *d);
                st.ops[i].op_method = method;
                st.rec.sum_op_in_situ_ns = st.rec.sum_op_in_situ_ns.value_or(0) + *st.ops[i].op_ns;
            }
            st.rec.n_op_in_situ += static_cast<int>(idx.size());
            continue;
        }
        OpTime t;
        if (opts.interrupted && opts.interrupted()) {
            t.method = "interrupted before replay";
        } else if (!replayer.can_replay_on(backend)) {
            t.method = "no backend to replay on for " + backend;
        } else {
            if (opts.on_replay)
                opts.on_replay(++replays);
            t = replayer.replay(b.nodes[idx.front()], backend, true);
        }
        for (size_t i : idx) {
            st.ops[i].op_ns = t.op_ns;
            st.ops[i].isolated_call_ns = t.isolated_ns;
            st.ops[i].op_method = t.method;
        }
        if (t.op_ns)
            st.rec.n_op_replayed += static_cast<int>(idx.size());
    }
    note_device_times_above_calls(st, timed);
}

}  // namespace sb
