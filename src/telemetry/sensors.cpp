#include "telemetry/sensors.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {

SensorsReport run_sensors(const SensorsOptions& o, std::ostream& log) {
    if (o.duration_ns < 0)
        throw usage_error("duration must not be negative");
    if (!(o.hz > 0 && o.hz <= 1000)) {
        throw usage_error(fmt::format("--hz {} is outside (0, 1000]", o.hz));
    }
    Discovery d = discover_sources(o.discover);
    const std::size_t n_sources = d.sources.size();
    Sampler s(std::move(d), SamplerOptions{o.hz, {}});
    s.sample_now();
    if (o.duration_ns > 0 && n_sources > 0) {
        log << fmt::format("sampling {} source(s) for {:.3g} s at {:g} Hz\n", n_sources,
                           static_cast<double>(o.duration_ns) * 1e-9, o.hz);
        s.start();
        const int64_t t0 = s.mark("sensors", true);
        // Sleep in slices so that Ctrl-C ends the window early with what was measured.
        const auto until =
            std::chrono::steady_clock::now() + std::chrono::nanoseconds(o.duration_ns);
        while (!interrupt_requested()) {
            auto now = std::chrono::steady_clock::now();
            if (now >= until)
                break;
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                until - now, std::chrono::milliseconds(50)));
        }
        s.mark("sensors", false);
        s.stop();
        (void)t0;
    } else if (n_sources == 0) {
        log << "no telemetry sources found\n";
    }
    const TelemetrySection rec = s.record();
    SensorsReport r;
    r.hz = o.hz;
    r.sources = rec.sources;
    r.classes = rec.classes;
    r.warnings = rec.warnings;
    for (const auto& se : *rec.series) {
        if (se.unit == unit_of(Quantity::residency) || se.values.empty())
            continue;
        r.current.push_back({se.metric, se.unit, se.values.front()});
    }
    if (!rec.stages.empty()) {
        const StageWindow& st = rec.stages.back();
        r.duration_ns = st.duration_ns;
        std::map<std::string, std::size_t> index;
        auto row = [&](const std::string& sensor) -> SensorWindow& {
            auto [it, added] = index.try_emplace(sensor, r.window.size());
            if (added)
                r.window.push_back(SensorWindow{sensor, "", {}, {}, {}, {}, {}, {}, {}, {}});
            return r.window[it->second];
        };
        std::map<std::string, const TelemetryMetric*> by_name;
        for (const auto& m : rec.metrics)
            by_name[m.name] = &m;
        for (const auto& e : st.energy) {
            SensorWindow& w = row(e.sensor);
            if (!w.energy_method.empty())
                continue;
            w.energy_method = e.method;
            w.energy_j = e.energy_j;
            w.mean_power_mw = e.mean_power_mw;
            w.max_power_mw = e.max_power_mw;
        }
        for (const auto& g : st.gauges) {
            const TelemetryMetric* m = by_name.count(g.metric) ? by_name[g.metric] : nullptr;
            if (!m)
                continue;
            if (g.unit == unit_of(Quantity::temperature)) {
                SensorWindow& w = row(m->sensor);
                if (g.min)
                    w.temp_min_mc = std::min(w.temp_min_mc.value_or(*g.min), *g.min);
                if (g.max)
                    w.temp_max_mc = std::max(w.temp_max_mc.value_or(*g.max), *g.max);
            } else if (g.unit == unit_of(Quantity::frequency) &&
                       (g.metric.find("cur_freq") != std::string::npos ||
                        g.metric.find("sm_freq") != std::string::npos)) {
                SensorWindow& w = row(m->sensor);
                if (w.freq_mean_khz)
                    continue;
                w.freq_min_khz = g.min;
                w.freq_max_khz = g.max;
                w.freq_mean_khz = g.mean;
            }
        }
        r.stage = st;
        for (const auto& w : st.warnings)
            r.warnings.push_back(w);
    }
    return r;
}

nlohmann::json to_json(const SensorsReport& r) {
    using nlohmann::json;
    json sources = json::array(), classes = json::array(), absent = json::array(),
         current = json::array(), window = json::array(), warnings = json::array();
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
    for (const auto& c : r.current) {
        current.push_back({{"metric", c.metric}, {"unit", c.unit}, {"value", opt(c.value)}});
    }
    for (const auto& w : r.window) {
        window.push_back(
            {{"sensor", w.sensor},
             {"energy_method", w.energy_method.empty() ? json(nullptr) : json(w.energy_method)},
             {"energy_j", opt(w.energy_j)},
             {"mean_power_mw", opt(w.mean_power_mw)},
             {"max_power_mw", opt(w.max_power_mw)},
             {"temp_min_mc", opt(w.temp_min_mc)},
             {"temp_max_mc", opt(w.temp_max_mc)},
             {"freq_min_khz", opt(w.freq_min_khz)},
             {"freq_max_khz", opt(w.freq_max_khz)},
             {"freq_mean_khz", opt(w.freq_mean_khz)}});
    }
    for (const auto& w : r.warnings)
        warnings.push_back(to_json(w));
    return json{{"duration_ns", r.duration_ns},
                {"hz", r.hz},
                {"sources", sources},
                {"classes", classes},
                {"absent", absent},
                {"current", current},
                {"window", window},
                {"stage", r.stage ? to_json(*r.stage) : json(nullptr)},
                {"warnings", warnings}};
}

}  // namespace sb
