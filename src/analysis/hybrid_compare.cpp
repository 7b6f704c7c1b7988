#include "analysis/hybrid_compare.hpp"

#include <map>
#include <optional>
#include <set>
#include <utility>

namespace sb {

using nlohmann::json;

namespace {

std::vector<double> as_double(const std::vector<int64_t>& v) {
    return std::vector<double>(v.begin(), v.end());
}

}  // namespace

std::string hybrid_verdict(const RatioCi& r) {
    if (r.no_difference)
        return "no difference";
    return r.ratio > 1 ? "hybrid faster" : "hybrid slower";
}

json compare_modes(const std::vector<int64_t>& hybrid_e2e,
                   const std::vector<int64_t>& prefill_alone_e2e,
                   const std::vector<int64_t>& decode_alone_e2e) {
    json out = json::object();
    if (hybrid_e2e.empty())
        return out;
    const auto h = as_double(hybrid_e2e);
    auto add = [&](const char* key, const std::vector<int64_t>& alone) {
        if (alone.empty())
            return;
        const auto a = as_double(alone);
        const RatioCi r = ratio_of_medians(a, h);
        out[key] = {{"speedup", r.ratio},
                    {"ci95_lo", r.lo},
                    {"ci95_hi", r.hi},
                    {"verdict", hybrid_verdict(r)}};
    };
    add(kPrefillAloneMode, prefill_alone_e2e);
    add(kDecodeAloneMode, decode_alone_e2e);
    return out;
}

json crossovers(const json& points) {
    // wins[(p, n)]: the hybrid is faster than both modes alone, with CIs that exclude 1.
    std::map<std::pair<int, int>, bool> wins;
    std::set<int> ps, ns;
    for (const auto& pt : points) {
        const auto& cmp = pt.value("comparison", json::object());
        if (!cmp.contains(kPrefillAloneMode) || !cmp.contains(kDecodeAloneMode))
            continue;
        const int p = pt.at("n_prompt").get<int>(), n = pt.at("n_gen").get<int>();
        wins[{p, n}] = cmp[kPrefillAloneMode]["verdict"] == "hybrid faster" &&
                       cmp[kDecodeAloneMode]["verdict"] == "hybrid faster";
        ps.insert(p);
        ns.insert(n);
    }
    // From which length on the hybrid keeps winning, along one axis with the other fixed.
    auto scan = [&](const std::set<int>& along, auto at) -> json {
        std::optional<int> from;
        for (auto it = along.rbegin(); it != along.rend(); ++it) {
            auto w = at(*it);
            if (!w)
                continue;
            if (!*w)
                break;
            from = *it;
        }
        return from ? json(*from) : json(nullptr);
    };
    json by_gen = json::array(), by_prompt = json::array();
    for (int n : ns)
        by_gen.push_back({{"n_gen", n}, {"hybrid_wins_from_n_prompt", scan(ps, [&](int p) {
                                             auto it = wins.find({p, n});
                                             return it == wins.end() ? std::optional<bool>()
                                                                     : it->second;
                                         })}});
    for (int p : ps)
        by_prompt.push_back({{"n_prompt", p}, {"hybrid_wins_from_n_gen", scan(ns, [&](int n) {
                                                   auto it = wins.find({p, n});
                                                   return it == wins.end() ? std::optional<bool>()
                                                                           : it->second;
                                               })}});
    return {{"by_n_gen", by_gen}, {"by_n_prompt", by_prompt}};
}

}  // namespace sb
