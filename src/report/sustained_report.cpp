#include "report/sustained_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/sustained_summary.hpp"

namespace sb {
namespace {

// v as spec prints it, without the sign of a value that rounds to zero ("-0.0000": a net
// energy of -1e-19 J is float noise, not a negative figure).
std::string printed(const char* spec, double v) {
    std::string s = fmt::format(fmt::runtime(spec), v);
    if (!s.empty() && s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos)
        s.erase(0, 1);
    return s;
}

std::string f(const std::optional<double>& v, const char* spec = "{:.2f}") {
    return v ? printed(spec, *v) : std::string("-");
}

// The mean of a round's GPU clocks (the metrics component_of calls GPU), in kHz.
std::optional<double> gpu_freq_mean_khz(const SustainedRound& x) {
    double sum = 0;
    int n = 0;
    for (const auto& [metric, f] : x.freq)
        if (f.mean_khz && component_of(metric) == Component::gpu) {
            sum += *f.mean_khz;
            ++n;
        }
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

// A clock in the unit that keeps its digits: a memory bus's 547 kHz floor is not "1 MHz".
std::string clock_text(double khz) {
    if (khz < 1000)
        return fmt::format("{:.0f} kHz", khz);
    const double mhz = khz / 1000;
    if (mhz < 10)
        return fmt::format("{:.2f} MHz", mhz);
    if (mhz < 100)
        return fmt::format("{:.1f} MHz", mhz);
    return fmt::format("{:.0f} MHz", mhz);
}

// "mean ± sd" of a figure over the rounds; the mean alone from one round; "-" from none.
std::string mean_sd(const RoundSpread& s, const char* spec) {
    if (!s.mean)
        return "-";
    std::string out = printed(spec, *s.mean);
    if (s.sd)
        out += " ± " + printed(spec, *s.sd);
    return out;
}

// Where the rounds' drain came from: "charge_counter against its full value", "capacity
// (whole percent)", or both names when rounds differ.
std::string drain_source(const std::vector<SustainedRound>& rounds) {
    std::vector<std::string> from;
    for (const auto& x : rounds)
        if (x.battery && std::find(from.begin(), from.end(), x.battery->from) == from.end())
            from.push_back(x.battery->from);
    std::string out;
    for (const auto& f : from)
        out += (out.empty() ? "" : " or ") +
               (f == "capacity" ? f + " (whole percent)" : f + " against its full value");
    return out;
}

// "0.030 % (36.00 %/h) by charge_counter against its full value; 1 % (1200.00 %/h) by the
// capacity (whole percent)": the finer first, then the capacity where the counter was used.
std::string drain_text(const BatteryDrain& b) {
    auto both = [](const std::optional<double>& pct, const std::optional<double>& per_h) {
        return f(pct, "{:.3f}") + " % (" + f(per_h, "{:.2f}") + " %/h)";
    };
    std::string out = both(b.drain_pct, b.drain_pct_per_h) + " by " +
                      (b.from == "capacity" ? std::string("the capacity (whole percent)")
                                            : b.from + " against its full value");
    if (b.from != "capacity" && b.capacity_drain_pct)
        out += "; " + both(b.capacity_drain_pct, b.capacity_drain_pct_per_h) +
               " by the capacity (whole percent)";
    return out;
}

// The round-by-round table of the sustained-load study: one request end to end per round, its
// power, energy and temperatures, and the mean ± sd of each over the rounds. Columns that no
// round has (NPU temperature, per-component rails, a battery) are left out; the rest show "-".
// A document from before the rounds recorded their request (no round has an E2E) has no table.
void write_request_table(const SustainedPhase& p, std::ostream& out) {
    if (std::none_of(p.rounds.begin(), p.rounds.end(),
                     [](const SustainedRound& x) { return x.e2e_s.has_value(); }))
        return;
    bool npu_temp = false, rail[3] = {false, false, false}, battery = false, drain = false;
    for (const auto& x : p.rounds) {
        npu_temp |= x.temp_npu_c.has_value();
        rail[0] |= x.power_cpu_w.has_value();
        rail[1] |= x.power_gpu_w.has_value();
        rail[2] |= x.power_npu_w.has_value();
        battery |= x.battery_capacity_start_pct || x.battery_capacity_end_pct;
        drain |= x.battery.has_value();
    }
    out << "| round | E2E s | tokens (prompt + generated) | combined t/s | decode t/s | power W "
           "| energy J | J/token | CPU °C | GPU °C |"
        << (npu_temp ? " NPU °C |" : "") << (rail[0] ? " CPU W |" : "")
        << (rail[1] ? " GPU W |" : "") << (rail[2] ? " NPU W |" : "")
        << (battery ? " battery % |" : "") << (drain ? " drain %/h |" : "")
        << "\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        << "| ---: | ---: | ---: |" << (npu_temp ? " ---: |" : "") << (rail[0] ? " ---: |" : "")
        << (rail[1] ? " ---: |" : "") << (rail[2] ? " ---: |" : "") << (battery ? " --- |" : "")
        << (drain ? " ---: |" : "") << "\n";
    for (const auto& x : p.rounds) {
        const std::string tokens =
            x.prompt_tokens || x.generated_tokens
                ? (x.prompt_tokens ? std::to_string(*x.prompt_tokens) : "-") + " + " +
                      (x.generated_tokens ? std::to_string(*x.generated_tokens) : "-")
                : "-";
        out << "| " << x.round << (x.status != Status::ok ? " (" + to_string(x.status) + ")" : "")
            << " | " << f(x.e2e_s, "{:.3f}") << " | " << tokens << " | " << f(x.combined_tps)
            << " | " << f(x.decode_tps) << " | " << f(x.power_w, "{:.3f}") << " | "
            << f(x.energy_j, "{:.3f}") << " | " << f(x.j_per_token, "{:.4f}") << " | "
            << f(x.temp_cpu_c, "{:.1f}") << " | " << f(x.temp_gpu_c, "{:.1f}") << " |";
        if (npu_temp)
            out << " " << f(x.temp_npu_c, "{:.1f}") << " |";
        if (rail[0])
            out << " " << f(x.power_cpu_w, "{:.3f}") << " |";
        if (rail[1])
            out << " " << f(x.power_gpu_w, "{:.3f}") << " |";
        if (rail[2])
            out << " " << f(x.power_npu_w, "{:.3f}") << " |";
        if (battery)
            out << " " << f(x.battery_capacity_start_pct, "{:.0f}") << " → "
                << f(x.battery_capacity_end_pct, "{:.0f}") << " |";
        if (drain)
            out << " " << f(x.battery ? x.battery->drain_pct_per_h : std::nullopt, "{:.2f}")
                << " |";
        out << "\n";
    }
    const AcrossRounds& a = p.across;
    out << "| mean ± sd (" << a.e2e_s.n << " ok) | " << mean_sd(a.e2e_s, "{:.3f}") << " | | "
        << mean_sd(a.combined_tps, "{:.2f}") << " | "
        << (a.decode_tps.mean
                ? fmt::format("{:.2f}", *a.decode_tps.mean) +
                      (a.decode_tps.stddev ? fmt::format(" ± {:.2f}", *a.decode_tps.stddev)
                                           : std::string())
                : std::string("-"))
        << " | " << mean_sd(a.power_w, "{:.3f}") << " | " << mean_sd(a.energy_j, "{:.3f}") << " | "
        << mean_sd(a.j_per_token, "{:.4f}") << " | " << mean_sd(a.temp_cpu_c, "{:.1f}") << " | "
        << mean_sd(a.temp_gpu_c, "{:.1f}") << " |";
    if (npu_temp)
        out << " " << mean_sd(a.temp_npu_c, "{:.1f}") << " |";
    if (rail[0])
        out << " " << mean_sd(a.power_cpu_w, "{:.3f}") << " |";
    if (rail[1])
        out << " " << mean_sd(a.power_gpu_w, "{:.3f}") << " |";
    if (rail[2])
        out << " " << mean_sd(a.power_npu_w, "{:.3f}") << " |";
    if (battery)
        out << " "
            << (a.battery_drain_capacity_pct
                    ? fmt::format("{:.0f} drained", *a.battery_drain_capacity_pct)
                    : std::string("-"))
            << " |";
    if (drain)
        out << " " << mean_sd(a.battery_drain_pct_per_h, "{:.2f}") << " |";
    out << "\n\n";
    out << "E2E: the round's request from its first prompt token to its last generated token; "
           "combined t/s: (prompt + generated tokens) / E2E; power and energy: the whole-system "
           "meter over the request, gross; J/token: that energy per generated token; °C: the "
           "hottest sensor of each kind, its mean over the request.\n";
    if (a.battery_drain_capacity_pct || a.battery_drain_energy_pct) {
        out << "battery drain:";
        if (a.battery_drain_capacity_pct)
            out << " " << fmt::format("{:.0f} %", *a.battery_drain_capacity_pct)
                << " from the capacity (whole percent) at the first round's start to the last "
                   "round's end";
        if (a.battery_drain_capacity_pct && a.battery_drain_energy_pct)
            out << ";";
        if (a.battery_drain_energy_pct)
            out << " " << fmt::format("{:.3f} %", *a.battery_drain_energy_pct)
                << " of a full charge by the battery's energy over the requests (charge_full × "
                   "voltage)";
        out << "\n";
    }
    if (drain)
        out << "drain %/h: the battery's drain over the round's request per hour, by "
            << drain_source(p.rounds) << "\n";
    if (const auto& b = a.battery)
        out << "battery drain over the phase (first round's start to last round's end, "
            << fmt::format("{:.1f}", b->span_s) << " s): " << drain_text(*b) << "\n";
    out << "\n";
}

}  // namespace

void write_sustained_markdown(const SustainedResult& r, std::ostream& out) {
    for (const auto& p : r.phases) {
        out << "## " << p.name << (p.background.empty() ? "" : " (background " + p.background + ")")
            << "\n\n";
        write_request_table(p, out);
        // A GPU clock column where a round sampled one (devfreq, DRM, NVML: component_of).
        bool gpu_clock = false;
        for (const auto& x : p.rounds)
            gpu_clock |= gpu_freq_mean_khz(x).has_value();
        out << "| round | TTFT ms | prefill t/s | decode t/s | decode s | ITL p50 ms | ITL p99 ms "
               "| "
               "decode J/token | net J/token | temp start/end/max C | CPU MHz mean |"
            << (gpu_clock ? " GPU MHz mean |" : "") << " cool-down s |\n"
            << "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
            << (gpu_clock ? " ---: |" : "") << " ---: |\n";
        for (const auto& x : p.rounds) {
            if (x.status != Status::ok && !x.decode_tps) {
                out << "| " << x.round << " | " << to_string(x.status) << ": "
                    << x.error.value_or("") << " | | | | | | | | | | |" << (gpu_clock ? " |" : "")
                    << "\n";
                continue;
            }
            out << "| " << x.round << " | " << f(x.ttft_ms) << " | " << f(x.prefill_tps) << " | "
                << f(x.decode_tps) << " | " << f(x.decode_s, "{:.3f}") << " | "
                << f(x.itl_p50_ms, "{:.3f}") << " | " << f(x.itl_p99_ms, "{:.3f}") << " | "
                << f(x.decode_j_per_token, "{:.4f}") << " | "
                << f(x.decode_net_j_per_token, "{:.4f}") << " | " << f(x.temp_start_c, "{:.1f}")
                << " / " << f(x.temp_end_c, "{:.1f}") << " / " << f(x.temp_max_c, "{:.1f}") << " | "
                << (x.cpu_freq_mean_khz ? fmt::format("{:.0f}", *x.cpu_freq_mean_khz / 1000)
                                        : std::string("-"))
                << " | ";
            if (gpu_clock) {
                const auto g = gpu_freq_mean_khz(x);
                out << (g ? fmt::format("{:.0f}", *g / 1000) : std::string("-")) << " | ";
            }
            out << fmt::format("{:.1f}", x.cooldown_s) << " |\n";
        }
        const AcrossRounds& a = p.across;
        auto pct = [](const std::optional<double>& v) {
            return v ? fmt::format("{:.2f} %", *v * 100) : std::string("-");
        };
        out << "\n| across rounds | prefill t/s | decode t/s | TTFT ms |\n| --- | ---: | ---: | "
               "---: |\n"
            << "| mean | " << f(a.prefill_tps.mean) << " | " << f(a.decode_tps.mean) << " | "
            << f(a.ttft_ms.mean) << " |\n"
            << "| CV | " << pct(a.prefill_tps.cv) << " | " << pct(a.decode_tps.cv) << " | "
            << pct(a.ttft_ms.cv) << " |\n"
            << "| min | " << f(a.prefill_tps.min) << " | " << f(a.decode_tps.min) << " | "
            << f(a.ttft_ms.min) << " |\n"
            << "| max | " << f(a.prefill_tps.max) << " | " << f(a.decode_tps.max) << " | "
            << f(a.ttft_ms.max) << " |\n\n";
        // Energy as `run` reports it: gross, and net of the idle baseline beside it.
        if (a.decode_j_per_token.median || a.decode_net_j_per_token.median)
            out << "decode energy: median " << f(a.decode_j_per_token.median, "{:.4f}")
                << " J/token gross, " << f(a.decode_net_j_per_token.median, "{:.4f}")
                << " J/token net of the idle baseline\n\n";
        out << "verdict: **" << a.verdict << "**";
        // A document from before the evidence was asked for has an onset without any.
        if (a.throttle_onset_round && a.throttle_evidence.empty())
            out << " (detected from " << a.onset_basis << ")";
        else if (a.throttle_onset_round)
            out << " (change point in " << a.onset_basis
                << "; evidence: " << fmt::format("{}", fmt::join(a.throttle_evidence, "; ")) << ")";
        out << "; decode first→last " << pct(a.first_last_change) << "; steady state "
            << f(a.steady_decode_tps) << " t/s; peak/steady " << f(a.peak_to_steady, "{:.3f}");
        if (a.freq_onset_round && a.freq_onset_round != a.throttle_onset_round)
            out << "; mean CPU clock lower from round " << *a.freq_onset_round;
        out << "\n";
        if (a.load && a.verdict.find(*a.load) == std::string::npos)
            out << "load: " << *a.load << "\n";
        for (const auto& fl : a.time_at_floor)
            out << "time at frequency floor: " << fl.metric << " at " << clock_text(fl.floor_khz)
                << " for " << fmt::format("{:.1f} s ({:.0f} %)", fl.seconds, fl.fraction * 100)
                << "\n";
        // --trace-ops-rounds: where the per-op records are, and what each pass holds.
        for (const auto& x : p.rounds) {
            if (!x.ops)
                continue;
            const RoundTracedPass& pass = *x.ops;
            out << (pass.label.empty() ? "traced pass" : pass.label)
                << " (node by node, outside the round): ";
            if (pass.status != PassStatus::ok) {
                out << "failed: " << pass.error.value_or("?") << "\n";
                continue;
            }
            std::string parts;
            for (const auto& st : pass.stages)
                parts += (parts.empty() ? "" : ", ") + (st.stage.empty() ? "?" : st.stage) + " " +
                         std::to_string(st.ops.size()) + " ops";
            out << (parts.empty() ? "no ops" : parts) << " (per-op records in --out and --trace)\n";
        }
        out << "\n";
    }
    if (!r.slowdown.empty()) {
        out << "## slowdown under background load\n\n| stage | baseline / loaded (median t/s) | "
               "95 % CI | |\n| --- | ---: | --- | --- |\n";
        for (const auto& s : r.slowdown)
            out << "| " << s.stage << " | " << fmt::format("{:.3f}", s.ratio) << " | "
                << fmt::format("{:.3f} – {:.3f}", s.ci_lo, s.ci_hi) << " | "
                << (s.no_difference ? "no difference" : "") << " |\n";
        out << "\n";
    }
}

void write_sustained_warnings(const Warnings& warnings, std::ostream& out) {
    for (const auto& w : warnings)
        out << "warning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
}

}  // namespace sb
