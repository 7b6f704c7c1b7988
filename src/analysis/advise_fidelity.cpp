// The advisor's sentences from a fidelity section: each variant's speed against the reference
// variant's, and what it costs in fidelity (analysis/advise_steps.hpp fidelity_sentences).
#include <fmt/format.h>

#include <cmath>

#include "analysis/advise_steps.hpp"
#include "core/stats.hpp"

namespace sb {
namespace {

// "3e-7", "0.0041", "0": two significant digits, the exponent without its padding zero.
std::string small(double x) {
    if (x == 0)
        return "0";
    std::string s = fmt::format("{:.2g}", x);
    const auto e = s.find("e-0");
    if (e != std::string::npos)
        s.erase(e + 2, 1);
    const auto p = s.find("e+0");
    if (p != std::string::npos)
        s.erase(p + 2, 1);
    return s;
}

// What tells a from b: the model file, the device set, the KV cache types (in that order);
// the device set when nothing does.
std::string name_against(const FidelityVariant& a, const FidelityVariant& b) {
    std::string s;
    if (a.model_name != b.model_name)
        s = a.model_name;
    if (a.devices != b.devices)
        s += (s.empty() ? "" : " on ") + a.devices;
    if (a.type_k != b.type_k || a.type_v != b.type_v)
        s += (s.empty() ? "KV " : " with KV ") + to_string(a.type_k) + "/" + to_string(a.type_v);
    return s.empty() ? a.devices : s;
}

// +1 faster, -1 slower, 0 no difference; ratio: v / ref of the medians. With two repetitions
// or more on each side, the bootstrap 95% CI of the ratio of medians must exclude 1.
int speed_verdict(const std::vector<double>& v, const std::vector<double>& ref,
                  const std::optional<double>& v_med, const std::optional<double>& ref_med,
                  double& ratio) {
    if (!v_med || !ref_med || *ref_med <= 0)
        return 0;
    ratio = *v_med / *ref_med;
    if (v.size() >= 2 && ref.size() >= 2) {
        const RatioCi ci = ratio_of_medians(v, ref);
        ratio = ci.ratio;
        return ci.lo > 1 ? 1 : ci.hi < 1 ? -1 : 0;
    }
    return ratio > 1 ? 1 : ratio < 1 ? -1 : 0;
}

std::string times(double x) {
    return fmt::format("{:.3g}\u00d7", x);
}

std::string variant_sentence(const FidelityVariant& v, const FidelityVariant& ref,
                             const FidelitySection& s) {
    double pr = 0, dr = 0;
    const int p =
        speed_verdict(v.prefill_tps_reps, ref.prefill_tps_reps, v.prefill_tps, ref.prefill_tps, pr);
    const int d =
        speed_verdict(v.decode_tps_reps, ref.decode_tps_reps, v.decode_tps, ref.decode_tps, dr);
    std::vector<std::string> faster, slower;
    if (p > 0)
        faster.push_back(times(pr) + " faster in prefill");
    if (d > 0)
        faster.push_back((faster.empty() ? times(dr) + " faster" : times(dr)) + " in decode");
    if (p < 0)
        slower.push_back(times(1 / pr) + " slower in prefill");
    if (d < 0)
        slower.push_back((slower.empty() ? times(1 / dr) + " slower" : times(1 / dr)) +
                         " in decode");
    auto join = [](const std::vector<std::string>& parts) {
        return parts.size() == 2 ? parts[0] + " and " + parts[1] : parts[0];
    };
    std::string speed;
    if (!faster.empty() && !slower.empty())
        speed = join(faster) + " but " + join(slower);
    else if (!faster.empty())
        speed = join(faster);
    else if (!slower.empty())
        speed = join(slower);
    else
        speed = "no faster or slower in either stage";
    const std::string name = name_against(v, ref), ref_name = name_against(ref, v);
    // The decode stage's distance (the frontier's), the prefill's without decode positions.
    const StageFidelity& f = s.n_gen > 0 && v.decode.positions > 0 ? v.decode : v.prefill;
    std::string cost;
    if (f.kl_max == 0 && f.max_abs == 0) {
        cost = "computes exactly the same logits as " + ref_name;
    } else if (f.top1_agreement < 1) {
        const long flipped = std::lround((1 - f.top1_agreement) * f.positions);
        cost = fmt::format("flips {:.3g} % of top-1 tokens against {} ({} of {} positions, KL {})",
                           100 * (1 - f.top1_agreement), ref_name, flipped, f.positions,
                           small(f.kl_mean));
    } else {
        cost = "its KL to " + ref_name + " is " + small(f.kl_mean);
    }
    // "but" where the speed comes at a cost in top-1 tokens; a semicolon after a speed phrase
    // that has its own "and".
    const bool but = !faster.empty() && slower.empty() && f.top1_agreement < 1;
    const char* link = speed.find(" and ") != std::string::npos ? "; " : but ? " but " : " and ";
    return name + " is " + speed + link + cost + ".";
}

}  // namespace

std::vector<std::string> fidelity_sentences(const FidelitySection& s) {
    std::vector<std::string> out;
    const FidelityVariant* ref = nullptr;
    for (const auto& v : s.variants)
        if (v.reference && !v.error)
            ref = &v;
    std::vector<std::string> frontier;
    std::size_t ran = 0;
    for (const auto& v : s.variants) {
        if (v.error)
            continue;
        ++ran;
        if (v.frontier)
            frontier.push_back(ref ? name_against(v, *ref) : variant_label(v));
        if (&v == ref)
            continue;
        if (ref) {
            out.push_back(variant_sentence(v, *ref, s));
        } else {
            const StageFidelity& f = s.n_gen > 0 ? v.decode : v.prefill;
            out.push_back(fmt::format(
                "{}: KL to {} {}, top-1 agreement {:.3g} % (the reference's speed was not "
                "measured).",
                variant_label(v), s.reference, small(f.kl_mean), 100 * f.top1_agreement));
        }
    }
    if (ran >= 2 && !frontier.empty()) {
        std::string list;
        for (const auto& n : frontier)
            list += (list.empty() ? "" : ", ") + n;
        out.push_back("No other choice is both faster in decode and closer to " + s.reference +
                      " than " + list + " (the frontier).");
    }
    return out;
}

}  // namespace sb
