#include "analysis/explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace sb {

namespace {

const char* const kStages[] = {"prefill", "decode"};

std::optional<double> stage_value(const ExplainRun& r, const std::string& stage) {
    return stage == "prefill" ? r.prefill_ns : r.decode_ns;
}

// The measure's value per round (index = round), for one stage.
std::vector<std::optional<double>> by_round(const ExplainMeasure& m, const std::string& stage) {
    std::vector<std::optional<double>> v;
    for (const auto& r : m.runs) {
        if (r.round < 0)
            continue;
        if (static_cast<std::size_t>(r.round) >= v.size())
            v.resize(static_cast<std::size_t>(r.round) + 1);
        if (!r.error)
            if (auto x = stage_value(r, stage))
                v[static_cast<std::size_t>(r.round)] = x;
    }
    return v;
}

std::string signed_ms(double ns) {
    return (ns >= 0 ? "+" : "") + format_ms(ns);
}

std::string ci_text(const std::optional<double>& lo, const std::optional<double>& hi) {
    if (!lo || !hi)
        return "no CI";
    return fmt::format("95 % CI [{}, {}]", format_ms(*lo), format_ms(*hi));
}

std::string percent(double share) {
    const double p = std::round(share * 100);
    return fmt::format("{:.0f} %", p == 0 ? 0.0 : p);  // never "-0 %"
}

struct Term {
    const ExplainMeasure* m;
    double coef;
};

ExplainPart make_part(const std::string& stage, const std::vector<Term>& terms,
                      std::size_t resamples, std::uint64_t seed) {
    std::vector<std::vector<std::optional<double>>> x;
    std::vector<double> coef;
    for (const auto& t : terms) {
        x.push_back(by_round(*t.m, stage));
        coef.push_back(t.coef);
    }
    const PairedSum p = paired_sum_of_medians(x, coef, resamples, seed);
    ExplainPart part;
    part.stage = stage;
    part.ns = p.value;
    part.ci95_lo_ns = p.ci95_lo;
    part.ci95_hi_ns = p.ci95_hi;
    part.no_difference = p.no_difference;
    part.n_rounds = p.n_rounds;
    return part;
}

bool has_time(const ExplainMeasure* m, const std::string& stage) {
    if (!m)
        return false;
    for (const auto& r : m->runs)
        if (!r.error && stage_value(r, stage))
            return true;
    return false;
}

std::string level_words(const ExplainMeasure& m) {
    if (m.level == "served" && m.concurrency)
        return fmt::format("served ({} clients)", *m.concurrency);
    return m.level;
}

}  // namespace

std::string format_ms(double ns) {
    const double ms = ns / 1e6;
    const double a = std::fabs(ms);
    if (a >= 100)
        return fmt::format("{:.0f} ms", ms);
    if (a >= 10)
        return fmt::format("{:.1f} ms", ms);
    if (a >= 1)
        return fmt::format("{:.2f} ms", ms);
    return fmt::format("{:.3f} ms", ms);
}

PairedSum paired_sum_of_medians(const std::vector<std::vector<std::optional<double>>>& x,
                                const std::vector<double>& coef, std::size_t resamples,
                                std::uint64_t seed) {
    if (x.size() != coef.size())
        throw usage_error("paired_sum_of_medians: one coefficient per measure");
    if (resamples == 0)
        throw usage_error("paired_sum_of_medians: resamples must be at least 1");
    PairedSum out;
    if (x.empty())
        return out;
    std::size_t n_rounds = 0;
    for (const auto& v : x)
        n_rounds = std::max(n_rounds, v.size());
    std::vector<std::size_t> rounds;
    for (std::size_t k = 0; k < n_rounds; ++k) {
        bool all = true;
        for (const auto& v : x)
            all = all && k < v.size() && v[k].has_value();
        if (all)
            rounds.push_back(k);
    }
    out.n_rounds = static_cast<int>(rounds.size());
    if (rounds.empty())
        return out;
    std::vector<std::vector<double>> vals(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t k : rounds) {
            if (!std::isfinite(*x[i][k]))
                throw runtime_error("paired_sum_of_medians: a sample is not finite");
            vals[i].push_back(*x[i][k]);
        }
    double value = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        value += coef[i] * *median(vals[i]);
    out.value = value;
    if (rounds.size() < 2)
        return out;
    // Whole rounds resampled, the same draw for every measure: what the round shared (the
    // machine's state at that time) stays paired. mt19937_64 is specified by the standard, and
    // the modulo draw is ours, so the interval is the same on every platform.
    std::mt19937_64 rng(seed);
    const std::size_t n = rounds.size();
    std::vector<double> stats;
    stats.reserve(resamples);
    std::vector<std::size_t> idx(n);
    std::vector<double> tmp(n);
    for (std::size_t b = 0; b < resamples; ++b) {
        for (auto& j : idx)
            j = static_cast<std::size_t>(rng() % n);
        double s = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            for (std::size_t k = 0; k < n; ++k)
                tmp[k] = vals[i][idx[k]];
            s += coef[i] * *median(tmp);
        }
        stats.push_back(s);
    }
    out.ci95_lo = percentile(stats, 0.025);
    out.ci95_hi = percentile(stats, 0.975);
    out.no_difference = *out.ci95_lo <= 0 && *out.ci95_hi >= 0;
    return out;
}

namespace {

// Each measure's failed runs and per-stage median with its CI.
void summarize_measures(ExplainSection& s) {
    for (auto& m : s.measures) {
        m.n_failed = 0;
        for (const auto& r : m.runs)
            if (r.error)
                ++m.n_failed;
        for (const char* stage : kStages) {
            std::vector<double> v;
            for (const auto& x : by_round(m, stage))
                if (x)
                    v.push_back(*x);
            const MedianCi c = median_ci(v);
            ExplainStat& st = std::string(stage) == "prefill" ? m.prefill : m.decode;
            st.n = static_cast<int>(v.size());
            st.median_ns = c.median;
            st.ci95_lo_ns = c.ci95_lo;
            st.ci95_hi_ns = c.ci95_hi;
        }
    }
}

// Clears what summarize_explain derives (the settings' findings are kept: they come from the
// run, not from the measures).
void clear_derived(ExplainSection& s) {
    s.steps.clear();
    s.parts.clear();
    s.verdicts.clear();
    std::vector<ExplainFinding> kept;
    for (auto& f : s.findings)
        if (f.kind == "settings")
            kept.push_back(f);
    s.findings = kept;
    std::erase_if(s.notes,
                  [](const std::string& n) { return n.rfind("server timings: ", 0) == 0; });
}

// A finding per measure with failed runs, naming the first error.
void add_failure_findings(ExplainSection& s) {
    for (const auto& m : s.measures)
        if (m.n_failed > 0) {
            std::string first;
            for (const auto& r : m.runs)
                if (r.error) {
                    first = *r.error;
                    break;
                }
            s.findings.push_back(
                {"failed", "",
                 fmt::format("{} ({}): {} of {} run(s) failed (first: {}); the other levels "
                             "stand",
                             m.id, level_words(m), m.n_failed, m.runs.size(), first)});
        }
}

// The levels the gap is explained with; null where not measured.
struct Levels {
    const ExplainMeasure* ops;
    const ExplainMeasure* graph;
    const ExplainMeasure* gen;
    const ExplainMeasure* server;
    const ExplainMeasure* all;  // graph+all: every setting at once
};

// The steps from level to level, in the levels' order, and from one client to many.
void add_steps(ExplainSection& s, const std::string& stage, const Levels& l, std::size_t resamples,
               std::uint64_t seed) {
    const ExplainMeasure* ops = l.ops;
    const ExplainMeasure* graph = l.graph;
    const ExplainMeasure* gen = l.gen;
    const ExplainMeasure* server = l.server;
    std::vector<const ExplainMeasure*> chain;
    for (const ExplainMeasure* m : {ops, graph, gen, server})
        if (m)
            chain.push_back(m);
    for (std::size_t i = 1; i < chain.size(); ++i) {
        ExplainPart p = make_part(stage, {{chain[i], 1}, {chain[i - 1], -1}}, resamples, seed);
        p.kind = "step";
        p.name = chain[i]->id + "-" + chain[i - 1]->id;
        p.label = fmt::format("{} less {}", level_words(*chain[i]), level_words(*chain[i - 1]));
        p.from = chain[i - 1]->id;
        p.to = chain[i]->id;
        s.steps.push_back(p);
    }
    if (server)
        for (const auto& m : s.measures)
            if (m.level == "served") {
                ExplainPart p = make_part(stage, {{&m, 1}, {server, -1}}, resamples, seed);
                p.kind = "step";
                p.name = m.id + "-server";
                p.label = fmt::format("{} less server (1 client)", level_words(m));
                p.from = server->id;
                p.to = m.id;
                s.steps.push_back(p);
            }
}

// The order of the levels: each adds work, so a level above the next one beyond the noise
// says that something is not measured alike.
void add_order_findings(ExplainSection& s, const std::string& stage, const Levels& l,
                        std::size_t resamples, std::uint64_t seed) {
    const ExplainMeasure* ops = l.ops;
    const ExplainMeasure* graph = l.graph;
    const ExplainMeasure* gen = l.gen;
    for (auto [lower, upper] : {std::pair{ops, graph}, std::pair{graph, gen}}) {
        if (!lower || !upper)
            continue;
        const ExplainPart d = make_part(stage, {{lower, 1}, {upper, -1}}, resamples, seed);
        const ExplainStat& ls = stage == "prefill" ? lower->prefill : lower->decode;
        const ExplainStat& us = stage == "prefill" ? upper->prefill : upper->decode;
        if (d.ns && d.ci95_lo_ns && *d.ci95_lo_ns > 0)
            s.findings.push_back(
                {"order", stage,
                 fmt::format(
                     "{}: {} ({}) is above {} ({}) beyond the noise (by {}, {}): the levels "
                     "should only add work; {}",
                     stage, lower->level, format_ms(ls.median_ns.value_or(0)), upper->level,
                     format_ms(us.median_ns.value_or(0)), format_ms(*d.ns),
                     ci_text(d.ci95_lo_ns, d.ci95_hi_ns),
                     lower->level == "ops"
                         ? "the replayed op times exceed the stage (each op replayed back "
                           "to back, its data in cache, may run slower or faster than in "
                           "the graph; on a busy machine stalls land in either)"
                         : "the in-process loop ran faster than the bare stage (noise the "
                           "rounds did not cancel, or a different context)")});
    }
}

// The gap's parts (the settings, their interaction, the application, the remainder), each
// with its share of the gap, appended to s.parts; returns them for the verdict.
std::vector<ExplainPart> add_gap_parts(ExplainSection& s, const std::string& stage, const Levels& l,
                                       const ExplainPart& gap, std::size_t resamples,
                                       std::uint64_t seed) {
    const ExplainMeasure* graph = l.graph;
    const ExplainMeasure* gen = l.gen;
    const ExplainMeasure* server = l.server;
    const ExplainMeasure* all = l.all;
    std::vector<ExplainPart> parts;
    std::vector<Term> rest{{server, 1}, {graph, -1}};  // the remainder's terms
    std::vector<const ExplainMeasure*> singles;
    for (const auto& set : s.settings) {
        if (!set.measure)
            continue;
        const ExplainMeasure* m = find_measure(s, *set.measure);
        if (!has_time(m, stage)) {
            s.notes.push_back(
                fmt::format("{}: the setting {} has no {} time at level 2: its part falls into the "
                            "remainder",
                            stage, set.name, stage));
            continue;
        }
        ExplainPart p = make_part(stage, {{m, 1}, {graph, -1}}, resamples, seed);
        p.kind = "setting";
        p.name = set.name;
        p.label = fmt::format("{}: {} on the server against {}", set.label,
                              set.server.value_or("?"), set.bench);
        p.from = graph->id;
        p.to = m->id;
        parts.push_back(p);
        singles.push_back(m);
    }
    if (singles.size() >= 2 && has_time(all, stage)) {
        std::vector<Term> t{{all, 1}, {graph, static_cast<double>(singles.size()) - 1}};
        for (auto* m : singles)
            t.push_back({m, -1});
        ExplainPart p = make_part(stage, t, resamples, seed);
        p.kind = "interaction";
        p.name = "interaction";
        p.label = "the settings together beyond the sum of each alone";
        p.to = all->id;
        parts.push_back(p);
        // remainder = server - graph - (all - graph) - application
        rest = {{server, 1}, {all, -1}};
    } else {
        for (auto* m : singles) {
            rest.push_back({m, -1});
            rest.push_back({graph, 1});
        }
    }
    if (has_time(gen, stage)) {
        ExplainPart p = make_part(stage, {{gen, 1}, {graph, -1}}, resamples, seed);
        p.kind = "application";
        p.name = "application";
        p.label =
            "the application's work: chat template, tokenizing, sampling, detokenizing "
            "(generation - graph)";
        p.from = graph->id;
        p.to = gen->id;
        parts.push_back(p);
        rest.push_back({gen, -1});
        rest.push_back({graph, 1});
    } else {
        s.notes.push_back(fmt::format(
            "{}: the generation level has no time: the application's work falls into the "
            "remainder",
            stage));
    }
    // Merge equal measures of the remainder's terms (graph appears with several signs).
    std::map<const ExplainMeasure*, double> merged;
    std::vector<const ExplainMeasure*> order;
    for (const auto& t : rest) {
        if (!merged.count(t.m))
            order.push_back(t.m);
        merged[t.m] += t.coef;
    }
    std::vector<Term> terms;
    for (auto* m : order)
        if (merged[m] != 0)
            terms.push_back({m, merged[m]});
    ExplainPart rem = make_part(stage, terms, resamples, seed);
    rem.kind = "remainder";
    rem.name = "remainder";
    rem.label =
        "the server's own overhead: HTTP, JSON, SSE, the task queue (and what no measured "
        "setting explains)";
    rem.from = graph->id;
    rem.to = server->id;
    if (rem.ci95_hi_ns && *rem.ci95_hi_ns < 0)
        s.findings.push_back(
            {"overshoot", stage,
             fmt::format("{}: the measured parts add up to more than the gap (remainder {}, "
                         "{}): the settings may act differently together on the server, or "
                         "it runs them faster than the bench",
                         stage, format_ms(*rem.ns), ci_text(rem.ci95_lo_ns, rem.ci95_hi_ns))});
    parts.push_back(rem);
    for (auto& p : parts) {
        // No share of a gap whose interval holds zero: -92 % and +147 % of a gap that may be
        // nothing are no split of it.
        if (p.ns && gap.ns && *gap.ns != 0 && !gap.no_difference)
            p.share = *p.ns / *gap.ns;
        s.parts.push_back(p);
    }
    return parts;
}

// The verdict: the largest part in the gap's direction.
void add_verdict(ExplainSection& s, const std::string& stage, const Levels& l,
                 const ExplainPart& gap, const std::vector<ExplainPart>& parts) {
    const ExplainMeasure* graph = l.graph;
    const ExplainMeasure* server = l.server;
    const double g = gap.ns.value_or(0);
    const ExplainStat& gs = stage == "prefill" ? graph->prefill : graph->decode;
    const ExplainStat& ss = stage == "prefill" ? server->prefill : server->decode;
    if (gap.no_difference || !gap.ns) {
        s.verdicts.push_back(fmt::format(
            "{}: the server ({}) is as fast as the bench ({}) within the noise (gap {}, {})", stage,
            format_ms(ss.median_ns.value_or(0)), format_ms(gs.median_ns.value_or(0)), signed_ms(g),
            ci_text(gap.ci95_lo_ns, gap.ci95_hi_ns)));
        return;
    }
    std::vector<const ExplainPart*> ranked;
    for (const auto& p : parts)
        if (p.ns && (g > 0 ? *p.ns > 0 : *p.ns < 0))
            ranked.push_back(&p);
    std::sort(ranked.begin(), ranked.end(), [](const ExplainPart* a, const ExplainPart* b) {
        return std::fabs(*a->ns) > std::fabs(*b->ns);
    });
    std::string v = fmt::format(
        "{}: the server is {} {} than the bench ({} against {}, {})", stage,
        format_ms(std::fabs(g)), g > 0 ? "slower" : "faster", format_ms(ss.median_ns.value_or(0)),
        format_ms(gs.median_ns.value_or(0)), ci_text(gap.ci95_lo_ns, gap.ci95_hi_ns));
    if (!ranked.empty()) {
        v += fmt::format("; {} of the gap is {}", percent(*ranked[0]->share), ranked[0]->label);
        if (ranked.size() > 1)
            v += fmt::format("; {} {}", percent(*ranked[1]->share), ranked[1]->label);
    }
    s.verdicts.push_back(v);
}

// The server's own timings (a claim): how much of each request it did not spend computing.
void add_server_timing_notes(ExplainSection& s, const ExplainMeasure* server) {
    if (!server)
        return;
    std::vector<double> pre, dec;
    for (const auto& r : server->runs) {
        if (r.error || !r.server)
            continue;
        if (r.prefill_ns && r.server->prompt_ns)
            pre.push_back(*r.prefill_ns - *r.server->prompt_ns);
        if (r.decode_ns && r.server->predicted_ns && r.server->predicted_n &&
            *r.server->predicted_n > 1)
            dec.push_back(*r.decode_ns - *r.server->predicted_ns /
                                             static_cast<double>(*r.server->predicted_n - 1));
    }
    auto note = [&](const char* stage, const std::vector<double>& v, const char* what) {
        if (v.empty())
            return;
        const MedianCi c = median_ci(v);
        s.notes.push_back(fmt::format(
            "server timings: {}: the client's time less the server's own ({}): {} ({}), "
            "what the server's timings leave out: HTTP, JSON, SSE, the queue, tokenizing",
            stage, what, format_ms(*c.median), ci_text(c.ci95_lo, c.ci95_hi)));
    };
    note("prefill", pre, "TTFT less prompt_ms");
    note("decode", dec, "TPOT less predicted_ms / (predicted_n - 1)");
}

}  // namespace

void summarize_explain(ExplainSection& s, std::size_t resamples, std::uint64_t seed) {
    summarize_measures(s);
    clear_derived(s);
    const Levels l{find_measure(s, "ops"), find_measure(s, "graph"), find_measure(s, "generation"),
                   find_measure(s, "server"), find_measure(s, "graph+all")};
    const ExplainMeasure* graph = l.graph;
    const ExplainMeasure* server = l.server;
    add_failure_findings(s);
    for (const std::string stage : kStages) {
        add_steps(s, stage, l, resamples, seed);
        add_order_findings(s, stage, l, resamples, seed);
        // The gap and its parts.
        if (!graph || !server || !has_time(graph, stage) || !has_time(server, stage)) {
            s.verdicts.push_back(fmt::format(
                "{}: no gap between the bench and the server could be measured (the {} level "
                "has no time)",
                stage, !graph || !has_time(graph, stage) ? "graph" : "server"));
            continue;
        }
        ExplainPart gap = make_part(stage, {{server, 1}, {graph, -1}}, resamples, seed);
        gap.kind = "gap";
        gap.name = "gap";
        gap.label = "the server less the bench (server - graph)";
        gap.from = graph->id;
        gap.to = server->id;
        s.parts.push_back(gap);

        const std::vector<ExplainPart> parts = add_gap_parts(s, stage, l, gap, resamples, seed);
        add_verdict(s, stage, l, gap, parts);
    }
    add_server_timing_notes(s, server);
}

}  // namespace sb
