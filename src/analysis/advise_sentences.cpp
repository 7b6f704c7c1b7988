#include <fmt/format.h>

#include <algorithm>

#include "analysis/advise_steps.hpp"

namespace sb {
namespace {

std::string ms(double ns) {
    return fmt::format("{:.2f} ms", ns / 1e6);
}

// The dispatch rows named one by one; the rest are in the table.
constexpr std::size_t kDispatchSentences = 5;

}  // namespace

std::string stage_sentence(const StageChoice& st) {
    const auto& cs = st.candidates;
    std::string s = fmt::format("{}: {} is the fastest at {} ({:.1f} tokens/s", st.stage,
                                cs[0].devices, st.workload, cs[0].median_tokens_per_s);
    if (const auto& r = st.ratio_to_runner_up) {
        s += fmt::format(", {:.2f}× {} with 95% CI {:.2f}–{:.2f}", r->ratio, cs[1].devices, r->lo,
                         r->hi);
        if (r->no_difference)
            s += ", so not distinguishable from it";
    } else {
        s += ", the only device set measured";
    }
    s += ")";
    if (st.most_efficient) {
        const auto& eff = cs[*st.most_efficient];
        s += fmt::format("; the most energy-efficient is {} at {:.4f} J/token", eff.devices,
                         *eff.j_per_token);
    } else {
        s += "; no energy was measured for this stage";
    }
    return s + ".";
}

std::string prediction_sentence(const LengthPrediction& p) {
    const auto& v = p.assignments;
    std::string s = fmt::format(
        "For a {}-token prompt and {} generated tokens the fastest "
        "assignment is {}: {} end to end",
        p.n_prompt, p.n_gen, assignment_name(v[0].prefill, v[0].decode), ms(v[0].e2e()));
    if (v[0].transfer_ns > 0)
        s += fmt::format(" ({} prefill + {} state transfer + {} decode)", ms(v[0].prefill_ns),
                         ms(v[0].transfer_ns), ms(v[0].decode_ns));
    if (v.size() > 1)
        s += fmt::format("; next is {} at {} ({:.2f}×)", assignment_name(v[1].prefill, v[1].decode),
                         ms(v[1].e2e()), v[1].e2e() / v[0].e2e());
    if (!v[0].extrapolated.empty()) {
        std::string parts;
        for (const auto& e : v[0].extrapolated)
            parts += (parts.empty() ? "" : "; ") + e;
        s += fmt::format(" (extrapolated, bounded by the measured rates: {})", parts);
    }
    return s + ".";
}

std::string crossover_sentence(const Crossover& c) {
    std::string s = fmt::format("With {} generated tokens:", c.n_gen);
    for (std::size_t i = 0; i < c.ranges.size(); ++i) {
        const auto& r = c.ranges[i];
        s += fmt::format("{} {} is fastest for prompts of {}", i ? ";" : "", r.best,
                         r.from_n_prompt);
        s += r.to_n_prompt ? fmt::format("–{} tokens", *r.to_n_prompt)
                           : std::string(" tokens and longer");
    }
    if (c.measured_from && c.measured_to)
        s += fmt::format(
            " (predicted from the measured model; the prompts measured span {}–{} tokens, and "
            "beyond them the times are extrapolated, bounded by the measured rates)",
            *c.measured_from, *c.measured_to);
    else
        s += " (predicted from the measured model)";
    return s + ".";
}

std::string validation_sentence(const Validation& v) {
    const HybridPointFacts& p = v.point;
    const std::string name = assignment_name(p.prefill, p.decode);
    if (!v.predicted)
        return fmt::format(
            "no prediction for the hybrid {} at pp{}+tg{}: {} alone and {} "
            "alone were not measured",
            name, p.n_prompt, p.n_gen, p.prefill, p.decode);
    return fmt::format(
        "The hybrid {} at pp{}+tg{} was predicted at {} and measured at {} "
        "({:+.1f} %).",
        name, p.n_prompt, p.n_gen, ms(v.predicted->e2e()), ms(*p.measured_ns), v.error() * 100);
}

std::string fallback_sentence(const std::string& stage, const OpFallback& f) {
    std::string s = fmt::format("{}: {} × {} asked of {} ran on {}", stage, f.count, f.op,
                                f.requested, f.backend);
    if (f.call_ns)
        s += fmt::format(", {} per stage in all", ms(*f.call_ns));
    if (f.penalty)
        s += fmt::format(", its op time there {:.2f}× that on {}", *f.penalty, f.requested);
    return s + ".";
}

std::string coverage_sentence(const std::string& stage, const CoverageGap& g) {
    std::string ran;
    for (const auto& [be, n] : g.ran)
        if (be != g.device)
            ran += (ran.empty() ? "" : ", ") + be;
    std::string s =
        fmt::format("{}: {} does not support {} ({} of {} nodes), which ran on {}", stage, g.device,
                    g.op, g.unsupported, g.count, ran.empty() ? "another backend" : ran);
    if (g.call_ns)
        s += fmt::format(", {} of calls per stage", ms(*g.call_ns));
    else if (g.op_ns)
        s += fmt::format(", {} of op time per stage", ms(*g.op_ns));
    return s + fmt::format(": implementing {} natively on {} would keep it there.", g.op, g.device);
}

std::optional<std::string> decomposition_sentence(const std::string& stage,
                                                  const std::string& devices,
                                                  const std::vector<PipelinePart>& parts) {
    std::string s = fmt::format("{}: the pipeline of {} splits into", stage, devices);
    bool first = true;
    for (const auto& part : parts) {
        if (part.share) {
            s += fmt::format("{} {} {:.0f} %", first ? "" : ",", part.name, *part.share * 100);
            first = false;
        }
    }
    if (first)
        return std::nullopt;
    return s + ".";
}

std::vector<std::string> dispatch_sentences(const std::string& stage, const std::string& source,
                                            const DispatchFit& d, double budget_ns) {
    std::vector<std::string> out;
    const auto& rows = d.above_budget;
    for (std::size_t i = 0; i < rows.size() && i < kDispatchSentences; ++i) {
        const auto& r = rows[i];
        out.push_back(
            fmt::format("{}: {} on {} spends {:.1f} µs per call outside the op (median of "
                        "{}; {} in all), above the {:.0f} µs budget: a candidate for "
                        "fusion or batched dispatch.",
                        stage, r.op, r.backend, r.median_overhead_ns / 1e3, r.count,
                        ms(r.total_overhead_ns), budget_ns / 1e3));
    }
    if (rows.size() > kDispatchSentences)
        out.push_back(
            fmt::format("{}: {} more operators above the dispatch budget are in the table.", stage,
                        rows.size() - kDispatchSentences));
    if (rows.empty() && d.n_measured > 0)
        out.push_back(
            fmt::format("{}: no operator's dispatch overhead exceeds the {:.0f} µs budget ({}).",
                        stage, budget_ns / 1e3, source));
    return out;
}

std::string sustained_sentence(const SustainedCheck& c) {
    std::string s =
        fmt::format("Under sustained load {} decodes at {:.1f} tokens/s in the steady state ({})",
                    c.devices, c.steady_decode_tps, c.verdict.empty() ? "no verdict" : c.verdict);
    if (c.best_other) {
        const auto& [other, tps] = *c.best_other;
        s += fmt::format(
            "; {} measured {:.1f} tokens/s, so {} {} the faster decode "
            "choice once throttled",
            other, tps, c.devices, c.steady_decode_tps >= tps ? "stays" : "is no longer");
    } else {
        s += "; no other device set's decode was measured to compare with";
    }
    return s + ".";
}

std::optional<std::string> costliest_fallback_sentence(const AdviseFacts& facts) {
    struct Cost {
        std::string text;
        double ns;
    };
    std::vector<Cost> costs;
    for (const auto& ops : facts.ops)
        for (const auto& st : ops.stages)
            for (const auto& f : st.fallback)
                if (auto c = fallback_cost_ns(f.row))
                    costs.push_back({fmt::format("{} {} on {} instead of {} ({} per stage)",
                                                 st.stage, f.op, f.backend, f.requested, ms(*c)),
                                     *c});
    if (costs.empty())
        return std::nullopt;
    std::stable_sort(costs.begin(), costs.end(),
                     [](const Cost& a, const Cost& b) { return a.ns > b.ns; });
    std::string s =
        "The fallbacks that cost most (time their nodes spent off the device asked for): ";
    for (std::size_t i = 0; i < costs.size() && i < 3; ++i)
        s += (i ? "; " : "") + costs[i].text;
    return s + ": implementing these natively would keep them on the device.";
}

AdviceText advice_text(const AdviseFacts& facts, const AdviseFit& fit,
                       const AdvisePredictions& pred, const AdviseOptions& opts) {
    AdviceText t;
    t.notes = facts.notes;
    auto& say = t.sentences;
    for (const auto& st : fit.stages)
        say.push_back(stage_sentence(st));
    for (const auto& p : pred.predictions)
        say.push_back(prediction_sentence(p));
    for (const auto& c : pred.crossovers)
        say.push_back(crossover_sentence(c));
    for (const auto& v : pred.validation)
        (v.predicted ? say : t.notes).push_back(validation_sentence(v));
    bool any_fallback = false, any_dispatch = false;
    for (std::size_t i = 0; i < facts.ops.size(); ++i) {
        const OpsFacts& ops = facts.ops[i];
        for (std::size_t j = 0; j < ops.stages.size(); ++j) {
            const OpsStageFacts& st = ops.stages[j];
            for (const auto& f : st.fallback)
                say.push_back(fallback_sentence(st.stage, f));
            // The op types a device asked for cannot run, costliest first (at most five).
            for (std::size_t k = 0; k < st.gaps.size() && k < 5; ++k)
                say.push_back(coverage_sentence(st.stage, st.gaps[k]));
            if (st.gaps.size() > 5)
                t.notes.push_back(
                    fmt::format("{}: {} more op types are not supported by a "
                                "device asked for (see the ops document's coverage)",
                                st.stage, st.gaps.size() - 5));
            any_fallback = any_fallback || !st.fallback.empty();
            if (auto s = decomposition_sentence(st.stage, ops.devices, st.parts))
                say.push_back(*s);
            const DispatchFit& d = fit.dispatch[i][j];
            for (auto& s : dispatch_sentences(st.stage, ops.source, d, opts.dispatch_budget_ns))
                say.push_back(std::move(s));
            any_dispatch = any_dispatch || !d.above_budget.empty();
        }
    }
    if (auto f = costliest_fallback_sentence(facts))
        say.push_back(*f);
    for (const auto& c : fit.sustained)
        say.push_back(sustained_sentence(c));
    for (const auto& f : facts.fidelity)
        for (auto& s : fidelity_sentences(f.section))
            say.push_back(std::move(s));
    if (fit.stages.empty() && !any_fallback && !any_dispatch && fit.sustained.empty() &&
        facts.fidelity.empty())
        t.notes.push_back("the documents hold no stage measurements to rank");
    return t;
}

}  // namespace sb
