#include "model/routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "model/random.hpp"

namespace sb {

namespace {

using synth_random::splitmix64;

constexpr int64_t kNoiseCoords = 64;
// The token embedding's standard deviation (synth.cpp's kWeightStd): the scale of the noise
// part of a router logit.
constexpr double kTokenStd = 0.02;
// The calibration's own random numbers: the offsets depend on the expert counts only.
constexpr uint64_t kCalibrationSeed = 0x5EED0F0E7BE27ull;

double uniform01(uint64_t& state) {
    // 53 random bits in (0, 1).
    return (static_cast<double>(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal draws, Box-Muller.
std::vector<float> normals(std::size_t n, uint64_t seed) {
    std::vector<float> v(n);
    uint64_t state = seed;
    for (std::size_t i = 0; i < n; i += 2) {
        const double r = std::sqrt(-2.0 * std::log(uniform01(state)));
        const double a = 2.0 * 3.14159265358979323846 * uniform01(state);
        v[i] = static_cast<float>(r * std::cos(a));
        if (i + 1 < n)
            v[i + 1] = static_cast<float>(r * std::sin(a));
    }
    return v;
}

// Counts, per expert, the samples whose top k of (offset + noise) include it.
std::vector<double> inclusion(const std::vector<double>& offsets, const std::vector<float>& noise,
                              int64_t samples, int64_t k) {
    const auto e = static_cast<int64_t>(offsets.size());
    std::vector<double> count(offsets.size(), 0.0);
    std::vector<std::pair<double, int64_t>> keys(offsets.size());
    for (int64_t s = 0; s < samples; ++s) {
        const float* z = noise.data() + s * e;
        for (int64_t i = 0; i < e; ++i)
            keys[static_cast<std::size_t>(i)] = {offsets[static_cast<std::size_t>(i)] + z[i], i};
        std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        for (int64_t j = 0; j < k; ++j)
            count[static_cast<std::size_t>(keys[static_cast<std::size_t>(j)].second)] += 1.0;
    }
    for (auto& c : count)
        c /= static_cast<double>(samples);
    return count;
}

int64_t samples_for(int64_t n_expert) {
    return std::clamp<int64_t>((int64_t{1} << 21) / n_expert, 4096, 32768);
}

}  // namespace

Routing parse_routing(const std::string& name) {
    if (name == "uniform")
        return Routing::uniform;
    if (name == "skewed")
        return Routing::skewed;
    throw usage_error("--routing " + name + ": expected uniform or skewed");
}

const char* routing_name(Routing r) {
    return r == Routing::uniform ? "uniform" : "skewed";
}

RoutingPlan plan_routing(Routing routing, const ModelSpec& spec, int64_t n_layers, uint64_t seed) {
    if (!spec.is_moe())
        throw usage_error("--routing applies to mixtures of experts; " + spec.arch +
                          " has no experts");
    if (spec.n_embd < kNoiseCoords + 1)
        throw usage_error("a routed model needs at least " + std::to_string(kNoiseCoords + 1) +
                          " embedding dimensions, " + spec.arch + " has " +
                          std::to_string(spec.n_embd));
    RoutingPlan p;
    p.routing = routing;
    p.n_embd = spec.n_embd;
    p.n_expert = spec.n_expert;
    p.n_used = spec.n_expert_used;
    // The bias coordinate alone in the first 32-wide quantization block's first slot; the
    // token's coordinates in the blocks after it.
    p.bias_coord = 0;
    p.noise_first = 32 <= spec.n_embd - kNoiseCoords ? 32 : 1;
    p.n_noise = kNoiseCoords;
    const auto e = static_cast<std::size_t>(p.n_expert);
    const int64_t k = p.n_used;

    if (routing == Routing::uniform) {
        p.target_share.assign(e, static_cast<double>(k) / static_cast<double>(p.n_expert));
        p.offsets.assign(e, 0.0);
    } else {
        // Plackett-Luce inclusion of Zipf weights, by the Gumbel top-k trick: the top k of
        // log(w) + Gumbel noise are a draw of k without replacement proportional to w.
        const int64_t samples = samples_for(p.n_expert);
        std::vector<double> logw(e);
        for (std::size_t r = 0; r < e; ++r)
            logw[r] = -kZipfExponent * std::log(static_cast<double>(r + 1));
        std::vector<float> gumbel(static_cast<std::size_t>(samples) * e);
        {
            uint64_t state = kCalibrationSeed;
            for (auto& g : gumbel)
                g = static_cast<float>(-std::log(-std::log(uniform01(state))));
        }
        p.target_share = inclusion(logw, gumbel, samples, k);
        // Offsets for Gaussian noise (a router logit's token part) with the same inclusion:
        // fixed-point steps on the log of the ratio, on one fixed set of draws.
        const std::vector<float> noise = normals(gumbel.size(), kCalibrationSeed + 1);
        p.offsets = logw;
        for (auto& o : p.offsets)
            o *= 0.5;
        const double floor = 0.5 / static_cast<double>(samples);
        for (int it = 0; it < 40; ++it) {
            const auto got = inclusion(p.offsets, noise, samples, k);
            double worst = 0;
            for (std::size_t r = 0; r < e; ++r) {
                const double ratio =
                    std::log(std::max(p.target_share[r], floor) / std::max(got[r], floor));
                worst = std::max(worst, std::abs(ratio));
                p.offsets[r] += 0.6 * std::clamp(ratio, -1.0, 1.0);
            }
            if (worst < 0.03)  // about the sampling noise of the rarest expert's count
                break;
        }
        // Only differences matter: the most popular expert at 0.
        const double top = p.offsets.front();
        for (auto& o : p.offsets)
            o -= top;
    }
    for (int64_t il = 0; il < n_layers; ++il) {
        std::vector<int64_t> order(e);
        std::iota(order.begin(), order.end(), int64_t{0});
        uint64_t state = synth_random::row_state(seed, synth_random::fnv1a("routing order"), il);
        for (std::size_t i = e - 1; i > 0; --i)
            std::swap(order[i], order[splitmix64(state) % (i + 1)]);
        p.rank_to_expert.push_back(std::move(order));
    }
    return p;
}

bool is_routing_coord(const RoutingPlan& p, int64_t d) {
    return d == p.bias_coord || (d >= p.noise_first && d < p.noise_first + p.n_noise);
}

void router_row(const RoutingPlan& p, int layer, int64_t expert, uint64_t seed, float* out) {
    std::fill(out, out + p.n_embd, 0.0f);
    const auto& order = p.rank_to_expert.at(static_cast<std::size_t>(layer));
    const auto rank =
        static_cast<std::size_t>(std::find(order.begin(), order.end(), expert) - order.begin());
    // Noise weights of exactly unit length: the token part w.u then has the token embedding's
    // standard deviation for every expert alike (random lengths would favour the experts with
    // longer rows), and the offset is in those units.
    float* w = out + p.noise_first;
    synth_random::fill_row(w, p.n_noise, seed,
                           synth_random::fnv1a("router " + std::to_string(layer)), expert, 1.0f);
    double norm = 0;
    for (int64_t i = 0; i < p.n_noise; ++i)
        norm += static_cast<double>(w[i]) * w[i];
    const auto scale = static_cast<float>(1.0 / std::sqrt(norm));
    for (int64_t i = 0; i < p.n_noise; ++i)
        w[i] *= scale;
    out[p.bias_coord] = static_cast<float>(p.offsets[rank] * kTokenStd / p.bias_value);
}

std::vector<double> simulated_share(const RoutingPlan& p, int samples, uint64_t seed) {
    const std::vector<float> noise =
        normals(static_cast<std::size_t>(samples) * static_cast<std::size_t>(p.n_expert), seed);
    return inclusion(p.offsets, noise, samples, p.n_used);
}

}  // namespace sb
