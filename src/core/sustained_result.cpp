#include "core/sustained_result.hpp"

#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

using nlohmann::json;

json to_json(const SustainedRound& r) {
    json freq = json::object();
    for (const auto& [m, f] : r.freq)
        freq[m] = {{"mean_khz", opt(f.mean_khz)}, {"min_khz", opt(f.min_khz)}};
    json j{{"round", r.round},
           {"status", r.status},
           {"error", opt(r.error)},
           {"start_ns", r.start_ns},
           {"end_ns", r.end_ns},
           {"cooldown_s", r.cooldown_s},
           {"ttft_ms", opt(r.ttft_ms)},
           {"prefill_tps", opt(r.prefill_tps)},
           {"decode_tps", opt(r.decode_tps)},
           {"itl_p50_ms", opt(r.itl_p50_ms)},
           {"itl_p99_ms", opt(r.itl_p99_ms)},
           {"prefill_energy_j", opt(r.prefill_energy_j)},
           {"decode_energy_j", opt(r.decode_energy_j)},
           {"decode_j_per_token", opt(r.decode_j_per_token)},
           {"prefill_net_energy_j", opt(r.prefill_net_energy_j)},
           {"decode_net_energy_j", opt(r.decode_net_energy_j)},
           {"decode_net_j_per_token", opt(r.decode_net_j_per_token)},
           {"temp_start_c", opt(r.temp_start_c)},
           {"temp_end_c", opt(r.temp_end_c)},
           {"temp_max_c", opt(r.temp_max_c)},
           {"freq", freq},
           {"cpu_freq_mean_khz", opt(r.cpu_freq_mean_khz)}};
    if (r.ops)
        j["ops"] = *r.ops;
    return j;
}

json to_json(const AcrossRounds& a) {
    json floors = json::array();
    for (const auto& f : a.time_at_floor)
        floors.push_back({{"metric", f.metric},
                          {"floor_khz", f.floor_khz},
                          {"seconds", f.seconds},
                          {"fraction", f.fraction}});
    return json{{"prefill_tps", to_json(a.prefill_tps)},
                {"decode_tps", to_json(a.decode_tps)},
                {"ttft_ms", to_json(a.ttft_ms)},
                {"decode_j_per_token", to_json(a.decode_j_per_token)},
                {"decode_net_j_per_token", to_json(a.decode_net_j_per_token)},
                {"first_last_change", opt(a.first_last_change)},
                {"throttle_onset_round", opt(a.throttle_onset_round)},
                {"onset_basis", a.onset_basis},
                {"steady_decode_tps", opt(a.steady_decode_tps)},
                {"peak_to_steady", opt(a.peak_to_steady)},
                {"freq_onset_round", opt(a.freq_onset_round)},
                {"time_at_floor", floors},
                {"verdict", a.verdict}};
}

json to_json(const SustainedResult& r) {
    json phases = json::array();
    for (const auto& p : r.phases) {
        json rounds = json::array();
        for (const auto& x : p.rounds)
            rounds.push_back(to_json(x));
        phases.push_back({{"name", p.name},
                          {"background", p.background},
                          {"rounds", rounds},
                          {"across", to_json(p.across)}});
    }
    json slow = json::array();
    for (const auto& s : r.slowdown)
        slow.push_back({{"stage", s.stage},
                        {"ratio", s.ratio},
                        {"ci95_lo", s.ci_lo},
                        {"ci95_hi", s.ci_hi},
                        {"no_difference", s.no_difference}});
    return json{{"config", r.config}, {"phases", phases}, {"slowdown", slow}};
}

}  // namespace sb
