#include "trace/chrome_trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "core/result.hpp"

namespace sb {

using nlohmann::json;

namespace {

constexpr int kMainPid = 1;
constexpr int kTelemetryPid = 2;
constexpr int kStagesTid = 1;
constexpr int kFirstModeTid = 2;  // hybrid documents: one stages track per mode (2..9)
constexpr int kFirstBackendTid = 10;
constexpr int kFirstLaneTid = 100;   // serve documents: one track per concurrent request lane
constexpr int kFirstLevelTid = 200;  // explain documents: one track per level (and variant)

struct Event {
    char ph = 'X';
    std::string name, cat;
    int pid = kMainPid, tid = kStagesTid;
    int64_t ts_ns = 0;
    int64_t dur_ns = 0;  // X only
    json args;           // null: none
};

std::string shape_of(const std::vector<int64_t>& ne) {
    if (ne.empty())
        return "";
    std::vector<int64_t> v = ne;
    while (v.size() > 1 && v.back() == 1)
        v.pop_back();
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i)
            s += 'x';
        s += std::to_string(v[i]);
    }
    return s;
}

struct Builder {
    explicit Builder(const TraceOptions& o) : opts(o) {}
    const TraceOptions& opts;
    std::vector<Event> events;
    std::map<std::string, int> backend_tid;
    std::map<int, std::string> thread_names{{kStagesTid, "stages"}};

    void slice(int tid, std::string name, std::string cat, int64_t start, int64_t end,
               json args = nullptr) {
        if (end < start)
            return;
        Event e;
        e.ph = 'X';
        e.name = std::move(name);
        e.cat = std::move(cat);
        e.tid = tid;
        e.ts_ns = start;
        e.dur_ns = end - start;
        e.args = std::move(args);
        events.push_back(std::move(e));
    }

    void counter(const std::string& name, int64_t t, double v) {
        Event e;
        e.ph = 'C';
        e.name = name;
        e.pid = kTelemetryPid;
        e.tid = 0;
        e.ts_ns = t;
        e.args = json{{"value", v}};
        events.push_back(std::move(e));
    }

    int tid_of_backend(const std::string& backend) {
        const std::string b = backend.empty() ? "unknown" : backend;
        auto it = backend_tid.find(b);
        if (it != backend_tid.end())
            return it->second;
        const int tid = kFirstBackendTid + static_cast<int>(backend_tid.size());
        backend_tid[b] = tid;
        thread_names[tid] = "ops on " + b;
        return tid;
    }
};

struct Interval {
    int64_t start = 0, end = 0;
    size_t index = 0;  // into the stage's start_ns / duration_ns
};

std::vector<Interval> intervals_of(const StageResult& stage) {
    std::vector<Interval> out;
    for (size_t i = 0; i < stage.start_ns.size() && i < stage.duration_ns.size(); ++i)
        if (stage.duration_ns[i] >= 0)
            out.push_back({stage.start_ns[i], stage.start_ns[i] + stage.duration_ns[i], i});
    return out;
}

json stage_args(const StageResult& s, const Interval& x) {
    return json{{"n_tokens", s.n_tokens},
                {"duration_ns", x.end - x.start},
                {"tokens_per_s",
                 x.index < s.tokens_per_s.size() ? json(s.tokens_per_s[x.index]) : json(nullptr)}};
}

// Repetitions, prefill, decode and tokens of one test, inside [lo, hi].
void add_test_stages(Builder& b, const TestResult& t, bool rep_slices, int tid) {
    const auto pre = t.prefill ? intervals_of(*t.prefill) : std::vector<Interval>{};
    const auto dec = t.decode ? intervals_of(*t.decode) : std::vector<Interval>{};
    // A repetition is a prefill and the decode that starts after it (before the next prefill);
    // without prefills, each decode.
    if (rep_slices) {
        std::vector<std::pair<int64_t, int64_t>> reps;
        if (!pre.empty()) {
            for (size_t i = 0; i < pre.size(); ++i) {
                int64_t end = pre[i].end;
                const int64_t next =
                    i + 1 < pre.size() ? pre[i + 1].start : std::numeric_limits<int64_t>::max();
                for (const auto& d : dec)
                    if (d.start >= pre[i].end && d.start < next)
                        end = std::max(end, d.end);
                reps.push_back({pre[i].start, end});
            }
        } else {
            for (const auto& d : dec)
                reps.push_back({d.start, d.end});
        }
        for (size_t i = 0; i < reps.size(); ++i)
            b.slice(tid, "repetition " + std::to_string(i + 1), "repetition", reps[i].first,
                    reps[i].second, json{{"repetition", i + 1}});
    }
    for (const auto& p : pre)
        b.slice(tid, "prefill", "stage", p.start, p.end, stage_args(*t.prefill, p));
    if (!t.decode)
        return;
    const DecodeResult& decode = *t.decode;
    const auto& lat = decode.token_latency_ns;
    const int64_t n_tok = decode.n_tokens;
    // Token slices only when every repetition decoded n_tokens (the in-process engine); over
    // HTTP the gaps are per streamed chunk and vary per repetition.
    const bool tokens =
        b.opts.tokens && n_tok > 0 && lat.size() == static_cast<size_t>(n_tok) * dec.size();
    for (size_t k = 0; k < dec.size(); ++k) {
        const auto& d = dec[k];
        b.slice(tid, "decode", "stage", d.start, d.end, stage_args(decode, d));
        if (!tokens)
            continue;
        int64_t t0 = d.start;
        for (int64_t i = 0; i < n_tok; ++i) {
            const int64_t l = lat[static_cast<size_t>(static_cast<int64_t>(k) * n_tok + i)];
            const int64_t end = std::min(d.end, t0 + std::max<int64_t>(0, l));
            b.slice(tid, "token " + std::to_string(i + 1), "token", t0, end,
                    json{{"latency_ns", l}});
            t0 = end;
        }
    }
}

json with_pass(json args, const std::string& pass) {
    if (!pass.empty())
        args["pass"] = pass;
    return args;
}

struct RoundRef {
    std::string phase;
    const SustainedRound* round = nullptr;
};

// A traced pass after a round that lies after it (and is not empty backwards).
bool pass_after(const SustainedRound& r) {
    return r.ops && r.ops->start_ns >= r.end_ns && r.ops->end_ns >= r.ops->start_ns;
}

void add_tests(Builder& b, const ResultDocument& doc) {
    // Sustained documents: each round is one test with the round's start and end.
    std::map<int64_t, RoundRef> rounds;
    if (doc.sustained) {
        // With --cooldown 0 the wait is only the time to look at the clock: no slice.
        const bool cooldowns = doc.sustained->config.cooldown != "0";
        for (const auto& ph : doc.sustained->phases) {
            const std::string phase = ph.name.empty() ? "rounds" : ph.name;
            int64_t lo = std::numeric_limits<int64_t>::max();
            int64_t hi = std::numeric_limits<int64_t>::min();
            int64_t prev_end = std::numeric_limits<int64_t>::min();
            for (const auto& r : ph.rounds) {
                if (r.start_ns <= 0)
                    continue;
                rounds[r.start_ns] = {phase, &r};
                lo = std::min(lo, r.start_ns);
                hi = std::max(hi, r.end_ns);
                // A traced pass after the round (--trace-ops-rounds) belongs to the phase too.
                const bool has_pass = pass_after(r);
                if (has_pass)
                    hi = std::max(hi, r.ops->end_ns);
                if (cooldowns && r.cooldown_s > 0) {
                    int64_t cs =
                        r.start_ns - static_cast<int64_t>(std::llround(r.cooldown_s * 1e9));
                    if (prev_end != std::numeric_limits<int64_t>::min())
                        cs = std::max(cs, prev_end);
                    b.slice(kStagesTid, "cooldown", "cooldown", cs, r.start_ns,
                            json{{"cooldown_s", r.cooldown_s}, {"before_round", r.round}});
                }
                prev_end = has_pass ? r.ops->end_ns : r.end_ns;
            }
            if (lo <= hi)
                b.slice(kStagesTid, "phase " + phase, "phase", lo, hi,
                        json{{"phase", phase}, {"background", ph.background}});
        }
    }

    // A hybrid run interleaves the repetitions of its modes: each mode gets a track of its own,
    // and the state transfers of the hybrid mode are slices on its track.
    std::map<std::string, int> mode_tid;
    auto tid_of = [&](const TestConfig& cfg) {
        if (!doc.hybrid)
            return kStagesTid;
        const std::string dev = cfg.devices.str();
        auto it = mode_tid.find(dev);
        if (it != mode_tid.end())
            return it->second;
        const int tid =
            std::min(kFirstModeTid + static_cast<int>(mode_tid.size()), kFirstBackendTid - 1);
        mode_tid[dev] = tid;
        b.thread_names[tid] = "stages on " + dev;
        return tid;
    };
    if (doc.hybrid) {
        for (const auto& pt : doc.hybrid->points) {
            const auto idx = pt.tests.find("hybrid");
            if (idx == pt.tests.end() || idx->second < 0 ||
                static_cast<size_t>(idx->second) >= doc.tests.size())
                continue;
            const int tid = tid_of(doc.tests[static_cast<size_t>(idx->second)].config);
            const HybridTransfer& tr = pt.transfer;
            for (size_t i = 0; i < tr.start_ns.size() && i < tr.duration_ns.size(); ++i) {
                if (tr.start_ns[i] <= 0 || tr.duration_ns[i] < 0)
                    continue;
                json args{{"duration_ns", tr.duration_ns[i]}};
                if (i < tr.bytes.size())
                    args["bytes"] = tr.bytes[i];
                b.slice(tid, "state transfer", "transfer", tr.start_ns[i],
                        tr.start_ns[i] + tr.duration_ns[i], args);
            }
        }
    }
    for (const auto& t : doc.tests) {
        const TestConfig& cfg = t.config;
        const int tid = tid_of(cfg);
        json args{{"status", to_string(t.status)},
                  {"error", opt(t.error)},
                  {"reps_done", t.reps_done},
                  {"stopped_by", t.stopped_by ? to_string(*t.stopped_by) : std::string()},
                  {"backends", t.backends},
                  {"test", cfg.test_name()},
                  {"devices", cfg.devices.str()},
                  {"engine", to_string(cfg.engine)}};
        std::string name = cfg.test_name() + " on " + cfg.devices.str();
        std::string cat = "test";
        bool rep_slices = true;
        if (auto it = rounds.find(t.started_ns); it != rounds.end()) {
            const SustainedRound& r = *it->second.round;
            name = "round " + std::to_string(r.round);
            cat = "round";
            args.update(json{{"round", r.round},
                             {"ttft_ms", opt(r.ttft_ms)},
                             {"prefill_tps", opt(r.prefill_tps)},
                             {"decode_tps", opt(r.decode_tps)},
                             {"itl_p50_ms", opt(r.itl_p50_ms)},
                             {"itl_p99_ms", opt(r.itl_p99_ms)},
                             {"decode_j_per_token", opt(r.decode_j_per_token)},
                             {"decode_net_j_per_token", opt(r.decode_net_j_per_token)},
                             {"temp_start_c", opt(r.temp_start_c)},
                             {"temp_end_c", opt(r.temp_end_c)},
                             {"temp_max_c", opt(r.temp_max_c)},
                             {"cpu_freq_mean_khz", opt(r.cpu_freq_mean_khz)},
                             {"cooldown_s", r.cooldown_s}});
            args["phase"] = it->second.phase;
            rep_slices = t.reps_done > 1;
        }
        if (t.started_ns > 0 && t.finished_ns >= t.started_ns)
            b.slice(tid, name, cat, t.started_ns, t.finished_ns, args);
        add_test_stages(b, t, rep_slices, tid);
    }
}

// The stages of an ops profile (ops.stages[] or a sustained round's traced pass); pass names
// the traced pass in the slices' arguments ("" for an ops document).
void add_op_stages(Builder& b, const std::vector<StageProfile>& stages, const std::string& pass) {
    for (const auto& st : stages) {
        const std::string stage = st.stage.empty() ? "stage" : st.stage;
        const Reconciliation& rec = st.rec;
        for (size_t i = 0; i < rec.plain_start_ns.size() && i < rec.plain_ns.size(); ++i)
            b.slice(
                kStagesTid, stage + " (uninstrumented)", "stage", rec.plain_start_ns[i],
                rec.plain_start_ns[i] + rec.plain_ns[i],
                with_pass(
                    json{{"stage", stage}, {"repetition", i + 1}, {"duration_ns", rec.plain_ns[i]}},
                    pass));
        for (size_t i = 0; i < rec.traced_start_ns.size() && i < rec.traced_ns.size(); ++i)
            b.slice(kStagesTid, stage + " (traced node by node)", "stage", rec.traced_start_ns[i],
                    rec.traced_start_ns[i] + rec.traced_ns[i],
                    with_pass(json{{"stage", stage},
                                   {"repetition", i + 1},
                                   {"duration_ns", rec.traced_ns[i]},
                                   {"ops_shown",
                                    st.timeline_rep && *st.timeline_rep == static_cast<int>(i)}},
                              pass));
        // No traced run dispatched every node alone (StageProfile::isolation_stride): the ops'
        // timeline is the capturing run's, drawn as its own slice around them.
        if (!st.timeline_rep) {
            std::optional<int64_t> lo, hi;
            for (const auto& r : st.ops)
                if (r.start_ns && r.end_ns) {
                    lo = std::min(lo.value_or(*r.start_ns), *r.start_ns);
                    hi = std::max(hi.value_or(*r.end_ns), *r.end_ns);
                }
            if (lo && hi && *hi > *lo)
                b.slice(kStagesTid, stage + " (capturing, every node alone)", "stage", *lo, *hi,
                        with_pass(json{{"stage", stage}, {"ops_shown", true}}, pass));
        }
        if (!b.opts.ops)
            continue;
        std::map<std::pair<int, int>, size_t> index;  // (graph, node) -> record
        for (size_t i = 0; i < st.ops.size(); ++i) {
            const OpRecord& r = st.ops[i];
            index[{r.graph, r.node}] = i;
            if (!r.start_ns || !r.end_ns)
                continue;
            json srcs = json::array();
            for (const auto& src : r.srcs)
                srcs.push_back(
                    {{"name", src.name}, {"type", src.type}, {"shape", shape_of(src.ne)}});
            json args{{"name", r.out.name},
                      {"layer", opt(r.layer)},
                      {"backend", r.backend},
                      {"type", r.out.type},
                      {"op_ns", opt(r.op_ns)},
                      {"call_ns", opt(r.call_ns)},
                      {"isolated_call_ns", opt(r.isolated_call_ns)},
                      {"no_compute", r.no_compute},
                      {"graph", r.graph},
                      {"node", r.node},
                      {"shape", shape_of(r.out.ne)},
                      {"srcs", srcs},
                      {"stage", stage}};
            b.slice(b.tid_of_backend(r.backend), r.op.empty() ? "op" : r.op, "op", *r.start_ns,
                    *r.end_ns, with_pass(std::move(args), pass));
        }
        // A split's input copies ran between the previous node's end and its first node's
        // start (the gap call_ns does not hold).
        for (const auto& sp : st.splits) {
            if (sp.first_node <= 0 || sp.n_inputs <= 0)
                continue;
            auto cur = index.find({sp.graph, sp.first_node});
            auto prev = index.find({sp.graph, sp.first_node - 1});
            if (cur == index.end() || prev == index.end())
                continue;
            const auto s = st.ops[prev->second].end_ns;
            const auto e = st.ops[cur->second].start_ns;
            if (!s || !e || *e < *s)
                continue;
            json args{{"input_bytes", opt(sp.input_bytes)},
                      {"n_inputs", sp.n_inputs},
                      {"inputs", sp.inputs},
                      {"copy_ns", opt(sp.copy_ns)},
                      {"index", sp.index},
                      {"backend", sp.backend},
                      {"stage", stage}};
            b.slice(b.tid_of_backend(sp.backend), "copy to " + sp.backend, "copy", *s, *e,
                    with_pass(std::move(args), pass));
        }
    }
}

void add_ops(Builder& b, const ResultDocument& doc) {
    if (doc.ops)
        add_op_stages(b, doc.ops->stages, "");
    if (!doc.sustained)
        return;
    // Sustained rounds with a traced pass after them: a slice for the pass on the stages track,
    // its stages and ops inside it.
    for (const auto& ph : doc.sustained->phases) {
        for (const auto& r : ph.rounds) {
            if (!r.ops || r.ops->end_ns < r.ops->start_ns)
                continue;
            const RoundTracedPass& pass = *r.ops;
            const std::string label = pass.label.empty()
                                          ? "traced pass after round " + std::to_string(r.round)
                                          : pass.label;
            json args{{"status", pass.status},
                      {"error", opt(pass.error)},
                      {"devices", pass.devices},
                      {"round", r.round},
                      {"phase", ph.name.empty() ? "rounds" : ph.name}};
            b.slice(kStagesTid, label, "traced_pass", pass.start_ns, pass.end_ns, std::move(args));
            add_op_stages(b, pass.stages, label);
        }
    }
}

void add_counters(Builder& b, const ResultDocument& doc) {
    if (!doc.telemetry || !doc.telemetry->series)
        return;
    for (const auto& s : *doc.telemetry->series) {
        if (s.metric.empty())
            continue;
        const bool cumulative = s.kind == MetricKind::counter;
        static const std::vector<std::optional<double>> none;
        const auto& vals = cumulative ? (s.cumulative ? *s.cumulative : none) : s.values;
        // Energy counters also as power over each sampling interval, placed at its start.
        const std::string suffix = "energy_uj";
        const bool energy =
            cumulative && s.metric.size() > suffix.size() && s.metric.ends_with(suffix);
        const std::string power =
            s.metric.substr(0, s.metric.size() - suffix.size()) + "power_mw (from energy_uj)";
        std::optional<std::pair<int64_t, double>> last;
        for (size_t i = 0; i < s.t_ns.size() && i < vals.size(); ++i) {
            if (!vals[i])
                continue;  // missing is not zero: no point
            const double v = *vals[i];
            const int64_t t = s.t_ns[i];
            b.counter(s.metric, t, v);
            if (energy && last && t > last->first)
                b.counter(power, last->first, (v - last->second) / (t - last->first) * 1e6);
            last = {{t, v}};
        }
    }
}

// A serve document: each point a slice on the stages track, and its requests on lanes. A
// request takes the first lane free at its send time (in send order), so a point of
// concurrency C uses at most C lanes and an open-loop point as many as were in flight at once.
// Each request is a slice from its send to its last token, holding "waiting for the first
// token" (send to TTFT) and "streaming" (TTFT to the end); a failed request without an end is a
// slice of no duration with its error.
void add_serve(Builder& b, const ResultDocument& doc) {
    if (!doc.serve)
        return;
    for (const auto& p : doc.serve->points) {
        if (!p.start_ns || p.requests.empty())
            continue;  // a document of an earlier build: no clock to place the point on
        const int64_t t0 = *p.start_ns;
        std::vector<const ServeRequest*> order;
        for (const auto& r : p.requests)
            order.push_back(&r);
        std::stable_sort(order.begin(), order.end(),
                         [](const auto* x, const auto* y) { return x->send_ns < y->send_ns; });
        int64_t first = order.front()->send_ns, last = first;
        std::vector<int64_t> lane_free;  // per lane: when its last request ended
        for (const ServeRequest* r : order) {
            const int64_t send = r->send_ns;
            const int64_t end = send + r->e2e_ns.value_or(0);
            last = std::max(last, end);
            size_t lane = 0;
            while (lane < lane_free.size() && lane_free[lane] > send)
                ++lane;
            if (lane == lane_free.size())
                lane_free.push_back(end);
            lane_free[lane] = end;
            const int tid = kFirstLaneTid + static_cast<int>(lane);
            b.thread_names[tid] = "requests, lane " + std::to_string(lane + 1);
            json args{{"point", p.label()}, {"index", r->index}};
            auto ms = [](const std::optional<int64_t>& ns) {
                return ns ? json(static_cast<double>(*ns) * 1e-6) : json(nullptr);
            };
            args["ttft_ms"] = ms(r->ttft_ns);
            args["tpot_ms"] = ms(r->tpot_ns);
            args["e2e_ms"] = ms(r->e2e_ns);
            args["prompt_tokens"] = opt(r->prompt_tokens);
            args["output_tokens"] = opt(r->output_tokens);
            if (r->error)
                args["error"] = *r->error;
            const std::string name =
                "request " + std::to_string(r->index) + (r->error ? " (failed)" : "");
            b.slice(tid, name, "request", t0 + send, t0 + end, args);
            if (r->ttft_ns && r->e2e_ns && *r->ttft_ns <= *r->e2e_ns) {
                b.slice(tid, "waiting for the first token", "ttft", t0 + send,
                        t0 + send + *r->ttft_ns);
                b.slice(tid, "streaming", "stream", t0 + send + *r->ttft_ns, t0 + end);
            }
        }
        b.slice(kStagesTid, p.label(), "point", t0 + first, t0 + last,
                json{{"ok", p.ok},
                     {"errors", p.errors},
                     {"request_per_s", p.request_per_s},
                     {"output_tokens_per_s", p.output_tokens_per_s},
                     {"lanes", lane_free.size()}});
    }
}

// An explain document: each measure (a level, or a graph-level variant) a track of its own,
// "level N: ID", each of its runs a slice "round r" with its times; each round a slice on the
// stages track from its first run's start to its last run's end.
void add_explain(Builder& b, const ResultDocument& doc) {
    if (!doc.explain)
        return;
    const auto level_no = [](const std::string& level) {
        return level == "ops"          ? 1
               : level == "graph"      ? 2
               : level == "generation" ? 3
               : level == "server"     ? 4
                                       : 5;
    };
    std::map<int, std::pair<int64_t, int64_t>> rounds;
    int i = 0;
    for (const auto& m : doc.explain->measures) {
        const int tid = kFirstLevelTid + i++;
        b.thread_names[tid] = "level " + std::to_string(level_no(m.level)) + ": " + m.id;
        for (const auto& r : m.runs) {
            if (!r.start_ns || !r.end_ns)
                continue;
            auto ms = [](const std::optional<double>& ns) {
                return ns ? json(*ns * 1e-6) : json(nullptr);
            };
            json args{{"prefill_ms", ms(r.prefill_ns)}, {"decode_ms_per_token", ms(r.decode_ns)}};
            if (r.error)
                args["error"] = *r.error;
            b.slice(tid, "round " + std::to_string(r.round + 1) + (r.error ? " (failed)" : ""),
                    m.level, *r.start_ns, *r.end_ns, args);
            auto [it, fresh] = rounds.try_emplace(r.round, *r.start_ns, *r.end_ns);
            if (!fresh) {
                it->second.first = std::min(it->second.first, *r.start_ns);
                it->second.second = std::max(it->second.second, *r.end_ns);
            }
        }
    }
    for (const auto& [round, span] : rounds)
        b.slice(kStagesTid, "round " + std::to_string(round + 1), "round", span.first, span.second);
}

// ns -> µs with the half-ns bias (see the header).
double us(int64_t ns) {
    return (static_cast<double>(ns) + 0.5) / 1000.0;
}

}  // namespace

json chrome_trace(const ResultDocument& doc, const TraceOptions& opts) {
    Builder b{opts};
    add_tests(b, doc);
    add_ops(b, doc);
    add_serve(b, doc);
    add_explain(b, doc);
    if (opts.counters)
        add_counters(b, doc);

    int64_t origin = std::numeric_limits<int64_t>::max();
    for (const auto& e : b.events)
        origin = std::min(origin, e.ts_ns);
    if (b.events.empty())
        origin = 0;
    // Longer slices first at equal start, so that parents precede their children.
    std::stable_sort(b.events.begin(), b.events.end(), [](const Event& x, const Event& y) {
        if (x.ts_ns != y.ts_ns)
            return x.ts_ns < y.ts_ns;
        return x.dur_ns > y.dur_ns;
    });

    json out = json::array();
    const std::string command = doc.command.empty() ? "?" : doc.command;
    auto meta = [&](const char* name, int pid, int tid, const char* key, json value) {
        json args = json::object();
        args[key] = std::move(value);
        out.push_back(
            {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", 0}, {"args", args}});
    };
    meta("process_name", kMainPid, 0, "name", "stagebench " + command);
    meta("process_sort_index", kMainPid, 0, "sort_index", 0);
    bool any_counter = false;
    std::set<int> used_tids;
    for (const auto& e : b.events) {
        if (e.ph == 'C')
            any_counter = true;
        else
            used_tids.insert(e.tid);
    }
    used_tids.insert(kStagesTid);
    for (int tid : used_tids) {
        meta("thread_name", kMainPid, tid, "name", b.thread_names[tid]);
        meta("thread_sort_index", kMainPid, tid, "sort_index", tid);
    }
    if (any_counter) {
        meta("process_name", kTelemetryPid, 0, "name", "telemetry");
        meta("process_sort_index", kTelemetryPid, 0, "sort_index", 1);
    }
    for (auto& e : b.events) {
        json j{{"ph", std::string(1, e.ph)},
               {"name", e.name},
               {"pid", e.pid},
               {"tid", e.tid},
               {"ts", us(e.ts_ns - origin)}};
        if (e.ph == 'X') {  // counters go without a category: they are most of a large trace
            j["cat"] = e.cat;
            j["dur"] = us(e.dur_ns);
        }
        if (!e.args.is_null())
            j["args"] = std::move(e.args);
        out.push_back(std::move(j));
    }
    json md{
        {"source", "stagebench"},
        {"command", command},
        {"argv", doc.argv},
        {"tool",
         {{"name", "stagebench"}, {"version", doc.tool_version}, {"build_type", doc.build_type}}},
        {"started_at", doc.started_at},
        {"clock", "sb::now_ns (CLOCK_MONOTONIC); ts = microseconds since origin_ns"},
        {"origin_ns", origin}};
    return json{{"traceEvents", std::move(out)}, {"metadata", std::move(md)}};
}

void write_chrome_trace(const ResultDocument& doc, const std::string& path,
                        const TraceOptions& opts) {
    write_output_file(path, dump_json(chrome_trace(doc, opts)) + "\n", "the trace file");
}

TraceCheck check_chrome_trace(const json& trace) {
    TraceCheck c;
    auto err = [&](std::string m) {
        if (c.errors.size() < 50)
            c.errors.push_back(std::move(m));
    };
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
        err("not an object with a traceEvents array");
        return c;
    }
    struct Slice {
        int64_t start, end;
        size_t index;
    };
    std::map<std::pair<int64_t, int64_t>, std::vector<Slice>> tracks;
    std::map<std::pair<int64_t, std::string>, int64_t> counter_last;
    std::map<std::pair<int64_t, int64_t>, std::string> thread_name;
    std::set<int64_t> named_pids, pids;
    const json& evs = trace["traceEvents"];
    c.n_events = evs.size();
    // Perfetto's conversion of a JSON number of µs to integer ns.
    auto ns = [](const json& v) { return static_cast<int64_t>(v.get<double>() * 1000.0); };
    for (size_t i = 0; i < evs.size(); ++i) {
        const json& e = evs[i];
        const std::string where = "event " + std::to_string(i);
        if (!e.is_object()) {
            err(where + ": not an object");
            continue;
        }
        bool ok = true;
        for (const char* k : {"ph", "ts", "pid", "tid"})
            if (!e.contains(k)) {
                err(where + ": no " + k);
                ok = false;
            }
        if (!ok)
            continue;
        if (!e["ph"].is_string() || !e["ts"].is_number() || !e["pid"].is_number_integer() ||
            !e["tid"].is_number_integer()) {
            err(where + ": ph, ts, pid or tid of the wrong type");
            continue;
        }
        const std::string ph = e["ph"];
        const int64_t pid = e["pid"], tid = e["tid"];
        const std::string name = e.value("name", "");
        if (ph == "M") {
            const json& a = e.contains("args") ? e["args"] : json();
            if (name == "process_name" || name == "thread_name") {
                if (!a.is_object() || !a.contains("name") || !a["name"].is_string()) {
                    err(where + ": " + name + " without args.name");
                    continue;
                }
                if (name == "process_name")
                    named_pids.insert(pid);
                else
                    thread_name[{pid, tid}] = a["name"];
            }
            continue;
        }
        pids.insert(pid);
        const int64_t ts = ns(e["ts"]);
        if (ts < 0)
            err(where + ": negative ts");
        if (ph == "X") {
            if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
                err(where + " (" + name + "): X without a dur >= 0");
                continue;
            }
            if (name.empty())
                err(where + ": slice without a name");
            tracks[{pid, tid}].push_back({ts, ts + ns(e["dur"]), i});
        } else if (ph == "C") {
            const json& a = e.contains("args") ? e["args"] : json();
            if (!a.is_object() || a.empty()) {
                err(where + " (" + name + "): counter without args");
                continue;
            }
            for (const auto& [k, v] : a.items())
                if (!v.is_number())
                    err(where + " (" + name + "): counter value '" + k + "' is not a number");
            auto key = std::make_pair(pid, name);
            auto it = counter_last.find(key);
            if (it != counter_last.end() && ts < it->second)
                err(where + " (" + name + "): counter ts goes back");
            counter_last[key] = ts;
            c.counter_points[name]++;
        } else {
            err(where + ": unexpected ph '" + ph + "'");
        }
    }
    for (int64_t pid : pids)
        if (!named_pids.count(pid))
            err("process " + std::to_string(pid) + " has no process_name");
    for (auto& [key, slices] : tracks) {
        auto tn = thread_name.find(key);
        const std::string track = tn != thread_name.end() ? tn->second : "";
        if (track.empty())
            err("track pid " + std::to_string(key.first) + " tid " + std::to_string(key.second) +
                " has slices but no thread_name");
        c.slices[track] += slices.size();
        std::stable_sort(slices.begin(), slices.end(), [](const Slice& x, const Slice& y) {
            return x.start != y.start ? x.start < y.start : x.end > y.end;
        });
        std::vector<const Slice*> stack;
        for (const auto& s : slices) {
            while (!stack.empty() && stack.back()->end <= s.start)
                stack.pop_back();
            if (!stack.empty() && s.end > stack.back()->end)
                err("track '" + track + "': event " + std::to_string(s.index) + " overlaps event " +
                    std::to_string(stack.back()->index) + " partially");
            stack.push_back(&s);
        }
    }
    return c;
}

}  // namespace sb
