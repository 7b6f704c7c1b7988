#include "report/sustained_report.hpp"

#include <fmt/format.h>

namespace sb {
namespace {

std::string f(const std::optional<double>& v, const char* spec = "{:.2f}") {
    return v ? fmt::format(fmt::runtime(spec), *v) : std::string("-");
}

}  // namespace

void write_sustained_markdown(const SustainedResult& r, const Warnings& warnings,
                              std::ostream& out) {
    for (const auto& p : r.phases) {
        out << "## " << p.name << (p.background.empty() ? "" : " (background " + p.background + ")")
            << "\n\n| round | TTFT ms | prefill t/s | decode t/s | ITL p50 ms | ITL p99 ms | "
               "decode J/token | net J/token | temp start/end/max C | CPU MHz mean | cool-down s "
               "|\n"
            << "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n";
        for (const auto& x : p.rounds) {
            if (x.status != Status::ok && !x.decode_tps) {
                out << "| " << x.round << " | " << to_string(x.status) << ": "
                    << x.error.value_or("") << " | | | | | | | | | |\n";
                continue;
            }
            out << "| " << x.round << " | " << f(x.ttft_ms) << " | " << f(x.prefill_tps) << " | "
                << f(x.decode_tps) << " | " << f(x.itl_p50_ms, "{:.3f}") << " | "
                << f(x.itl_p99_ms, "{:.3f}") << " | " << f(x.decode_j_per_token, "{:.4f}") << " | "
                << f(x.decode_net_j_per_token, "{:.4f}") << " | " << f(x.temp_start_c, "{:.1f}")
                << " / " << f(x.temp_end_c, "{:.1f}") << " / " << f(x.temp_max_c, "{:.1f}") << " | "
                << (x.cpu_freq_mean_khz ? fmt::format("{:.0f}", *x.cpu_freq_mean_khz / 1000)
                                        : std::string("-"))
                << " | " << fmt::format("{:.1f}", x.cooldown_s) << " |\n";
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
        if (a.throttle_onset_round)
            out << " (detected from " << a.onset_basis << ")";
        out << "; decode first→last " << pct(a.first_last_change) << "; steady state "
            << f(a.steady_decode_tps) << " t/s; peak/steady " << f(a.peak_to_steady, "{:.3f}")
            << "\n";
        for (const auto& fl : a.time_at_floor)
            out << "time at frequency floor: " << fl.metric << " at "
                << fmt::format("{:.0f}", fl.floor_khz / 1000) << " MHz for "
                << fmt::format("{:.1f} s ({:.0f} %)", fl.seconds, fl.fraction * 100) << "\n";
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
    for (const auto& w : warnings)
        out << "warning: " << w.message << (w.hint.empty() ? "" : " (" + w.hint + ")") << "\n";
}

}  // namespace sb
