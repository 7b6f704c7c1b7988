#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "analysis/advise_steps.hpp"

namespace sb {
namespace {

// Medians of the samples at the same x, sorted by x.
std::vector<std::pair<double, double>> merge_points(std::vector<std::pair<double, double>> v) {
    std::map<double, std::vector<double>> by;
    for (auto& [x, y] : v)
        by[x].push_back(y);
    std::vector<std::pair<double, double>> out;
    for (auto& [x, ys] : by)
        out.emplace_back(x, *median(ys));
    return out;
}

std::string workload_of(const AdviseSample& s, bool prefill) {
    return prefill ? "pp" + std::to_string(s.n_prompt)
                   : "tg" + std::to_string(s.n_gen) + "@d" + std::to_string(s.kv_depth);
}

// Workloads in increasing order: pp64 before pp512; tg by generated tokens, then KV depth.
std::pair<int, int> workload_order(const AdviseSample& s, bool prefill) {
    return prefill ? std::pair{s.n_prompt, 0} : std::pair{s.n_gen, s.kv_depth};
}

StageCandidate candidate_of(const std::string& label,
                            const std::vector<const AdviseSample*>& samples, bool prefill) {
    StageCandidate c;
    c.devices = label;
    c.device_set = samples.front()->devices;
    std::set<std::size_t> docs;
    std::vector<double> j;
    for (const AdviseSample* s : samples) {
        docs.insert(s->doc);
        const auto& v = prefill ? s->prefill_tps : s->decode_tps;
        c.tokens_per_s.insert(c.tokens_per_s.end(), v.begin(), v.end());
        if (auto x = prefill ? s->prefill_j_per_token : s->decode_j_per_token)
            j.push_back(*x);
    }
    c.docs.assign(docs.begin(), docs.end());
    if (!j.empty())
        c.j_per_token = median(j);
    c.median_tokens_per_s = *median(c.tokens_per_s);
    c.summary = summarize(c.tokens_per_s);
    c.median_ci = median_ci(c.tokens_per_s);
    return c;
}

std::optional<SustainedCheck> check_phase(const SustainedFacts& s, const SustainedPhaseFacts& ph,
                                          const std::vector<StageChoice>& stages) {
    if (!ph.steady_decode_tps)
        return std::nullopt;
    SustainedCheck c{s.source,          s.devices,   ph.name, ph.verdict, *ph.steady_decode_tps,
                     ph.peak_to_steady, std::nullopt};
    for (const auto& st : stages) {
        if (st.stage != "decode")
            continue;
        for (const auto& cand : st.candidates)
            if (cand.device_set != s.devices && cand.summary.median) {
                const double v = *cand.summary.median;
                if (!c.best_other || v > c.best_other->second)
                    c.best_other = {{cand.devices, v}};
            }
    }
    return c;
}

}  // namespace

void label_samples(std::vector<AdviseSample>& samples) {
    // Per device set, the qualifiers that take more than one value among its samples.
    std::map<std::string, std::array<std::set<std::string>, 4>> seen;
    auto parts = [](const AdviseSample& s) {
        return std::array<std::string, 4>{
            "model " + s.model, "-ngl " + std::to_string(s.n_gpu_layers),
            "-t " + (s.n_threads > 0 ? std::to_string(s.n_threads) : std::string("default")),
            "KV " + s.kv};
    };
    for (const auto& s : samples) {
        const auto p = parts(s);
        for (std::size_t i = 0; i < p.size(); ++i)
            seen[s.devices][i].insert(p[i]);
    }
    for (auto& s : samples) {
        const auto p = parts(s);
        std::string q;
        for (std::size_t i = 0; i < p.size(); ++i)
            if (seen[s.devices][i].size() > 1)
                q += (q.empty() ? "" : ", ") + p[i];
        s.label = q.empty() ? s.devices : s.devices + " (" + q + ")";
    }
}

std::vector<StageChoice> rank_stage(const std::vector<AdviseSample>& samples,
                                    const std::string& stage) {
    const bool pf = stage == "prefill";
    std::map<std::pair<int, int>,
             std::pair<std::string, std::map<std::string, std::vector<const AdviseSample*>>>>
        by_workload;
    for (const auto& s : samples) {
        if ((pf ? s.prefill_tps : s.decode_tps).empty())
            continue;
        auto& w = by_workload[workload_order(s, pf)];
        w.first = workload_of(s, pf);
        w.second[s.label.empty() ? s.devices : s.label].push_back(&s);
    }
    std::vector<StageChoice> out;
    for (const auto& [order, w] : by_workload) {
        StageChoice st;
        st.stage = stage;
        st.workload = w.first;
        for (const auto& [label, ss] : w.second)
            st.candidates.push_back(candidate_of(label, ss, pf));
        std::sort(st.candidates.begin(), st.candidates.end(),
                  [](const StageCandidate& x, const StageCandidate& y) {
                      return x.median_tokens_per_s > y.median_tokens_per_s;
                  });
        const auto& cs = st.candidates;
        if (cs.size() > 1)
            st.ratio_to_runner_up = ratio_of_medians(cs[0].tokens_per_s, cs[1].tokens_per_s);
        for (std::size_t i = 0; i < cs.size(); ++i)
            if (cs[i].j_per_token &&
                (!st.most_efficient || *cs[i].j_per_token < *cs[*st.most_efficient].j_per_token))
                st.most_efficient = i;
        out.push_back(std::move(st));
    }
    return out;
}

DeviceModels fit_models(const std::vector<AdviseSample>& samples, std::optional<std::size_t> doc) {
    DeviceModels models;
    std::map<std::string, std::vector<std::pair<double, double>>> pf, dc;
    for (const auto& s : samples) {
        if (doc && s.doc != *doc)
            continue;
        if (s.prefill_ns)
            pf[s.devices].emplace_back(s.n_prompt, *s.prefill_ns);
        // Decode reads a KV cache from kv_depth to kv_depth + n_gen: its middle.
        if (s.decode_ns_per_token)
            dc[s.devices].emplace_back(s.kv_depth + s.n_gen / 2.0, *s.decode_ns_per_token);
    }
    for (auto& [d, v] : pf)
        models[d].prefill = merge_points(v);
    for (auto& [d, v] : dc)
        models[d].decode_per_token = merge_points(v);
    return models;
}

Interpolated TransferFit::at_bounded(int n_prompt) const {
    const double x = n_prompt;
    const double line = intercept_ns + ns_per_token * x;
    if (points.empty())
        return {std::max(0.0, line), false, x, x};
    // The fitted line (not the points' polyline), bounded as interpolate_bounded bounds a time
    // per unit; within the measured prompts by the measured ns per token too, since a least
    // squares line need not pass through the points.
    Interpolated r = interpolate_bounded(points, x, Scaling::per_unit);
    double min_rate = INFINITY, max_rate = -INFINITY;
    for (const auto& [px, py] : points)
        if (px > 0) {
            min_rate = std::min(min_rate, py / px);
            max_rate = std::max(max_rate, py / px);
        }
    if (!std::isfinite(min_rate))
        return r;
    double lo = x * min_rate, hi = x * max_rate;
    if (x < r.from)
        hi = points.front().second;  // a fixed cost makes short prompts dearer per token
    if (x > r.to)
        lo = points.back().second;
    r.value = std::clamp(line, std::min(lo, hi), std::max(lo, hi));
    return r;
}

TransferFit fit_transfer(const std::string& a, const std::string& b,
                         const std::vector<std::pair<double, double>>& pts,
                         std::optional<double> bytes_per_token) {
    TransferFit f;
    f.prefill = a;
    f.decode = b;
    f.bytes_per_token = bytes_per_token;
    f.n_points = static_cast<int>(pts.size());
    f.points = merge_points(pts);
    std::set<double> xs;
    for (auto& p : pts)
        xs.insert(p.first);
    if (xs.size() < 2) {
        double sx = 0, sy = 0;
        for (auto& p : pts) {
            sx += p.first;
            sy += p.second;
        }
        f.ns_per_token = sx > 0 ? sy / sx : 0;
        return f;
    }
    double mx = 0, my = 0;
    for (auto& p : pts) {
        mx += p.first;
        my += p.second;
    }
    mx /= pts.size();
    my /= pts.size();
    double sxy = 0, sxx = 0;
    for (auto& p : pts) {
        sxy += (p.first - mx) * (p.second - my);
        sxx += (p.first - mx) * (p.first - mx);
    }
    f.ns_per_token = sxy / sxx;
    f.intercept_ns = my - f.ns_per_token * mx;
    return f;
}

std::vector<TransferFit> fit_transfers(const std::vector<HybridPointFacts>& points) {
    std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> pts;
    // The bytes per token of the last point that gave one.
    std::map<std::pair<std::string, std::string>, std::optional<double>> bytes;
    for (const auto& p : points) {
        if (!p.transfer_ns)
            continue;
        pts[{p.prefill, p.decode}].emplace_back(p.n_prompt, *p.transfer_ns);
        if (p.bytes_per_token)
            bytes[{p.prefill, p.decode}] = p.bytes_per_token;
    }
    std::vector<TransferFit> fits;
    for (auto& [ab, v] : pts)
        fits.push_back(fit_transfer(ab.first, ab.second, v, bytes[ab]));
    return fits;
}

DispatchFit fit_dispatch(const OpsStageFacts& stage, double budget_ns) {
    std::map<std::pair<std::string, std::string>, std::vector<double>> over;
    for (const auto& r : stage.ops)
        if (!r.no_compute && r.call_ns && r.op_ns)
            over[{r.op, r.backend}].push_back(*r.call_ns - *r.op_ns);
    DispatchFit d;
    d.n_measured = over.size();
    for (auto& [k, v] : over) {
        const double med = *median(v);
        if (med <= budget_ns)
            continue;
        double total = 0;
        for (double x : v)
            total += x;
        d.above_budget.push_back({k.first, k.second, v.size(), med, total});
    }
    std::sort(d.above_budget.begin(), d.above_budget.end(),
              [](const DispatchOverhead& x, const DispatchOverhead& y) {
                  return x.total_overhead_ns > y.total_overhead_ns;
              });
    return d;
}

AdviseFit fit_advice(const AdviseFacts& facts, const AdviseOptions& opts) {
    AdviseFit fit;
    for (const std::string stage : {"prefill", "decode"})
        for (auto& st : rank_stage(facts.samples, stage))
            fit.stages.push_back(std::move(st));
    fit.models = fit_models(facts.samples);
    fit.transfers = fit_transfers(facts.hybrid_points);
    for (const auto& ops : facts.ops) {
        std::vector<DispatchFit> per_stage;
        for (const auto& st : ops.stages)
            per_stage.push_back(fit_dispatch(st, opts.dispatch_budget_ns));
        fit.dispatch.push_back(std::move(per_stage));
    }
    for (const auto& s : facts.sustained)
        for (const auto& ph : s.phases)
            if (auto c = check_phase(s, ph, fit.stages))
                fit.sustained.push_back(std::move(*c));
    return fit;
}

}  // namespace sb
