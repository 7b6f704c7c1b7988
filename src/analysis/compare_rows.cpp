#include <algorithm>

#include <fmt/format.h>

#include "analysis/compare_steps.hpp"
#include "core/stats.hpp"

namespace sb {

namespace {

std::string pct(double fraction) {
    return fmt::format("{:.1f}%", fraction * 100);
}

// Energy: the stage's whole-system reading of every repetition (telemetry.<stage>[i].total, as
// `run` and every sustained round record it).
std::vector<double> energy_samples(const std::vector<CompareWindow>& windows,
                                   const std::string& metric) {
    std::vector<double> v;
    for (const auto& w : windows) {
        if (metric == "mean_power_mw") {
            if (w.energy_j && w.duration_ns && *w.duration_ns > 0)
                v.push_back(*w.energy_j / (*w.duration_ns * 1e-9) * 1e3);
        } else if (metric == "energy_j") {
            if (w.energy_j)
                v.push_back(*w.energy_j);
        } else if (const auto& x = metric == "j_per_token" ? w.j_per_token : w.net_j_per_token) {
            v.push_back(*x);
        }
    }
    return v;
}

bool is_fidelity_metric(const std::string& metric) {
    return metric == "kl_mean" || metric == "kl_p99" || metric == "top1_agreement";
}

// A fidelity value against the baseline's: exact (a teacher-forced distance is computed, not
// sampled), the ratio where the baseline's is positive.
CompareRatio fidelity_ratio(const CompareStage& st, const CompareRow& row, std::size_t s) {
    CompareRatio ratio;
    ratio.label = row.sides[s].label + "/" + row.sides[0].label;
    const auto& ma = row.sides[s].median;
    const auto& mb = row.sides[0].median;
    if (!ma || !mb) {
        ratio.verdict = "no data";
        return ratio;
    }
    if (*mb > 0)
        ratio.median = *ma / *mb;
    ratio.verdict = *ma == *mb                           ? "the same"
                    : (*ma > *mb) == st.higher_is_better ? st.better
                                                         : st.worse;
    return ratio;
}

CompareRatio ratio_to_baseline(const CompareStage& st, const CompareRow& row, std::size_t s,
                               const std::vector<double>& a, const std::vector<double>& b,
                               const CompareOptions& opts) {
    if (is_fidelity_metric(st.metric))
        return fidelity_ratio(st, row, s);
    CompareRatio ratio;
    ratio.label = row.sides[s].label + "/" + row.sides[0].label;
    const auto& ma = row.sides[s].median;
    const auto& mb = row.sides[0].median;
    // A ratio needs two positive medians: a net energy at or below the idle baseline has none.
    if (a.empty() || b.empty() || !mb || *mb <= 0 || !ma || *ma <= 0) {
        ratio.verdict = "no data";
    } else if (a.size() < 2 || b.size() < 2) {
        ratio.median = *ma / *mb;
        ratio.verdict = "too few samples";
    } else {
        const RatioCi ci = ratio_of_medians(a, b, opts.resamples, opts.seed);
        ratio.median = ci.ratio;
        ratio.ci_low = ci.lo;
        ratio.ci_high = ci.hi;
        ratio.verdict = ci.no_difference                     ? "no difference"
                        : (ci.lo > 1) == st.higher_is_better ? st.better
                                                             : st.worse;
    }
    return ratio;
}

}  // namespace

const std::vector<CompareStage> kCompareStages = {
    {"prefill", "tokens_per_s", true, "faster", "slower"},
    {"decode", "tokens_per_s", true, "faster", "slower"},
    {"ttft", "ttft_ms", false, "faster", "slower"},
    {"request", "e2e_s", false, "faster", "slower"},
    {"request", "combined_tps", true, "faster", "slower"}};
const std::vector<CompareStage> kCompareEnergyStages = {
    {"prefill", "energy_j", false, "less energy", "more energy"},
    {"prefill", "j_per_token", false, "less energy", "more energy"},
    {"prefill", "net_j_per_token", false, "less energy", "more energy"},
    {"prefill", "mean_power_mw", false, "lower power", "higher power"},
    {"decode", "energy_j", false, "less energy", "more energy"},
    {"decode", "j_per_token", false, "less energy", "more energy"},
    {"decode", "net_j_per_token", false, "less energy", "more energy"},
    {"decode", "mean_power_mw", false, "lower power", "higher power"}};
const std::vector<CompareStage> kCompareBatteryStages = {
    {"battery", "drain_pct", false, "less drain", "more drain"},
    {"battery", "drain_pct_per_h", false, "less drain", "more drain"}};

const std::vector<CompareStage> kCompareFidelityStages = {
    {"prefill", "kl_mean", false, "closer", "farther"},
    {"prefill", "top1_agreement", true, "agrees more", "agrees less"},
    {"decode", "kl_mean", false, "closer", "farther"},
    {"decode", "kl_p99", false, "closer", "farther"},
    {"decode", "top1_agreement", true, "agrees more", "agrees less"}};

std::vector<double> compare_samples(const CompareTest& test, const CompareStage& st) {
    const std::string stage = st.name, metric = st.metric;
    const bool prefill = stage == "prefill";
    if (is_fidelity_metric(metric)) {
        const auto& f = prefill ? test.fidelity_prefill : test.fidelity_decode;
        if (!f)
            return {};
        return {metric == "kl_mean"  ? f->kl_mean
                : metric == "kl_p99" ? f->kl_p99
                                     : f->top1_agreement};
    }
    if (metric == "drain_pct")
        return test.drain_pct;
    if (metric == "drain_pct_per_h")
        return test.drain_pct_per_h;
    if (metric == "e2e_s")
        return test.e2e_s;
    if (metric == "combined_tps")
        return test.combined_tps;
    if (metric != "tokens_per_s" && metric != "ttft_ms")
        return energy_samples(prefill ? test.prefill_windows : test.decode_windows, metric);
    if (stage != "ttft")
        return prefill ? test.prefill_tps : test.decode_tps;
    std::vector<double> v;
    for (double x : test.ttft_ns)
        v.push_back(x / 1e6);
    return v;
}

CompareValue compare_energy_meter(const CompareTest& test, const std::string& stage) {
    if (stage == "battery")
        return test.drain_from ? CompareValue(*test.drain_from) : CompareValue();
    for (const auto& w : stage == "prefill" ? test.prefill_windows : test.decode_windows)
        if (w.metric)
            return *w.metric;
    return {};
}

CompareRow compare_row(const CompareStage& st, const std::vector<std::string>& labels,
                       const std::vector<std::vector<double>>& samples,
                       const CompareOptions& opts) {
    CompareRow row;
    row.stage = st.name;
    row.metric = st.metric;
    row.higher_is_better = st.higher_is_better;
    for (std::size_t s = 0; s < labels.size(); ++s) {
        CompareSide side;
        side.label = labels[s];
        side.n = samples[s].size();
        if (!samples[s].empty()) {
            const Summary sum = summarize(samples[s]);
            side.median = sum.median;
            side.cv = sum.cv;
            // A fidelity distance is one computed value: no interval.
            if (!is_fidelity_metric(st.metric)) {
                const MedianCi ci = median_ci(samples[s], {}, kSummaryResamples, opts.seed);
                side.median_ci_low = ci.ci95_lo;
                side.median_ci_high = ci.ci95_hi;
            }
        }
        row.sides.push_back(side);
    }
    for (std::size_t s = 1; s < labels.size(); ++s)
        row.ratios.push_back(ratio_to_baseline(st, row, s, samples[s], samples[0], opts));
    return row;
}

std::vector<std::string> compare_cv_notes(const CompareRow& row, const CompareOptions& opts) {
    std::vector<std::string> notes;
    // A drain's CV (a mean near 0, signs that may differ) says nothing about the noise.
    if (row.stage == "battery")
        return notes;
    // CV compared across devices, not only within one.
    for (std::size_t s = 1; s < row.sides.size(); ++s) {
        const auto& ca = row.sides[s].cv;
        const auto& cb = row.sides[0].cv;
        if (!ca || !cb)
            continue;
        const bool a_hi = *ca > opts.cv_note_factor * *cb;
        const bool b_hi = *cb > opts.cv_note_factor * *ca;
        if ((!a_hi && !b_hi) || std::max(*ca, *cb) < opts.cv_note_floor)
            continue;
        const auto& hi = a_hi ? row.sides[s] : row.sides[0];
        const auto& lo = a_hi ? row.sides[0] : row.sides[s];
        const std::string what = row.metric == "tokens_per_s" || row.metric == "ttft_ms"
                                     ? row.stage
                                     : row.stage + " " + row.metric;
        notes.push_back(fmt::format("{} {}: {}'s CV ({}) is more than {:g}x {}'s ({})", row.test,
                                    what, hi.label, pct(*hi.cv), opts.cv_note_factor, lo.label,
                                    pct(*lo.cv)));
    }
    return notes;
}

CompareRow one_value_row(const std::string& stage, const std::string& metric, bool higher_is_better,
                         const std::vector<std::string>& labels,
                         const std::vector<std::optional<double>>& values,
                         const std::vector<std::size_t>& n, const std::string& why) {
    CompareRow row;
    row.stage = stage;
    row.metric = metric;
    row.higher_is_better = higher_is_better;
    for (std::size_t s = 0; s < labels.size(); ++s) {
        CompareSide side;
        side.label = labels[s];
        side.median = values[s];
        side.n = n[s];
        row.sides.push_back(side);
    }
    for (std::size_t s = 1; s < labels.size(); ++s) {
        CompareRatio q;
        q.label = labels[s] + "/" + labels[0];
        if (values[s] && values[0] && *values[0] > 0 && *values[s] > 0) {
            q.median = *values[s] / *values[0];
            q.verdict = "no CI: " + why;
        } else {
            q.verdict = "no data";
        }
        row.ratios.push_back(q);
    }
    return row;
}

}  // namespace sb
