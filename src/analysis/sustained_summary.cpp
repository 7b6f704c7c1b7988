#include "analysis/sustained_summary.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "analysis/change_point.hpp"
#include "core/json_util.hpp"
#include "core/stats.hpp"
#include "telemetry/battery_drain.hpp"

namespace sb {
namespace {

bool has_suffix_summary(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The values of one field over the rounds that ended ok and have it.
std::vector<double> present(const std::vector<SustainedRound>& rounds,
                            std::optional<double> SustainedRound::*field) {
    std::vector<double> v;
    for (const auto& r : rounds)
        if (r.status == Status::ok && r.*field)
            v.push_back(*(r.*field));
    return v;
}

RoundSpread spread(const std::vector<double>& v, bool ratio_scale = true) {
    RoundSpread out;
    const Summary s = summarize(v);
    out.n = s.n;
    out.mean = s.mean;
    out.sd = s.stddev;
    out.min = s.min;
    out.max = s.max;
    if (ratio_scale)
        out.cv = s.cv;
    return out;
}

std::string lower(std::string s) {
    for (auto& ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// The sensor part of a metric name: "thermal.cpu-0-0-usr.temp_mc" -> "thermal.cpu-0-0-usr".
std::string sensor_of(const std::string& metric) {
    const auto dot = metric.rfind('.');
    return dot == std::string::npos ? metric : metric.substr(0, dot);
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.rfind(prefix, 0) == 0;
}

// Duration-weighted means of every gauge over the windows that have a mean for it, by metric.
std::map<std::string, double> gauge_means(const std::vector<const StageWindow*>& windows,
                                          const std::string& unit) {
    std::map<std::string, std::pair<double, double>> acc;  // metric -> (sum of mean*dt, dt)
    for (const StageWindow* w : windows)
        for (const auto& g : w->gauges)
            if (g.unit == unit && g.mean) {
                const double dt = std::max<double>(1, static_cast<double>(w->duration_ns));
                acc[g.metric].first += *g.mean * dt;
                acc[g.metric].second += dt;
            }
    std::map<std::string, double> out;
    for (const auto& [m, sd] : acc)
        out[m] = sd.first / sd.second;
    return out;
}

const StageGauge* gauge(const StageWindow& w, const std::string& metric) {
    for (const auto& g : w.gauges)
        if (g.metric == metric)
            return &g;
    return nullptr;
}

// Energy (J) of one meter over every window, or nullopt when a window lacks it.
std::optional<double> energy_over(const std::vector<const StageWindow*>& windows,
                                  const std::string& metric) {
    double sum = 0;
    for (const StageWindow* w : windows) {
        const StageEnergy* e = nullptr;
        for (const auto& x : w->energy)
            if (x.metric == metric)
                e = &x;
        if (!e || !e->energy_j)
            return std::nullopt;
        sum += *e->energy_j;
    }
    return sum;
}

void add_telemetry_figures(const std::vector<const StageWindow*>& windows, SustainedRound& r) {
    double dur_ns = 0;
    for (const StageWindow* w : windows)
        dur_ns += static_cast<double>(w->duration_ns);
    const double dur_s = dur_ns * 1e-9;

    // The whole-system meter (the windows' totals).
    double total = 0;
    bool all = true;
    for (const StageWindow* w : windows) {
        if (!w->total.energy_j) {
            all = false;
            break;
        }
        total += *w->total.energy_j;
    }
    if (all) {
        r.energy_j = total;
        if (dur_s > 0)
            r.power_w = total / dur_s;
        if (r.generated_tokens && *r.generated_tokens > 0)
            r.j_per_token = total / static_cast<double>(*r.generated_tokens);
    }

    // Rails of one component: each meter the windows all have, not nested in another rail of
    // the same component (RAPL's core inside its package), not a whole-system meter.
    std::map<Component, double> rail_j;
    const StageWindow& first = *windows.front();
    for (const auto& e : first.energy) {
        const auto c = component_of(e.metric);
        if (!c || e.system_total)
            continue;
        if (e.within) {
            bool nested = false;
            for (const auto& o : first.energy)
                if (sensor_of(o.metric) == *e.within || o.metric == *e.within)
                    nested |= component_of(o.metric) == c;
            if (nested)
                continue;
        }
        if (auto j = energy_over(windows, e.metric))
            rail_j[*c] += *j;
    }
    if (dur_s > 0)
        for (const auto& [c, j] : rail_j)
            (c == Component::cpu   ? r.power_cpu_w
             : c == Component::gpu ? r.power_gpu_w
                                   : r.power_npu_w) = j / dur_s;

    // Temperatures: the hottest sensor of each component, by its mean over the request.
    for (const auto& [metric, mean_mc] : gauge_means(windows, "mC")) {
        const auto c = component_of(metric);
        if (!c)
            continue;
        auto& dst = *c == Component::cpu   ? r.temp_cpu_c
                    : *c == Component::gpu ? r.temp_gpu_c
                                           : r.temp_npu_c;
        if (!dst || mean_mc / 1000.0 > *dst)
            dst = mean_mc / 1000.0;
    }

    // The battery: the first one with a power meter.
    std::optional<std::string> battery;
    for (const auto& e : first.energy)
        if (starts_with(e.metric, "battery.") && e.metric.size() > 9 &&
            e.metric.compare(e.metric.size() - 9, 9, ".power_mw") == 0) {
            battery = sensor_of(e.metric);
            break;
        }
    if (!battery)  // a battery without a meter may still report its capacity
        for (const auto& g : first.gauges)
            if (starts_with(g.metric, "battery.") && g.metric.size() > 13 &&
                g.metric.compare(g.metric.size() - 13, 13, ".capacity_pct") == 0) {
                battery = sensor_of(g.metric);
                break;
            }
    if (!battery)
        return;
    if (const StageGauge* g = gauge(first, *battery + ".capacity_pct"))
        r.battery_capacity_start_pct = g->start;
    if (const StageGauge* g = gauge(*windows.back(), *battery + ".capacity_pct"))
        r.battery_capacity_end_pct = g->end;
    const auto means_mv = gauge_means(windows, "mV");
    const auto means_uah = gauge_means(windows, "uAh");
    const auto v = means_mv.find(*battery + ".voltage_mv");
    const auto full = means_uah.find(*battery + ".charge_full_uah");
    const auto used_j = energy_over(windows, *battery + ".power_mw");
    if (v != means_mv.end() && full != means_uah.end() && used_j) {
        // µAh -> coulombs (× 3.6e-3), × volts = joules of a full charge at this voltage.
        const double full_j = full->second * 3.6e-3 * v->second * 1e-3;
        if (full_j > 0)
            r.battery_drain_pct = *used_j / full_j * 100.0;
    }
}

// The evidence of throttling at the change point `onset` (1-based round): clocks lower from it
// on, the hottest sensor risen by then.
std::vector<std::string> evidence_at(const std::vector<SustainedRound>& rounds, int onset) {
    std::vector<std::string> out;
    // A clock is evidence when it is already lower in the round of the change point and stays
    // lower on average from there: a clock that fell rounds later does not explain the change.
    struct Clock {
        std::vector<double> before, after;
        std::optional<double> at;
    };
    std::map<std::string, Clock> clocks;
    const std::string mean_cpu = "mean CPU clock";
    for (const auto& r : rounds) {
        if (r.status != Status::ok)
            continue;
        auto add = [&](const std::string& name, double khz) {
            Clock& c = clocks[name];
            (r.round < onset ? c.before : c.after).push_back(khz);
            if (r.round == onset)
                c.at = khz;
        };
        for (const auto& [metric, f] : r.freq)
            if (f.mean_khz && component_of(metric))
                add(sensor_of(metric) + " clock", *f.mean_khz);
        if (r.cpu_freq_mean_khz)
            add(mean_cpu, *r.cpu_freq_mean_khz);
    }
    auto line = [&](const std::string& name, const Clock& c) -> std::optional<std::string> {
        if (c.before.empty() || c.after.empty() || !c.at)
            return std::nullopt;
        const double before = *summarize(c.before).mean, after = *summarize(c.after).mean;
        if (before <= 0 || after / before - 1 > -kClockDropEvidence ||
            *c.at / before - 1 > -kClockDropEvidence)
            return std::nullopt;
        return fmt::format("{} {:.0f} MHz before round {}, {:.0f} MHz from it on ({:+.1f} %)", name,
                           before / 1000, onset, after / 1000, (after / before - 1) * 100);
    };
    for (const auto& [name, c] : clocks)
        if (name != mean_cpu)
            if (auto l = line(name, c))
                out.push_back(*l);
    // The mean over the CPU policies speaks only where no policy did.
    if (auto it = clocks.find(mean_cpu); out.empty() && it != clocks.end())
        if (auto l = line(mean_cpu, it->second))
            out.push_back(*l);
    std::optional<double> start, peak;
    int peak_round = 0;
    for (const auto& r : rounds) {
        if (r.status != Status::ok)
            continue;
        if (!start && r.temp_start_c)
            start = r.temp_start_c;
        if (r.round <= onset && r.temp_max_c && (!peak || *r.temp_max_c > *peak)) {
            peak = r.temp_max_c;
            peak_round = r.round;
        }
    }
    if (start && peak && *peak - *start >= kHeatingEvidenceC)
        out.push_back(
            fmt::format("hottest sensor {:.1f} °C at the first round's start, {:.1f} °C "
                        "in round {} ({:+.1f} °C)",
                        *start, *peak, peak_round, *peak - *start));
    return out;
}

// Time at the frequency floor of every sampled clock of the phase.
std::vector<FloorTime> time_at_floor(const std::vector<TelemetrySeries>& freq_series) {
    std::vector<FloorTime> out;
    // Time at the frequency floor: the policy's own minimum where the kernel reports it, else
    // the lowest frequency seen in the phase.
    std::map<std::string, double> floors;
    for (const auto& s : freq_series)
        if (has_suffix_summary(s.metric, ".min_freq_khz"))
            for (const auto& v : s.values)
                if (v)
                    floors[s.metric.substr(0, s.metric.size() - 13)] = *v;
    for (const auto& s : freq_series) {
        if (!has_suffix_summary(s.metric, ".cur_freq_khz") || s.t_ns.size() < 2)
            continue;
        const std::string base = s.metric.substr(0, s.metric.size() - 13);
        std::optional<double> floor, lowest, highest;
        for (const auto& v : s.values)
            if (v) {
                lowest = lowest ? std::min(*lowest, *v) : *v;
                highest = highest ? std::max(*highest, *v) : *v;
            }
        if (auto it = floors.find(base); it != floors.end())
            floor = it->second;
        else if (lowest && highest && *lowest < *highest)
            floor = lowest;  // without a reported minimum, a clock that never moved has no floor
        if (!floor)
            continue;
        double at = 0, total = 0;
        for (size_t i = 0; i + 1 < s.t_ns.size(); ++i) {
            const double dt = (s.t_ns[i + 1] - s.t_ns[i]) * 1e-9;
            total += dt;
            if (s.values[i] && *s.values[i] <= *floor * 1.001)
                at += dt;
        }
        out.push_back({s.metric, *floor, at, total > 0 ? at / total : 0});
    }
    return out;
}

}  // namespace

std::optional<Component> component_of(const std::string& metric) {
    const std::string name = lower(sensor_of(metric));
    if (starts_with(name, "cpufreq."))
        return Component::cpu;
    if (starts_with(name, "nvml."))
        return Component::gpu;
    // Words of the name, for cluster names that are ordinary words elsewhere.
    std::vector<std::string> words;
    std::string w;
    for (char ch : name + ".") {
        if (std::isalnum(static_cast<unsigned char>(ch))) {
            w += ch;
        } else if (!w.empty()) {
            words.push_back(w);
            w.clear();
        }
    }
    auto has = [&](std::initializer_list<const char*> parts) {
        for (const char* p : parts)
            if (name.find(p) != std::string::npos)
                return true;
        return false;
    };
    auto word = [&](std::initializer_list<const char*> list) {
        for (const char* p : list)
            if (std::find(words.begin(), words.end(), p) != words.end())
                return true;
        return false;
    };
    // Memory and interconnect clocks and rails ("cpu-llcc-ddr-bw", RAPL's dram and uncore)
    // follow the traffic, not a component's own limit.
    if (has({"ddr", "llcc", "dram", "uncore"}) || word({"bw", "bus", "mem"}))
        return std::nullopt;
    const bool cpu = has({"cpu", "coretemp", "k10temp", "x86_pkg", "zenpower"}) ||
                     word({"big", "mid", "little", "core"});
    const bool gpu = has({"gpu", "kgsl", "mali", "g3d", "adreno", "ga10b", "gv11b", "gp10b"});
    const bool npu = has({"npu", "nsp", "cdsp", "hexagon", "tpu", "hailo"}) || word({"dla"}) ||
                     has({"dla0", "dla1"});
    if (cpu + gpu + npu != 1)
        return std::nullopt;
    return cpu ? Component::cpu : gpu ? Component::gpu : Component::npu;
}

void add_request_figures(const TestResult& t, SustainedRound& r) {
    if (t.client && !t.client->e2e_ns.empty()) {
        // An engine behind HTTP: the client's own request, with the server's token counts.
        r.e2e_s = static_cast<double>(t.client->e2e_ns[0]) * 1e-9;
        if (!t.client->prompt_tokens.empty())
            r.prompt_tokens = t.client->prompt_tokens[0];
        if (!t.client->output_tokens.empty())
            r.generated_tokens = t.client->output_tokens[0];
    } else {
        // In process: the prompt, then every generated token (the first one included).
        const bool pre = t.prefill && !t.prefill->duration_ns.empty();
        const bool dec = t.decode && !t.decode->duration_ns.empty();
        if (pre)
            r.prompt_tokens = t.prefill->n_tokens;
        if (dec)
            r.generated_tokens = t.decode->token_latency_counts.empty()
                                     ? t.decode->n_tokens
                                     : t.decode->token_latency_counts[0];
        if ((pre || t.config.n_prompt == 0) && (dec || t.config.n_gen == 0) && (pre || dec))
            r.e2e_s = static_cast<double>((pre ? t.prefill->duration_ns[0] : 0) +
                                          (dec ? t.decode->duration_ns[0] : 0)) *
                      1e-9;
    }
    if (r.e2e_s && *r.e2e_s > 0 && (r.prompt_tokens || r.generated_tokens))
        r.combined_tps =
            static_cast<double>(r.prompt_tokens.value_or(0) + r.generated_tokens.value_or(0)) /
            *r.e2e_s;
}

void add_request_telemetry(const TestTelemetry& t, SustainedRound& r) {
    std::vector<const StageWindow*> windows;
    if (!t.prefill.empty())
        windows.push_back(&t.prefill[0]);
    if (!t.decode.empty())
        windows.push_back(&t.decode[0]);
    if (!windows.empty())
        add_telemetry_figures(windows, r);
    r.battery = battery_drain(windows);
}

AcrossRounds summarize_rounds(const std::vector<SustainedRound>& rounds,
                              const std::vector<TelemetrySeries>& freq_series) {
    AcrossRounds a;
    const auto pre = present(rounds, &SustainedRound::prefill_tps);
    const auto dec = present(rounds, &SustainedRound::decode_tps);
    a.prefill_tps = summarize(pre);
    a.decode_tps = summarize(dec);
    a.ttft_ms = summarize(present(rounds, &SustainedRound::ttft_ms));
    a.decode_j_per_token = summarize(present(rounds, &SustainedRound::decode_j_per_token));
    a.decode_net_j_per_token = summarize(present(rounds, &SustainedRound::decode_net_j_per_token));
    if (dec.size() >= 2 && dec.front() > 0)
        a.first_last_change = dec.back() / dec.front() - 1.0;
    a.e2e_s = spread(present(rounds, &SustainedRound::e2e_s));
    a.combined_tps = spread(present(rounds, &SustainedRound::combined_tps));
    a.energy_j = spread(present(rounds, &SustainedRound::energy_j));
    a.power_w = spread(present(rounds, &SustainedRound::power_w));
    a.j_per_token = spread(present(rounds, &SustainedRound::j_per_token));
    a.power_cpu_w = spread(present(rounds, &SustainedRound::power_cpu_w));
    a.power_gpu_w = spread(present(rounds, &SustainedRound::power_gpu_w));
    a.power_npu_w = spread(present(rounds, &SustainedRound::power_npu_w));
    a.temp_cpu_c = spread(present(rounds, &SustainedRound::temp_cpu_c), false);
    a.temp_gpu_c = spread(present(rounds, &SustainedRound::temp_gpu_c), false);
    a.temp_npu_c = spread(present(rounds, &SustainedRound::temp_npu_c), false);
    {
        std::optional<double> first, last;
        double energy_pct = 0;
        bool every = true;
        int ok = 0;
        for (const auto& r : rounds) {
            if (r.status != Status::ok)
                continue;
            ++ok;
            if (!first && r.battery_capacity_start_pct)
                first = r.battery_capacity_start_pct;
            if (r.battery_capacity_end_pct)
                last = r.battery_capacity_end_pct;
            if (r.battery_drain_pct)
                energy_pct += *r.battery_drain_pct;
            else
                every = false;
        }
        if (first && last)
            a.battery_drain_capacity_pct = *first - *last;
        if (every && ok > 0)
            a.battery_drain_energy_pct = energy_pct;
        const SustainedRound* first_b = nullptr;
        const SustainedRound* last_b = nullptr;
        for (const auto& r : rounds)
            if (r.status == Status::ok && r.battery) {
                first_b = first_b ? first_b : &r;
                last_b = &r;
            }
        if (first_b)
            a.battery = battery_drain_across(*first_b->battery, *last_b->battery);
        std::vector<double> per_h;
        for (const auto& r : rounds)
            if (r.status == Status::ok && r.battery && r.battery->drain_pct_per_h)
                per_h.push_back(*r.battery->drain_pct_per_h);
        a.battery_drain_pct_per_h = spread(per_h, false);
    }

    // The rounds that carry each series, so that an onset index maps back to a round number.
    std::vector<int> dec_rounds, freq_rounds;
    std::vector<double> freq;
    for (const auto& r : rounds) {
        if (r.status != Status::ok)
            continue;
        if (r.decode_tps)
            dec_rounds.push_back(r.round);
        if (r.cpu_freq_mean_khz) {
            freq.push_back(*r.cpu_freq_mean_khz);
            freq_rounds.push_back(r.round);
        }
    }
    std::optional<int> tput_onset;
    std::optional<ChangePoint> freq_cp;
    if (auto cp = detect_change_point(dec); cp && cp->relative_change < 0)
        tput_onset = dec_rounds[cp->index];
    if (auto cp = detect_change_point(freq); cp && cp->relative_change < 0) {
        a.freq_onset_round = freq_rounds[cp->index];
        freq_cp = cp;
    }
    a.drop_round = tput_onset;
    std::optional<int> onset;
    if (tput_onset && (!a.freq_onset_round || *tput_onset <= *a.freq_onset_round)) {
        onset = tput_onset;
        a.onset_basis = "throughput";
    } else if (a.freq_onset_round) {
        onset = a.freq_onset_round;
        a.onset_basis = "frequency";
    }
    if (onset) {
        a.throttle_evidence = evidence_at(rounds, *onset);
        // The CPU clock's own change point is evidence even where no single policy moved
        // by kClockDropEvidence.
        if (a.onset_basis == "frequency" && a.throttle_evidence.empty())
            a.throttle_evidence.push_back(fmt::format(
                "mean CPU clock {:.0f} MHz before round {}, {:.0f} MHz from it on ({:+.1f} %)",
                freq_cp->before_mean / 1000, *onset, freq_cp->after_mean / 1000,
                freq_cp->relative_change * 100));
        if (!a.throttle_evidence.empty())
            a.throttle_onset_round = onset;
    }
    if (!dec.empty()) {
        double sum = 0;
        int n = 0;
        for (size_t i = 0; i < dec.size(); ++i)
            if (!onset || dec_rounds[i] >= *onset) {
                sum += dec[i];
                ++n;
            }
        if (n > 0) {
            a.steady_decode_tps = sum / n;
            a.peak_to_steady = *std::max_element(dec.begin(), dec.end()) / *a.steady_decode_tps;
        }
    }
    a.verdict = verdict_text(a);

    a.time_at_floor = time_at_floor(freq_series);
    return a;
}

std::string verdict_text(const AcrossRounds& a) {
    if (a.throttle_onset_round)
        return "throttled at round " + std::to_string(*a.throttle_onset_round);
    const std::string load = a.load ? "the machine was loaded: " + *a.load : "";
    if (a.drop_round)
        return "throughput dropped at round " + std::to_string(*a.drop_round) +
               " (no clock or temperature evidence" + (load.empty() ? "" : "; " + load) + ")";
    if (a.first_last_change && *a.first_last_change < -0.10)
        return "degraded" + (load.empty() ? std::string() : " (" + load + ")");
    // A last round over 10 % faster than the first is no steady state either (a slow start:
    // caches, a governor ramping up, or load that went away).
    if (a.first_last_change && *a.first_last_change > 0.10)
        return fmt::format("rose (decode {:+.0f} % from the first round to the last{})",
                           *a.first_last_change * 100, load.empty() ? "" : "; " + load);
    return a.decode_tps.n > 0 ? "stable" : "no data";
}

std::optional<std::string> machine_load(const SustainedPhase& phase, const MachineLoad& load,
                                        const Warnings& warnings) {
    if (!phase.background.empty())
        return "background load " + phase.background;
    for (const auto& w : warnings) {
        if (w.code != "other_load")
            continue;
        if (load.loadavg_1m && load.cores_logical)
            return fmt::format(
                "1-minute load average {:.2f} on {} logical CPUs when the run "
                "started",
                *load.loadavg_1m, *load.cores_logical);
        return w.message;
    }
    return std::nullopt;
}

void name_machine_load(SustainedResult& r, const MachineLoad& load, const Warnings& warnings) {
    for (auto& p : r.phases) {
        p.across.load = machine_load(p, load, warnings);
        p.across.verdict = verdict_text(p.across);
    }
}

std::vector<Slowdown> phase_slowdown(const SustainedPhase& baseline, const SustainedPhase& loaded) {
    std::vector<Slowdown> out;
    for (const char* stage : {"prefill", "decode"}) {
        auto field = std::string(stage) == "prefill" ? &SustainedRound::prefill_tps
                                                     : &SustainedRound::decode_tps;
        auto a = present(baseline.rounds, field), b = present(loaded.rounds, field);
        if (a.empty() || b.empty())
            continue;
        RatioCi rc = ratio_of_medians(a, b);
        out.push_back({stage, rc.ratio, rc.lo, rc.hi, rc.no_difference});
    }
    return out;
}

}  // namespace sb
