#include "model/routing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "model/presets.hpp"

namespace sb {
namespace {

double sum(const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0);
}

TEST(Routing, UniformHasNoOffsets) {
    const auto p = plan_routing(Routing::uniform, find_preset("qwen3-30b-a3b").spec, 2, 1);
    ASSERT_EQ(p.offsets.size(), 128u);
    for (double o : p.offsets)
        EXPECT_EQ(o, 0.0);
    for (double s : p.target_share)
        EXPECT_DOUBLE_EQ(s, 8.0 / 128.0);
    const auto got = simulated_share(p, 20000, 3);
    EXPECT_NEAR(sum(got), 8.0, 1e-9);
    for (double s : got)
        EXPECT_NEAR(s, 8.0 / 128.0, 0.012);
}

TEST(Routing, SkewedFollowsZipfDrawnWithoutReplacement) {
    const auto p = plan_routing(Routing::skewed, find_preset("qwen3-30b-a3b").spec, 2, 1);
    EXPECT_NEAR(sum(p.target_share), 8.0, 1e-9);
    // Popularity falls with rank; the most popular expert is chosen by most tokens, the least
    // by few.
    for (std::size_t r = 1; r < p.target_share.size(); ++r)
        EXPECT_LE(p.target_share[r], p.target_share[r - 1] + 0.01) << r;
    EXPECT_GT(p.target_share.front(), 0.5);
    EXPECT_LT(p.target_share.back(), 0.03);
    // The calibrated offsets reproduce the target with Gaussian token noise (fresh draws).
    const auto got = simulated_share(p, 20000, 99);
    double hot_want = 0, hot_got = 0;
    for (std::size_t r = 0; r < 8; ++r) {
        hot_want += p.target_share[r];
        hot_got += got[r];
    }
    EXPECT_NEAR(hot_got, hot_want, 0.05 * hot_want);
    for (std::size_t r = 0; r < got.size(); ++r)
        EXPECT_NEAR(got[r], p.target_share[r], 0.02 + 0.1 * p.target_share[r]) << r;
    EXPECT_EQ(p.offsets.front(), 0.0);
    EXPECT_LT(p.offsets.back(), -1.0);
}

TEST(Routing, OrderIsSeededPerLayer) {
    const ModelSpec& s = find_preset("olmoe-1b-7b").spec;
    const auto a = plan_routing(Routing::skewed, s, 3, 1);
    const auto b = plan_routing(Routing::skewed, s, 3, 1);
    const auto c = plan_routing(Routing::skewed, s, 3, 2);
    ASSERT_EQ(a.rank_to_expert.size(), 3u);
    EXPECT_EQ(a.rank_to_expert, b.rank_to_expert);
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_NE(a.rank_to_expert, c.rank_to_expert);
    EXPECT_NE(a.rank_to_expert[0], a.rank_to_expert[1]);
    for (const auto& order : a.rank_to_expert)
        EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 64u);
}

TEST(Routing, RouterRowsReadOnlyTheRoutingCoordinates) {
    const ModelSpec& s = find_preset("qwen3-30b-a3b").spec;
    const auto p = plan_routing(Routing::skewed, s, 1, 7);
    std::vector<float> row(static_cast<std::size_t>(s.n_embd));
    int routing = 0;
    for (int64_t d = 0; d < s.n_embd; ++d)
        routing += is_routing_coord(p, d) ? 1 : 0;
    EXPECT_EQ(routing, 65);
    EXPECT_TRUE(is_routing_coord(p, 0));
    for (int64_t e : {int64_t{0}, int64_t{5}, int64_t{127}}) {
        router_row(p, 0, e, 7, row.data());
        for (int64_t d = 0; d < s.n_embd; ++d) {
            if (!is_routing_coord(p, d)) {
                EXPECT_EQ(row[static_cast<std::size_t>(d)], 0.0f) << d;
            }
        }
        const double noise =
            std::inner_product(row.begin() + p.noise_first, row.begin() + p.noise_first + p.n_noise,
                               row.begin() + p.noise_first, 0.0);
        EXPECT_NEAR(noise, 1.0, 1e-5);  // the token part's weights have unit length
    }
    // The most popular expert of layer 0 has the largest bias weight.
    const int64_t top = p.rank_to_expert[0][0];
    router_row(p, 0, top, 7, row.data());
    const float top_bias = row[0];
    for (int64_t e = 0; e < s.n_expert; ++e) {
        router_row(p, 0, e, 7, row.data());
        EXPECT_LE(row[0], top_bias);
    }
}

TEST(Routing, RefusesDenseAndNarrowModels) {
    EXPECT_THROW(plan_routing(Routing::skewed, find_preset("qwen3-0.6b").spec, 1, 1), Error);
    ModelSpec narrow = find_preset("olmoe-1b-7b").spec;
    narrow.n_embd = 64;
    EXPECT_THROW(plan_routing(Routing::uniform, narrow, 1, 1), Error);
    EXPECT_EQ(parse_routing("uniform"), Routing::uniform);
    EXPECT_THROW(parse_routing("zipf"), Error);
}

}  // namespace
}  // namespace sb
