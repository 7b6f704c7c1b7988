#include "telemetry/telemetry_json.hpp"

#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

using nlohmann::json;

json to_json(const Metric& m) {
    return json{{"name", m.name},
                {"sensor", m.sensor},
                {"quantity", quantity_name(m.quantity)},
                {"unit", m.unit()},
                {"kind", m.kind == MetricKind::counter ? "counter" : "gauge"},
                {"wrap_range", opt(m.wrap_range)},
                {"refresh_ns", opt(m.refresh_ns)},
                {"system_total", m.system_total},
                {"within", opt(m.within)}};
}

json to_json(const EnergyStat& e) {
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

json to_json(const GaugeStat& g) {
    return json{{"metric", g.metric},  {"unit", unit_of(g.quantity)}, {"start", opt(g.start)},
                {"end", opt(g.end)},   {"min", opt(g.min)},           {"max", opt(g.max)},
                {"mean", opt(g.mean)}, {"samples", g.samples},        {"missing", g.missing}};
}

json to_json(const StageTelemetry& s) {
    json energy = json::array(), gauges = json::array(), residency = json::array();
    for (const auto& e : s.energy)
        energy.push_back(to_json(e));
    for (const auto& g : s.gauges)
        gauges.push_back(to_json(g));
    for (const auto& r : s.residency) {
        json bins = json::array();
        for (const auto& [f, x] : r.freq_khz_fraction) {
            bins.push_back({{"freq_khz", f}, {"fraction", x}});
        }
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
                 {{"metric", opt(s.total_metric)},
                  {"energy_j", opt(s.total_energy_j)},
                  {"net_energy_j", opt(s.total_net_energy_j)},
                  {"j_per_token", opt(s.j_per_token)},
                  {"net_j_per_token", opt(s.net_j_per_token)}}},
                {"energy", energy},
                {"gauges", gauges},
                {"residency", residency},
                {"warnings", warnings_json(s.warnings)}};
}

json to_json(const IdleBaseline& b) {
    json p = json::object();
    for (const auto& [m, mw] : b.power_mw)
        p[m] = mw;
    return json{{"duration_ns", b.duration_ns}, {"power_mw", p}};
}

json to_json(const Series& s) {
    json j{{"metric", s.metric.name},
           {"unit", s.metric.unit()},
           {"kind", s.metric.kind == MetricKind::counter ? "counter" : "gauge"},
           {"t_ns", s.t_ns},
           {"values", opt_values(s.values)}};
    if (s.metric.kind == MetricKind::counter)
        j["cumulative"] = opt_values(s.cumulative);
    return j;
}

json to_json(const TelemetryRecord& r, bool with_series) {
    json sources = json::array(), classes = json::array(), absent = json::array(),
         metrics = json::array(), marks = json::array(), stages = json::array();
    for (const auto& s : r.sources) {
        json props = json::object();
        for (const auto& [k, v] : s.properties)
            props[k] = v;
        sources.push_back({{"name", s.name},
                           {"class", s.source_class},
                           {"metrics", s.metrics},
                           {"properties", props}});
    }
    for (const auto& c : r.classes) {
        classes.push_back({{"class", c.source_class}, {"found", c.found}, {"note", c.note}});
        if (c.found == 0)
            absent.push_back(c.source_class);
    }
    for (const auto& s : r.series)
        metrics.push_back(to_json(s.metric));
    for (const auto& m : r.marks) {
        marks.push_back(
            {{"stage", m.stage}, {"begin", m.begin}, {"t_ns", m.t_ns}, {"read_ns", m.read_ns}});
    }
    for (const auto& s : r.stages)
        stages.push_back(to_json(s));
    json j{{"hz", r.hz},
           {"sources", sources},
           {"classes", classes},
           {"absent", absent},
           {"metrics", metrics},
           {"marks", marks},
           {"stages", stages},
           {"idle", r.idle ? to_json(*r.idle) : json(nullptr)},
           {"warnings", warnings_json(r.warnings)}};
    if (with_series) {
        json series = json::array();
        for (const auto& s : r.series)
            series.push_back(to_json(s));
        j["series"] = series;
    }
    return j;
}

// The JSON above is the one the document's types read (core/doc/telemetry_section.hpp), so the
// typed forms are made through it: one definition of the shape, checked by the round-trip tests.
TelemetrySection telemetry_section(const TelemetryRecord& r) {
    return from_json<TelemetrySection>(to_json(r), "the telemetry record");
}

TestTelemetry test_telemetry_of(const std::vector<StageTelemetry>& prefill,
                                const std::vector<StageTelemetry>& decode) {
    TestTelemetry t;
    for (const auto* occ : {&prefill, &decode}) {
        if (occ->empty())
            continue;
        std::vector<StageWindow>& windows = occ == &prefill ? t.prefill : t.decode;
        std::vector<double> jpt, net_jpt, energy, power;
        for (const auto& o : *occ) {
            windows.push_back(from_json<StageWindow>(to_json(o), "a stage record"));
            if (o.j_per_token)
                jpt.push_back(*o.j_per_token);
            if (o.net_j_per_token)
                net_jpt.push_back(*o.net_j_per_token);
            if (o.total_energy_j) {
                energy.push_back(*o.total_energy_j);
                if (o.duration_ns > 0)
                    power.push_back(*o.total_energy_j / (o.duration_ns * 1e-9) * 1e3);
            }
        }
        StageEnergySummary& s = t.summary[occ == &prefill ? "prefill" : "decode"];
        s.j_per_token = summarize(jpt);
        s.net_j_per_token = summarize(net_jpt);
        s.energy_j = summarize(energy);
        s.mean_power_mw = summarize(power);
        s.total_metric = occ->front().total_metric;
    }
    return t;
}

}  // namespace sb
