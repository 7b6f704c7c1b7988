#pragma once
// Expert routing of a synthetic mixture of experts, seeded and with a stated popularity.
//
// A trained router picks experts with a skewed, stable popularity; a random one spreads tokens
// evenly, so the hot experts' weights that stay in cache on a device would be missing. Here
// the router reads only a few coordinates of the residual stream that no layer writes to (the
// rows of those coordinates in every attention output and expert down projection are zero):
// one where every token embedding holds the same value, which turns each expert's weight there
// into a fixed per-expert offset, and |S| = 64 more holding the token's own random values,
// which give every token its own choice. RMS normalisation scales these coordinates alike, so
// which experts a token picks depends only on the token and the layer, never on the context.
//
// uniform: no offsets; every expert equally likely for a random token.
// skewed: offsets calibrated so that each layer's experts are chosen as if drawn without
// replacement with Zipf popularity (weight of the r-th most popular expert ~ 1/r^s, s =
// kZipfExponent; Plackett-Luce sampling), the popularity order permuted per layer by the seed.
#include <cstdint>
#include <string>
#include <vector>

#include "model/arch.hpp"

namespace sb {

enum class Routing { uniform, skewed };

inline constexpr double kZipfExponent = 1.0;

// "uniform" | "skewed"; throws sb::Error(ErrorKind::usage) for anything else.
Routing parse_routing(const std::string& name);
const char* routing_name(Routing r);

struct RoutingPlan {
    Routing routing = Routing::skewed;
    int64_t n_embd = 0;
    int64_t n_expert = 0;
    int64_t n_used = 0;
    int64_t bias_coord = 0;   // the coordinate every token embedding sets to bias_value
    int64_t noise_first = 0;  // the token's own coordinates: [noise_first, noise_first + n_noise)
    int64_t n_noise = 0;
    float bias_value = 0.1f;  // 5 standard deviations: the largest of its quantization block
    // The share of tokens that choose the expert of each popularity rank (sums to n_used);
    // n_used / n_expert each for uniform.
    std::vector<double> target_share;
    // Per popularity rank, the expert's offset in units of the token part's standard deviation.
    std::vector<double> offsets;
    // Per layer, the expert at each popularity rank.
    std::vector<std::vector<int64_t>> rank_to_expert;
};

// The plan for a mixture of experts written with n_layers layers. Deterministic in (spec's
// expert counts, n_layers, seed). Throws sb::Error(ErrorKind::usage) when the model has no
// experts or is narrower than the 65 coordinates the router reads.
RoutingPlan plan_routing(Routing routing, const ModelSpec& spec, int64_t n_layers, uint64_t seed);

// Whether coordinate d of the residual stream is one the router reads (and no layer writes).
bool is_routing_coord(const RoutingPlan& plan, int64_t d);

// Row `expert` of layer `layer`'s router (ffn_gate_inp, n_embd values): zero except on the
// routing coordinates.
void router_row(const RoutingPlan& plan, int layer, int64_t expert, uint64_t seed, float* out);

// The share of tokens choosing each popularity rank when every token's part is standard normal
// noise over the plan's offsets: the calibration's own check, computed on `samples` draws.
std::vector<double> simulated_share(const RoutingPlan& plan, int samples, uint64_t seed);

}  // namespace sb
