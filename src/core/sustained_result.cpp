#include "core/sustained_result.hpp"

#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

using nlohmann::json;

json to_json(const RoundSpread& s) {
    return json{{"n", s.n},        {"mean", opt(s.mean)}, {"sd", opt(s.sd)},
                {"cv", opt(s.cv)}, {"min", opt(s.min)},   {"max", opt(s.max)}};
}

json to_json(const SustainedConfig& c) {
    return json{{"model", c.model},
                {"devices", c.devices},
                {"threads", c.threads},
                {"rounds", c.rounds},
                {"prompt_tokens", c.prompt_tokens},
                {"max_tokens", c.max_tokens},
                {"chunk", opt(c.chunk)},
                {"cooldown", c.cooldown},
                {"background", opt(c.background)},
                {"seed", c.seed},
                {"trace_ops_rounds", c.trace_ops_rounds}};
}

json to_json(const RoundTracedPass& p) {
    json stages = json::array();
    for (const auto& s : p.stages)
        stages.push_back(to_json(s));
    return json{{"label", p.label},       {"start_ns", p.start_ns},
                {"end_ns", p.end_ns},     {"status", to_string(p.status)},
                {"error", opt(p.error)},  {"devices", p.devices},
                {"backends", p.backends}, {"n_threads", p.n_threads},
                {"method", p.method},     {"stages", stages}};
}

json to_json(const SustainedRound& r) {
    json freq = json::object();
    for (const auto& [m, f] : r.freq)
        freq[m] = {{"mean_khz", opt(f.mean_khz)}, {"min_khz", opt(f.min_khz)}};
    json j{{"round", r.round},
           {"status", to_string(r.status)},
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
           {"cpu_freq_mean_khz", opt(r.cpu_freq_mean_khz)},
           {"e2e_s", opt(r.e2e_s)},
           {"prompt_tokens", opt(r.prompt_tokens)},
           {"generated_tokens", opt(r.generated_tokens)},
           {"combined_tps", opt(r.combined_tps)},
           {"energy_j", opt(r.energy_j)},
           {"power_w", opt(r.power_w)},
           {"j_per_token", opt(r.j_per_token)},
           {"power_cpu_w", opt(r.power_cpu_w)},
           {"power_gpu_w", opt(r.power_gpu_w)},
           {"power_npu_w", opt(r.power_npu_w)},
           {"temp_cpu_c", opt(r.temp_cpu_c)},
           {"temp_gpu_c", opt(r.temp_gpu_c)},
           {"temp_npu_c", opt(r.temp_npu_c)},
           {"battery_capacity_start_pct", opt(r.battery_capacity_start_pct)},
           {"battery_capacity_end_pct", opt(r.battery_capacity_end_pct)},
           {"battery_drain_pct", opt(r.battery_drain_pct)}};
    if (r.ops)
        j["ops"] = to_json(*r.ops);
    // Written where measured: documents from before it keep their exact form.
    if (r.decode_s)
        j["decode_s"] = *r.decode_s;
    if (r.battery)
        j["battery"] = to_json(*r.battery);
    return j;
}

json to_json(const AcrossRounds& a) {
    json floors = json::array();
    for (const auto& f : a.time_at_floor)
        floors.push_back({{"metric", f.metric},
                          {"floor_khz", f.floor_khz},
                          {"seconds", f.seconds},
                          {"fraction", f.fraction}});
    json j{{"prefill_tps", to_json(a.prefill_tps)},
           {"decode_tps", to_json(a.decode_tps)},
           {"ttft_ms", to_json(a.ttft_ms)},
           {"decode_j_per_token", to_json(a.decode_j_per_token)},
           {"decode_net_j_per_token", to_json(a.decode_net_j_per_token)},
           {"e2e_s", to_json(a.e2e_s)},
           {"combined_tps", to_json(a.combined_tps)},
           {"energy_j", to_json(a.energy_j)},
           {"power_w", to_json(a.power_w)},
           {"j_per_token", to_json(a.j_per_token)},
           {"power_cpu_w", to_json(a.power_cpu_w)},
           {"power_gpu_w", to_json(a.power_gpu_w)},
           {"power_npu_w", to_json(a.power_npu_w)},
           {"temp_cpu_c", to_json(a.temp_cpu_c)},
           {"temp_gpu_c", to_json(a.temp_gpu_c)},
           {"temp_npu_c", to_json(a.temp_npu_c)},
           {"battery_drain_capacity_pct", opt(a.battery_drain_capacity_pct)},
           {"battery_drain_energy_pct", opt(a.battery_drain_energy_pct)},
           {"first_last_change", opt(a.first_last_change)},
           {"throttle_onset_round", opt(a.throttle_onset_round)},
           {"drop_round", opt(a.drop_round)},
           {"onset_basis", a.onset_basis},
           {"throttle_evidence", a.throttle_evidence},
           {"load", opt(a.load)},
           {"steady_decode_tps", opt(a.steady_decode_tps)},
           {"peak_to_steady", opt(a.peak_to_steady)},
           {"freq_onset_round", opt(a.freq_onset_round)},
           {"time_at_floor", floors},
           {"verdict", a.verdict}};
    if (a.battery)  // written where measured: documents from before keep their form
        j["battery"] = to_json(*a.battery);
    if (a.battery_drain_pct_per_h.n > 0)
        j["battery_drain_pct_per_h"] = to_json(a.battery_drain_pct_per_h);
    return j;
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
    return json{{"config", to_json(r.config)}, {"phases", phases}, {"slowdown", slow}};
}

void read(const JsonIn& in, RoundSpread& s) {
    ObjectIn{in}("n", s.n)("mean", s.mean)("sd", s.sd)("cv", s.cv)("min", s.min)("max", s.max);
}

void read(const JsonIn& in, SustainedConfig& c) {
    ObjectIn{in}("model", c.model)("devices", c.devices)("threads", c.threads)("rounds", c.rounds)(
        "prompt_tokens", c.prompt_tokens)("max_tokens", c.max_tokens)("chunk", c.chunk)(
        "cooldown", c.cooldown)("background", c.background)("seed", c.seed)("trace_ops_rounds",
                                                                            c.trace_ops_rounds)
        .non_negative({"threads", "rounds", "prompt_tokens", "max_tokens", "chunk"});
}

void read(const JsonIn& in, RoundTracedPass& p) {
    ObjectIn{in}("label", p.label)("start_ns", p.start_ns)("end_ns", p.end_ns)("status", p.status)(
        "error", p.error)("devices", p.devices)("backends", p.backends)("n_threads", p.n_threads)(
        "method", p.method)("stages", p.stages);
}

void read(const JsonIn& in, FreqStat& f) {
    ObjectIn{in}("mean_khz", f.mean_khz)("min_khz", f.min_khz);
}

void read(const JsonIn& in, SustainedRound& r) {
    ObjectIn{in}("round", r.round)("status", r.status)("error", r.error)("start_ns", r.start_ns)(
        "end_ns", r.end_ns)("cooldown_s", r.cooldown_s)("ttft_ms", r.ttft_ms)(
        "prefill_tps", r.prefill_tps)("decode_tps", r.decode_tps)("decode_s", r.decode_s)(
        "itl_p50_ms", r.itl_p50_ms)("itl_p99_ms", r.itl_p99_ms)(
        "prefill_energy_j", r.prefill_energy_j)("decode_energy_j", r.decode_energy_j)(
        "decode_j_per_token", r.decode_j_per_token)("prefill_net_energy_j", r.prefill_net_energy_j)(
        "decode_net_energy_j", r.decode_net_energy_j)(
        "decode_net_j_per_token", r.decode_net_j_per_token)("temp_start_c", r.temp_start_c)(
        "temp_end_c", r.temp_end_c)("temp_max_c", r.temp_max_c)("freq", r.freq)(
        "cpu_freq_mean_khz", r.cpu_freq_mean_khz)("ops", r.ops)("e2e_s", r.e2e_s)(
        "prompt_tokens", r.prompt_tokens)("generated_tokens", r.generated_tokens)(
        "combined_tps", r.combined_tps)("energy_j", r.energy_j)("power_w", r.power_w)(
        "j_per_token", r.j_per_token)("power_cpu_w", r.power_cpu_w)("power_gpu_w", r.power_gpu_w)(
        "power_npu_w", r.power_npu_w)("temp_cpu_c", r.temp_cpu_c)("temp_gpu_c", r.temp_gpu_c)(
        "temp_npu_c", r.temp_npu_c)("battery_capacity_start_pct", r.battery_capacity_start_pct)(
        "battery_capacity_end_pct", r.battery_capacity_end_pct)(
        "battery_drain_pct", r.battery_drain_pct)("battery", r.battery)
        // A battery that charged over a round drains a negative amount; temperatures may be
        // below 0.
        .non_negative({"cooldown_s",
                       "ttft_ms",
                       "prefill_tps",
                       "decode_tps",
                       "decode_s",
                       "itl_p50_ms",
                       "itl_p99_ms",
                       "prefill_energy_j",
                       "decode_energy_j",
                       "decode_j_per_token",
                       "cpu_freq_mean_khz",
                       "e2e_s",
                       "prompt_tokens",
                       "generated_tokens",
                       "combined_tps",
                       "energy_j",
                       "power_w",
                       "j_per_token",
                       "power_cpu_w",
                       "power_gpu_w",
                       "power_npu_w",
                       "battery_capacity_start_pct",
                       "battery_capacity_end_pct"});
}

void read(const JsonIn& in, FloorTime& f) {
    ObjectIn{in}("metric", f.metric)("floor_khz", f.floor_khz)("seconds", f.seconds)("fraction",
                                                                                     f.fraction);
}

void read(const JsonIn& in, AcrossRounds& a) {
    ObjectIn{in}("prefill_tps", a.prefill_tps)("decode_tps", a.decode_tps)("ttft_ms", a.ttft_ms)(
        "decode_j_per_token", a.decode_j_per_token)("decode_net_j_per_token",
                                                    a.decode_net_j_per_token)(
        "first_last_change", a.first_last_change)("throttle_onset_round", a.throttle_onset_round)(
        "onset_basis", a.onset_basis)("steady_decode_tps", a.steady_decode_tps)(
        "peak_to_steady", a.peak_to_steady)("freq_onset_round", a.freq_onset_round)(
        "time_at_floor", a.time_at_floor)("verdict", a.verdict)("e2e_s", a.e2e_s)(
        "combined_tps", a.combined_tps)("energy_j", a.energy_j)("power_w", a.power_w)(
        "j_per_token", a.j_per_token)("power_cpu_w", a.power_cpu_w)("power_gpu_w", a.power_gpu_w)(
        "power_npu_w", a.power_npu_w)("temp_cpu_c", a.temp_cpu_c)("temp_gpu_c", a.temp_gpu_c)(
        "temp_npu_c", a.temp_npu_c)("battery_drain_capacity_pct", a.battery_drain_capacity_pct)(
        "battery_drain_energy_pct", a.battery_drain_energy_pct)("battery", a.battery)(
        "battery_drain_pct_per_h", a.battery_drain_pct_per_h)("drop_round", a.drop_round)(
        "throttle_evidence", a.throttle_evidence)("load", a.load)
        .non_negative(
            {"prefill_tps", "decode_tps", "ttft_ms", "steady_decode_tps", "e2e_s", "combined_tps",
             "energy_j", "power_w", "j_per_token", "power_cpu_w", "power_gpu_w", "power_npu_w"},
            {"ci95_lo"});
}

void read(const JsonIn& in, SustainedPhase& p) {
    ObjectIn{in}("name", p.name)("background", p.background)("rounds", p.rounds)("across",
                                                                                 p.across);
}

void read(const JsonIn& in, Slowdown& s) {
    ObjectIn{in}("stage", s.stage)("ratio", s.ratio)("ci95_lo", s.ci_lo)("ci95_hi", s.ci_hi)(
        "no_difference", s.no_difference);
}

void read(const JsonIn& in, SustainedResult& r) {
    ObjectIn{in}("config", r.config)("phases", r.phases)("slowdown", r.slowdown);
}

}  // namespace sb
