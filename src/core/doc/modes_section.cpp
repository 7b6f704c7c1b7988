#include "core/doc/modes_section.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

json to_json(const EnvSetting& e) {
    return json{{"name", e.name}, {"value", e.value}};
}

json to_json(const ModeRun& r) {
    return json{{"round", r.round},          {"sequence", r.sequence},
                {"stage_ns", r.stage_ns},    {"exit_code", opt(r.exit_code)},
                {"wall_ns", opt(r.wall_ns)}, {"error", opt(r.error)},
                {"env_seen", r.env_seen},    {"n_threads", opt(r.n_threads)}};
}

json to_json(const ModeStageTime& t) {
    return json{{"stage", t.stage},
                {"n", t.n},
                {"median_ns", opt(t.median_ns)},
                {"ci95_lo_ns", opt(t.ci95_lo_ns)},
                {"ci95_hi_ns", opt(t.ci95_hi_ns)}};
}

json to_json(const Mode& m) {
    json env = json::array(), runs = json::array(), times = json::array();
    for (const auto& e : m.env)
        env.push_back(to_json(e));
    for (const auto& r : m.runs)
        runs.push_back(to_json(r));
    for (const auto& t : m.times)
        times.push_back(to_json(t));
    return json{{"name", m.name}, {"env", env},     {"log_path", opt(m.log_path)},
                {"runs", runs},   {"times", times}, {"n_failed", m.n_failed}};
}

json to_json(const ModePart& p) {
    return json{{"stage", p.stage},
                {"name", p.name},
                {"from", opt(p.from)},
                {"ns", opt(p.ns)},
                {"ci95_lo_ns", opt(p.ci95_lo_ns)},
                {"ci95_hi_ns", opt(p.ci95_hi_ns)},
                {"share", opt(p.share)},
                {"no_difference", p.no_difference},
                {"note", p.note}};
}

json to_json(const ModesSection& s) {
    json modes = json::array(), parts = json::array();
    for (const auto& m : s.modes)
        modes.push_back(to_json(m));
    for (const auto& p : s.parts)
        parts.push_back(to_json(p));
    return json{{"source", s.source},       {"model_path", s.model_path},
                {"devices", s.devices},     {"n_prompt", s.n_prompt},
                {"n_gen", s.n_gen},         {"n_depth", s.n_depth},
                {"n_threads", s.n_threads}, {"rounds", s.rounds},
                {"stages", s.stages},       {"time_basis", s.time_basis},
                {"modes", modes},           {"parts", parts},
                {"notes", s.notes}};
}

void read(const JsonIn& in, EnvSetting& e) {
    ObjectIn{in}("name", e.name)("value", e.value);
}

void read(const JsonIn& in, ModeRun& r) {
    ObjectIn{in}("round", r.round)("sequence", r.sequence)("stage_ns", r.stage_ns)(
        "exit_code", r.exit_code)("wall_ns", r.wall_ns)("error", r.error)("env_seen", r.env_seen)(
        "n_threads", r.n_threads);
}

void read(const JsonIn& in, ModeStageTime& t) {
    ObjectIn{in}("stage", t.stage)("n", t.n)("median_ns", t.median_ns)("ci95_lo_ns", t.ci95_lo_ns)(
        "ci95_hi_ns", t.ci95_hi_ns)
        .non_negative({"n", "median_ns", "ci95_lo_ns", "ci95_hi_ns"});
}

void read(const JsonIn& in, Mode& m) {
    ObjectIn{in}("name", m.name)("env", m.env)("log_path", m.log_path)("runs", m.runs)(
        "times", m.times)("n_failed", m.n_failed);
}

void read(const JsonIn& in, ModePart& p) {
    ObjectIn{in}("stage", p.stage)("name", p.name)("from", p.from)("ns", p.ns)(
        "ci95_lo_ns", p.ci95_lo_ns)("ci95_hi_ns", p.ci95_hi_ns)("share", p.share)(
        "no_difference", p.no_difference)("note", p.note);
}

void read(const JsonIn& in, ModesSection& s) {
    ObjectIn{in}("source", s.source)("model_path", s.model_path)("devices", s.devices)(
        "n_prompt", s.n_prompt)("n_gen", s.n_gen)("n_depth", s.n_depth)("n_threads", s.n_threads)(
        "rounds", s.rounds)("stages", s.stages)("time_basis", s.time_basis)("modes", s.modes)(
        "parts", s.parts)("notes", s.notes)
        .non_negative({"n_prompt", "n_gen", "n_depth", "n_threads", "rounds"});
}

}  // namespace sb
