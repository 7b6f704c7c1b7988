#include "analysis/advise.hpp"

#include <algorithm>

#include "analysis/advise_steps.hpp"
#include "core/error.hpp"
#include "core/json_util.hpp"

namespace sb {
namespace {

using nlohmann::json;

json stage_json(const StageChoice& st) {
    json cands = json::array();
    for (const auto& c : st.candidates)
        cands.push_back({{"devices", c.devices},
                         {"median_tokens_per_s", opt(c.summary.median)},
                         {"ci95_lo", opt(c.summary.ci95_lo)},
                         {"ci95_hi", opt(c.summary.ci95_hi)},
                         {"n", c.summary.n},
                         {"j_per_token", opt(c.j_per_token)}});
    json j = {{"stage", st.stage},
              {"workload", st.workload},
              {"candidates", cands},
              {"fastest", st.candidates[0].devices}};
    if (const auto& r = st.ratio_to_runner_up)
        j["ratio_to_runner_up"] = {{"runner_up", st.candidates[1].devices},
                                   {"ratio", r->ratio},
                                   {"ci95_lo", r->lo},
                                   {"ci95_hi", r->hi},
                                   {"decisive", !r->no_difference}};
    if (st.most_efficient) {
        const auto& eff = st.candidates[*st.most_efficient];
        j["most_efficient"] = {{"devices", eff.devices}, {"j_per_token", *eff.j_per_token}};
    } else {
        j["most_efficient"] = nullptr;
    }
    return j;
}

json model_json(const AdviseFit& fit) {
    json model = {{"devices", json::object()}, {"transfer", json::array()}};
    for (auto& [d, m] : fit.models)
        model["devices"][d] = {{"prefill", m.prefill}, {"decode_per_token", m.decode_per_token}};
    for (auto& f : fit.transfers)
        model["transfer"].push_back({{"prefill_device", f.prefill},
                                     {"decode_device", f.decode},
                                     {"intercept_ns", f.intercept_ns},
                                     {"ns_per_token", f.ns_per_token},
                                     {"bytes_per_token", opt(f.bytes_per_token)},
                                     {"n_points", f.n_points}});
    return model;
}

json prediction_json(const Prediction& x) {
    return json{{"prefill", x.prefill},       {"decode", x.decode},
                {"prefill_ns", x.prefill_ns}, {"transfer_ns", x.transfer_ns},
                {"decode_ns", x.decode_ns},   {"e2e_ns", x.e2e()}};
}

// The predictions, crossovers and validations of pred into out.
void add_predictions(const AdvisePredictions& pred, json& out) {
    for (const auto& p : pred.predictions) {
        json a = json::array();
        for (auto& x : p.assignments)
            a.push_back(prediction_json(x));
        out["predictions"].push_back({{"n_prompt", p.n_prompt},
                                      {"n_gen", p.n_gen},
                                      {"assignments", a},
                                      {"best", prediction_json(p.assignments[0])}});
    }
    for (const auto& c : pred.crossovers) {
        json ranges = json::array();
        for (const auto& r : c.ranges)
            ranges.push_back({{"from_n_prompt", r.from_n_prompt},
                              {"to_n_prompt", opt(r.to_n_prompt)},
                              {"best", r.best}});
        out["crossover"].push_back({{"n_gen", c.n_gen}, {"ranges", ranges}});
    }
    for (const auto& v : pred.validation) {
        if (!v.predicted)
            continue;
        const HybridPointFacts& p = v.point;
        out["validation"].push_back(
            {{"source", v.source},
             {"prefill", p.prefill},
             {"decode", p.decode},
             {"n_prompt", p.n_prompt},
             {"n_gen", p.n_gen},
             {"measured_ns", *p.measured_ns},
             {"predicted_ns", v.predicted->e2e()},
             {"error", v.error()},
             {"basis", v.own_basis ? "the hybrid run's own modes alone" : "every document"}});
    }
}

// The fallback, decomposition and dispatch rows of every profiled stage into out.
void add_ops(const AdviseFacts& facts, const AdviseFit& fit, json& out) {
    for (std::size_t i = 0; i < facts.ops.size(); ++i) {
        const OpsFacts& ops = facts.ops[i];
        for (std::size_t j = 0; j < ops.stages.size(); ++j) {
            const OpsStageFacts& st = ops.stages[j];
            for (const auto& g : st.gaps)
                out["coverage"].push_back({{"stage", st.stage},
                                           {"op", g.op},
                                           {"device", g.device},
                                           {"count", g.count},
                                           {"unsupported", g.unsupported},
                                           {"ran", g.ran},
                                           {"call_ns", opt(g.call_ns)},
                                           {"op_ns", opt(g.op_ns)},
                                           {"source", ops.source}});
            for (const auto& f : st.fallback) {
                json row = f.row;
                row["stage"] = st.stage;
                row["source"] = ops.source;
                out["fallback"].push_back(row);
            }
            if (decomposition_sentence(st.stage, ops.devices, st.parts)) {
                json parts = json::array();
                for (const auto& p : st.parts)
                    parts.push_back({{"name", p.name},
                                     {"ns", opt(p.ns)},
                                     {"share", opt(p.share)},
                                     {"note", p.note}});
                out["decomposition"].push_back(
                    {{"stage", st.stage}, {"source", ops.source}, {"parts", parts}});
            }
            for (const auto& r : fit.dispatch[i][j].above_budget)
                out["dispatch"].push_back({{"stage", st.stage},
                                           {"op", r.op},
                                           {"backend", r.backend},
                                           {"count", r.count},
                                           {"median_overhead_ns", r.median_overhead_ns},
                                           {"total_overhead_ns", r.total_overhead_ns},
                                           {"source", ops.source}});
        }
    }
}

json sustained_json(const SustainedCheck& c) {
    json row = {{"source", c.source},
                {"devices", c.devices},
                {"phase", c.phase},
                {"verdict", c.verdict},
                {"steady_decode_tps", c.steady_decode_tps},
                {"peak_to_steady", opt(c.peak_to_steady)}};
    if (c.best_other) {
        row["still_fastest_decode"] = c.steady_decode_tps >= c.best_other->second;
        row["compared_with"] = {{"devices", c.best_other->first},
                                {"tokens_per_s", c.best_other->second}};
    } else {
        row["still_fastest_decode"] = nullptr;
    }
    return row;
}

}  // namespace

double interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
    if (pts.empty())
        throw input_error("nothing to interpolate");
    if (pts.size() == 1)
        return pts[0].first > 0 ? pts[0].second * x / pts[0].first : pts[0].second;
    size_t i = 1;
    while (i + 1 < pts.size() && x > pts[i].first)
        ++i;
    const auto& [x0, y0] = pts[i - 1];
    const auto& [x1, y1] = pts[i];
    if (x1 == x0)
        return y1;
    return std::max(0.0, y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

json advise(const std::vector<AdviseInput>& inputs, const AdviseOptions& opts) {
    const AdviseFacts facts = collect_facts(inputs);
    const AdviseFit fit = fit_advice(facts, opts);
    const AdvisePredictions pred = predict_advice(facts, fit, opts);
    const AdviceText text = advice_text(facts, fit, pred, opts);

    json out = {{"advise_schema_version", 1},  {"sources", json::array()},
                {"stages", json::array()},     {"predictions", json::array()},
                {"crossover", json::array()},  {"validation", json::array()},
                {"fallback", json::array()},   {"coverage", json::array()},
                {"dispatch", json::array()},   {"sustained", json::array()},
                {"sentences", text.sentences}, {"notes", text.notes}};
    for (const auto& s : facts.sources)
        out["sources"].push_back({{"source", s.source}, {"command", s.command}});
    for (const auto& st : fit.stages)
        out["stages"].push_back(stage_json(st));
    out["model"] = model_json(fit);
    add_predictions(pred, out);
    add_ops(facts, fit, out);
    for (const auto& c : fit.sustained)
        out["sustained"].push_back(sustained_json(c));
    return out;
}

}  // namespace sb
