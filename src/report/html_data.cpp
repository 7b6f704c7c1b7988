#include "report/html_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "analysis/fidelity_of_tests.hpp"
#include "core/doc/modes_section.hpp"
#include "core/document.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json_util.hpp"
#include "core/stats_json.hpp"
#include "report/explain_report.hpp"
#include "report/memory_report.hpp"
#include "report/stage_fields.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::string text(const json& j) {
    return j.is_string() ? j.get<std::string>() : std::string();
}

std::string basename(const std::string& path) {
    auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

constexpr double kNsToMs = 1e-6;

// The median of samples (times factor) with the median's seeded bootstrap 95% CI (core/stats.hpp
// median_ci, every sample a repetition): {median, lo, hi, n}; null without samples. The
// interval a printed median gets (never the mean's).
json median_stat(const std::vector<double>& samples, double factor = 1.0) {
    if (samples.empty())
        return nullptr;
    const MedianCi m = median_ci(samples, {}, kSummaryResamples, kSummarySeed);
    auto scaled = [&](const std::optional<double>& v) {
        return v ? json(*v * factor) : json(nullptr);
    };
    return json{{"median", scaled(m.median)},
                {"lo", scaled(m.ci95_lo)},
                {"hi", scaled(m.ci95_hi)},
                {"n", static_cast<double>(samples.size())}};
}

template <class T>
std::vector<double> doubles(const std::vector<T>& v) {
    return std::vector<double>(v.begin(), v.end());
}

// A stage's stall-robust rate as {median: tokens/s, lo, hi, n} (core/result.hpp RobustRate: the
// median's bootstrap CI) and its stalls {count, of, unit}; null without a robust rate.
json robust_stat(const StageResult& s, const Stalls& stalls, const char* unit) {
    if (!s.robust.tokens_per_s)
        return nullptr;
    return json{{"median", *s.robust.tokens_per_s},
                {"lo", opt(s.robust.ci95_lo)},
                {"hi", opt(s.robust.ci95_hi)},
                {"n", static_cast<double>(s.tokens_per_s.size())},
                {"stalls", {{"count", stalls.count()}, {"of", stalls.n}, {"unit", unit}}}};
}

json robust_of(const TestResult& t, bool prefill) {
    if (prefill)
        return t.prefill ? robust_stat(*t.prefill, t.prefill->stalls, "reps") : json(nullptr);
    return t.decode ? robust_stat(*t.decode, t.decode->token_stalls, "tokens") : json(nullptr);
}

std::optional<double> html_ms(const std::optional<double>& ns) {
    return ns ? std::optional<double>(*ns * kNsToMs) : std::nullopt;
}

const std::set<std::string>& known_commands() {
    static const std::set<std::string> commands = {"run",      "demo",      "ops",    "decompose",
                                                   "import",   "sustained", "hybrid", "serve",
                                                   "fidelity", "explain"};
    return commands;
}

json result_header(const ResultDocument& doc) {
    std::string command_line;
    for (const auto& a : doc.argv) {
        if (!command_line.empty())
            command_line += ' ';
        command_line += a;
    }
    const MachineView m = machine_view(doc);
    return json{{"host", m.hostname.value_or("")}, {"cpu", m.cpu_model.value_or("")},
                {"os", m.os.value_or("")},         {"started_at", doc.started_at},
                {"finished_at", doc.finished_at},  {"tool_version", doc.tool_version},
                {"build_type", doc.build_type},    {"llama", m.llama_tag.value_or("")},
                {"command_line", command_line}};
}

std::string test_label(const TestConfig& cfg, bool with_model, bool with_ngl) {
    std::string s = cfg.test_name();
    const std::string devices = cfg.devices.str();
    if (!devices.empty())
        s += " · " + devices;
    if (with_ngl)
        s += " · ngl " + std::to_string(cfg.n_gpu_layers);
    if (cfg.n_threads > 0)
        s += " · " + std::to_string(cfg.n_threads) + "t";
    if (cfg.engine != EngineKind::llama)
        s += " · " + to_string(cfg.engine);
    if (with_model)
        s += " · " + basename(cfg.model_path);
    return s;
}

// Op time and call overhead (call - op) of an aggregate row, in ms. A call time below the op
// time (possible: they are measured separately) shows as no overhead and is listed.
json op_bar(const std::string& label, const OpAggregate& a, json& clamped) {
    const auto op = html_ms(a.op_ns);
    const auto call = html_ms(a.call_ns);
    if (!op.value_or(0) && !call.value_or(0))
        return nullptr;
    std::optional<double> overhead;
    if (op && call) {
        overhead = std::max(0.0, *call - *op);
        if (*call < *op)
            clamped.push_back(label);
    }
    return json{{"label", label},
                {"count", static_cast<double>(a.count)},
                {"op_ms", opt(op)},
                {"call_ms", opt(call)},
                {"overhead_ms", opt(overhead)},
                {"call_op_ratio", opt(a.call_op_ratio)}};
}

json stage_ops_view(const StageProfile& st) {
    json clamped = json::array();
    json fallback = json::array();
    for (const auto& f : st.fallback) {
        fallback.push_back({{"op", f.op},
                            {"backend", f.backend},
                            {"requested", f.requested},
                            {"count", static_cast<double>(f.count)},
                            {"op_ms", opt(html_ms(f.op_ns))},
                            {"call_ms", opt(html_ms(f.call_ns))},
                            {"penalty", opt(f.penalty)},
                            {"note", f.note}});
    }
    // An op type with fallback nodes is two bars: the nodes that ran where they were asked to
    // (the aggregate less the fallback rows) and the fallback nodes alone, so that a bar called
    // fallback holds only fallback nodes (25 of 29 MUL_MAT nodes on BLAS are not a fallback bar).
    json by_op = json::array();
    for (const auto& a : st.by_op) {
        OpAggregate asked = a;
        OpAggregate fell;
        fell.key = a.key;
        std::string where;
        for (const auto& f : st.fallback) {
            if (f.op != a.key)
                continue;
            fell.count += f.count;
            auto add = [](std::optional<double>& into, const std::optional<double>& v) {
                if (v)
                    into = into.value_or(0) + *v;
            };
            add(fell.op_ns, f.op_ns);
            add(fell.call_ns, f.call_ns);
            where += (where.empty() ? "" : ", ") + f.backend +
                     (f.requested.empty() ? "" : " instead of " + f.requested);
        }
        const bool times_split = fell.op_ns || fell.call_ns;
        if (fell.count > 0 && !times_split) {
            // The fallback rows carry no times: they can be told apart only when every node
            // of the op fell back, else the op stays one bar that names its fallback nodes.
            if (fell.count >= a.count - a.n_no_compute) {
                fell.op_ns = a.op_ns;
                fell.call_ns = a.call_ns;
                fell.call_op_ratio = a.call_op_ratio;
                asked.count = 0;
            } else {
                json bar = op_bar(fmt::format("{} ({} of {} nodes on {}; times not split)", a.key,
                                              fell.count, a.count - a.n_no_compute, where),
                                  a, clamped);
                if (!bar.is_null()) {
                    bar["op"] = a.key;
                    bar["fallback"] = nullptr;
                    by_op.push_back(bar);
                }
                continue;
            }
        } else if (fell.count > 0) {
            asked.count = std::max(0, a.count - a.n_no_compute - fell.count);
            auto less = [](const std::optional<double>& all, const std::optional<double>& part) {
                return all ? std::optional<double>(std::max(0.0, *all - part.value_or(0)))
                           : std::nullopt;
            };
            asked.op_ns = less(a.op_ns, fell.op_ns);
            asked.call_ns = less(a.call_ns, fell.call_ns);
            asked.call_op_ratio = asked.op_ns && asked.call_ns && *asked.op_ns > 0
                                      ? std::optional<double>(*asked.call_ns / *asked.op_ns)
                                      : std::nullopt;
            fell.call_op_ratio = fell.op_ns && fell.call_ns && *fell.op_ns > 0
                                     ? std::optional<double>(*fell.call_ns / *fell.op_ns)
                                     : std::nullopt;
        }
        if (fell.count == 0 || asked.count > 0) {
            json bar = op_bar(a.key, asked, clamped);
            if (!bar.is_null()) {
                bar["op"] = a.key;
                bar["fallback"] = nullptr;
                by_op.push_back(bar);
            }
        }
        if (fell.count > 0) {
            const std::string label = fmt::format("{} fallback ({} node{}: {})", a.key, fell.count,
                                                  fell.count == 1 ? "" : "s", where);
            json bar = op_bar(label, fell, clamped);
            if (!bar.is_null()) {
                bar["op"] = a.key;
                bar["fallback"] = where;
                by_op.push_back(bar);
            }
        }
    }
    json by_backend = json::array();
    for (const auto& a : st.by_backend) {
        json bar = op_bar(a.key, a, clamped);
        if (!bar.is_null())
            by_backend.push_back(bar);
    }
    const Reconciliation& rec = st.rec;
    json decomposition = nullptr;
    if (st.decomposition && !st.decomposition->parts.empty()) {
        json parts = json::array();
        for (const auto& p : st.decomposition->parts)
            parts.push_back({{"name", p.name},
                             {"ms", opt(html_ms(p.ns))},
                             {"share", opt(p.share)},
                             {"note", p.note}});
        decomposition = {{"parts", parts}, {"accelerators", st.decomposition->accelerators}};
    }
    // Op coverage (ops, profile/ops_profile.hpp coverage_rows): per op type, how many nodes each
    // device asked supports and where they ran.
    json coverage = nullptr;
    if (!st.coverage.empty()) {
        json rows = json::array();
        for (const auto& c : st.coverage)
            rows.push_back({{"op", c.op},
                            {"count", c.count},
                            {"supported", c.supported},
                            {"ran", c.ran},
                            {"note", c.note}});
        coverage = {{"devices", st.coverage_devices}, {"rows", rows}};
    }
    return json{{"stage", st.stage},
                {"n_tokens", static_cast<double>(st.n_tokens)},
                {"coverage", coverage},
                {"by_op", by_op},
                {"by_backend", by_backend},
                {"fallback", fallback},
                {"clamped", clamped},
                {"reconciliation",
                 {{"plain_ms", opt(html_ms(rec.plain_median_ns))},
                  {"traced_ms", opt(html_ms(rec.traced_median_ns))},
                  {"sum_op_ms", opt(html_ms(rec.sum_op_ns))},
                  {"sum_call_ms", opt(html_ms(rec.sum_call_ns))},
                  {"op_fraction", opt(rec.op_fraction)}}},
                {"decomposition", decomposition},
                {"notes", st.notes}};
}

// How a telemetry series is drawn: its group, unit and the factor from its stored unit.
struct SeriesKind {
    std::string group, unit;
    double factor = 1;
    bool from_counter = false;  // power from an energy counter's increments
};

std::optional<SeriesKind> series_kind(const TelemetrySeries& s) {
    const std::string& unit = s.unit;
    const bool counter = s.kind == MetricKind::counter;
    if (unit == "mC" && !counter)
        return SeriesKind{"temperature", "°C", 1e-3};
    if (unit == "kHz" && !counter)
        return SeriesKind{"frequency", "MHz", 1e-3};
    if (unit == "mW" && !counter)
        return SeriesKind{"power", "W", 1e-3};
    if (unit == "uJ" && counter)  // uJ per ns is kW
        return SeriesKind{"power", "W", 1e3, true};
    // As nvtop draws them: a GPU's busy share (and a battery's level) and its memory in use.
    if (unit == "%" && !counter)
        return SeriesKind{"percent", "%", 1};
    if (unit == "MB" && !counter)
        return SeriesKind{"memory", "MB", 1};
    return std::nullopt;
}

}  // namespace

ReportInput ReportInput::of(std::string source, ResultDocument doc) {
    ReportInput in;
    in.source = std::move(source);
    in.result = std::move(doc);
    return in;
}

ReportInput ReportInput::of(std::string source, CompareResult doc) {
    ReportInput in;
    in.source = std::move(source);
    in.compare = std::move(doc);
    return in;
}

ReportInput ReportInput::of(std::string source, json doc) {
    if (doc.is_object() && text(json_field(doc, "schema")) == kResultSchema) {
        ResultDocument typed = from_json<ResultDocument>(doc, "'" + source + "'");
        return of(std::move(source), std::move(typed));
    }
    if (doc.is_object() && text(json_field(doc, "command")) == "compare") {
        CompareResult typed = from_json<CompareResult>(doc, "'" + source + "'");
        return of(std::move(source), std::move(typed));
    }
    ReportInput in;
    in.source = std::move(source);
    in.other = std::move(doc);
    return in;
}

ReportInput load_report_input(const std::string& path) {
    return ReportInput::of(path, load_document(path));
}

json summary_view(const ResultDocument& doc) {
    if (doc.tests.empty())
        return nullptr;
    json rows = json::array();
    for (const auto& t : doc.tests) {
        const TestConfig& cfg = t.config;
        const Summary* itl = t.decode ? &t.decode->itl : nullptr;
        rows.push_back({{"test", cfg.test_name()},
                        {"model", basename(cfg.model_path)},
                        {"engine", to_string(cfg.engine)},
                        {"devices", cfg.devices.str()},
                        {"n_gpu_layers", cfg.n_gpu_layers},
                        {"threads", cfg.n_threads > 0 ? json(cfg.n_threads) : json()},
                        {"backends", t.backends},
                        {"status", to_string(t.status)},
                        {"error", t.error.value_or("")},
                        {"reps_done", static_cast<double>(t.reps_done)},
                        {"prefill", robust_of(t, true)},
                        {"decode", robust_of(t, false)},
                        {"ttft_ms", median_stat(doubles(t.ttft_ns), kNsToMs)},
                        {"itl_ms",
                         {{"median", opt(html_ms(itl ? itl->median : std::nullopt))},
                          {"p99", opt(html_ms(itl ? itl->p99 : std::nullopt))}}}});
    }
    return rows;
}

json memory_view(const ResultDocument& doc) {
    json rows = json::array();
    auto mib = [](uint64_t b) { return static_cast<double>(b) / 1048576; };
    for (const auto& [t, tests] : memory_groups(doc))
        for (const auto& m : t->memory)
            rows.push_back({{"test", t->config.test_name()},
                            {"model", basename(t->config.model_path)},
                            {"tests", tests},
                            {"devices", t->config.devices.str()},
                            {"n_gpu_layers", t->config.n_gpu_layers},
                            {"buffer", m.buffer},
                            {"weights_mib", mib(m.model_bytes)},
                            {"context_mib", mib(m.context_bytes)},
                            {"compute_mib", mib(m.compute_bytes)},
                            {"total_mib", mib(m.model_bytes + m.context_bytes + m.compute_bytes)}});
    if (rows.empty())
        return nullptr;
    return rows;
}

json throughput_view(const ResultDocument& doc) {
    std::set<std::string> models;
    std::set<int> ngl;
    for (const auto& t : doc.tests) {
        models.insert(t.config.model_path);
        ngl.insert(t.config.n_gpu_layers);
    }
    json labels = json::array(), prefill = json::array(), decode = json::array();
    std::map<std::string, int> seen;  // label -> times used: repeated tests get " #2", " #3"
    bool any = false;
    for (const auto& t : doc.tests) {
        json p = robust_of(t, true);
        json d = robust_of(t, false);
        if (p.is_null() && d.is_null())
            continue;
        any = true;
        std::string label = test_label(t.config, models.size() > 1, ngl.size() > 1);
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

json ops_view(const ResultDocument& doc, std::vector<std::string>& notes) {
    if (!doc.ops)
        return nullptr;
    json stages = json::array();
    for (const auto& st : doc.ops->stages)
        stages.push_back(stage_ops_view(st));
    if (stages.empty()) {
        notes.push_back("the ops section has no stages; not shown");
        return nullptr;
    }
    return json{{"source", doc.ops->source},
                {"devices", doc.ops->devices},
                {"backends", doc.ops->backends},
                {"method", doc.ops->method},
                {"stages", stages}};
}

json modes_view(const ResultDocument& doc) {
    const std::optional<ModesSection> s = doc.modes;
    if (!s)
        return nullptr;
    json modes = json::array(), parts = json::array();
    for (const auto& m : s->modes) {
        std::string env = m.log_path.value_or("");
        for (const auto& e : m.env)
            env += (env.empty() ? "" : ", ") + e.name + "=" + e.value;
        json times = json::object();
        for (const auto& t : m.times)
            times[t.stage] = {{"ms", opt(html_ms(t.median_ns))},
                              {"lo_ms", opt(html_ms(t.ci95_lo_ns))},
                              {"hi_ms", opt(html_ms(t.ci95_hi_ns))},
                              {"n", t.n}};
        modes.push_back(
            {{"name", m.name}, {"env", env}, {"times", times}, {"n_failed", m.n_failed}});
    }
    for (const auto& p : s->parts)
        parts.push_back({{"stage", p.stage},
                         {"name", p.from ? p.name + " − " + *p.from : p.name},
                         {"ms", opt(html_ms(p.ns))},
                         {"lo_ms", opt(html_ms(p.ci95_lo_ns))},
                         {"hi_ms", opt(html_ms(p.ci95_hi_ns))},
                         {"share", opt(p.share)}});
    return json{{"source", s->source},
                {"time_basis", s->time_basis},
                {"stages", s->stages},
                {"modes", modes},
                {"parts", parts}};
}

namespace {

struct StageSpan {
    std::string stage, kind;
    double begin_s = 0, end_s = 0;
};

std::vector<StageSpan> spans_of(const std::vector<TelemetryMark>& marks, int64_t t0_ns) {
    struct Open {
        std::string stage;
        double begin_s;
    };
    std::vector<Open> open;
    std::vector<StageSpan> spans;
    for (const auto& m : marks) {
        const std::string& stage = m.stage;
        if (stage.empty())
            continue;
        const double s = static_cast<double>(m.t_ns - t0_ns) * 1e-9;
        if (m.begin) {
            open.push_back({stage, s});
            continue;
        }
        auto it =
            std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.stage == stage; });
        if (it == open.end())
            continue;
        const auto slash = stage.find_last_of('/');
        const std::string kind = slash == std::string::npos ? stage : stage.substr(slash + 1);
        spans.push_back({stage, kind, it->begin_s, s});
        open.erase(it);
    }
    std::stable_sort(spans.begin(), spans.end(),
                     [](const StageSpan& a, const StageSpan& b) { return a.begin_s < b.begin_s; });
    return spans;
}

json span_json(const StageSpan& s) {
    return json{{"stage", s.stage}, {"kind", s.kind}, {"begin_s", s.begin_s}, {"end_s", s.end_s}};
}

}  // namespace

json stage_spans(const std::vector<TelemetryMark>& marks, int64_t t0_ns) {
    json out = json::array();
    for (const auto& s : spans_of(marks, t0_ns))
        out.push_back(span_json(s));
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

json telemetry_view(const ResultDocument& doc, std::vector<std::string>& notes,
                    std::size_t max_points) {
    if (!doc.telemetry)
        return nullptr;
    const TelemetrySection& tel = *doc.telemetry;
    if (!tel.series || tel.series->empty()) {
        notes.push_back("telemetry was recorded without time series; no telemetry chart");
        return nullptr;
    }
    // Time zero: the earliest sample or mark.
    std::optional<int64_t> t0;
    auto earlier = [&](int64_t t) {
        if (!t0 || t < *t0)
            t0 = t;
    };
    for (const auto& s : *tel.series)
        if (!s.t_ns.empty())
            earlier(s.t_ns.front());
    for (const auto& m : tel.marks)
        earlier(m.t_ns);
    if (!t0)
        return nullptr;
    const int64_t t0_ns = *t0;

    const std::vector<std::string> order = {"temperature", "frequency", "power", "percent",
                                            "memory"};
    std::map<std::string, json> groups;
    std::set<std::string> other_units;
    std::size_t limits = 0;
    for (const auto& s : *tel.series) {
        auto kind = series_kind(s);
        // cpufreq's min/max are the governor's limits, not what the clock did.
        if (kind && kind->group == "frequency" &&
            (s.metric.ends_with("min_freq_khz") || s.metric.ends_with("max_freq_khz"))) {
            ++limits;
            continue;
        }
        if (!kind) {
            if (!s.unit.empty())
                other_units.insert(s.unit);
            continue;
        }
        static const std::vector<std::optional<double>> none;
        const auto& values = kind->from_counter ? (s.cumulative ? *s.cumulative : none) : s.values;
        const std::size_t n = std::min(s.t_ns.size(), values.size());
        std::vector<std::pair<double, std::optional<double>>> pts;
        pts.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            const double ts = static_cast<double>(s.t_ns[i] - t0_ns) * 1e-9;
            if (!kind->from_counter) {
                pts.push_back({ts, values[i] ? std::optional<double>(*values[i] * kind->factor)
                                             : std::nullopt});
                continue;
            }
            if (i == 0)
                continue;
            const auto& v = values[i];
            const auto& vp = values[i - 1];
            if (v && vp && s.t_ns[i] > s.t_ns[i - 1])
                pts.push_back({ts, (*v - *vp) / static_cast<double>(s.t_ns[i] - s.t_ns[i - 1]) *
                                       kind->factor});
            else
                pts.push_back({ts, std::nullopt});
        }
        json points = json::array();
        for (const auto& [x, y] : reduce_points(pts, max_points))
            points.push_back({x, opt(y)});
        std::string name = s.metric;
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
        notes.push_back(
            "no temperature, frequency, power, percent or memory series in the telemetry");
        return nullptr;
    }
    // Shaded: the stages themselves (and the idle baseline), not the rounds around them.
    json spans = json::array();
    for (const auto& s : spans_of(tel.marks, t0_ns))
        if (s.kind == "prefill" || s.kind == "decode" || s.kind == "idle")
            spans.push_back(span_json(s));
    return json{{"hz", tel.hz}, {"groups", out_groups}, {"spans", spans}};
}

json hybrid_view(const ResultDocument& doc) {
    if (!doc.hybrid)
        return nullptr;
    const HybridSection& h = *doc.hybrid;
    const std::string a = h.prefill_device.str(), b = h.decode_device.str();
    auto label = [&](const std::string& mode) {
        if (mode == "hybrid")
            return a + " → " + b;
        return (mode == "prefill_alone" ? a : b) + " alone";
    };
    json points = json::array();
    for (const auto& pt : h.points) {
        const std::string name =
            "pp" + std::to_string(pt.n_prompt) + "+tg" + std::to_string(pt.n_gen);
        json modes = json::array();
        for (const char* mode : {"hybrid", "prefill_alone", "decode_alone"}) {
            const auto idx = pt.tests.find(mode);
            if (idx == pt.tests.end() || idx->second < 0 ||
                static_cast<size_t>(idx->second) >= doc.tests.size())
                continue;
            const TestResult& t = doc.tests[static_cast<size_t>(idx->second)];
            const bool hybrid = std::string(mode) == "hybrid";
            const auto e2e = pt.e2e.find(mode);
            modes.push_back(
                {{"mode", mode},
                 {"label", label(mode)},
                 {"status", to_string(t.status)},
                 {"prefill_ms",
                  opt(html_ms(t.prefill ? t.prefill->duration.median : std::nullopt))},
                 {"transfer_ms", hybrid ? opt(html_ms(pt.transfer.duration.median)) : json(0.0)},
                 {"transfer_bytes", hybrid && !pt.transfer.bytes.empty()
                                        ? json(pt.transfer.bytes.back())
                                        : json(nullptr)},
                 {"decode_ms", opt(html_ms(t.decode ? t.decode->duration.median : std::nullopt))},
                 {"ttft", median_stat(doubles(t.ttft_ns), kNsToMs)},
                 {"e2e", e2e != pt.e2e.end() ? median_stat(doubles(e2e->second.samples_ns), kNsToMs)
                                             : json()}});
        }
        json comparisons = json::array();
        for (const char* mode : {"prefill_alone", "decode_alone"}) {
            const auto c = pt.comparison.find(mode);
            if (c == pt.comparison.end())
                continue;
            comparisons.push_back({{"against", label(mode)},
                                   {"speedup", opt(c->second.speedup)},
                                   {"lo", opt(c->second.ci95_lo)},
                                   {"hi", opt(c->second.ci95_hi)},
                                   {"verdict", c->second.verdict}});
        }
        points.push_back({{"test", name}, {"modes", modes}, {"comparisons", comparisons}});
    }
    return json{{"prefill_device", a}, {"decode_device", b}, {"points", points}};
}

// `serve`: per point its throughput and latency percentiles (ms), and the SLOs, for the
// latency-throughput curve and the percentile bars.
json serve_view(const ResultDocument& doc) {
    if (!doc.serve)
        return nullptr;
    const ServeSection& s = *doc.serve;
    auto latency = [](const LatencyStats& l) {
        return json{{"mean", opt(l.mean)},
                    {"p50", opt(l.median)},
                    {"p90", opt(l.p90)},
                    {"p99", opt(l.p99)},
                    {"n", static_cast<double>(l.n)}};
    };
    json points = json::array();
    for (const auto& p : s.points)
        points.push_back({{"label", p.label()},
                          {"ok", p.ok},
                          {"errors", p.errors},
                          {"request_per_s", p.request_per_s},
                          {"output_tps", p.output_tokens_per_s},
                          {"goodput_per_s", opt(p.goodput_per_s)},
                          {"ttft", latency(p.ttft)},
                          {"tpot", latency(p.tpot)},
                          {"itl", latency(p.itl)},
                          {"e2e", latency(p.e2e)}});
    json slo = json::object();
    for (const auto& [k, v] : s.slo_ms)
        slo[k] = v;
    const json& server = json_field(s.server, "server");
    return json{{"server", server.is_string() ? server : json(s.url.value_or(""))},
                {"slots", opt(s.slots)},
                {"n_prompt", s.n_prompt},
                {"n_gen", s.n_gen},
                {"slo_ms", slo},
                {"points", points}};
}

namespace {

// A speed pass's median with the range of its repetitions: {median, min, max, n}; null when the
// variant has no median.
json speed_spread(const std::optional<double>& median, const std::vector<double>& reps) {
    if (!median)
        return nullptr;
    const auto [lo, hi] = std::minmax_element(reps.begin(), reps.end());
    return json{{"median", *median},
                {"min", reps.empty() ? json(nullptr) : json(*lo)},
                {"max", reps.empty() ? json(nullptr) : json(*hi)},
                {"n", reps.size()}};
}

}  // namespace

// `fidelity`: per variant its speed (medians and the range of the repetitions) and its distance
// from the reference, for the speed-against-KL chart and its table. KL 0 has no place on a log
// axis: kl_floor, one decade below the smallest KL above 0 that the charts show (its decade's
// power of ten), is where the page draws it.
json fidelity_view(const ResultDocument& doc) {
    // A run or hybrid with --fidelity: its first workload's tests as variants.
    std::vector<FidelitySection> of_tests;
    if (!doc.fidelity)
        of_tests = fidelity_of_tests(doc);
    if (!doc.fidelity && of_tests.empty())
        return nullptr;
    const FidelitySection& s = doc.fidelity ? *doc.fidelity : of_tests.front();
    // The short label: what tells the variants apart (model, devices, KV types), so that the
    // chart's point labels stay short; the devices when nothing does.
    auto varies = [&](auto field) {
        return std::any_of(s.variants.begin(), s.variants.end(),
                           [&](const auto& v) { return field(v) != field(s.variants.front()); });
    };
    const bool by_model = varies([](const FidelityVariant& v) { return v.model_name; });
    const bool by_devices = varies([](const FidelityVariant& v) { return v.devices; });
    const bool by_kv = varies(
        [](const FidelityVariant& v) { return to_string(v.type_k) + "/" + to_string(v.type_v); });
    std::optional<double> smallest;  // the smallest KL above 0 of the charted points
    auto charted = [&](double kl) {
        if (kl > 0 && (!smallest || kl < *smallest))
            smallest = kl;
    };
    const std::string prefill_stage = s.prompt_logits ? "prompt" : "prefill";
    json variants = json::array();
    for (const auto& v : s.variants) {
        std::string short_label;
        auto add = [&](const std::string& part) {
            short_label += (short_label.empty() ? "" : " · ") + part;
        };
        if (by_model)
            add(v.model_name);
        if (by_devices || (!by_model && !by_kv))
            add(v.devices);
        if (by_kv)
            add("KV " + to_string(v.type_k) + "/" + to_string(v.type_v));
        const auto model = model_of(doc, v.model);
        const std::optional<std::string> weights =
            model ? (model->file_type ? model->file_type : model->dominant_type) : std::nullopt;
        const bool ok = !v.error.has_value();
        const StageFidelity& prefill = s.prompt_logits && v.prompt ? *v.prompt : v.prefill;
        if (ok && v.decode_tps)
            charted(v.decode.kl_mean);
        if (ok && v.prefill_tps)
            charted(prefill.kl_mean);
        variants.push_back(
            {{"label", variant_label(v)},
             {"short_label", short_label},
             {"model", v.model_name},
             {"devices", v.devices},
             {"weights", opt(weights)},
             {"type_k", to_string(v.type_k)},
             {"type_v", to_string(v.type_v)},
             {"reference", v.reference},
             {"frontier", v.frontier},
             {"error", opt(v.error)},
             {"decode_tps", ok ? speed_spread(v.decode_tps, v.decode_tps_reps) : json(nullptr)},
             {"prefill_tps", ok ? speed_spread(v.prefill_tps, v.prefill_tps_reps) : json(nullptr)},
             {"decode_kl_mean", ok ? json(v.decode.kl_mean) : json(nullptr)},
             {"decode_kl_p99", ok ? json(v.decode.kl_p99) : json(nullptr)},
             {"decode_top1", ok ? json(v.decode.top1_agreement) : json(nullptr)},
             {"prefill_kl_mean", ok ? json(prefill.kl_mean) : json(nullptr)},
             {"perplexity", opt(v.perplexity)},
             {"perplexity_error", opt(v.perplexity_error)}});
    }
    // No KL above 0 at all (every variant computes the reference's logits): the floor is 1e-9,
    // any value would do.
    const double kl_floor = smallest ? std::pow(10.0, std::floor(std::log10(*smallest)) - 1) : 1e-9;
    json text = nullptr;
    if (s.text)
        text = {{"path", s.text->path},
                {"n_ctx", s.text->n_ctx},
                {"chunks", s.text->chunks},
                {"reference_perplexity", opt(s.text->reference_perplexity)}};
    return json{
        {"reference", s.reference}, {"n_prompt", s.n_prompt}, {"n_gen", s.n_gen},
        {"top_k", s.top_k},         {"reps", s.reps},         {"prefill_kl_stage", prefill_stage},
        {"kl_floor", kl_floor},     {"text", text},           {"variants", variants}};
}

json sustained_view(const ResultDocument& doc) {
    if (!doc.sustained)
        return nullptr;
    json phases = json::array();
    for (const auto& p : doc.sustained->phases) {
        json rounds = json::array();
        for (const auto& r : p.rounds)
            rounds.push_back(
                {{"round", static_cast<double>(r.round)},
                 {"status", to_string(r.status)},
                 {"prefill_tps", opt(r.prefill_tps)},
                 {"decode_tps", opt(r.decode_tps)},
                 {"ttft_ms", opt(r.ttft_ms)},
                 {"temp_max_c", opt(r.temp_max_c)},
                 {"cpu_freq_mhz",
                  r.cpu_freq_mean_khz ? json(*r.cpu_freq_mean_khz * 1e-3) : json(nullptr)},
                 {"e2e_s", opt(r.e2e_s)},
                 {"prompt_tokens", opt(r.prompt_tokens)},
                 {"generated_tokens", opt(r.generated_tokens)},
                 {"combined_tps", opt(r.combined_tps)},
                 {"power_w", opt(r.power_w)},
                 {"energy_j", opt(r.energy_j)},
                 {"j_per_token", opt(r.j_per_token)},
                 {"temp_cpu_c", opt(r.temp_cpu_c)},
                 {"temp_gpu_c", opt(r.temp_gpu_c)},
                 {"temp_npu_c", opt(r.temp_npu_c)},
                 {"battery_capacity_start_pct", opt(r.battery_capacity_start_pct)},
                 {"battery_capacity_end_pct", opt(r.battery_capacity_end_pct)},
                 {"battery_drain_pct_per_h",
                  opt(r.battery ? r.battery->drain_pct_per_h : std::nullopt)}});
        if (rounds.empty())
            continue;
        const AcrossRounds& across = p.across;
        phases.push_back(
            {{"name", p.name},
             {"background", p.background},
             {"rounds", rounds},
             {"onset_round", opt(across.throttle_onset_round)},
             {"drop_round", opt(across.drop_round)},
             {"onset_basis", across.onset_basis},
             {"evidence", across.throttle_evidence},
             {"load", opt(across.load)},
             {"across",
              {{"e2e_s", to_json(across.e2e_s)},
               {"combined_tps", to_json(across.combined_tps)},
               {"power_w", to_json(across.power_w)},
               {"energy_j", to_json(across.energy_j)},
               {"j_per_token", to_json(across.j_per_token)},
               {"temp_cpu_c", to_json(across.temp_cpu_c)},
               {"temp_gpu_c", to_json(across.temp_gpu_c)},
               {"temp_npu_c", to_json(across.temp_npu_c)}}},
             {"battery_drain_capacity_pct", opt(across.battery_drain_capacity_pct)},
             {"battery_drain_energy_pct", opt(across.battery_drain_energy_pct)},
             {"battery_drain_pct", opt(across.battery ? across.battery->drain_pct : std::nullopt)},
             {"battery_drain_pct_per_h",
              opt(across.battery ? across.battery->drain_pct_per_h : std::nullopt)},
             {"battery_drain_from", across.battery ? json(across.battery->from) : json(nullptr)},
             {"freq_onset_round", opt(across.freq_onset_round)},
             {"steady_decode_tps", opt(across.steady_decode_tps)},
             {"first_last_change", opt(across.first_last_change)},
             {"verdict", across.verdict}});
    }
    if (phases.empty())
        return nullptr;
    json slowdown = json::array();
    for (const auto& x : doc.sustained->slowdown)
        slowdown.push_back({{"stage", x.stage},
                            {"ratio", x.ratio},
                            {"lo", x.ci_lo},
                            {"hi", x.ci_hi},
                            {"no_difference", x.no_difference}});
    return json{{"phases", phases}, {"slowdown", slowdown}};
}

json warnings_view(const ResultDocument& doc) {
    json out = json::array();
    std::set<std::pair<std::string, std::string>> seen;
    auto add = [&](const Warnings& list, const std::string& where) {
        for (const auto& w : list) {
            if ((w.code.empty() && w.message.empty()) || !seen.insert({w.code, w.message}).second)
                continue;
            out.push_back(
                {{"code", w.code}, {"message", w.message}, {"hint", w.hint}, {"where", where}});
        }
    };
    add(doc.warnings, "");
    if (doc.telemetry)
        add(doc.telemetry->warnings, "telemetry");
    return out.empty() ? json(nullptr) : out;
}

namespace {

// The unit of a compare row's metric as the page labels it.
std::string compare_unit(const std::string& metric) {
    static const std::map<std::string, std::string> units = {{"ttft_ms", "ms"},
                                                             {"tokens_per_s", "tok/s"},
                                                             {"j_per_token", "J/token"},
                                                             {"net_j_per_token", "J/token net"},
                                                             {"mean_power_mw", "mW"},
                                                             {"energy_j", "J"},
                                                             {"drain_pct", "% of a charge"},
                                                             {"drain_pct_per_h", "%/h"},
                                                             {"e2e_s", "s"},
                                                             {"combined_tps", "tok/s"},
                                                             {"median_ms", "ms"},
                                                             {"p99_ms", "ms"},
                                                             {"output_tokens_per_s", "tok/s"},
                                                             {"request_per_s", "req/s"},
                                                             {"goodput_per_s", "req/s"},
                                                             {"op_us", "µs"},
                                                             {"call_us", "µs"},
                                                             {"call_per_op", "×"},
                                                             {"op_total_us", "µs per stage"},
                                                             {"call_total_us", "µs per stage"},
                                                             {"call_per_op_total", "×"},
                                                             {"fallback_us", "µs per stage"}};
    const auto it = units.find(metric);
    return it == units.end() ? "" : it->second;
}

}  // namespace

json compare_view(const CompareResult& doc) {
    json rows = json::array();
    for (const auto& r : doc.rows) {
        std::string differs;
        for (const auto& [k, values] : r.differs) {
            std::string vals;
            for (const auto& x : values)
                vals += (vals.empty() ? "" : " / ") + compare_value_text(x);
            differs += (differs.empty() ? "" : "; ") + k + ": " + vals;
        }
        json sides = json::array(), ratios = json::array();
        for (const auto& s : r.sides) {
            json robust = nullptr;
            if (s.robust && s.robust->tokens_per_s)
                robust = {{"median", *s.robust->tokens_per_s},
                          {"lo", opt(s.robust->ci_low)},
                          {"hi", opt(s.robust->ci_high)},
                          {"stalls",
                           {{"count", s.robust->stalls},
                            {"of", s.robust->of},
                            {"unit", s.robust->unit}}}};
            sides.push_back({{"label", s.label},
                             {"median", opt(s.median)},
                             {"lo", opt(s.median_ci_low)},
                             {"hi", opt(s.median_ci_high)},
                             {"total", opt(s.total)},
                             {"cv", opt(s.cv)},
                             {"n", static_cast<double>(s.n)},
                             {"robust", robust}});
        }
        for (const auto& x : r.ratios)
            ratios.push_back({{"label", x.label},
                              {"median", opt(x.median)},
                              {"lo", opt(x.ci_low)},
                              {"hi", opt(x.ci_high)},
                              {"verdict", x.verdict}});
        json signature = nullptr;
        if (r.signature)
            signature = {{"op", r.signature->op},
                         {"role", r.signature->role},
                         {"shape", r.signature->shape}};
        rows.push_back({{"test", r.test},
                        {"stage", r.stage},
                        {"metric", r.metric},
                        {"unit", compare_unit(r.metric)},
                        {"higher_is_better", r.higher_is_better},
                        {"differs", differs},
                        {"sides", sides},
                        {"ratios", ratios},
                        {"op", opt(r.op)},
                        {"signature", signature},
                        {"fused", opt(r.fused)}});
    }
    json inputs = json::array();
    for (const auto& i : doc.inputs)
        inputs.push_back({{"label", i.label},
                          {"source", i.source},
                          {"command", i.command.value_or("")},
                          {"host", i.host.value_or("")},
                          {"cpu", i.cpu.value_or("")},
                          {"started_at", i.started_at.value_or("")}});
    json unmatched = json::array();
    for (const auto& u : doc.unmatched)
        unmatched.push_back({{"label", u.label}, {"test", u.test}, {"why", u.why}});
    return json{{"inputs", inputs}, {"rows", rows}, {"unmatched", unmatched}, {"notes", doc.notes}};
}

namespace {

json result_view(const ReportInput& in, json v) {
    const ResultDocument& doc = *in.result;
    std::vector<std::string> notes;
    v["kind"] = "result";
    v["header"] = result_header(doc);
    if (!known_commands().count(doc.command))
        notes.push_back("command '" + doc.command +
                        "' is not known to this report; only the common sections are shown");
    // Each section on its own: one that cannot be drawn leaves a note, not a broken page.
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
    section("memory", [&] { return memory_view(doc); });
    section("ops", [&] { return ops_view(doc, notes); });
    section("telemetry", [&] { return telemetry_view(doc, notes); });
    section("sustained", [&] { return sustained_view(doc); });
    section("hybrid", [&] { return hybrid_view(doc); });
    section("modes", [&] { return modes_view(doc); });
    section("serve", [&] { return serve_view(doc); });
    section("fidelity", [&] { return fidelity_view(doc); });
    section("explain", [&] { return explain_html_view(doc); });
    section("warnings", [&] { return warnings_view(doc); });
    section("stages", [&] { return stage_fields_json(doc); });
    for (const auto& [k, _] : doc.extra.items())
        notes.push_back("section '" + k + "' is not known to this report; not shown");
    v["notes"] = notes;
    return v;
}

// "d0", "d1", ...: the page's anchor of a document.
std::string document_id(std::size_t index) {
    return fmt::format("d{}", index);
}

json document_view(const ReportInput& in, std::size_t index) {
    json v{{"id", document_id(index)}, {"source", in.source}};
    if (in.result) {
        v["command"] = in.result->command;
        return result_view(in, std::move(v));
    }
    if (in.compare) {
        v["command"] = "compare";
        v["kind"] = "compare";
        v["header"] = {{"created_at", in.compare->created_at},
                       {"tool_version", in.compare->tool_version}};
        v["compare"] = compare_view(*in.compare);
        v["notes"] = json::array();
        return v;
    }
    v["command"] = text(json_field(in.other, "command"));
    v["kind"] = "unknown";
    v["notes"] = {"not a stagebench result or compare document; skipped"};
    return v;
}

}  // namespace

json report_view(const std::vector<ReportInput>& inputs) {
    json docs = json::array();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        try {
            docs.push_back(document_view(inputs[i], i));
        } catch (const std::exception& e) {
            docs.push_back({{"id", document_id(i)},
                            {"source", inputs[i].source},
                            {"kind", "unknown"},
                            {"notes", {std::string("could not be shown: ") + e.what()}}});
        }
    }
    return json{{"documents", docs}};
}

}  // namespace sb
