#include "analysis/advise.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/advise_steps.hpp"
#include "core/error.hpp"

namespace sb {
namespace {

AdviceStage stage_of(const StageChoice& st, const std::vector<AdviseSource>& sources) {
    AdviceStage a;
    a.stage = st.stage;
    a.workload = st.workload;
    for (const auto& c : st.candidates) {
        std::vector<std::string> docs;
        for (std::size_t d : c.docs)
            docs.push_back(sources.at(d).source);
        a.candidates.push_back({c.devices, c.summary.median, c.median_ci.ci95_lo,
                                c.median_ci.ci95_hi, c.summary.n, c.j_per_token, docs});
    }
    a.fastest = st.candidates[0].devices;
    if (const auto& r = st.ratio_to_runner_up)
        a.ratio_to_runner_up =
            AdviceRunnerUp{st.candidates[1].devices, r->ratio, r->lo, r->hi, !r->no_difference};
    if (st.most_efficient) {
        const auto& eff = st.candidates[*st.most_efficient];
        a.most_efficient = AdviceEfficient{eff.devices, *eff.j_per_token};
    }
    return a;
}

AdviceModel model_of(const AdviseFit& fit) {
    AdviceModel model;
    for (const auto& [d, m] : fit.models)
        model.devices[d] = {m.prefill, m.decode_per_token};
    for (const auto& f : fit.transfers)
        model.transfer.push_back(
            {f.prefill, f.decode, f.intercept_ns, f.ns_per_token, f.bytes_per_token, f.n_points});
    return model;
}

AdviceAssignment assignment_of(const Prediction& x) {
    return {x.prefill, x.decode, x.prefill_ns, x.transfer_ns, x.decode_ns, x.e2e(), x.extrapolated};
}

// The predictions, crossovers and validations of pred into out.
void add_predictions(const AdvisePredictions& pred, Advice& out) {
    for (const auto& p : pred.predictions) {
        AdvicePrediction a{p.n_prompt, p.n_gen, {}, assignment_of(p.assignments[0])};
        for (const auto& x : p.assignments)
            a.assignments.push_back(assignment_of(x));
        out.predictions.push_back(std::move(a));
    }
    for (const auto& c : pred.crossovers) {
        AdviceCrossover a{c.n_gen, {}};
        for (const auto& r : c.ranges)
            a.ranges.push_back({r.from_n_prompt, r.to_n_prompt, r.best});
        out.crossover.push_back(std::move(a));
    }
    for (const auto& v : pred.validation) {
        if (!v.predicted)
            continue;
        const HybridPointFacts& p = v.point;
        out.validation.push_back(
            {v.source, p.prefill, p.decode, p.n_prompt, p.n_gen, *p.measured_ns, v.predicted->e2e(),
             v.error(), v.own_basis ? "the hybrid run's own modes alone" : "every document"});
    }
}

// The coverage, fallback, decomposition and dispatch rows of every profiled stage into out.
void add_ops(const AdviseFacts& facts, const AdviseFit& fit, Advice& out) {
    for (std::size_t i = 0; i < facts.ops.size(); ++i) {
        const OpsFacts& ops = facts.ops[i];
        for (std::size_t j = 0; j < ops.stages.size(); ++j) {
            const OpsStageFacts& st = ops.stages[j];
            for (const auto& g : st.gaps)
                out.coverage.push_back({st.stage, g.op, g.device, ops.source, g.count,
                                        g.unsupported, g.ran, g.call_ns, g.op_ns});
            for (const auto& f : st.fallback)
                out.fallback.push_back({st.stage, ops.source, f.row});
            if (decomposition_sentence(st.stage, ops.devices, st.parts)) {
                AdviceDecomposition d{st.stage, ops.source, {}};
                for (const auto& p : st.parts)
                    d.parts.push_back({p.name, p.ns, p.share, p.note});
                out.decomposition.push_back(std::move(d));
            }
            for (const auto& r : fit.dispatch[i][j].above_budget)
                out.dispatch.push_back({st.stage, r.op, r.backend, ops.source, r.count,
                                        r.median_overhead_ns, r.total_overhead_ns});
        }
    }
}

// The fallback rows costliest first (those whose cost was not measured last, in their order).
void sort_fallback(std::vector<AdviceFallback>& v) {
    std::stable_sort(v.begin(), v.end(), [](const AdviceFallback& a, const AdviceFallback& b) {
        const auto x = fallback_cost_ns(a.row), y = fallback_cost_ns(b.row);
        return x.value_or(-1) > y.value_or(-1);
    });
}

AdviceSustained sustained_of(const SustainedCheck& c) {
    AdviceSustained a{c.source,         c.devices, c.phase, c.verdict, c.steady_decode_tps,
                      c.peak_to_steady, {},        {}};
    if (c.best_other) {
        a.still_fastest_decode = c.steady_decode_tps >= c.best_other->second;
        a.compared_with = AdviceComparedWith{c.best_other->first, c.best_other->second};
    }
    return a;
}

}  // namespace

Interpolated interpolate_bounded(const std::vector<std::pair<double, double>>& pts, double x,
                                 Scaling scaling) {
    if (pts.empty())
        throw input_error("nothing to interpolate");
    Interpolated r;
    r.from = pts.front().first;
    r.to = pts.back().first;
    r.extrapolated = x < r.from || x > r.to;
    const bool per_unit = scaling == Scaling::per_unit;
    if (pts.size() == 1) {
        const auto& [x0, y0] = pts[0];
        r.value = per_unit && x0 > 0 ? y0 * x / x0 : y0;
        return r;
    }
    size_t i = 1;
    while (i + 1 < pts.size() && x > pts[i].first)
        ++i;
    const auto& [x0, y0] = pts[i - 1];
    const auto& [x1, y1] = pts[i];
    const double line = x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    if (!r.extrapolated) {
        r.value = line;
        return r;
    }
    // Beyond the measurements: the extended segment, bounded by what was measured.
    double lo = 0, hi = 0;
    if (per_unit) {
        double min_rate = INFINITY, max_rate = -INFINITY;
        for (const auto& [px, py] : pts)
            if (px > 0) {
                min_rate = std::min(min_rate, py / px);
                max_rate = std::max(max_rate, py / px);
            }
        if (!std::isfinite(min_rate)) {  // no point above x = 0: the levels instead
            return interpolate_bounded(pts, x, Scaling::level);
        }
        if (x < r.from) {
            lo = x * min_rate;
            hi = pts.front().second;
        } else {
            lo = pts.back().second;
            hi = x * max_rate;
        }
    } else {
        lo = hi = pts.front().second;
        for (const auto& p : pts) {
            lo = std::min(lo, p.second);
            hi = std::max(hi, p.second);
        }
    }
    r.value = std::clamp(line, std::min(lo, hi), std::max(lo, hi));
    return r;
}

double interpolate(const std::vector<std::pair<double, double>>& pts, double x, Scaling scaling) {
    return interpolate_bounded(pts, x, scaling).value;
}

std::optional<double> fallback_cost_ns(const FallbackRow& row) {
    return row.call_ns ? row.call_ns : row.op_ns;
}

Advice advise(const std::vector<AdviseInput>& inputs, const AdviseOptions& opts) {
    const AdviseFacts facts = collect_facts(inputs);
    const AdviseFit fit = fit_advice(facts, opts);
    const AdvisePredictions pred = predict_advice(facts, fit, opts);
    AdviceText text = advice_text(facts, fit, pred, opts);

    Advice out;
    for (const auto& s : facts.sources)
        out.sources.push_back({s.source, s.command});
    out.conditions = used_conditions(facts);
    if (auto w = mixed_conditions_warning(out.conditions))
        out.warnings.push_back(*w);
    for (const auto& st : fit.stages)
        out.stages.push_back(stage_of(st, facts.sources));
    out.model = model_of(fit);
    add_predictions(pred, out);
    add_ops(facts, fit, out);
    sort_fallback(out.fallback);
    for (const auto& c : fit.sustained)
        out.sustained.push_back(sustained_of(c));
    out.sentences = std::move(text.sentences);
    out.notes = std::move(text.notes);
    return out;
}

}  // namespace sb
