#include "scenario/serve_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sb {

std::vector<double> window_token_rates(const std::vector<TokenArrivals>& requests, int64_t start_ns,
                                       int64_t span_ns, int windows) {
    if (span_ns <= 0 || windows < 1)
        return {};
    std::vector<double> tokens(static_cast<size_t>(windows), 0.0);
    const double width_ns = static_cast<double>(span_ns) / windows;
    auto add = [&](int64_t t, double n) {
        const double at = static_cast<double>(t - start_ns) / width_ns;
        const int w = std::clamp(static_cast<int>(std::floor(at)), 0, windows - 1);
        tokens[static_cast<size_t>(w)] += n;
    };
    for (const auto& r : requests) {
        if (r.output_tokens <= 0)
            continue;
        if (!r.ttft_ns) {
            if (r.e2e_ns)
                add(r.send_ns + *r.e2e_ns, static_cast<double>(r.output_tokens));
            continue;
        }
        const double each =
            static_cast<double>(r.output_tokens) / static_cast<double>(1 + r.itl_ns.size());
        int64_t t = r.send_ns + *r.ttft_ns;
        add(t, each);
        for (int64_t g : r.itl_ns)
            add(t += g, each);
    }
    for (auto& x : tokens)
        x /= width_ns * 1e-9;
    return tokens;
}

namespace {

std::string value_text(double v) {
    return std::isinf(v) ? std::string("inf") : fmt::format("{:g}", v);
}

}  // namespace

Saturation find_saturation(std::vector<SaturationInput> points, const std::string& mode,
                           bool slo_given, std::size_t resamples, uint64_t seed) {
    std::stable_sort(
        points.begin(), points.end(),
        [](const SaturationInput& a, const SaturationInput& b) { return a.value < b.value; });
    Saturation s;
    s.slo_given = slo_given;
    s.windows = kServeWindows;
    s.slo_attainment_needed = kSloAttainment;
    for (size_t i = 1; i < points.size(); ++i) {
        const auto& a = points[i - 1];
        const auto& b = points[i];
        SaturationStep st;
        st.from = a.value;
        st.to = b.value;
        double mean_a = 0;
        for (double x : a.window_tokens_per_s)
            mean_a += x;
        if (!a.window_tokens_per_s.empty() && !b.window_tokens_per_s.empty() && mean_a > 0)
            st.throughput =
                ratio_of_means(b.window_tokens_per_s, a.window_tokens_per_s, resamples, seed);
        if (!a.latency_ms.empty() && !b.latency_ms.empty() && *median(a.latency_ms) > 0)
            st.latency = ratio_of_medians(b.latency_ms, a.latency_ms, resamples, seed);
        st.throughput_grew = st.throughput && st.throughput->lo > 1.0;
        st.latency_grew = st.latency && st.latency->lo > 1.0;
        if (!s.saturated_at && st.throughput && st.latency && !st.throughput_grew &&
            st.latency_grew) {
            s.saturated_at = st.from;
            s.next = st.to;
        }
        s.steps.push_back(st);
    }
    for (const auto& p : points)
        if (p.slo_attainment && *p.slo_attainment >= kSloAttainment)
            s.max_meeting_slo = p.value;

    if (s.saturated_at) {
        const SaturationStep* st = nullptr;
        for (const auto& x : s.steps)
            if (x.from == *s.saturated_at && x.to == *s.next)
                st = &x;
        s.verdict = fmt::format(
            "saturated at {0} {1}: from {1} to {2} output tokens/s x{3:.2f} [{4:.2f}, {5:.2f}] "
            "did not grow while E2E median x{6:.2f} [{7:.2f}, {8:.2f}] did (95 % bootstrap CIs)",
            mode, value_text(st->from), value_text(st->to), st->throughput->ratio,
            st->throughput->lo, st->throughput->hi, st->latency->ratio, st->latency->lo,
            st->latency->hi);
    } else if (s.steps.empty()) {
        s.verdict = "one point: no saturation test (it needs two or more)";
    } else {
        s.verdict = fmt::format(
            "not saturated within the sweep: at no step did output tokens/s stop growing while "
            "E2E grew (95 % bootstrap CIs)");
    }
    if (slo_given)
        s.verdict += s.max_meeting_slo
                         ? fmt::format(
                               "; the highest {} meeting the SLOs ({:.0f} % of requests) "
                               "is {}",
                               mode, kSloAttainment * 100, value_text(*s.max_meeting_slo))
                         : fmt::format("; no {} meets the SLOs ({:.0f} % of requests)", mode,
                                       kSloAttainment * 100);
    return s;
}

std::optional<ServeEnergy> serve_energy(const StageWindow& stage, int requests_ok,
                                        int64_t output_tokens) {
    const StageEnergy* meter = nullptr;
    for (const auto& e : stage.energy) {
        if (!e.energy_j)
            continue;
        if (stage.total.metric && e.metric == *stage.total.metric) {
            meter = &e;
            break;
        }
        if (!meter && !e.within && !stage.total.metric)
            meter = &e;
    }
    if (!meter)
        return std::nullopt;
    ServeEnergy r;
    r.metric = meter->metric;
    r.method = meter->method;
    r.duration_s = static_cast<double>(stage.duration_ns) * 1e-9;
    r.energy_j = meter->energy_j;
    r.net_energy_j = meter->net_energy_j;
    r.idle_power_mw = meter->idle_power_mw;
    if (r.duration_s > 0)
        r.mean_power_mw = *r.energy_j / r.duration_s * 1e3;
    auto per = [](const std::optional<double>& e, double n) {
        return e && n > 0 ? std::optional<double>(*e / n) : std::nullopt;
    };
    r.j_per_request = per(r.energy_j, requests_ok);
    r.net_j_per_request = per(r.net_energy_j, requests_ok);
    r.j_per_output_token = per(r.energy_j, static_cast<double>(output_tokens));
    r.net_j_per_output_token = per(r.net_energy_j, static_cast<double>(output_tokens));
    return r;
}

}  // namespace sb
