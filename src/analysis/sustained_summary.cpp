#include "analysis/sustained_summary.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "analysis/change_point.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
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

// Time at the frequency floor of every sampled clock of the phase.
std::vector<FloorTime> time_at_floor(const std::vector<TelemetrySeries>& freq_series) {
    std::vector<FloorTime> out;
    // Time at the frequency floor: the policy's own minimum where the kernel reports it, else
    // the lowest frequency seen in the phase.
    std::map<std::string, double> floors;
    for (const auto& s : freq_series)
        if (ends_with(s.metric, ".min_freq_khz"))
            for (const auto& v : s.values)
                if (v)
                    floors[s.metric.substr(0, s.metric.size() - 13)] = *v;
    for (const auto& s : freq_series) {
        if (!ends_with(s.metric, ".cur_freq_khz") || s.t_ns.size() < 2)
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
    if (auto cp = detect_change_point(dec); cp && cp->relative_change < 0)
        tput_onset = dec_rounds[cp->index];
    if (auto cp = detect_change_point(freq); cp && cp->relative_change < 0)
        a.freq_onset_round = freq_rounds[cp->index];
    if (tput_onset && (!a.freq_onset_round || *tput_onset <= *a.freq_onset_round)) {
        a.throttle_onset_round = tput_onset;
        a.onset_basis = "throughput";
    } else if (a.freq_onset_round) {
        a.throttle_onset_round = a.freq_onset_round;
        a.onset_basis = "frequency";
    }
    if (!dec.empty()) {
        double sum = 0;
        int n = 0;
        for (size_t i = 0; i < dec.size(); ++i)
            if (!a.throttle_onset_round || dec_rounds[i] >= *a.throttle_onset_round) {
                sum += dec[i];
                ++n;
            }
        if (n > 0) {
            a.steady_decode_tps = sum / n;
            a.peak_to_steady = *std::max_element(dec.begin(), dec.end()) / *a.steady_decode_tps;
        }
    }
    if (a.throttle_onset_round)
        a.verdict = "throttled at round " + std::to_string(*a.throttle_onset_round);
    else if (a.first_last_change && *a.first_last_change < -0.10)
        a.verdict = "degraded";
    else if (!dec.empty())
        a.verdict = "stable";
    else
        a.verdict = "no data";

    a.time_at_floor = time_at_floor(freq_series);
    return a;
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
