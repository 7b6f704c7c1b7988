#include "scenario/telemetry_setup.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/stats_json.hpp"
#include "telemetry/battery_drain.hpp"
#include "telemetry/discover.hpp"

namespace sb {

bool has_sources(const Sampler& s) {
    return !s.record().sources.empty();
}

// The sampler when telemetry is wanted, with the families found and absent. Null when off.
std::unique_ptr<Sampler> open_telemetry(const TelemetryChoice& opts, Progress& progress,
                                        const Clock& clock, const Pause& pause,
                                        TelemetryLogFeed* feed) {
    if (opts.mode == TelemetryMode::off && !feed)
        return nullptr;
    if (opts.idle_s < 0)
        throw usage_error("--idle must be >= 0 seconds");
    Discovery d = opts.mode == TelemetryMode::off
                      ? Discovery{}
                      : discover_sources(discover_options_for_root(opts.sysfs_root));
    if (feed) {
        d.sources.push_back(feed->take_source());
        d.classes.push_back({"tegrastats", 1, ""});
        progress.note(
            "telemetry log: " + opts.log->path + " (whole-device rail: " +
            (feed->rail().empty() ? "none; name one with --telemetry-log-rail" : feed->rail()) +
            ")");
    }
    if (d.sources.empty() && opts.mode == TelemetryMode::on)
        throw input_error("--telemetry on: no telemetry sources under " + opts.sysfs_root +
                          " (stagebench sensors lists what is absent and why)");
    SamplerOptions so;
    so.hz = opts.hz;
    so.clock = clock;
    so.pause = pause;
    auto sampler = std::make_unique<Sampler>(std::move(d), so);
    const auto rec = sampler->record();
    std::string absent;
    for (const auto& c : rec.classes)
        if (c.found == 0)
            absent += (absent.empty() ? "" : ", ") + c.source_class;
    progress.note("telemetry: " + std::to_string(rec.sources.size()) + " source(s)" +
                  (absent.empty() ? "" : "; absent: " + absent));
    return sampler;
}

TestTelemetry test_telemetry_of(std::vector<StageWindow> prefill, std::vector<StageWindow> decode) {
    TestTelemetry t;
    for (auto* windows : {&prefill, &decode}) {
        if (windows->empty())
            continue;
        std::vector<double> jpt, net_jpt, energy, power;
        for (const auto& w : *windows) {
            if (w.total.j_per_token)
                jpt.push_back(*w.total.j_per_token);
            if (w.total.net_j_per_token)
                net_jpt.push_back(*w.total.net_j_per_token);
            if (w.total.energy_j) {
                energy.push_back(*w.total.energy_j);
                if (w.duration_ns > 0)
                    power.push_back(*w.total.energy_j / (w.duration_ns * 1e-9) * 1e3);
            }
        }
        StageEnergySummary& s = t.summary[windows == &prefill ? "prefill" : "decode"];
        s.j_per_token = summarize(jpt);
        s.net_j_per_token = summarize(net_jpt);
        s.energy_j = summarize(energy);
        s.mean_power_mw = summarize(power);
        s.total_metric = windows->front().total.metric;
    }
    // The battery over the whole test: its first window's start to its last window's end.
    std::vector<const StageWindow*> all;
    for (const auto* windows : {&prefill, &decode})
        for (const auto& w : *windows)
            all.push_back(&w);
    std::stable_sort(all.begin(), all.end(), [](const StageWindow* a, const StageWindow* b) {
        return a->begin_ns < b->begin_ns;
    });
    t.battery = battery_drain(all);
    t.prefill = std::move(prefill);
    t.decode = std::move(decode);
    return t;
}

// Per-repetition stage telemetry of one test, and medians of what people compare.
TestTelemetry test_telemetry(const Sampler& tel, const std::string& prefix) {
    return test_telemetry_of(tel.stage_summaries(prefix + "prefill"),
                             tel.stage_summaries(prefix + "decode"));
}

TestTelemetry retimed_test_telemetry(const Sampler& tel, const TestTelemetry& before) {
    auto prefix_of = [](const std::string& stage, const std::string& name) {
        return stage.size() >= name.size() &&
                       stage.compare(stage.size() - name.size(), name.size(), name) == 0
                   ? std::optional<std::string>(stage.substr(0, stage.size() - name.size()))
                   : std::nullopt;
    };
    std::optional<std::string> prefix;
    if (!before.prefill.empty())
        prefix = prefix_of(before.prefill.front().stage, "prefill");
    else if (!before.decode.empty())
        prefix = prefix_of(before.decode.front().stage, "decode");
    if (!prefix)
        return before;
    return test_telemetry(tel, *prefix);
}

void finish_telemetry(Sampler* tel, ResultDocument& doc) {
    if (!tel)
        return;
    tel->stop();
    doc.telemetry = tel->record();  // a copy of every series: taken once
    for (const auto& w : doc.telemetry->warnings)
        doc.warnings.push_back(w);
}

}  // namespace sb
