#include "core/doc/explain_section.hpp"

#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

json to_json(const ExplainClient& c) {
    json j{{"client", c.client},
           {"ttft_ns", opt(c.ttft_ns)},
           {"tpot_ns", opt(c.tpot_ns)},
           {"prompt_tokens", opt(c.prompt_tokens)},
           {"output_tokens", opt(c.output_tokens)},
           {"error", opt(c.error)}};
    if (c.server_claim)
        j["server_claim"] = to_json(*c.server_claim);
    return j;
}

json to_json(const ExplainServerTimes& t) {
    return json{{"prompt_n", opt(t.prompt_n)},
                {"cache_n", opt(t.cache_n)},
                {"predicted_n", opt(t.predicted_n)},
                {"prompt_ns", opt(t.prompt_ns)},
                {"predicted_ns", opt(t.predicted_ns)}};
}

json to_json(const ExplainRun& r) {
    json j{{"round", r.round},
           {"sequence", r.sequence},
           {"start_ns", opt(r.start_ns)},
           {"end_ns", opt(r.end_ns)},
           {"prefill_ns", opt(r.prefill_ns)},
           {"decode_ns", opt(r.decode_ns)},
           {"prompt_tokens", opt(r.prompt_tokens)},
           {"output_tokens", opt(r.output_tokens)},
           {"server", r.server ? to_json(*r.server) : json(nullptr)},
           {"clients", array_of(r.clients)},
           {"error", opt(r.error)},
           {"notes", r.notes}};
    if (r.server_claim)
        j["server_claim"] = to_json(*r.server_claim);
    return j;
}

json to_json(const ExplainStat& s) {
    return json{{"n", s.n},
                {"median_ns", opt(s.median_ns)},
                {"ci95_lo_ns", opt(s.ci95_lo_ns)},
                {"ci95_hi_ns", opt(s.ci95_hi_ns)}};
}

json to_json(const ExplainMeasure& m) {
    return json{{"id", m.id},
                {"level", m.level},
                {"setting", opt(m.setting)},
                {"concurrency", opt(m.concurrency)},
                {"what", m.what},
                {"config", m.config},
                {"runs", array_of(m.runs)},
                {"prefill", to_json(m.prefill)},
                {"decode", to_json(m.decode)},
                {"n_failed", m.n_failed}};
}

json to_json(const ExplainSetting& s) {
    return json{{"name", s.name},
                {"label", s.label},
                {"bench", s.bench},
                {"server", opt(s.server)},
                {"source", s.source},
                {"differs", s.differs},
                {"measure", opt(s.measure)},
                {"note", s.note}};
}

json to_json(const ExplainPart& p) {
    return json{{"stage", p.stage},
                {"kind", p.kind},
                {"name", p.name},
                {"label", p.label},
                {"from", opt(p.from)},
                {"to", opt(p.to)},
                {"ns", opt(p.ns)},
                {"ci95_lo_ns", opt(p.ci95_lo_ns)},
                {"ci95_hi_ns", opt(p.ci95_hi_ns)},
                {"share", opt(p.share)},
                {"no_difference", p.no_difference},
                {"n_rounds", p.n_rounds},
                {"note", p.note}};
}

json to_json(const ExplainFinding& f) {
    return json{{"kind", f.kind}, {"stage", f.stage}, {"message", f.message}};
}

json to_json(const ExplainSection& s) {
    return json{{"model_path", s.model_path},
                {"n_prompt", s.n_prompt},
                {"n_gen", s.n_gen},
                {"n_threads", s.n_threads},
                {"rounds", s.rounds},
                {"seed", s.seed},
                {"concurrency", s.concurrency},
                {"url", opt(s.url)},
                {"server_args", s.server_args},
                {"server_kind", s.server_kind},
                {"settings_read", s.settings_read},
                {"server", s.server},
                {"chat_template", s.chat_template},
                {"sampler", s.sampler},
                {"order", s.order},
                {"measures", array_of(s.measures)},
                {"settings", array_of(s.settings)},
                {"steps", array_of(s.steps)},
                {"parts", array_of(s.parts)},
                {"findings", array_of(s.findings)},
                {"verdicts", s.verdicts},
                {"notes", s.notes},
                {"interrupted", s.interrupted}};
}

void read(const JsonIn& in, ExplainClient& c) {
    ObjectIn{in}("client", c.client)("ttft_ns", c.ttft_ns)("tpot_ns", c.tpot_ns)(
        "prompt_tokens", c.prompt_tokens)("output_tokens", c.output_tokens)("error", c.error)(
        "server_claim", c.server_claim)
        .non_negative({"client", "ttft_ns", "tpot_ns", "prompt_tokens", "output_tokens"});
}

void read(const JsonIn& in, ExplainServerTimes& t) {
    ObjectIn{in}("prompt_n", t.prompt_n)("cache_n", t.cache_n)("predicted_n", t.predicted_n)(
        "prompt_ns", t.prompt_ns)("predicted_ns", t.predicted_ns)
        .non_negative({"prompt_n", "cache_n", "predicted_n", "prompt_ns", "predicted_ns"});
}

void read(const JsonIn& in, ExplainRun& r) {
    ObjectIn{in}("round", r.round)("sequence", r.sequence)("start_ns", r.start_ns)(
        "end_ns", r.end_ns)("prefill_ns", r.prefill_ns)("decode_ns", r.decode_ns)(
        "prompt_tokens", r.prompt_tokens)("output_tokens", r.output_tokens)("server", r.server)(
        "clients", r.clients)("error", r.error)("notes", r.notes)("server_claim", r.server_claim)
        .non_negative({"round", "sequence", "start_ns", "end_ns", "prefill_ns", "decode_ns",
                       "prompt_tokens", "output_tokens"});
}

void read(const JsonIn& in, ExplainStat& s) {
    ObjectIn{in}("n", s.n)("median_ns", s.median_ns)("ci95_lo_ns", s.ci95_lo_ns)("ci95_hi_ns",
                                                                                 s.ci95_hi_ns)
        .non_negative({"n", "median_ns", "ci95_lo_ns", "ci95_hi_ns"});
}

void read(const JsonIn& in, ExplainMeasure& m) {
    ObjectIn{in}("id", m.id)("level", m.level)("setting", m.setting)("concurrency", m.concurrency)(
        "what", m.what)("config", m.config)("runs", m.runs)("prefill", m.prefill)(
        "decode", m.decode)("n_failed", m.n_failed)
        .non_negative({"concurrency", "n_failed"});
}

void read(const JsonIn& in, ExplainSetting& s) {
    ObjectIn{in}("name", s.name)("label", s.label)("bench", s.bench)("server", s.server)(
        "source", s.source)("differs", s.differs)("measure", s.measure)("note", s.note);
}

void read(const JsonIn& in, ExplainPart& p) {
    ObjectIn{in}("stage", p.stage)("kind", p.kind)("name", p.name)("label", p.label)(
        "from", p.from)("to", p.to)("ns", p.ns)("ci95_lo_ns", p.ci95_lo_ns)(
        "ci95_hi_ns", p.ci95_hi_ns)("share", p.share)("no_difference", p.no_difference)(
        "n_rounds", p.n_rounds)("note", p.note)
        .non_negative({"n_rounds"});
}

void read(const JsonIn& in, ExplainFinding& f) {
    ObjectIn{in}("kind", f.kind)("stage", f.stage)("message", f.message);
}

void read(const JsonIn& in, ExplainSection& s) {
    ObjectIn{in}("model_path", s.model_path)("n_prompt", s.n_prompt)("n_gen", s.n_gen)(
        "n_threads", s.n_threads)("rounds", s.rounds)("seed", s.seed)("concurrency", s.concurrency)(
        "url", s.url)("server_args", s.server_args)("server_kind", s.server_kind)(
        "settings_read", s.settings_read)("server", s.server)("chat_template", s.chat_template)(
        "sampler", s.sampler)("order", s.order)("measures", s.measures)("settings", s.settings)(
        "steps", s.steps)("parts", s.parts)("findings", s.findings)("verdicts", s.verdicts)(
        "notes", s.notes)("interrupted", s.interrupted)
        .non_negative({"n_prompt", "n_gen", "n_threads", "rounds", "concurrency"});
}

const ExplainMeasure* find_measure(const ExplainSection& s, const std::string& id) {
    for (const auto& m : s.measures)
        if (m.id == id)
            return &m;
    return nullptr;
}

}  // namespace sb
