#include "profile/hexagon_pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/stats.hpp"

namespace sb {
namespace {

// The kinds in the order the table lists them, each with the events it is made of.
struct PipelineKind {
    const char* name;
    std::vector<const char*> events;
};
const std::vector<PipelineKind>& kinds() {
    static const std::vector<PipelineKind> k = {
        {"activation_quantization", {"HVX_A_QUANT", "HVX_A_PREP"}},
        {"weight_preparation", {"HVX_W_DEQUANT", "HVX_W_PREP"}},
        {"attention_preparation", {"HVX_Q_PREP", "HVX_K_PREP", "HVX_V_PREP"}},
        {"dma", {"DMA"}},
        {"compute", {"HVX_COMP", "HMX_COMP", "HVX_QK_FA", "HVX_SFM_FA"}},
        {"output_processing", {"HVX_O_PROC"}},
        {"other", {"L2FLUSH", "INIT", "BUFF", "FENCE"}},
    };
    return k;
}

// "HVX_A_QUANT+HVX_A_PREP".
std::string events_of(const PipelineKind& k) {
    std::string what;
    for (const char* e : k.events)
        what += (what.empty() ? "" : "+") + std::string(e);
    return what;
}

using Interval = std::pair<double, double>;  // [start, stop] in µs from the batch's reference

// Total length of the union of intervals.
double union_length(std::vector<Interval> v) {
    std::sort(v.begin(), v.end());
    double total = 0, lo = 0, hi = 0;
    bool open = false;
    for (const auto& [a, b] : v) {
        if (!open || a > hi) {
            if (open)
                total += hi - lo;
            lo = a;
            hi = b;
            open = true;
        } else {
            hi = std::max(hi, b);
        }
    }
    if (open)
        total += hi - lo;
    return total;
}

// The stage of the first record of `device` at or after index `from`, or of the last one
// before it (after = false); "" when none.
std::string stage_near(const HexagonImport& imp, const StageSplit& sp, const std::string& device,
                       std::size_t from, bool after) {
    const auto& r = imp.records;
    if (after) {
        for (std::size_t i = from; i < r.size(); ++i)
            if (r[i].backend == device)
                return sp.stage[i];
    } else {
        for (std::size_t i = std::min(from, r.size()); i-- > 0;)
            if (r[i].backend == device)
                return sp.stage[i];
    }
    return "";
}

// One op type's trace events in a session's batches of the stage.
struct OpAcc {
    int count = 0;
    double wall_us = 0;
    int n_events = 0;
    std::map<std::string, double> kind_us;
    double untraced_us = 0;
};

struct SessionAcc {
    NpuPipeline p;
    std::map<std::string, double> kind_us;
    double busy_us = 0;
    bool any_timed = false;
    double host_us = 0, npu_us = 0, htp_ops_us = 0;
    bool host = false, npu = false, htp_ops = false;
    std::map<std::string, OpAcc> ops;  // per op type
    std::vector<std::string> op_order;
    int n_unattributed = 0;
    double unattributed_us = 0;
    bool any_attribution = false;  // a batch with timed events was looked at
};

// A paired trace event: [a, b] in cycles from its group's reference, and its kind.
struct Timed {
    double a = 0, b = 0;
    std::string kind;
};

// The trace events of one group (a batch, else the events after one record) given to the ops
// whose windows hold them. A batch's ops are the session's op lines between its OPBATCH line
// and its trace-evt lines (the backend prints the batch, its ops, then the events); each op's
// window is [start, start + cycles] on the same counter as the events, so an event belongs to
// the op whose window holds it from its start to its stop. An event no window holds (the
// batch's cache flush and buffer set-up around its ops, an event across two ops) and the
// events of a group without a batch line (nothing says which ops they ran under) stay
// unattributed: counted, with their wall time over threads.
template <class At>
void attribute_to_ops(const HexagonImport& imp, const std::string& device, bool in_batch,
                      const std::vector<const HexagonTraceEvent*>& events,
                      const std::vector<Timed>& timed, At at, double group_mhz, SessionAcc& s) {
    if (timed.empty())
        return;
    s.any_attribution = true;
    struct Window {
        std::size_t rec;
        double lo, hi;
        std::vector<const Timed*> events;
    };
    std::vector<Window> windows;
    if (in_batch) {
        const HexagonBatch& b = imp.batches[static_cast<std::size_t>(events.front()->batch)];
        std::size_t hi = events.front()->records_before;
        for (const HexagonTraceEvent* e : events)
            hi = std::min(hi, e->records_before);
        for (std::size_t i = b.records_before; i < hi && i < imp.records.size(); ++i) {
            const OpRecord& r = imp.records[i];
            if (r.backend != device || !r.start_cycles || !r.cycles || !r.op_ns)
                continue;
            const double lo = at(static_cast<uint32_t>(*r.start_cycles));
            windows.push_back({i, lo, lo + static_cast<double>(*r.cycles), {}});
        }
        std::sort(windows.begin(), windows.end(),
                  [](const Window& x, const Window& y) { return x.lo < y.lo; });
    }
    std::vector<Interval> loose;
    for (const Timed& t : timed) {
        // The last window starting at or before the event; it holds the event or none does.
        auto it = std::upper_bound(windows.begin(), windows.end(), t.a,
                                   [](double a, const Window& w) { return a < w.lo; });
        if (it != windows.begin() && t.b <= std::prev(it)->hi) {
            std::prev(it)->events.push_back(&t);
            continue;
        }
        s.n_unattributed += 2;  // its start and its stop line
        loose.push_back({t.a / group_mhz, t.b / group_mhz});
    }
    s.unattributed_us += union_length(loose);
    for (const Window& w : windows) {
        const OpRecord& r = imp.records[w.rec];
        const double mhz = r.mhz && *r.mhz > 0 ? *r.mhz : group_mhz;  // the op line's clock
        auto [it, fresh] = s.ops.try_emplace(r.op);
        if (fresh)
            s.op_order.push_back(r.op);
        OpAcc& o = it->second;
        o.count++;
        const double wall_us = *r.op_ns / 1e3;
        o.wall_us += wall_us;
        o.n_events += 2 * static_cast<int>(w.events.size());
        std::map<std::string, std::vector<Interval>> by_kind;
        std::vector<Interval> all;
        for (const Timed* t : w.events) {
            by_kind[t->kind].push_back({t->a / mhz, t->b / mhz});
            all.push_back({t->a / mhz, t->b / mhz});
        }
        for (auto& [kind, v] : by_kind)
            o.kind_us[kind] += union_length(v);
        o.untraced_us += std::max(0.0, wall_us - union_length(all));
    }
}

}  // namespace

std::string npu_event_kind(const std::string& event) {
    for (const auto& k : kinds())
        for (const char* e : k.events)
            if (event == e)
                return k.name;
    return "other";
}

std::vector<NpuPipeline> npu_pipelines(const HexagonImport& imp, const StageSplit& sp,
                                       const std::string& stage) {
    std::vector<std::string> order;
    std::map<std::string, SessionAcc> acc;
    auto session = [&](const std::string& device) -> SessionAcc& {
        if (!acc.count(device)) {
            order.push_back(device);
            acc[device].p.device = device;
        }
        return acc[device];
    };

    // The batches of the stage: an OPBATCH's ops follow it, a profile-batch's precede it.
    std::vector<std::string> batch_stage(imp.batches.size());
    for (std::size_t k = 0; k < imp.batches.size(); ++k) {
        const HexagonBatch& b = imp.batches[k];
        batch_stage[k] = stage_near(imp, sp, b.device, b.records_before, b.kind == "OPBATCH");
        if (batch_stage[k] != stage)
            continue;
        SessionAcc& s = session(b.device);
        s.p.n_batches++;
        if (b.kind == "OPBATCH") {
            s.npu = true;
            s.npu_us += b.usec;
        } else {
            s.host = true;
            s.host_us += b.usec;
            if (b.htp_ops_usec) {
                s.htp_ops = true;
                s.htp_ops_us += static_cast<double>(*b.htp_ops_usec);
            }
        }
    }

    // An event without a batch line takes the stage of its session's record before it; events
    // come in runs after the same record, so each position is looked up once.
    std::map<std::pair<std::string, std::size_t>, std::string> before_cache;
    auto stage_before = [&](const std::string& device, std::size_t at) -> const std::string& {
        auto [it, fresh] = before_cache.try_emplace({device, at});
        if (fresh)
            it->second = stage_near(imp, sp, device, at, false);
        return it->second;
    };
    // The session's clock in the stage (the median of its ops' mhz), for batches without one.
    std::map<std::string, std::optional<double>> op_clock;
    auto clock_of = [&](const std::string& device) {
        auto [it, fresh] = op_clock.try_emplace(device);
        if (fresh) {
            std::vector<double> m;
            for (std::size_t i = 0; i < imp.records.size(); ++i)
                if (sp.stage[i] == stage && imp.records[i].backend == device &&
                    imp.records[i].mhz && *imp.records[i].mhz > 0)
                    m.push_back(*imp.records[i].mhz);
            it->second = median(m);
        }
        return it->second;
    };

    // The trace events of the stage, grouped by batch (or by session where the log has no
    // batch lines), then paired per thread, event and info.
    std::map<std::pair<std::string, long>, std::vector<const HexagonTraceEvent*>> groups;
    for (const auto& e : imp.events) {
        const std::string st = e.batch >= 0 ? batch_stage[static_cast<std::size_t>(e.batch)]
                                            : stage_before(e.device, e.records_before);
        if (st != stage)
            continue;
        session(e.device).p.n_events++;
        // Without a batch line, the events after one record are a group of their own: the
        // counter is unwrapped within a group, and a whole log spans more than 2^31 cycles.
        const long key = e.batch >= 0 ? e.batch : -1 - static_cast<long>(e.records_before);
        groups[{e.device, key}].push_back(&e);
    }
    for (const auto& [key, events] : groups) {
        SessionAcc& s = acc[key.first];
        // The clock: the batch's, else the median of the session's ops in the stage.
        std::optional<double> mhz;
        std::optional<uint32_t> ref;
        const bool in_batch = key.second >= 0;
        if (in_batch) {
            const HexagonBatch& b = imp.batches[static_cast<std::size_t>(key.second)];
            if (b.mhz && *b.mhz > 0)
                mhz = b.mhz;
            if (b.start)
                ref = static_cast<uint32_t>(*b.start);
        }
        if (!mhz)
            mhz = clock_of(key.first);
        if (!mhz) {
            s.p.n_no_clock += static_cast<int>(events.size());
            continue;
        }
        if (!ref)
            ref = events.front()->cycles;
        // Cycles since the reference, within ±2^31 (the counter's lower 32 bits wrap).
        auto at = [&](uint32_t c) { return static_cast<double>(static_cast<int32_t>(c - *ref)); };
        std::map<std::tuple<int, std::string, int>, std::vector<double>> open;
        std::vector<Timed> timed;
        for (const HexagonTraceEvent* e : events) {
            auto& starts = open[{e->thread, e->event, e->info}];
            if (!e->stop) {
                starts.push_back(at(e->cycles));
                continue;
            }
            if (starts.empty()) {
                s.p.n_unpaired++;
                continue;
            }
            const double a = starts.back(), b = at(e->cycles);
            starts.pop_back();
            if (b < a) {
                s.p.n_unpaired += 2;
                continue;
            }
            timed.push_back({a, b, npu_event_kind(e->event)});
        }
        for (const auto& [k, starts] : open)
            s.p.n_unpaired += static_cast<int>(starts.size());
        std::map<std::string, std::vector<Interval>> by_kind;
        std::vector<Interval> all;
        for (const Timed& t : timed) {
            by_kind[t.kind].push_back({t.a / *mhz, t.b / *mhz});
            all.push_back({t.a / *mhz, t.b / *mhz});
        }
        for (auto& [kind, v] : by_kind)
            s.kind_us[kind] += union_length(v);
        if (!all.empty()) {
            s.busy_us += union_length(all);
            s.any_timed = true;
        }
        attribute_to_ops(imp, key.first, in_batch, events, timed, at, *mhz, s);
    }

    std::vector<NpuPipeline> out;
    for (const auto& device : order) {
        SessionAcc& s = acc[device];
        NpuPipeline p = s.p;
        double ops_ns = 0;
        bool any_op = false;
        for (std::size_t i = 0; i < imp.records.size(); ++i)
            if (sp.stage[i] == stage && imp.records[i].backend == device && imp.records[i].op_ns) {
                ops_ns += *imp.records[i].op_ns;
                any_op = true;
            }
        if (any_op)
            p.ops_ns = ops_ns;
        if (s.host)
            p.host_batch_ns = s.host_us * 1e3;
        if (s.npu)
            p.npu_batch_ns = s.npu_us * 1e3;
        if (p.host_batch_ns) {
            p.envelope = "host batch";
            p.envelope_ns = p.host_batch_ns;
        } else if (p.npu_batch_ns) {
            p.envelope = "NPU batch";
            p.envelope_ns = p.npu_batch_ns;
        } else if (p.ops_ns) {
            p.envelope = "ops";
            p.envelope_ns = p.ops_ns;
        }
        auto add = [&](const std::string& name, double ns, const std::string& what) {
            NpuPipelinePart part{name, std::max(0.0, ns), std::nullopt, what};
            if (p.envelope_ns && *p.envelope_ns > 0)
                part.share = part.ns / *p.envelope_ns;
            p.parts.push_back(std::move(part));
        };
        // The host's batch less the NPU's ops: what the host waited for besides computing.
        if (s.host) {
            const double npu_ops_us = s.htp_ops ? s.htp_ops_us : ops_ns / 1e3;
            if (s.htp_ops || any_op)
                add("communication_and_queueing", (s.host_us - npu_ops_us) * 1e3,
                    s.htp_ops ? "profile-batch batch-dur-usec - htp-ops-usec"
                              : "profile-batch batch-dur-usec - the ops' usec");
        }
        if (s.npu && any_op)
            add("batch_overhead", s.npu_us * 1e3 - ops_ns, "OPBATCH usec - the ops' usec");
        for (const auto& k : kinds())
            if (auto it = s.kind_us.find(k.name); it != s.kind_us.end())
                add(k.name, it->second * 1e3, events_of(k) + " (wall time over threads)");
        if (s.any_timed)
            p.traced_busy_ns = s.busy_us * 1e3;
        if (s.any_attribution) {
            p.n_unattributed = s.n_unattributed;
            p.unattributed_ns = s.unattributed_us * 1e3;
            for (const auto& op : s.op_order) {
                const OpAcc& o = s.ops.at(op);
                NpuOpSplit x{op, o.count, o.wall_us * 1e3, o.n_events, {}};
                auto add_op = [&](const std::string& name, double us, const std::string& what) {
                    NpuPipelinePart part{name, us * 1e3, std::nullopt, what};
                    if (x.wall_ns > 0)
                        part.share = part.ns / x.wall_ns;
                    x.parts.push_back(std::move(part));
                };
                for (const auto& k : kinds())
                    if (auto it = o.kind_us.find(k.name); it != o.kind_us.end())
                        add_op(k.name, it->second, events_of(k) + " within its nodes");
                add_op("untraced", o.untraced_us, "its usec with no event on any thread");
                p.by_op.push_back(std::move(x));
            }
            std::stable_sort(
                p.by_op.begin(), p.by_op.end(),
                [](const NpuOpSplit& a, const NpuOpSplit& b) { return a.wall_ns > b.wall_ns; });
        }
        out.push_back(std::move(p));
    }
    return out;
}

std::string npu_batch_note(const std::vector<NpuPipeline>& pipes) {
    std::string per;
    int sessions = 0;
    bool host = false;
    for (const NpuPipeline& p : pipes) {
        if (p.n_batches == 0)
            continue;
        ++sessions;
        std::string x = fmt::format("{} {} batch(es)", p.device, p.n_batches);
        // The NPU's busy time: its own batch time (OPBATCH), else its ops' (profile-batch's
        // formats print the host's batch time and the ops' sum).
        const std::optional<double> busy = p.npu_batch_ns ? p.npu_batch_ns : p.ops_ns;
        if (busy)
            x += fmt::format(", NPU busy {:.3f} ms ({})", *busy / 1e6,
                             p.npu_batch_ns ? "OPBATCH usec" : "its ops' usec");
        if (p.host_batch_ns) {
            host = true;
            x += fmt::format(" of host batch {:.3f} ms", *p.host_batch_ns / 1e6);
            if (busy && *p.host_batch_ns > 0)
                x += fmt::format(" ({:.1f} %)", 100.0 * *busy / *p.host_batch_ns);
        }
        per += (per.empty() ? "" : "; ") + x;
    }
    if (sessions == 0)
        return "";
    std::string note = "batches in this stage, per NPU session: " + per;
    if (sessions > 1)
        note += ". Sessions are never added: they run at once, each against the same host time";
    if (!host)
        note += std::string(sessions > 1 ? "; the" : ". The") +
                " log holds no host time for these batches (OPBATCH lines carry only the "
                "NPU's), so the host's wall time around them is unknown";
    return note;
}

}  // namespace sb
