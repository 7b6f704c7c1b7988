#include "analysis/mode_parts.hpp"

#include <fmt/format.h>

#include "core/stats.hpp"
#include "core/stats_difference.hpp"

namespace sb {

namespace {

std::vector<double> samples_of(const Mode& m, const std::string& stage) {
    std::vector<double> v;
    for (const auto& r : m.runs)
        if (auto it = r.stage_ns.find(stage); it != r.stage_ns.end())
            v.push_back(it->second);
    return v;
}

}  // namespace

void summarize_modes(ModesSection& s) {
    s.parts.clear();
    for (auto& m : s.modes) {
        m.times.clear();
        m.n_failed = 0;
        for (const auto& r : m.runs)
            if (r.error)
                ++m.n_failed;
        for (const auto& stage : s.stages) {
            const std::vector<double> v = samples_of(m, stage);
            ModeStageTime t;
            t.stage = stage;
            t.n = static_cast<int>(v.size());
            const MedianCi c = median_ci(v);
            t.median_ns = c.median;
            t.ci95_lo_ns = c.ci95_lo;
            t.ci95_hi_ns = c.ci95_hi;
            m.times.push_back(t);
        }
    }
    for (size_t si = 0; si < s.stages.size(); ++si) {
        const std::string& stage = s.stages[si];
        const std::optional<double> whole =
            s.modes.empty() ? std::nullopt : s.modes.back().times[si].median_ns;
        for (size_t i = 0; i < s.modes.size(); ++i) {
            const Mode& m = s.modes[i];
            ModePart p;
            p.stage = stage;
            p.name = m.name;
            const std::vector<double> a = samples_of(m, stage);
            if (i == 0) {
                p.note = "the first mode's own stage time (the base the others add to)";
                if (!a.empty()) {
                    const ModeStageTime& t = m.times[si];
                    p.ns = t.median_ns;
                    p.ci95_lo_ns = t.ci95_lo_ns;
                    p.ci95_hi_ns = t.ci95_hi_ns;
                } else {
                    p.note = fmt::format("mode '{}' has no {} time", m.name, stage);
                }
            } else {
                const Mode& prev = s.modes[i - 1];
                p.from = prev.name;
                const std::vector<double> b = samples_of(prev, stage);
                p.note = fmt::format("{} less {}", m.name, prev.name);
                if (a.empty() || b.empty()) {
                    p.note = fmt::format("mode '{}' has no {} time", a.empty() ? m.name : prev.name,
                                         stage);
                } else {
                    const DifferenceCi d = difference_of_medians(a, b);
                    p.ns = d.difference;
                    if (a.size() >= 2 && b.size() >= 2) {
                        p.ci95_lo_ns = d.lo;
                        p.ci95_hi_ns = d.hi;
                        p.no_difference = d.no_difference;
                    }
                    if (d.difference < 0)
                        p.note +=
                            "; negative: this mode ran faster than the one before it (noise, or "
                            "the modes do not add work one by one)";
                }
            }
            if (p.ns && whole && *whole > 0)
                p.share = *p.ns / *whole;
            s.parts.push_back(p);
        }
    }
}

}  // namespace sb
