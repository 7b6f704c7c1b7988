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

namespace sb {

using nlohmann::json;

namespace {

constexpr int kMainPid = 1;
constexpr int kTelemetryPid = 2;
constexpr int kStagesTid = 1;
constexpr int kFirstModeTid = 2;  // hybrid documents: one stages track per mode (2..9)
constexpr int kFirstBackendTid = 10;

struct Event {
    char ph = 'X';
    std::string name, cat;
    int pid = kMainPid, tid = kStagesTid;
    int64_t ts_ns = 0;
    int64_t dur_ns = 0;  // X only
    json args;           // null: none
};

std::optional<int64_t> int_at(const json& j, const char* key) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || !it->is_number())
        return std::nullopt;
    return it->get<int64_t>();
}

std::string str_at(const json& j, const char* key, const std::string& fallback = "") {
    if (!j.is_object())
        return fallback;
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<int64_t> ints(const json& j) {
    std::vector<int64_t> v;
    if (j.is_array())
        for (const auto& x : j)
            v.push_back(x.is_number() ? x.get<int64_t>() : std::numeric_limits<int64_t>::min());
    return v;
}

// Copies the listed keys of src into a new object (null values kept: missing is not zero).
json pick(const json& src, std::initializer_list<const char*> keys) {
    json out = json::object();
    for (const char* k : keys)
        if (src.is_object() && src.contains(k))
            out[k] = src[k];
    return out;
}

std::string shape_of(const json& ne) {
    if (!ne.is_array() || ne.empty())
        return "";
    std::vector<int64_t> v = ints(ne);
    while (v.size() > 1 && v.back() == 1)
        v.pop_back();
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
        s += (i ? "x" : "") + std::to_string(v[i]);
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

std::vector<Interval> intervals_of(const json& stage) {
    std::vector<Interval> out;
    const auto starts = ints(json_field(stage, "start_ns"));
    const auto durs = ints(json_field(stage, "duration_ns"));
    for (size_t i = 0; i < starts.size() && i < durs.size(); ++i)
        if (starts[i] != std::numeric_limits<int64_t>::min() &&
            durs[i] != std::numeric_limits<int64_t>::min() && durs[i] >= 0)
            out.push_back({starts[i], starts[i] + durs[i], i});
    return out;
}

// Repetitions, prefill, decode and tokens of one test, inside [lo, hi].
void add_test_stages(Builder& b, const json& t, bool rep_slices, int tid) {
    const json& prefill = json_field(t, "prefill");
    const json& decode = json_field(t, "decode");
    const auto pre = intervals_of(prefill);
    const auto dec = intervals_of(decode);
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
    const auto tps_pre = json_field(prefill, "tokens_per_s");
    for (const auto& p : pre)
        b.slice(
            tid, "prefill", "stage", p.start, p.end,
            json{{"n_tokens", json_field(prefill, "n_tokens")},
                 {"duration_ns", p.end - p.start},
                 {"tokens_per_s", tps_pre.is_array() && p.index < tps_pre.size() ? tps_pre[p.index]
                                                                                 : json(nullptr)}});
    const auto tps_dec = json_field(decode, "tokens_per_s");
    const auto lat = ints(json_field(decode, "token_latency_ns"));
    const auto n_tok = int_at(decode, "n_tokens");
    // Token slices only when every repetition decoded n_tokens (the in-process engine); over
    // HTTP the gaps are per streamed chunk and vary per repetition.
    const bool tokens = b.opts.tokens && n_tok && *n_tok > 0 &&
                        lat.size() == static_cast<size_t>(*n_tok) * dec.size();
    for (size_t k = 0; k < dec.size(); ++k) {
        const auto& d = dec[k];
        b.slice(
            tid, "decode", "stage", d.start, d.end,
            json{{"n_tokens", json_field(decode, "n_tokens")},
                 {"duration_ns", d.end - d.start},
                 {"tokens_per_s", tps_dec.is_array() && d.index < tps_dec.size() ? tps_dec[d.index]
                                                                                 : json(nullptr)}});
        if (!tokens)
            continue;
        int64_t t = d.start;
        for (int64_t i = 0; i < *n_tok; ++i) {
            const int64_t l = lat[static_cast<size_t>(k * *n_tok + i)];
            const int64_t end = std::min(d.end, t + std::max<int64_t>(0, l));
            b.slice(tid, "token " + std::to_string(i + 1), "token", t, end,
                    json{{"latency_ns", l}});
            t = end;
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
    const json* round = nullptr;
};

void add_tests(Builder& b, const json& doc) {
    // Sustained documents: each round is one test with the round's start and end.
    std::map<int64_t, RoundRef> rounds;
    const json& sustained = json_field(doc, "sustained");
    // With --cooldown 0 the wait is only the time to look at the clock: no slice.
    const bool cooldowns = str_at(json_field(sustained, "config"), "cooldown") != "0";
    static const json no_phases = json::array();
    const json& phases =
        json_field(sustained, "phases").is_array() ? json_field(sustained, "phases") : no_phases;
    for (const auto& ph : phases) {
        const std::string phase = str_at(ph, "name", "rounds");
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
        int64_t prev_end = std::numeric_limits<int64_t>::min();
        const json& rs = json_field(ph, "rounds");
        if (!rs.is_array())
            continue;
        for (const auto& r : rs) {
            auto s = int_at(r, "start_ns"), e = int_at(r, "end_ns");
            if (!s || !e || *s <= 0)
                continue;
            rounds[*s] = {phase, &r};
            lo = std::min(lo, *s);
            hi = std::max(hi, *e);
            // A traced pass after the round (--trace-ops-rounds) belongs to the phase too.
            const json& pass = json_field(r, "ops");
            auto ps = int_at(pass, "start_ns"), pe = int_at(pass, "end_ns");
            const bool has_pass = ps && pe && *ps >= *e && *pe >= *ps;
            if (has_pass)
                hi = std::max(hi, *pe);
            const json& cd = json_field(r, "cooldown_s");
            if (cooldowns && cd.is_number() && cd.get<double>() > 0) {
                int64_t cs = *s - static_cast<int64_t>(std::llround(cd.get<double>() * 1e9));
                if (prev_end != std::numeric_limits<int64_t>::min())
                    cs = std::max(cs, prev_end);
                b.slice(kStagesTid, "cooldown", "cooldown", cs, *s,
                        json{{"cooldown_s", cd}, {"before_round", json_field(r, "round")}});
            }
            prev_end = has_pass ? *pe : *e;
        }
        if (lo <= hi)
            b.slice(kStagesTid, "phase " + phase, "phase", lo, hi,
                    json{{"phase", phase}, {"background", json_field(ph, "background")}});
    }

    const json& tests = json_field(doc, "tests");
    if (!tests.is_array())
        return;
    // A hybrid run interleaves the repetitions of its modes: each mode gets a track of its own,
    // and the state transfers of the hybrid mode are slices on its track.
    const json& hybrid = json_field(doc, "hybrid");
    std::map<std::string, int> mode_tid;
    auto tid_of = [&](const json& cfg) {
        if (!hybrid.is_object())
            return kStagesTid;
        const std::string dev = str_at(cfg, "devices", "?");
        auto it = mode_tid.find(dev);
        if (it != mode_tid.end())
            return it->second;
        const int tid =
            std::min(kFirstModeTid + static_cast<int>(mode_tid.size()), kFirstBackendTid - 1);
        mode_tid[dev] = tid;
        b.thread_names[tid] = "stages on " + dev;
        return tid;
    };
    if (hybrid.is_object() && json_field(hybrid, "points").is_array()) {
        for (const auto& pt : json_field(hybrid, "points")) {
            const auto idx = int_at(json_field(pt, "tests"), "hybrid");
            if (!idx || *idx < 0 || static_cast<size_t>(*idx) >= tests.size())
                continue;
            const int tid = tid_of(json_field(tests[static_cast<size_t>(*idx)], "config"));
            const json& tr = json_field(pt, "transfer");
            const auto starts = ints(json_field(tr, "start_ns"));
            const auto durs = ints(json_field(tr, "duration_ns"));
            const auto bytes = ints(json_field(tr, "bytes"));
            for (size_t i = 0; i < starts.size() && i < durs.size(); ++i) {
                if (starts[i] <= 0 || durs[i] < 0)
                    continue;
                json args{{"duration_ns", durs[i]}};
                if (i < bytes.size())
                    args["bytes"] = bytes[i];
                b.slice(tid, "state transfer", "transfer", starts[i], starts[i] + durs[i], args);
            }
        }
    }
    for (const auto& t : tests) {
        auto s = int_at(t, "started_ns"), e = int_at(t, "finished_ns");
        const json& cfg = json_field(t, "config");
        const int tid = tid_of(cfg);
        json args = pick(t, {"status", "error", "reps_done", "stopped_by", "backends"});
        args["test"] = json_field(cfg, "test");
        args["devices"] = json_field(cfg, "devices");
        args["engine"] = json_field(cfg, "engine");
        std::string name = str_at(cfg, "test", "test") + " on " + str_at(cfg, "devices", "?");
        std::string cat = "test";
        bool rep_slices = true;
        if (s) {
            auto it = rounds.find(*s);
            if (it != rounds.end()) {
                const json& r = *it->second.round;
                name = "round " + std::to_string(int_at(r, "round").value_or(0));
                cat = "round";
                args.update(pick(
                    r, {"round", "ttft_ms", "prefill_tps", "decode_tps", "itl_p50_ms", "itl_p99_ms",
                        "decode_j_per_token", "decode_net_j_per_token", "temp_start_c",
                        "temp_end_c", "temp_max_c", "cpu_freq_mean_khz", "cooldown_s"}));
                args["phase"] = it->second.phase;
                rep_slices = int_at(t, "reps_done").value_or(0) > 1;
            }
        }
        if (s && e && *s > 0 && *e >= *s)
            b.slice(tid, name, cat, *s, *e, args);
        add_test_stages(b, t, rep_slices, tid);
    }
}

// The stages of an ops profile (ops.stages[] or a sustained round's traced pass); pass names
// the traced pass in the slices' arguments ("" for an ops document).
void add_op_stages(Builder& b, const json& stages, const std::string& pass) {
    if (!stages.is_array())
        return;
    for (const auto& st : stages) {
        const std::string stage = str_at(st, "stage", "stage");
        const json& rec = json_field(st, "reconciliation");
        const auto plain_s = ints(json_field(rec, "plain_start_ns"));
        const auto plain_d = ints(json_field(rec, "plain_ns"));
        for (size_t i = 0; i < plain_s.size() && i < plain_d.size(); ++i)
            b.slice(kStagesTid, stage + " (uninstrumented)", "stage", plain_s[i],
                    plain_s[i] + plain_d[i],
                    with_pass(
                        json{{"stage", stage}, {"repetition", i + 1}, {"duration_ns", plain_d[i]}},
                        pass));
        const auto traced_s = ints(json_field(rec, "traced_start_ns"));
        const auto traced_d = ints(json_field(rec, "traced_ns"));
        const auto timeline = int_at(st, "timeline_rep");
        for (size_t i = 0; i < traced_s.size() && i < traced_d.size(); ++i)
            b.slice(kStagesTid, stage + " (traced node by node)", "stage", traced_s[i],
                    traced_s[i] + traced_d[i],
                    with_pass(json{{"stage", stage},
                                   {"repetition", i + 1},
                                   {"duration_ns", traced_d[i]},
                                   {"ops_shown", timeline && *timeline == static_cast<int64_t>(i)}},
                              pass));
        if (!b.opts.ops)
            continue;
        const json& recs = json_field(st, "ops");
        if (!recs.is_array())
            continue;
        std::map<std::pair<int64_t, int64_t>, size_t> index;  // (graph, node) -> record
        for (size_t i = 0; i < recs.size(); ++i) {
            const json& r = recs[i];
            index[{int_at(r, "graph").value_or(0), int_at(r, "node").value_or(-1)}] = i;
            auto s = int_at(r, "start_ns"), e = int_at(r, "end_ns");
            if (!s || !e)
                continue;
            json srcs = json::array();
            if (json_field(r, "srcs").is_array())
                for (const auto& src : r["srcs"])
                    srcs.push_back({{"name", json_field(src, "name")},
                                    {"type", json_field(src, "type")},
                                    {"shape", shape_of(json_field(src, "ne"))}});
            json args = pick(r, {"name", "layer", "backend", "type", "op_ns", "call_ns",
                                 "isolated_call_ns", "no_compute", "graph", "node"});
            args["shape"] = shape_of(json_field(r, "ne"));
            args["srcs"] = srcs;
            args["stage"] = stage;
            b.slice(b.tid_of_backend(str_at(r, "backend")), str_at(r, "op", "op"), "op", *s, *e,
                    with_pass(std::move(args), pass));
        }
        // A split's input copies ran between the previous node's end and its first node's
        // start (the gap call_ns does not hold).
        const json& splits = json_field(st, "splits");
        if (!splits.is_array())
            continue;
        for (const auto& sp : splits) {
            const int64_t g = int_at(sp, "graph").value_or(0);
            const auto first = int_at(sp, "first_node");
            if (!first || *first <= 0 || int_at(sp, "n_inputs").value_or(0) <= 0)
                continue;
            auto cur = index.find({g, *first});
            auto prev = index.find({g, *first - 1});
            if (cur == index.end() || prev == index.end())
                continue;
            auto s = int_at(recs[prev->second], "end_ns");
            auto e = int_at(recs[cur->second], "start_ns");
            if (!s || !e || *e < *s)
                continue;
            const std::string backend = str_at(sp, "backend");
            json args = pick(sp, {"input_bytes", "n_inputs", "inputs", "copy_ns", "index"});
            args["backend"] = backend;
            args["stage"] = stage;
            b.slice(b.tid_of_backend(backend), "copy to " + backend, "copy", *s, *e,
                    with_pass(std::move(args), pass));
        }
    }
}

void add_ops(Builder& b, const json& doc) {
    add_op_stages(b, json_field(json_field(doc, "ops"), "stages"), "");
    // Sustained rounds with a traced pass after them: a slice for the pass on the stages track,
    // its stages and ops inside it.
    const json& phases = json_field(json_field(doc, "sustained"), "phases");
    if (!phases.is_array())
        return;
    for (const auto& ph : phases) {
        const json& rs = json_field(ph, "rounds");
        if (!rs.is_array())
            continue;
        for (const auto& r : rs) {
            const json& pass = json_field(r, "ops");
            auto s = int_at(pass, "start_ns"), e = int_at(pass, "end_ns");
            if (!s || !e || *e < *s)
                continue;
            const std::string label =
                str_at(pass, "label",
                       "traced pass after round " + std::to_string(int_at(r, "round").value_or(0)));
            json args = pick(pass, {"status", "error", "devices"});
            args["round"] = json_field(r, "round");
            args["phase"] = str_at(ph, "name", "rounds");
            b.slice(kStagesTid, label, "traced_pass", *s, *e, std::move(args));
            add_op_stages(b, json_field(pass, "stages"), label);
        }
    }
}

void add_counters(Builder& b, const json& doc) {
    const json& series = json_field(json_field(doc, "telemetry"), "series");
    if (!series.is_array())
        return;
    for (const auto& s : series) {
        const std::string metric = str_at(s, "metric");
        if (metric.empty())
            continue;
        const bool cumulative = str_at(s, "kind") == "counter";
        const auto t = ints(json_field(s, "t_ns"));
        const json& vals = json_field(s, cumulative ? "cumulative" : "values");
        if (!vals.is_array())
            continue;
        // Energy counters also as power over each sampling interval, placed at its start.
        const std::string suffix = "energy_uj";
        const bool energy =
            cumulative && metric.size() > suffix.size() &&
            metric.compare(metric.size() - suffix.size(), suffix.size(), suffix) == 0;
        const std::string power =
            metric.substr(0, metric.size() - suffix.size()) + "power_mw (from energy_uj)";
        std::optional<std::pair<int64_t, double>> last;
        for (size_t i = 0; i < t.size() && i < vals.size(); ++i) {
            if (!vals[i].is_number() || t[i] == std::numeric_limits<int64_t>::min())
                continue;  // missing is not zero: no point
            const double v = vals[i].get<double>();
            b.counter(metric, t[i], v);
            if (energy && last && t[i] > last->first)
                b.counter(power, last->first, (v - last->second) / (t[i] - last->first) * 1e6);
            last = {{t[i], v}};
        }
    }
}

// ns -> µs with the half-ns bias (see the header).
double us(int64_t ns) {
    return (static_cast<double>(ns) + 0.5) / 1000.0;
}

}  // namespace

json chrome_trace(const json& doc, const TraceOptions& opts) {
    if (!doc.is_object() || str_at(doc, "schema") != "stagebench.result")
        throw input_error(
            "not a stagebench result document (no \"schema\": \"stagebench.result\")");
    Builder b{opts};
    add_tests(b, doc);
    add_ops(b, doc);
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
    const std::string command = str_at(doc, "command", "?");
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
    json md{{"source", "stagebench"},
            {"command", command},
            {"argv", json_field(doc, "argv")},
            {"tool", json_field(doc, "tool")},
            {"started_at", json_field(doc, "started_at")},
            {"clock", "sb::now_ns (CLOCK_MONOTONIC); ts = microseconds since origin_ns"},
            {"origin_ns", origin}};
    return json{{"traceEvents", std::move(out)}, {"metadata", std::move(md)}};
}

void write_chrome_trace(const json& doc, const std::string& path, const TraceOptions& opts) {
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
