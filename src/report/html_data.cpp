#include "report/html_data.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::optional<double> num(const json& j) {
    if (j.is_number())
        return j.get<double>();
    return std::nullopt;
}

std::optional<double> scaled(const json& j, double factor) {
    if (auto v = num(j))
        return *v * factor;
    return std::nullopt;
}

std::string text(const json& j) {
    return j.is_string() ? j.get<std::string>() : std::string();
}

const json& array_or_empty(const json& j) {
    static const json empty = json::array();
    return j.is_array() ? j : empty;
}

std::string basename(const std::string& path) {
    auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A Summary (core/stats_json.hpp) as {median, lo, hi, n, cv}, values times factor; null when
// it has no median.
json stat(const json& summary, double factor = 1.0) {
    auto median = scaled(json_field(summary, "median"), factor);
    if (!median)
        return nullptr;
    return json{{"median", *median},
                {"lo", opt(scaled(json_field(summary, "ci95_lo"), factor))},
                {"hi", opt(scaled(json_field(summary, "ci95_hi"), factor))},
                {"n", opt(num(json_field(summary, "n")))},
                {"cv", opt(num(json_field(summary, "cv")))}};
}

constexpr double kNsToMs = 1e-6;

// Top-level keys of a result document this report knows (shown or deliberately not).
const std::set<std::string>& known_result_keys() {
    static const std::set<std::string> keys = {
        "schema",   "schema_version", "command", "argv",       "tool",        "llama",
        "system",   "models",         "membw",   "started_at", "finished_at", "tests",
        "warnings", "telemetry",      "engines", "ops",        "sustained",   "hybrid"};
    return keys;
}

const std::set<std::string>& known_commands() {
    static const std::set<std::string> commands = {"run",    "demo",      "ops",   "decompose",
                                                   "import", "sustained", "hybrid"};
    return commands;
}

json result_header(const json& doc) {
    std::string command_line;
    for (const auto& a : array_or_empty(json_field(doc, "argv"))) {
        if (!command_line.empty())
            command_line += ' ';
        command_line += text(a);
    }
    const json& sys = json_field(doc, "system");
    return json{{"host", text(json_field(sys, "hostname"))},
                {"cpu", text(json_field(sys, "cpu_model"))},
                {"os", text(json_field(sys, "os"))},
                {"started_at", text(json_field(doc, "started_at"))},
                {"finished_at", text(json_field(doc, "finished_at"))},
                {"tool_version", text(json_field(json_field(doc, "tool"), "version"))},
                {"build_type", text(json_field(json_field(doc, "tool"), "build_type"))},
                {"llama", text(json_field(json_field(doc, "llama"), "tag"))},
                {"command_line", command_line}};
}

std::string test_label(const json& cfg, bool with_model) {
    std::string s = text(json_field(cfg, "test"));
    const std::string devices = text(json_field(cfg, "devices"));
    if (!devices.empty())
        s += " · " + devices;
    if (auto t = num(json_field(cfg, "n_threads")); t && *t > 0)
        s += " · " + std::to_string(static_cast<int>(*t)) + "t";
    const std::string engine = text(json_field(cfg, "engine"));
    if (!engine.empty() && engine != "llama")
        s += " · " + engine;
    if (with_model)
        s += " · " + basename(text(json_field(cfg, "model_path")));
    return s;
}

// Op time and call overhead (call - op) of an aggregate row, in ms. A call time below the op
// time (possible: they are measured separately) shows as no overhead and is listed.
json op_bar(const std::string& label, const json& a, json& clamped) {
    auto op = scaled(json_field(a, "op_ns"), kNsToMs);
    auto call = scaled(json_field(a, "call_ns"), kNsToMs);
    if (!op.value_or(0) && !call.value_or(0))
        return nullptr;
    std::optional<double> overhead;
    if (op && call) {
        overhead = std::max(0.0, *call - *op);
        if (*call < *op)
            clamped.push_back(label);
    }
    return json{{"label", label},
                {"count", opt(num(json_field(a, "count")))},
                {"op_ms", opt(op)},
                {"call_ms", opt(call)},
                {"overhead_ms", opt(overhead)},
                {"call_op_ratio", opt(num(json_field(a, "call_op_ratio")))}};
}

json stage_ops_view(const json& st) {
    json clamped = json::array();
    std::map<std::string, std::string> fallback_of;  // op type -> "CPU (asked BLAS)"
    json fallback = json::array();
    for (const auto& f : array_or_empty(json_field(st, "fallback"))) {
        const std::string op = text(json_field(f, "op"));
        std::string where = text(json_field(f, "backend"));
        if (!text(json_field(f, "requested")).empty())
            where += " instead of " + text(json_field(f, "requested"));
        fallback_of[op] = fallback_of.count(op) ? fallback_of[op] + ", " + where : where;
        fallback.push_back({{"op", op},
                            {"backend", text(json_field(f, "backend"))},
                            {"requested", text(json_field(f, "requested"))},
                            {"count", opt(num(json_field(f, "count")))},
                            {"op_ms", opt(scaled(json_field(f, "op_ns"), kNsToMs))},
                            {"call_ms", opt(scaled(json_field(f, "call_ns"), kNsToMs))},
                            {"penalty", opt(num(json_field(f, "penalty")))},
                            {"note", text(json_field(f, "note"))}});
    }
    json by_op = json::array();
    for (const auto& a : array_or_empty(json_field(st, "by_op"))) {
        const std::string op = text(json_field(a, "op"));
        json bar = op_bar(op, a, clamped);
        if (bar.is_null())
            continue;
        bar["op"] = op;
        auto f = fallback_of.find(op);
        bar["fallback"] = f == fallback_of.end() ? json(nullptr) : json(f->second);
        if (f != fallback_of.end())
            bar["label"] = op + " (fallback)";
        by_op.push_back(bar);
    }
    json by_backend = json::array();
    for (const auto& a : array_or_empty(json_field(st, "by_backend"))) {
        json bar = op_bar(text(json_field(a, "backend")), a, clamped);
        if (!bar.is_null())
            by_backend.push_back(bar);
    }
    const json& rec = json_field(st, "reconciliation");
    json decomposition = nullptr;
    const json& d = json_field(st, "decomposition");
    if (d.is_object() && !array_or_empty(json_field(d, "parts")).empty()) {
        json parts = json::array();
        for (const auto& p : json_field(d, "parts"))
            parts.push_back({{"name", text(json_field(p, "name"))},
                             {"ms", opt(scaled(json_field(p, "ns"), kNsToMs))},
                             {"share", opt(num(json_field(p, "share")))},
                             {"note", text(json_field(p, "note"))}});
        decomposition = {{"parts", parts},
                         {"accelerators", array_or_empty(json_field(d, "accelerators"))}};
    }
    json notes = json::array();
    for (const auto& n : array_or_empty(json_field(st, "notes")))
        if (n.is_string())
            notes.push_back(n);
    return json{{"stage", text(json_field(st, "stage"))},
                {"n_tokens", opt(num(json_field(st, "n_tokens")))},
                {"by_op", by_op},
                {"by_backend", by_backend},
                {"fallback", fallback},
                {"clamped", clamped},
                {"reconciliation",
                 {{"plain_ms", opt(scaled(json_field(rec, "plain_median_ns"), kNsToMs))},
                  {"traced_ms", opt(scaled(json_field(rec, "traced_median_ns"), kNsToMs))},
                  {"sum_op_ms", opt(scaled(json_field(rec, "sum_op_ns"), kNsToMs))},
                  {"sum_call_ms", opt(scaled(json_field(rec, "sum_call_ns"), kNsToMs))},
                  {"op_fraction", opt(num(json_field(rec, "op_fraction")))}}},
                {"decomposition", decomposition},
                {"notes", notes}};
}

// How a telemetry series is drawn: its group, unit and the factor from its stored unit.
struct SeriesKind {
    std::string group, unit;
    double factor = 1;
    bool from_counter = false;  // power from an energy counter's increments
};

std::optional<SeriesKind> series_kind(const json& s) {
    const std::string unit = text(json_field(s, "unit"));
    const bool counter = text(json_field(s, "kind")) == "counter";
    if (unit == "mC" && !counter)
        return SeriesKind{"temperature", "°C", 1e-3};
    if (unit == "kHz" && !counter)
        return SeriesKind{"frequency", "MHz", 1e-3};
    if (unit == "mW" && !counter)
        return SeriesKind{"power", "W", 1e-3};
    if (unit == "uJ" && counter)  // uJ per ns is kW
        return SeriesKind{"power", "W", 1e3, true};
    return std::nullopt;
}

}  // namespace

ReportInput load_report_input(const std::string& path) {
    return ReportInput{path, load_document(path)};
}

json summary_view(const json& doc) {
    const json& tests = array_or_empty(json_field(doc, "tests"));
    if (tests.empty())
        return nullptr;
    json rows = json::array();
    for (const auto& t : tests) {
        const json& cfg = json_field(t, "config");
        const json& itl = json_field(json_field(t, "decode"), "itl");
        json backends = json::array();
        for (const auto& b : array_or_empty(json_field(t, "backends")))
            if (b.is_string())
                backends.push_back(b);
        auto threads = num(json_field(cfg, "n_threads"));
        rows.push_back(
            {{"test", text(json_field(cfg, "test"))},
             {"model", basename(text(json_field(cfg, "model_path")))},
             {"engine", text(json_field(cfg, "engine"))},
             {"devices", text(json_field(cfg, "devices"))},
             {"threads", threads && *threads > 0 ? json(static_cast<int>(*threads)) : json()},
             {"backends", backends},
             {"status", text(json_field(t, "status"))},
             {"error", text(json_field(t, "error"))},
             {"reps_done", opt(num(json_field(t, "reps_done")))},
             {"prefill", stat(json_field(json_field(t, "prefill"), "throughput"))},
             {"decode", stat(json_field(json_field(t, "decode"), "throughput"))},
             {"ttft_ms", stat(json_field(t, "ttft"), kNsToMs)},
             {"itl_ms",
              {{"median", opt(scaled(json_field(itl, "median"), kNsToMs))},
               {"p99", opt(scaled(json_field(itl, "p99"), kNsToMs))}}}});
    }
    return rows;
}

json throughput_view(const json& doc) {
    const json& tests = array_or_empty(json_field(doc, "tests"));
    std::set<std::string> models;
    for (const auto& t : tests)
        models.insert(text(json_field(json_field(t, "config"), "model_path")));
    json labels = json::array(), prefill = json::array(), decode = json::array();
    std::map<std::string, int> seen;  // label -> times used: repeated tests get " #2", " #3"
    bool any = false;
    for (const auto& t : tests) {
        json p = stat(json_field(json_field(t, "prefill"), "throughput"));
        json d = stat(json_field(json_field(t, "decode"), "throughput"));
        if (p.is_null() && d.is_null())
            continue;
        any = true;
        std::string label = test_label(json_field(t, "config"), models.size() > 1);
        if (const int k = ++seen[label]; k > 1)
            label += " #" + std::to_string(k);
        labels.push_back(label);
        prefill.push_back(p);
        decode.push_back(d);
    }
    if (!any)
        return nullptr;
    return json{{"labels", labels}, {"prefill", prefill}, {"decode", decode}};
}

json ops_view(const json& doc, std::vector<std::string>& notes) {
    const json& ops = json_field(doc, "ops");
    if (ops.is_null())
        return nullptr;
    if (!ops.is_object() || !json_field(ops, "stages").is_array()) {
        notes.push_back("the ops section has no stages; not shown");
        return nullptr;
    }
    json stages = json::array();
    for (const auto& st : json_field(ops, "stages")) {
        if (!st.is_object())
            continue;
        stages.push_back(stage_ops_view(st));
    }
    if (stages.empty()) {
        notes.push_back("the ops section has no stages; not shown");
        return nullptr;
    }
    json backends = json::array();
    for (const auto& b : array_or_empty(json_field(ops, "backends")))
        if (b.is_string())
            backends.push_back(b);
    return json{{"source", text(json_field(ops, "source"))},
                {"devices", text(json_field(ops, "devices"))},
                {"backends", backends},
                {"method", text(json_field(ops, "method"))},
                {"stages", stages}};
}

json stage_spans(const json& marks, int64_t t0_ns) {
    struct Open {
        std::string stage;
        double begin_s;
    };
    std::vector<Open> open;
    std::vector<std::pair<double, json>> spans;
    for (const auto& m : array_or_empty(marks)) {
        auto t = num(json_field(m, "t_ns"));
        const std::string stage = text(json_field(m, "stage"));
        if (!t || stage.empty() || !json_field(m, "begin").is_boolean())
            continue;
        const double s = (*t - static_cast<double>(t0_ns)) * 1e-9;
        if (json_field(m, "begin").get<bool>()) {
            open.push_back({stage, s});
            continue;
        }
        auto it =
            std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.stage == stage; });
        if (it == open.end())
            continue;
        const auto slash = stage.find_last_of('/');
        const std::string kind = slash == std::string::npos ? stage : stage.substr(slash + 1);
        spans.emplace_back(
            it->begin_s,
            json{{"stage", stage}, {"kind", kind}, {"begin_s", it->begin_s}, {"end_s", s}});
        open.erase(it);
    }
    std::stable_sort(spans.begin(), spans.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    json out = json::array();
    for (auto& [_, j] : spans)
        out.push_back(std::move(j));
    return out;
}

std::vector<std::pair<double, std::optional<double>>> reduce_points(
    const std::vector<std::pair<double, std::optional<double>>>& points, std::size_t max_points) {
    if (max_points < 2 || points.size() <= max_points)
        return points;
    const std::size_t buckets = max_points / 2;
    std::vector<std::pair<double, std::optional<double>>> out;
    out.reserve(max_points);
    for (std::size_t b = 0; b < buckets; ++b) {
        const std::size_t lo = b * points.size() / buckets;
        const std::size_t hi = (b + 1) * points.size() / buckets;
        std::optional<std::size_t> imin, imax;
        bool gap = false;
        for (std::size_t i = lo; i < hi; ++i) {
            if (!points[i].second) {
                gap = true;
                continue;
            }
            if (!imin || *points[i].second < *points[*imin].second)
                imin = i;
            if (!imax || *points[i].second > *points[*imax].second)
                imax = i;
        }
        if (!imin) {
            out.push_back({points[lo].first, std::nullopt});
            continue;
        }
        const std::size_t first = std::min(*imin, *imax), second = std::max(*imin, *imax);
        out.push_back(points[first]);
        if (second != first)
            out.push_back(points[second]);
        else if (gap)
            out.push_back({points[hi - 1].first, std::nullopt});
    }
    return out;
}

json telemetry_view(const json& doc, std::vector<std::string>& notes, std::size_t max_points) {
    const json& tel = json_field(doc, "telemetry");
    if (!tel.is_object())
        return nullptr;
    const json& series = json_field(tel, "series");
    if (!series.is_array() || series.empty()) {
        notes.push_back("telemetry was recorded without time series; no telemetry chart");
        return nullptr;
    }
    // Time zero: the earliest sample or mark.
    std::optional<double> t0;
    auto earlier = [&](const json& t) {
        if (auto v = num(t); v && (!t0 || *v < *t0))
            t0 = *v;
    };
    for (const auto& s : series) {
        const json& t = json_field(s, "t_ns");
        if (t.is_array() && !t.empty())
            earlier(t.front());
    }
    for (const auto& m : array_or_empty(json_field(tel, "marks")))
        earlier(json_field(m, "t_ns"));
    if (!t0)
        return nullptr;
    const int64_t t0_ns = static_cast<int64_t>(*t0);

    const std::vector<std::string> order = {"temperature", "frequency", "power"};
    std::map<std::string, json> groups;
    std::set<std::string> other_units;
    std::size_t limits = 0;
    for (const auto& s : series) {
        const json& t = json_field(s, "t_ns");
        auto kind = series_kind(s);
        const std::string metric = text(json_field(s, "metric"));
        // cpufreq's min/max are the governor's limits, not what the clock did.
        if (kind && kind->group == "frequency" &&
            (metric.ends_with("min_freq_khz") || metric.ends_with("max_freq_khz"))) {
            ++limits;
            continue;
        }
        if (!kind) {
            if (!text(json_field(s, "unit")).empty())
                other_units.insert(text(json_field(s, "unit")));
            continue;
        }
        const json& values =
            kind->from_counter ? json_field(s, "cumulative") : json_field(s, "values");
        if (!t.is_array() || !values.is_array())
            continue;
        const std::size_t n = std::min(t.size(), values.size());
        std::vector<std::pair<double, std::optional<double>>> pts;
        pts.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            auto ti = num(t[i]);
            if (!ti)
                continue;
            const double ts = (*ti - static_cast<double>(t0_ns)) * 1e-9;
            if (!kind->from_counter) {
                pts.push_back({ts, scaled(values[i], kind->factor)});
                continue;
            }
            if (i == 0)
                continue;
            auto tp = num(t[i - 1]);
            auto v = num(values[i]), vp = num(values[i - 1]);
            if (tp && v && vp && *ti > *tp)
                pts.push_back({ts, (*v - *vp) / (*ti - *tp) * kind->factor});
            else
                pts.push_back({ts, std::nullopt});
        }
        json points = json::array();
        for (const auto& [x, y] : reduce_points(pts, max_points))
            points.push_back({x, opt(y)});
        std::string name = metric;
        if (kind->from_counter)
            name += " (from the energy counter)";
        json& g = groups[kind->group];
        if (g.is_null())
            g = {{"quantity", kind->group}, {"unit", kind->unit}, {"series", json::array()}};
        g["series"].push_back({{"name", name}, {"points", points}});
    }
    if (limits > 0)
        notes.push_back(
            std::to_string(limits) +
            " frequency limit series (min/max) are not charted, only current frequencies");
    if (!other_units.empty()) {
        std::string units;
        for (const auto& u : other_units)
            units += (units.empty() ? "" : ", ") + u;
        notes.push_back("telemetry series in " + units + " are not charted");
    }
    json out_groups = json::array();
    for (const auto& q : order)
        if (groups.count(q))
            out_groups.push_back(groups[q]);
    if (out_groups.empty()) {
        notes.push_back("no temperature, frequency or power series in the telemetry");
        return nullptr;
    }
    // Shaded: the stages themselves (and the idle baseline), not the rounds around them.
    json spans = json::array();
    for (auto& s : stage_spans(json_field(tel, "marks"), t0_ns))
        if (s["kind"] == "prefill" || s["kind"] == "decode" || s["kind"] == "idle")
            spans.push_back(std::move(s));
    return json{{"hz", opt(num(json_field(tel, "hz")))}, {"groups", out_groups}, {"spans", spans}};
}

json hybrid_view(const json& doc) {
    const json& h = json_field(doc, "hybrid");
    if (!h.is_object())
        return nullptr;
    const json& tests = json_field(doc, "tests");
    const std::string a = text(json_field(h, "prefill_device")),
                      b = text(json_field(h, "decode_device"));
    auto label = [&](const std::string& mode) {
        if (mode == "hybrid")
            return a + " → " + b;
        return (mode == "prefill_alone" ? a : b) + " alone";
    };
    json points = json::array();
    for (const auto& pt : array_or_empty(json_field(h, "points"))) {
        const std::string name =
            "pp" + std::to_string(static_cast<int>(num(json_field(pt, "n_prompt")).value_or(0))) +
            "+tg" + std::to_string(static_cast<int>(num(json_field(pt, "n_gen")).value_or(0)));
        json modes = json::array();
        for (const char* mode : {"hybrid", "prefill_alone", "decode_alone"}) {
            const auto idx = num(json_field(json_field(pt, "tests"), mode));
            if (!idx || !tests.is_array() || *idx < 0 || *idx >= tests.size())
                continue;
            const json& t = tests[static_cast<size_t>(*idx)];
            const bool hybrid = std::string(mode) == "hybrid";
            const json& tr = json_field(pt, "transfer");
            modes.push_back(
                {{"mode", mode},
                 {"label", label(mode)},
                 {"status", text(json_field(t, "status"))},
                 {"prefill_ms",
                  opt(scaled(json_field(json_field(json_field(t, "prefill"), "duration"), "median"),
                             kNsToMs))},
                 {"transfer_ms",
                  hybrid ? opt(scaled(json_field(json_field(tr, "duration"), "median"), kNsToMs))
                         : json(0.0)},
                 {"transfer_bytes", hybrid && !array_or_empty(json_field(tr, "bytes")).empty()
                                        ? json_field(tr, "bytes").back()
                                        : json(nullptr)},
                 {"decode_ms",
                  opt(scaled(json_field(json_field(json_field(t, "decode"), "duration"), "median"),
                             kNsToMs))},
                 {"ttft", stat(json_field(t, "ttft"), kNsToMs)},
                 {"e2e",
                  stat(json_field(json_field(json_field(pt, "e2e"), mode), "summary"), kNsToMs)}});
        }
        json comparisons = json::array();
        for (const char* mode : {"prefill_alone", "decode_alone"}) {
            const json& c = json_field(json_field(pt, "comparison"), mode);
            if (!c.is_object())
                continue;
            comparisons.push_back({{"against", label(mode)},
                                   {"speedup", opt(num(json_field(c, "speedup")))},
                                   {"lo", opt(num(json_field(c, "ci95_lo")))},
                                   {"hi", opt(num(json_field(c, "ci95_hi")))},
                                   {"verdict", text(json_field(c, "verdict"))}});
        }
        points.push_back({{"test", name}, {"modes", modes}, {"comparisons", comparisons}});
    }
    return json{{"prefill_device", a}, {"decode_device", b}, {"points", points}};
}

json sustained_view(const json& doc) {
    const json& s = json_field(doc, "sustained");
    json phases = json::array();
    for (const auto& p : array_or_empty(json_field(s, "phases"))) {
        json rounds = json::array();
        for (const auto& r : array_or_empty(json_field(p, "rounds"))) {
            auto round = num(json_field(r, "round"));
            if (!round)
                continue;
            rounds.push_back(
                {{"round", *round},
                 {"status", text(json_field(r, "status"))},
                 {"prefill_tps", opt(num(json_field(r, "prefill_tps")))},
                 {"decode_tps", opt(num(json_field(r, "decode_tps")))},
                 {"ttft_ms", opt(num(json_field(r, "ttft_ms")))},
                 {"temp_max_c", opt(num(json_field(r, "temp_max_c")))},
                 {"cpu_freq_mhz", opt(scaled(json_field(r, "cpu_freq_mean_khz"), 1e-3))}});
        }
        if (rounds.empty())
            continue;
        const json& across = json_field(p, "across");
        phases.push_back({{"name", text(json_field(p, "name"))},
                          {"background", text(json_field(p, "background"))},
                          {"rounds", rounds},
                          {"onset_round", opt(num(json_field(across, "throttle_onset_round")))},
                          {"onset_basis", text(json_field(across, "onset_basis"))},
                          {"freq_onset_round", opt(num(json_field(across, "freq_onset_round")))},
                          {"steady_decode_tps", opt(num(json_field(across, "steady_decode_tps")))},
                          {"first_last_change", opt(num(json_field(across, "first_last_change")))},
                          {"verdict", text(json_field(across, "verdict"))}});
    }
    if (phases.empty())
        return nullptr;
    json slowdown = json::array();
    for (const auto& x : array_or_empty(json_field(s, "slowdown")))
        slowdown.push_back({{"stage", text(json_field(x, "stage"))},
                            {"ratio", opt(num(json_field(x, "ratio")))},
                            {"lo", opt(num(json_field(x, "ci95_lo")))},
                            {"hi", opt(num(json_field(x, "ci95_hi")))},
                            {"no_difference", json_field(x, "no_difference").is_boolean() &&
                                                  json_field(x, "no_difference").get<bool>()}});
    return json{{"phases", phases}, {"slowdown", slowdown}};
}

json warnings_view(const json& doc) {
    json out = json::array();
    std::set<std::pair<std::string, std::string>> seen;
    auto add = [&](const json& list, const std::string& where) {
        for (const auto& w : array_or_empty(list)) {
            const std::string code = text(json_field(w, "code")),
                              message = text(json_field(w, "message"));
            if ((code.empty() && message.empty()) || !seen.insert({code, message}).second)
                continue;
            out.push_back({{"code", code},
                           {"message", message},
                           {"hint", text(json_field(w, "hint"))},
                           {"where", where}});
        }
    };
    add(json_field(doc, "warnings"), "");
    add(json_field(json_field(doc, "telemetry"), "warnings"), "telemetry");
    return out.empty() ? json(nullptr) : out;
}

json compare_view(const json& doc, std::vector<std::string>& notes) {
    auto version = num(json_field(doc, "compare_schema_version"));
    if (!version || *version != 1) {
        notes.push_back("compare_schema_version " +
                        (version ? std::to_string(static_cast<int>(*version)) : "missing") +
                        " is not known to this report; the comparison is not shown");
        return nullptr;
    }
    json rows = json::array();
    for (const auto& r : array_or_empty(json_field(doc, "rows"))) {
        std::string differs;
        if (json_field(r, "differs").is_object()) {
            for (const auto& [k, v] : json_field(r, "differs").items()) {
                std::string vals;
                for (const auto& x : array_or_empty(v))
                    vals += (vals.empty() ? "" : " / ") + (x.is_string() ? text(x) : dump_json(x));
                differs += (differs.empty() ? "" : "; ") + k + ": " + vals;
            }
        }
        json sides = json::array(), ratios = json::array();
        for (const auto& s : array_or_empty(json_field(r, "sides")))
            sides.push_back({{"label", text(json_field(s, "label"))},
                             {"median", opt(num(json_field(s, "median")))},
                             {"cv", opt(num(json_field(s, "cv")))},
                             {"n", opt(num(json_field(s, "n")))}});
        for (const auto& x : array_or_empty(json_field(r, "ratios")))
            ratios.push_back({{"label", text(json_field(x, "label"))},
                              {"median", opt(num(json_field(x, "median")))},
                              {"lo", opt(num(json_field(x, "ci_low")))},
                              {"hi", opt(num(json_field(x, "ci_high")))},
                              {"verdict", text(json_field(x, "verdict"))}});
        const std::string metric = text(json_field(r, "metric"));
        rows.push_back({{"test", text(json_field(r, "test"))},
                        {"stage", text(json_field(r, "stage"))},
                        {"metric", metric},
                        {"unit", metric == "ttft_ms"           ? "ms"
                                 : metric == "tokens_per_s"    ? "tok/s"
                                 : metric == "j_per_token"     ? "J/token"
                                 : metric == "net_j_per_token" ? "J/token net"
                                 : metric == "mean_power_mw"   ? "mW"
                                                               : ""},
                        {"higher_is_better", json_field(r, "higher_is_better").is_boolean()
                                                 ? json_field(r, "higher_is_better")
                                                 : json()},
                        {"differs", differs},
                        {"sides", sides},
                        {"ratios", ratios}});
    }
    json inputs = json::array();
    for (const auto& i : array_or_empty(json_field(doc, "inputs")))
        inputs.push_back({{"label", text(json_field(i, "label"))},
                          {"source", text(json_field(i, "source"))},
                          {"command", text(json_field(i, "command"))},
                          {"host", text(json_field(i, "host"))},
                          {"cpu", text(json_field(i, "cpu"))},
                          {"started_at", text(json_field(i, "started_at"))}});
    json unmatched = json::array();
    for (const auto& u : array_or_empty(json_field(doc, "unmatched")))
        unmatched.push_back(
            {{"label", text(json_field(u, "label"))}, {"test", text(json_field(u, "test"))}});
    json cnotes = json::array();
    for (const auto& n : array_or_empty(json_field(doc, "notes")))
        if (n.is_string())
            cnotes.push_back(n);
    return json{{"inputs", inputs}, {"rows", rows}, {"unmatched", unmatched}, {"notes", cnotes}};
}

namespace {

json document_view(const ReportInput& in, std::size_t index) {
    const json& doc = in.doc;
    std::vector<std::string> notes;
    json v{{"id", "d" + std::to_string(index)},
           {"source", in.source},
           {"command", text(json_field(doc, "command"))}};
    const bool is_compare = text(json_field(doc, "command")) == "compare";
    const bool is_result = text(json_field(doc, "schema")) == "stagebench.result";
    if (!doc.is_object() || (!is_compare && !is_result)) {
        v["kind"] = "unknown";
        v["notes"] = {"not a stagebench result or compare document; skipped"};
        return v;
    }
    if (is_compare) {
        v["kind"] = "compare";
        v["header"] = {{"created_at", text(json_field(doc, "created_at"))},
                       {"tool_version", text(json_field(doc, "tool_version"))}};
        if (json c = compare_view(doc, notes); !c.is_null())
            v["compare"] = std::move(c);
        v["notes"] = notes;
        return v;
    }
    v["kind"] = "result";
    v["header"] = result_header(doc);
    const std::string command = text(json_field(doc, "command"));
    if (!known_commands().count(command))
        notes.push_back("command '" + command +
                        "' is not known to this report; only the common sections are shown");
    // Each section on its own: one that cannot be read leaves a note, not a broken page.
    auto section = [&](const char* name, auto&& make) {
        try {
            json s = make();
            if (!s.is_null())
                v[name] = std::move(s);
        } catch (const std::exception& e) {
            notes.push_back(std::string("the ") + name + " section could not be read: " + e.what());
        }
    };
    section("summary", [&] { return summary_view(doc); });
    section("throughput", [&] { return throughput_view(doc); });
    section("ops", [&] { return ops_view(doc, notes); });
    section("telemetry", [&] { return telemetry_view(doc, notes); });
    section("sustained", [&] { return sustained_view(doc); });
    section("hybrid", [&] { return hybrid_view(doc); });
    section("warnings", [&] { return warnings_view(doc); });
    for (const auto& [k, _] : doc.items())
        if (!known_result_keys().count(k))
            notes.push_back("section '" + k + "' is not known to this report; not shown");
    v["notes"] = notes;
    return v;
}

}  // namespace

json report_view(const std::vector<ReportInput>& inputs) {
    json docs = json::array();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        try {
            docs.push_back(document_view(inputs[i], i));
        } catch (const std::exception& e) {
            docs.push_back({{"id", "d" + std::to_string(i)},
                            {"source", inputs[i].source},
                            {"kind", "unknown"},
                            {"notes", {std::string("could not be shown: ") + e.what()}}});
        }
    }
    return json{{"documents", docs}};
}

}  // namespace sb
