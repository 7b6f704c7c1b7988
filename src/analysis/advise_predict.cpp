#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "analysis/advise_steps.hpp"

namespace sb {
namespace {

// "32–512" (one point: "32").
std::string range_text(const Interpolated& r) {
    return r.from == r.to ? fmt::format("{:g}", r.from) : fmt::format("{:g}–{:g}", r.from, r.to);
}

const TransferFit* find_transfer(const std::vector<TransferFit>& fits, const std::string& a,
                                 const std::string& b) {
    for (auto& f : fits)
        if (f.prefill == a && f.decode == b)
            return &f;
    return nullptr;
}

}  // namespace

std::string assignment_name(const std::string& a, const std::string& b) {
    return a == b ? a + " alone" : a + " → " + b;
}

std::vector<Prediction> predict_all(const DeviceModels& models,
                                    const std::vector<TransferFit>& fits, int p, int n) {
    std::vector<Prediction> v;
    for (auto& [a, ma] : models) {
        if (!ma.can_prefill())
            continue;
        for (auto& [b, mb] : models) {
            if (!mb.can_decode())
                continue;
            const TransferFit* f = a == b ? nullptr : find_transfer(fits, a, b);
            if (a != b && !f)
                continue;  // no measured transfer between them
            Prediction x{a, b};
            const Interpolated pf = interpolate_bounded(ma.prefill, p, Scaling::per_unit);
            x.prefill_ns = pf.value;
            if (pf.extrapolated)
                x.extrapolated.push_back(
                    fmt::format("prefill on {} at {} tokens, beyond the "
                                "measured prompts {}",
                                a, p, range_text(pf)));
            if (f) {
                const Interpolated tr = f->at_bounded(p);
                x.transfer_ns = tr.value;
                if (tr.extrapolated)
                    x.extrapolated.push_back(
                        fmt::format("state transfer {} at {} tokens, beyond "
                                    "the measured prompts {}",
                                    assignment_name(a, b), p, range_text(tr)));
            }
            // Decode reads a KV cache from p to p + n: the per-token time at the middle.
            const double mid = p + n / 2.0;
            const Interpolated dc = interpolate_bounded(mb.decode_per_token, mid, Scaling::level);
            x.decode_ns = dc.value * n;
            if (dc.extrapolated)
                x.extrapolated.push_back(
                    fmt::format("decode on {} at KV depth {:g}, beyond the "
                                "measured depths {}",
                                b, mid, range_text(dc)));
            v.push_back(x);
        }
    }
    std::sort(v.begin(), v.end(),
              [](const Prediction& x, const Prediction& y) { return x.e2e() < y.e2e(); });
    return v;
}

std::vector<std::pair<int, int>> prediction_lengths(const std::vector<HybridPointFacts>& points,
                                                    const AdviseOptions& opts) {
    std::vector<std::pair<int, int>> lengths;
    for (const auto& p : points)
        if (p.measured_ns)
            lengths.emplace_back(p.n_prompt, p.n_gen);
    // Asked lengths, or without a measured hybrid point, 512 / 128.
    if (opts.n_prompt || opts.n_gen || lengths.empty())
        lengths = {{opts.n_prompt.value_or(512), opts.n_gen.value_or(128)}};
    std::sort(lengths.begin(), lengths.end());
    lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
    return lengths;
}

std::vector<Crossover> find_crossovers(const AdviseFit& fit,
                                       const std::vector<std::pair<int, int>>& lengths) {
    std::vector<Crossover> out;
    if (fit.models.size() < 2)
        return out;
    int max_p = 0;
    std::optional<int> min_p;
    for (auto& [d, m] : fit.models)
        for (auto& [x, y] : m.prefill) {
            max_p = std::max(max_p, static_cast<int>(x));
            min_p = std::min(min_p.value_or(static_cast<int>(x)), static_cast<int>(x));
        }
    const int hi = std::max(16, 4 * max_p);
    std::set<int> gens;
    for (auto [p, n] : lengths)
        gens.insert(n);
    for (int n : gens) {
        auto best_at = [&](int p) {
            auto v = predict_all(fit.models, fit.transfers, p, n);
            return v.empty() ? std::string() : assignment_name(v[0].prefill, v[0].decode);
        };
        Crossover c{n, {}, min_p, min_p ? std::optional<int>(max_p) : std::nullopt};
        std::string cur;
        int from = 1;
        // A grid fine at short prompts and relatively fine (1/64) at long ones.
        for (int p = 1; p <= hi; p += std::max(1, p / 64)) {
            const std::string b = best_at(p);
            if (b != cur) {
                if (!cur.empty())
                    c.ranges.push_back({from, p - 1, cur});
                cur = b;
                from = p;
            }
        }
        c.ranges.push_back({from, std::nullopt, cur});
        out.push_back(std::move(c));
    }
    return out;
}

Validation validate(const HybridPointFacts& point, const AdviseFacts& facts, const AdviseFit& fit) {
    Validation v;
    v.point = point;
    v.source = facts.sources.at(point.doc).source;
    const std::string &a = point.prefill, &b = point.decode;
    // The parts from the hybrid run's own modes alone (measured interleaved with it) when it has
    // them, else from every document.
    const DeviceModels own = fit_models(facts.samples, point.doc);
    v.own_basis = own.count(a) && own.at(a).can_prefill() && own.count(b) && own.at(b).can_decode();
    const DeviceModels& basis = v.own_basis ? own : fit.models;
    for (auto& x : predict_all(basis, fit.transfers, point.n_prompt, point.n_gen))
        if (x.prefill == a && x.decode == b)
            v.predicted = x;
    return v;
}

AdvisePredictions predict_advice(const AdviseFacts& facts, const AdviseFit& fit,
                                 const AdviseOptions& opts) {
    AdvisePredictions out;
    out.lengths = prediction_lengths(facts.hybrid_points, opts);
    for (auto [p, n] : out.lengths) {
        auto v = predict_all(fit.models, fit.transfers, p, n);
        if (!v.empty())
            out.predictions.push_back({p, n, std::move(v)});
    }
    out.crossovers = find_crossovers(fit, out.lengths);
    for (const auto& pt : facts.hybrid_points)
        if (pt.measured_ns)
            out.validation.push_back(validate(pt, facts, fit));
    return out;
}

}  // namespace sb
