#include "core/doc/telemetry_section.hpp"

#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

const StageEnergy* StageWindow::energy_of(const std::string& metric) const {
    for (const auto& e : energy)
        if (e.metric == metric)
            return &e;
    return nullptr;
}

using nlohmann::json;

json to_json(const TelemetryMetric& m) {
    return json{{"name", m.name},
                {"sensor", m.sensor},
                {"quantity", m.quantity},
                {"unit", m.unit},
                {"kind", to_string(m.kind)},
                {"wrap_range", opt(m.wrap_range)},
                {"refresh_ns", opt(m.refresh_ns)},
                {"system_total", m.system_total},
                {"within", opt(m.within)}};
}

json to_json(const TelemetrySeries& s) {
    json j{{"metric", s.metric},
           {"unit", s.unit},
           {"kind", to_string(s.kind)},
           {"t_ns", s.t_ns},
           {"values", opt_values(s.values)}};
    if (s.cumulative)
        j["cumulative"] = opt_values(*s.cumulative);
    return j;
}

json to_json(const StageEnergy& e) {
    return json{{"metric", e.metric},
                {"sensor", e.sensor},
                {"method", e.method},
                {"energy_j", opt(e.energy_j)},
                {"net_energy_j", opt(e.net_energy_j)},
                {"mean_power_mw", opt(e.mean_power_mw)},
                {"max_power_mw", opt(e.max_power_mw)},
                {"idle_power_mw", opt(e.idle_power_mw)},
                {"j_per_token", opt(e.j_per_token)},
                {"net_j_per_token", opt(e.net_j_per_token)},
                {"system_total", e.system_total},
                {"within", opt(e.within)},
                {"below_refresh", e.below_refresh}};
}

json to_json(const StageGauge& g) {
    return json{{"metric", g.metric},  {"unit", g.unit},       {"start", opt(g.start)},
                {"end", opt(g.end)},   {"min", opt(g.min)},    {"max", opt(g.max)},
                {"mean", opt(g.mean)}, {"samples", g.samples}, {"missing", g.missing}};
}

json to_json(const StageWindow& s) {
    json residency = json::array();
    for (const auto& r : s.residency) {
        json bins = json::array();
        for (const auto& b : r.bins)
            bins.push_back({{"freq_khz", b.freq_khz}, {"fraction", b.fraction}});
        residency.push_back({{"sensor", r.sensor}, {"method", r.method}, {"bins", bins}});
    }
    return json{{"stage", s.stage},
                {"occurrence", s.occurrence},
                {"begin_ns", s.begin_ns},
                {"end_ns", s.end_ns},
                {"duration_ns", s.duration_ns},
                {"begin_read_ns", s.begin_read_ns},
                {"end_read_ns", s.end_read_ns},
                {"tokens", opt(s.tokens)},
                {"total",
                 {{"metric", opt(s.total.metric)},
                  {"energy_j", opt(s.total.energy_j)},
                  {"net_energy_j", opt(s.total.net_energy_j)},
                  {"j_per_token", opt(s.total.j_per_token)},
                  {"net_j_per_token", opt(s.total.net_j_per_token)}}},
                {"energy", array_of(s.energy)},
                {"gauges", array_of(s.gauges)},
                {"residency", residency},
                {"warnings", warnings_json(s.warnings)}};
}

json to_json(const TelemetrySection& t) {
    json sources = json::array(), classes = json::array(), marks = json::array();
    for (const auto& s : t.sources)
        sources.push_back({{"name", s.name},
                           {"class", s.source_class},
                           {"metrics", s.metrics},
                           {"properties", s.properties}});
    for (const auto& c : t.classes)
        classes.push_back({{"class", c.source_class}, {"found", c.found}, {"note", c.note}});
    for (const auto& m : t.marks)
        marks.push_back(
            {{"stage", m.stage}, {"begin", m.begin}, {"t_ns", m.t_ns}, {"read_ns", m.read_ns}});
    json j{
        {"hz", t.hz},
        {"sources", sources},
        {"classes", classes},
        {"absent", t.absent},
        {"metrics", array_of(t.metrics)},
        {"marks", marks},
        {"stages", array_of(t.stages)},
        {"idle", t.idle ? json{{"duration_ns", t.idle->duration_ns}, {"power_mw", t.idle->power_mw}}
                        : json(nullptr)},
        {"warnings", warnings_json(t.warnings)}};
    if (t.series)
        j["series"] = array_of(*t.series);
    return j;
}

json to_json(const StageEnergySummary& s) {
    return json{{"j_per_token", to_json(s.j_per_token)},
                {"net_j_per_token", to_json(s.net_j_per_token)},
                {"energy_j", to_json(s.energy_j)},
                {"mean_power_mw", to_json(s.mean_power_mw)},
                {"total_metric", opt(s.total_metric)}};
}

json to_json(const BatteryDrain& b) {
    return json{{"battery", b.battery},
                {"begin_ns", b.begin_ns},
                {"end_ns", b.end_ns},
                {"span_s", b.span_s},
                {"capacity_start_pct", opt(b.capacity_start_pct)},
                {"capacity_end_pct", opt(b.capacity_end_pct)},
                {"capacity_drain_pct", opt(b.capacity_drain_pct)},
                {"capacity_drain_pct_per_h", opt(b.capacity_drain_pct_per_h)},
                {"counter", opt(b.counter)},
                {"counter_start", opt(b.counter_start)},
                {"counter_end", opt(b.counter_end)},
                {"counter_full", opt(b.counter_full)},
                {"counter_drain_pct", opt(b.counter_drain_pct)},
                {"counter_drain_pct_per_h", opt(b.counter_drain_pct_per_h)},
                {"from", b.from},
                {"drain_pct", opt(b.drain_pct)},
                {"drain_pct_per_h", opt(b.drain_pct_per_h)}};
}

json to_json(const TestTelemetry& t) {
    json j = json::object();
    if (!t.prefill.empty())
        j["prefill"] = array_of(t.prefill);
    if (!t.decode.empty())
        j["decode"] = array_of(t.decode);
    json summary = json::object();
    for (const auto& [stage, s] : t.summary)
        summary[stage] = to_json(s);
    j["summary"] = summary;
    if (t.battery)  // documents without a battery keep their form
        j["battery"] = to_json(*t.battery);
    return j;
}

void read(const JsonIn& in, TelemetryMetric& m) {
    ObjectIn{in}("name", m.name)("sensor", m.sensor)("quantity", m.quantity)("unit", m.unit)(
        "kind", m.kind)("wrap_range", m.wrap_range)("refresh_ns", m.refresh_ns)(
        "system_total", m.system_total)("within", m.within);
}

void read(const JsonIn& in, TelemetrySource& s) {
    ObjectIn{in}("name", s.name)("class", s.source_class)("metrics", s.metrics)("properties",
                                                                                s.properties);
}

void read(const JsonIn& in, TelemetryClass& c) {
    ObjectIn{in}("class", c.source_class)("found", c.found)("note", c.note);
}

void read(const JsonIn& in, TelemetrySeries& s) {
    ObjectIn{in}("metric", s.metric)("unit", s.unit)("kind", s.kind)("t_ns", s.t_ns)(
        "values", s.values)("cumulative", s.cumulative);
}

void read(const JsonIn& in, TelemetryMark& m) {
    ObjectIn{in}("stage", m.stage)("begin", m.begin)("t_ns", m.t_ns)("read_ns", m.read_ns);
}

void read(const JsonIn& in, StageEnergy& e) {
    ObjectIn{in}("metric", e.metric)("sensor", e.sensor)("method", e.method)(
        "energy_j", e.energy_j)("net_energy_j", e.net_energy_j)("mean_power_mw", e.mean_power_mw)(
        "max_power_mw", e.max_power_mw)("idle_power_mw", e.idle_power_mw)(
        "j_per_token", e.j_per_token)("net_j_per_token", e.net_j_per_token)(
        "system_total", e.system_total)("within", e.within)("below_refresh", e.below_refresh);
}

void read(const JsonIn& in, StageGauge& g) {
    ObjectIn{in}("metric", g.metric)("unit", g.unit)("start", g.start)("end", g.end)("min", g.min)(
        "max", g.max)("mean", g.mean)("samples", g.samples)("missing", g.missing);
}

void read(const JsonIn& in, ResidencyBin& b) {
    ObjectIn{in}("freq_khz", b.freq_khz)("fraction", b.fraction);
}

void read(const JsonIn& in, StageResidency& r) {
    ObjectIn{in}("sensor", r.sensor)("method", r.method)("bins", r.bins);
}

void read(const JsonIn& in, StageTotal& t) {
    ObjectIn{in}("metric", t.metric)("energy_j", t.energy_j)("net_energy_j", t.net_energy_j)(
        "j_per_token", t.j_per_token)("net_j_per_token", t.net_j_per_token);
}

void read(const JsonIn& in, StageWindow& s) {
    ObjectIn{in}("stage", s.stage)("occurrence", s.occurrence)("begin_ns", s.begin_ns)(
        "end_ns", s.end_ns)("duration_ns", s.duration_ns)("begin_read_ns", s.begin_read_ns)(
        "end_read_ns", s.end_read_ns)("tokens", s.tokens)("total", s.total)("energy", s.energy)(
        "gauges", s.gauges)("residency", s.residency)("warnings", s.warnings);
}

void read(const JsonIn& in, IdlePower& p) {
    ObjectIn{in}("duration_ns", p.duration_ns)("power_mw", p.power_mw);
}

void read(const JsonIn& in, TelemetrySection& t) {
    ObjectIn{in}("hz", t.hz)("sources", t.sources)("classes", t.classes)("absent", t.absent)(
        "metrics", t.metrics)("series", t.series)("marks", t.marks)("stages", t.stages)(
        "idle", t.idle)("warnings", t.warnings);
}

void read(const JsonIn& in, StageEnergySummary& s) {
    ObjectIn{in}("j_per_token", s.j_per_token)("net_j_per_token", s.net_j_per_token)(
        "energy_j", s.energy_j)("mean_power_mw", s.mean_power_mw)("total_metric", s.total_metric);
}

void read(const JsonIn& in, BatteryDrain& b) {
    ObjectIn o(in);
    o.non_negative({"span_s", "counter_full"});
    o("battery", b.battery)("begin_ns", b.begin_ns)("end_ns", b.end_ns)("span_s", b.span_s)(
        "capacity_start_pct", b.capacity_start_pct)("capacity_end_pct", b.capacity_end_pct)(
        "capacity_drain_pct", b.capacity_drain_pct)(
        "capacity_drain_pct_per_h", b.capacity_drain_pct_per_h)("counter", b.counter)(
        "counter_start", b.counter_start)("counter_end", b.counter_end)(
        "counter_full", b.counter_full)("counter_drain_pct", b.counter_drain_pct)(
        "counter_drain_pct_per_h", b.counter_drain_pct_per_h)("from", b.from)(
        "drain_pct", b.drain_pct)("drain_pct_per_h", b.drain_pct_per_h);
}

void read(const JsonIn& in, TestTelemetry& t) {
    ObjectIn{in}("prefill", t.prefill)("decode", t.decode)("summary", t.summary)("battery",
                                                                                 t.battery);
}

}  // namespace sb
