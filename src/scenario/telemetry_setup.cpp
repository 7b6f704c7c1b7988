#include "scenario/telemetry_setup.hpp"

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/stats_json.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/telemetry_json.hpp"

namespace sb {

bool has_sources(const Sampler& s) {
    return !s.record().sources.empty();
}

// The sampler when telemetry is wanted, with the families found and absent. Null when off.
std::unique_ptr<Sampler> open_telemetry(const TelemetryChoice& opts, std::ostream& err,
                                        bool progress) {
    if (opts.mode == "off")
        return nullptr;
    if (opts.mode != "auto" && opts.mode != "on")
        throw usage_error("--telemetry must be auto, on or off, not '" + opts.mode + "'");
    if (opts.idle_s < 0)
        throw usage_error("--idle must be >= 0 seconds");
    Discovery d = discover_sources(discover_options_for_root(opts.sysfs_root));
    if (d.sources.empty() && opts.mode == "on")
        throw input_error("--telemetry on: no telemetry sources under " + opts.sysfs_root +
                          " (stagebench sensors lists what is absent and why)");
    SamplerOptions so;
    so.hz = opts.hz;
    auto sampler = std::make_unique<Sampler>(std::move(d), so);
    if (progress) {
        const auto rec = sampler->record();
        err << "stagebench: telemetry: " << rec.sources.size() << " source(s)";
        std::string absent;
        for (const auto& c : rec.classes)
            if (c.found == 0)
                absent += (absent.empty() ? "" : ", ") + c.source_class;
        if (!absent.empty())
            err << "; absent: " << absent;
        err << "\n";
    }
    return sampler;
}

// Per-repetition stage telemetry of one test, and medians of what people compare.
nlohmann::json test_telemetry(const Sampler& tel, const std::string& prefix) {
    nlohmann::json j = nlohmann::json::object();
    nlohmann::json summary = nlohmann::json::object();
    for (const char* stage : {"prefill", "decode"}) {
        const auto occ = tel.stage_summaries(prefix + stage);
        if (occ.empty())
            continue;
        nlohmann::json arr = nlohmann::json::array();
        std::vector<double> jpt, net_jpt, energy, power;
        for (const auto& o : occ) {
            arr.push_back(to_json(o));
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
        j[stage] = arr;
        summary[stage] = {
            {"j_per_token", to_json(summarize(jpt))},
            {"net_j_per_token", to_json(summarize(net_jpt))},
            {"energy_j", to_json(summarize(energy))},
            {"mean_power_mw", to_json(summarize(power))},
            {"total_metric", occ.front().total_metric ? nlohmann::json(*occ.front().total_metric)
                                                      : nlohmann::json(nullptr)}};
    }
    j["summary"] = summary;
    return j;
}

void finish_telemetry(Sampler* tel, ResultDocument& doc) {
    if (!tel)
        return;
    tel->stop();
    const TelemetryRecord rec = tel->record();  // a copy of every series: taken once
    doc.telemetry = to_json(rec);
    for (const auto& w : rec.warnings)
        doc.warnings.push_back(w);
}

}  // namespace sb
