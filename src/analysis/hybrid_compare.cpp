#include "analysis/hybrid_compare.hpp"

#include <map>
#include <optional>
#include <set>
#include <utility>

namespace sb {

namespace {

std::vector<double> as_double(const std::vector<int64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
}

// From which length on the hybrid keeps winning along one axis (wins_at: nullopt where the
// sweep has no point): the shortest of the run of wins that ends the axis.
template <class F>
std::optional<int> wins_from(const std::set<int>& along, F wins_at) {
    std::optional<int> from;
    for (auto it = along.rbegin(); it != along.rend(); ++it) {
        const std::optional<bool> w = wins_at(*it);
        if (!w)
            continue;
        if (!*w)
            break;
        from = *it;
    }
    return from;
}

}  // namespace

std::string hybrid_verdict(const RatioCi& r) {
    if (r.no_difference)
        return "no difference";
    return r.ratio > 1 ? "hybrid faster" : "hybrid slower";
}

std::map<std::string, HybridSpeedup> compare_modes(const std::vector<int64_t>& hybrid_e2e,
                                                   const std::vector<int64_t>& prefill_alone_e2e,
                                                   const std::vector<int64_t>& decode_alone_e2e) {
    std::map<std::string, HybridSpeedup> out;
    if (hybrid_e2e.empty())
        return out;
    const auto h = as_double(hybrid_e2e);
    auto add = [&](const char* mode, const std::vector<int64_t>& alone) {
        if (alone.empty())
            return;
        const RatioCi r = ratio_of_medians(as_double(alone), h);
        out[mode] = HybridSpeedup{r.ratio, r.lo, r.hi, hybrid_verdict(r)};
    };
    add(kPrefillAloneMode, prefill_alone_e2e);
    add(kDecodeAloneMode, decode_alone_e2e);
    return out;
}

HybridCrossover crossovers(const std::vector<HybridPoint>& points) {
    // wins[(p, n)]: the hybrid is faster than both modes alone, with CIs that exclude 1.
    std::map<std::pair<int, int>, bool> wins;
    std::set<int> ps, ns;
    for (const auto& pt : points) {
        const auto a = pt.comparison.find(kPrefillAloneMode);
        const auto b = pt.comparison.find(kDecodeAloneMode);
        if (a == pt.comparison.end() || b == pt.comparison.end())
            continue;
        wins[{pt.n_prompt, pt.n_gen}] =
            a->second.verdict == "hybrid faster" && b->second.verdict == "hybrid faster";
        ps.insert(pt.n_prompt);
        ns.insert(pt.n_gen);
    }
    auto at = [&](int p, int n) -> std::optional<bool> {
        const auto it = wins.find({p, n});
        return it == wins.end() ? std::nullopt : std::optional<bool>(it->second);
    };
    HybridCrossover c;
    for (int n : ns)
        c.by_n_gen.push_back({n, wins_from(ps, [&](int p) { return at(p, n); })});
    for (int p : ps)
        c.by_n_prompt.push_back({p, wins_from(ns, [&](int n) { return at(p, n); })});
    return c;
}

}  // namespace sb
