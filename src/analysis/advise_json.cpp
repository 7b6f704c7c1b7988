// The advice document: to_json(Advice) and its inverse (analysis/advise.hpp).
#include "analysis/advise.hpp"
#include "core/document.hpp"
#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

bool AdviceFallback::operator==(const AdviceFallback& o) const {
    // FallbackRow (core/doc/ops_section.hpp) has no comparison of its own: its JSON is its value.
    return stage == o.stage && source == o.source && to_json(row) == to_json(o.row);
}

namespace {

json candidate_json(const AdviceCandidate& c) {
    return {{"devices", c.devices},
            {"median_tokens_per_s", opt(c.median_tokens_per_s)},
            {"ci95_lo", opt(c.ci95_lo)},
            {"ci95_hi", opt(c.ci95_hi)},
            {"n", c.n},
            {"j_per_token", opt(c.j_per_token)},
            {"documents", c.documents}};
}

json stage_json(const AdviceStage& st) {
    json cands = json::array();
    for (const auto& c : st.candidates)
        cands.push_back(candidate_json(c));
    json j = {{"stage", st.stage},
              {"workload", st.workload},
              {"candidates", cands},
              {"fastest", st.fastest},
              {"most_efficient", nullptr}};
    if (const auto& r = st.ratio_to_runner_up)
        j["ratio_to_runner_up"] = {{"runner_up", r->runner_up},
                                   {"ratio", r->ratio},
                                   {"ci95_lo", r->ci95_lo},
                                   {"ci95_hi", r->ci95_hi},
                                   {"decisive", r->decisive}};
    if (const auto& e = st.most_efficient)
        j["most_efficient"] = {{"devices", e->devices}, {"j_per_token", e->j_per_token}};
    return j;
}

json model_json(const AdviceModel& m) {
    json model = {{"devices", json::object()}, {"transfer", json::array()}};
    for (const auto& [d, dm] : m.devices)
        model["devices"][d] = {{"prefill", dm.prefill}, {"decode_per_token", dm.decode_per_token}};
    for (const auto& f : m.transfer)
        model["transfer"].push_back({{"prefill_device", f.prefill_device},
                                     {"decode_device", f.decode_device},
                                     {"intercept_ns", f.intercept_ns},
                                     {"ns_per_token", f.ns_per_token},
                                     {"bytes_per_token", opt(f.bytes_per_token)},
                                     {"n_points", f.n_points}});
    return model;
}

json assignment_json(const AdviceAssignment& x) {
    return {{"prefill", x.prefill},          {"decode", x.decode},
            {"prefill_ns", x.prefill_ns},    {"transfer_ns", x.transfer_ns},
            {"decode_ns", x.decode_ns},      {"e2e_ns", x.e2e_ns},
            {"extrapolated", x.extrapolated}};
}

json conditions_json(const AdviceConditions& c) {
    return {{"source", c.source}, {"host", c.host},       {"governor", c.governor},
            {"load", c.load},     {"threads", c.threads}, {"llama", c.llama}};
}

json prediction_json(const AdvicePrediction& p) {
    json a = json::array();
    for (const auto& x : p.assignments)
        a.push_back(assignment_json(x));
    return {{"n_prompt", p.n_prompt},
            {"n_gen", p.n_gen},
            {"assignments", a},
            {"best", assignment_json(p.best)}};
}

json crossover_json(const AdviceCrossover& c) {
    json ranges = json::array();
    for (const auto& r : c.ranges)
        ranges.push_back({{"from_n_prompt", r.from_n_prompt},
                          {"to_n_prompt", opt(r.to_n_prompt)},
                          {"best", r.best}});
    return {{"n_gen", c.n_gen}, {"ranges", ranges}};
}

json validation_json(const AdviceValidation& v) {
    return {{"source", v.source},
            {"prefill", v.prefill},
            {"decode", v.decode},
            {"n_prompt", v.n_prompt},
            {"n_gen", v.n_gen},
            {"measured_ns", v.measured_ns},
            {"predicted_ns", v.predicted_ns},
            {"error", v.error},
            {"basis", v.basis}};
}

json fallback_json(const AdviceFallback& f) {
    json row = to_json(f.row);
    row["stage"] = f.stage;
    row["source"] = f.source;
    return row;
}

json coverage_json(const AdviceCoverage& g) {
    return {{"stage", g.stage},
            {"op", g.op},
            {"device", g.device},
            {"count", g.count},
            {"unsupported", g.unsupported},
            {"ran", g.ran},
            {"call_ns", opt(g.call_ns)},
            {"op_ns", opt(g.op_ns)},
            {"source", g.source}};
}

json dispatch_json(const AdviceDispatch& r) {
    return {{"stage", r.stage},
            {"op", r.op},
            {"backend", r.backend},
            {"count", r.count},
            {"median_overhead_ns", r.median_overhead_ns},
            {"total_overhead_ns", r.total_overhead_ns},
            {"source", r.source}};
}

json decomposition_json(const AdviceDecomposition& d) {
    json parts = json::array();
    for (const auto& p : d.parts)
        parts.push_back(
            {{"name", p.name}, {"ns", opt(p.ns)}, {"share", opt(p.share)}, {"note", p.note}});
    return {{"stage", d.stage}, {"source", d.source}, {"parts", parts}};
}

json sustained_json(const AdviceSustained& c) {
    json row = {{"source", c.source},
                {"devices", c.devices},
                {"phase", c.phase},
                {"verdict", c.verdict},
                {"steady_decode_tps", c.steady_decode_tps},
                {"peak_to_steady", opt(c.peak_to_steady)},
                {"still_fastest_decode", opt(c.still_fastest_decode)}};
    if (c.compared_with)
        row["compared_with"] = {{"devices", c.compared_with->devices},
                                {"tokens_per_s", c.compared_with->tokens_per_s}};
    return row;
}

template <class T, class F>
json array_of(const std::vector<T>& v, F f) {
    json a = json::array();
    for (const auto& x : v)
        a.push_back(f(x));
    return a;
}

}  // namespace

json to_json(const Advice& a) {
    json out = {{"advise_schema_version", kAdviseSchemaVersion},
                {"sources", array_of(a.sources,
                                     [](const AdviceSource& s) {
                                         return json{{"source", s.source}, {"command", s.command}};
                                     })},
                {"conditions", array_of(a.conditions, conditions_json)},
                {"warnings", array_of(a.warnings, [](const Warning& w) { return to_json(w); })},
                {"stages", array_of(a.stages, stage_json)},
                {"model", model_json(a.model)},
                {"predictions", array_of(a.predictions, prediction_json)},
                {"crossover", array_of(a.crossover, crossover_json)},
                {"validation", array_of(a.validation, validation_json)},
                {"fallback", array_of(a.fallback, fallback_json)},
                {"coverage", array_of(a.coverage, coverage_json)},
                {"dispatch", array_of(a.dispatch, dispatch_json)},
                {"sustained", array_of(a.sustained, sustained_json)},
                {"sentences", a.sentences},
                {"notes", a.notes}};
    // Written only when a document had a decomposition (the advice's first shape).
    if (!a.decomposition.empty())
        out["decomposition"] = array_of(a.decomposition, decomposition_json);
    return out;
}

// ---- reading ----

void read(const JsonIn& in, std::pair<double, double>& p) {
    if (!in.raw().is_array() || in.raw().size() != 2)
        in.fail_type("a pair [x, y]");
    read(in.element(0), p.first);
    read(in.element(1), p.second);
}

void read(const JsonIn& in, AdviceSource& s) {
    ObjectIn{in}("source", s.source)("command", s.command);
}

void read(const JsonIn& in, AdviceCandidate& c) {
    ObjectIn{in}("devices", c.devices)("median_tokens_per_s", c.median_tokens_per_s)(
        "ci95_lo", c.ci95_lo)("ci95_hi", c.ci95_hi)("n", c.n)("j_per_token", c.j_per_token)(
        "documents", c.documents);  // absent in documents from before it was written
}

void read(const JsonIn& in, AdviceRunnerUp& r) {
    ObjectIn{in}("runner_up", r.runner_up)("ratio", r.ratio)("ci95_lo", r.ci95_lo)(
        "ci95_hi", r.ci95_hi)("decisive", r.decisive);
}

void read(const JsonIn& in, AdviceEfficient& e) {
    ObjectIn{in}("devices", e.devices)("j_per_token", e.j_per_token);
}

void read(const JsonIn& in, AdviceStage& st) {
    ObjectIn{in}("stage", st.stage)("workload", st.workload)("candidates", st.candidates)(
        "fastest", st.fastest)("ratio_to_runner_up", st.ratio_to_runner_up)("most_efficient",
                                                                            st.most_efficient);
}

void read(const JsonIn& in, AdviceDeviceModel& m) {
    ObjectIn{in}("prefill", m.prefill)("decode_per_token", m.decode_per_token);
}

void read(const JsonIn& in, AdviceTransfer& f) {
    ObjectIn{in}("prefill_device", f.prefill_device)("decode_device", f.decode_device)(
        "intercept_ns", f.intercept_ns)("ns_per_token", f.ns_per_token)(
        "bytes_per_token", f.bytes_per_token)("n_points", f.n_points);
}

void read(const JsonIn& in, AdviceModel& m) {
    ObjectIn{in}("devices", m.devices)("transfer", m.transfer);
}

void read(const JsonIn& in, AdviceAssignment& x) {
    ObjectIn{in}("prefill", x.prefill)("decode", x.decode)("prefill_ns", x.prefill_ns)(
        "transfer_ns", x.transfer_ns)("decode_ns", x.decode_ns)("e2e_ns", x.e2e_ns)("extrapolated",
                                                                                    x.extrapolated);
}

void read(const JsonIn& in, AdviceConditions& c) {
    ObjectIn{in}("source", c.source)("host", c.host)("governor", c.governor)("load", c.load)(
        "threads", c.threads)("llama", c.llama);
}

void read(const JsonIn& in, AdvicePrediction& p) {
    ObjectIn{in}("n_prompt", p.n_prompt)("n_gen", p.n_gen)("assignments", p.assignments)("best",
                                                                                         p.best);
}

void read(const JsonIn& in, AdviceCrossoverRange& r) {
    ObjectIn{in}("from_n_prompt", r.from_n_prompt)("to_n_prompt", r.to_n_prompt)("best", r.best);
}

void read(const JsonIn& in, AdviceCrossover& c) {
    ObjectIn{in}("n_gen", c.n_gen)("ranges", c.ranges);
}

void read(const JsonIn& in, AdviceValidation& v) {
    ObjectIn{in}("source", v.source)("prefill", v.prefill)("decode", v.decode)(
        "n_prompt", v.n_prompt)("n_gen", v.n_gen)("measured_ns", v.measured_ns)(
        "predicted_ns", v.predicted_ns)("error", v.error)("basis", v.basis);
}

void read(const JsonIn& in, AdviceFallback& f) {
    // The row's own members, and the two the advice adds to it.
    ObjectIn{in}("stage", f.stage)("source", f.source);
    read(in, f.row);
}

void read(const JsonIn& in, AdviceCoverage& g) {
    ObjectIn{in}("stage", g.stage)("op", g.op)("device", g.device)("count", g.count)(
        "unsupported", g.unsupported)("ran", g.ran)("call_ns", g.call_ns)("op_ns", g.op_ns)(
        "source", g.source);
}

void read(const JsonIn& in, AdviceDispatch& r) {
    ObjectIn{in}("stage", r.stage)("op", r.op)("backend", r.backend)("count", r.count)(
        "median_overhead_ns", r.median_overhead_ns)("total_overhead_ns", r.total_overhead_ns)(
        "source", r.source);
}

void read(const JsonIn& in, AdvicePart& p) {
    ObjectIn{in}("name", p.name)("ns", p.ns)("share", p.share)("note", p.note);
}

void read(const JsonIn& in, AdviceDecomposition& d) {
    ObjectIn{in}("stage", d.stage)("source", d.source)("parts", d.parts);
}

void read(const JsonIn& in, AdviceComparedWith& c) {
    ObjectIn{in}("devices", c.devices)("tokens_per_s", c.tokens_per_s);
}

void read(const JsonIn& in, AdviceSustained& c) {
    ObjectIn{in}("source", c.source)("devices", c.devices)("phase", c.phase)("verdict", c.verdict)(
        "steady_decode_tps", c.steady_decode_tps)("peak_to_steady", c.peak_to_steady)(
        "still_fastest_decode", c.still_fastest_decode)("compared_with", c.compared_with);
}

void read(const JsonIn& in, Advice& a) {
    ObjectIn o(in);
    if (!o.has("advise_schema_version"))
        in.fail("no advise_schema_version: not an advice document");
    check_version_field(in, "advise_schema_version");
    o.check<int64_t>("advise_schema_version");
    o("sources", a.sources)("conditions", a.conditions)("warnings", a.warnings)("stages", a.stages)(
        "model", a.model)("predictions", a.predictions)("crossover", a.crossover)(
        "validation", a.validation)("fallback", a.fallback)("coverage", a.coverage)(
        "dispatch", a.dispatch)("decomposition", a.decomposition)("sustained", a.sustained)(
        "sentences", a.sentences)("notes", a.notes);
}

}  // namespace sb
