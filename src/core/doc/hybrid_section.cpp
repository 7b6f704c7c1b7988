#include "core/doc/hybrid_section.hpp"

#include "core/json_util.hpp"
#include "core/stats_json.hpp"

namespace sb {

using nlohmann::json;

json to_json(const HybridMemory& m) {
    return json{{"rss_before_bytes", opt(m.rss_before_bytes)},
                {"load_order", m.load_order},
                {"rss_growth_prefill_engine_bytes", opt(m.rss_growth_prefill_engine_bytes)},
                {"rss_growth_decode_engine_bytes", opt(m.rss_growth_decode_engine_bytes)},
                {"weight_bytes_prefill_engine", opt(m.weight_bytes_prefill_engine)},
                {"weight_bytes_decode_engine", opt(m.weight_bytes_decode_engine)},
                {"note", m.note}};
}

json to_json(const HybridTransfer& t) {
    json j{{"start_ns", t.start_ns},  {"duration_ns", t.duration_ns},
           {"save_ns", t.save_ns},    {"restore_ns", t.restore_ns},
           {"bytes", t.bytes},        {"duration", to_json(t.duration)},
           {"save", to_json(t.save)}, {"restore", to_json(t.restore)}};
    if (t.bytes_per_token)
        j["bytes_per_token"] = *t.bytes_per_token;
    if (t.gbps)
        j["gbps"] = *t.gbps;
    return j;
}

json to_json(const HybridPoint& p) {
    json e2e = json::object(), comparison = json::object();
    for (const auto& [mode, s] : p.e2e)
        e2e[mode] = {{"samples_ns", s.samples_ns}, {"summary", to_json(s.summary)}};
    for (const auto& [mode, c] : p.comparison)
        comparison[mode] = {{"speedup", opt(c.speedup)},
                            {"ci95_lo", opt(c.ci95_lo)},
                            {"ci95_hi", opt(c.ci95_hi)},
                            {"verdict", c.verdict}};
    return json{{"n_prompt", p.n_prompt},          {"n_gen", p.n_gen}, {"tests", p.tests},
                {"transfer", to_json(p.transfer)}, {"e2e", e2e},       {"comparison", comparison}};
}

json to_json(const HybridCrossover& c) {
    json by_gen = json::array(), by_prompt = json::array();
    for (const auto& g : c.by_n_gen)
        by_gen.push_back(
            {{"n_gen", g.n_gen}, {"hybrid_wins_from_n_prompt", opt(g.hybrid_wins_from_n_prompt)}});
    for (const auto& p : c.by_n_prompt)
        by_prompt.push_back(
            {{"n_prompt", p.n_prompt}, {"hybrid_wins_from_n_gen", opt(p.hybrid_wins_from_n_gen)}});
    return json{{"by_n_gen", by_gen}, {"by_n_prompt", by_prompt}};
}

json to_json(const HybridSection& h) {
    json points = json::array();
    for (const auto& p : h.points)
        points.push_back(to_json(p));
    json j{{"prefill_device", h.prefill_device.str()},
           {"decode_device", h.decode_device.str()},
           {"baselines", h.baselines},
           {"memory", to_json(h.memory)},
           {"points", points}};
    if (h.crossover)
        j["crossover"] = to_json(*h.crossover);
    return j;
}

void read(const JsonIn& in, HybridMemory& m) {
    ObjectIn{in}("rss_before_bytes", m.rss_before_bytes)("load_order", m.load_order)(
        "rss_growth_prefill_engine_bytes", m.rss_growth_prefill_engine_bytes)(
        "rss_growth_decode_engine_bytes", m.rss_growth_decode_engine_bytes)(
        "weight_bytes_prefill_engine", m.weight_bytes_prefill_engine)(
        "weight_bytes_decode_engine", m.weight_bytes_decode_engine)("note", m.note);
}

void read(const JsonIn& in, HybridTransfer& t) {
    ObjectIn{in}("start_ns", t.start_ns)("duration_ns", t.duration_ns)("save_ns", t.save_ns)(
        "restore_ns", t.restore_ns)("bytes", t.bytes)("duration", t.duration)("save", t.save)(
        "restore", t.restore)("bytes_per_token", t.bytes_per_token)("gbps", t.gbps)
        .non_negative({"duration_ns", "save_ns", "restore_ns", "bytes", "duration", "save",
                       "restore", "bytes_per_token", "gbps"},
                      {"ci95_lo"});
}

void read(const JsonIn& in, HybridModeSamples& s) {
    ObjectIn{in}("samples_ns", s.samples_ns)("summary", s.summary)
        .non_negative({"samples_ns", "summary"}, {"ci95_lo"});
}

void read(const JsonIn& in, HybridSpeedup& s) {
    ObjectIn{in}("speedup", s.speedup)("ci95_lo", s.ci95_lo)("ci95_hi", s.ci95_hi)("verdict",
                                                                                   s.verdict);
}

void read(const JsonIn& in, HybridPoint& p) {
    ObjectIn{in}("n_prompt", p.n_prompt)("n_gen", p.n_gen)("tests", p.tests)(
        "transfer", p.transfer)("e2e", p.e2e)("comparison", p.comparison)
        .non_negative({"n_prompt", "n_gen"});
}

void read(const JsonIn& in, HybridCrossoverByGen& c) {
    ObjectIn{in}("n_gen", c.n_gen)("hybrid_wins_from_n_prompt", c.hybrid_wins_from_n_prompt);
}

void read(const JsonIn& in, HybridCrossoverByPrompt& c) {
    ObjectIn{in}("n_prompt", c.n_prompt)("hybrid_wins_from_n_gen", c.hybrid_wins_from_n_gen);
}

void read(const JsonIn& in, HybridCrossover& c) {
    ObjectIn{in}("by_n_gen", c.by_n_gen)("by_n_prompt", c.by_n_prompt);
}

void read(const JsonIn& in, HybridSection& h) {
    ObjectIn{in}("prefill_device", h.prefill_device)("decode_device", h.decode_device)(
        "baselines", h.baselines)("memory", h.memory)("points", h.points)("crossover", h.crossover);
}

}  // namespace sb
