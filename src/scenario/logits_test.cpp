#include "scenario/logits.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"

namespace sb {
namespace {

LogitsCapture capture(std::vector<float> logits, std::vector<int32_t> tokens = {1, 2, 3}) {
    LogitsCapture c;
    c.model_path = "m.gguf";
    c.model_name = std::string("m");  // not = "m": a GCC 12 -Wrestrict false positive
    c.devices = "CPU";
    c.tokens = std::move(tokens);
    c.logits = std::move(logits);
    return c;
}

TEST(Logits, IdenticalLogitsDifferByNothing) {
    const auto a = capture({0.5f, -1.0f, 2.0f, 0.0f});
    const LogitsDiff d = compare_logits(a, a);
    EXPECT_EQ(d.max_abs, 0);
    EXPECT_EQ(d.rms, 0);
    EXPECT_EQ(d.kl, 0);
    EXPECT_EQ(d.top1, 2);
    EXPECT_TRUE(d.within(1e-9, 0));
}

TEST(Logits, TheDifferencesAreExact) {
    const auto ref = capture({0.0f, 0.0f, 4.0f, 0.0f});
    const auto x = capture({0.0f, 3.0f, 4.0f, -1.0f});
    const LogitsDiff d = compare_logits(ref, x);
    EXPECT_DOUBLE_EQ(d.max_abs, 3);
    EXPECT_DOUBLE_EQ(d.rms, std::sqrt((9.0 + 1.0) / 4));
    EXPECT_DOUBLE_EQ(d.ref_scale, 4);
    // KL(p || q) = sum p (log p - log q), the softmaxes computed by hand.
    const double zp = 3 + std::exp(4.0), zq = 1 + std::exp(3.0) + std::exp(4.0) + std::exp(-1.0);
    const double p[] = {1 / zp, 1 / zp, std::exp(4.0) / zp, 1 / zp};
    const double q[] = {1 / zq, std::exp(3.0) / zq, std::exp(4.0) / zq, std::exp(-1.0) / zq};
    double kl = 0;
    for (int i = 0; i < 4; ++i)
        kl += p[i] * std::log(p[i] / q[i]);
    EXPECT_NEAR(d.kl, kl, 1e-12);
    EXPECT_TRUE(d.top1_agrees());
    // The tolerance is relative to the reference's largest |logit|: 3 of 4 is 0.75.
    EXPECT_TRUE(d.within(0.75, 1));
    EXPECT_FALSE(d.within(0.74, 1));
    EXPECT_TRUE(d.within(0.75, kl));
    EXPECT_FALSE(d.within(0.75, kl * 0.99));
}

TEST(Logits, ADifferentTop1TokenIsNeverWithinTolerance) {
    const auto ref = capture({1.0f, 1.001f});
    const auto x = capture({1.001f, 1.0f});
    const LogitsDiff d = compare_logits(ref, x);
    EXPECT_EQ(d.top1_ref, 1);
    EXPECT_EQ(d.top1, 0);
    EXPECT_FALSE(d.within(1.0, 1.0));
}

TEST(Logits, AnotherModelOrPromptIsBadInput) {
    const auto ref = capture({1, 2, 3});
    EXPECT_THROW(compare_logits(ref, capture({1, 2})), Error);
    EXPECT_THROW(compare_logits(ref, capture({1, 2, 3}, {1, 2, 4})), Error);
}

TEST(Logits, TheDocumentRoundTripsAndBadOnesAreOneInputError) {
    auto c = capture({0.25f, -3.5f, 7.0f});
    c.arch = "aarch64";
    c.cpu_variant = "armv8.2_2";
    c.emulated = true;
    const nlohmann::json j = to_json(c);
    EXPECT_EQ(j["top"][0]["id"], 2);
    const LogitsCapture back = logits_from_json(j, "r.json");
    EXPECT_EQ(back.logits, c.logits);
    EXPECT_EQ(back.tokens, c.tokens);
    EXPECT_EQ(back.cpu_variant, "armv8.2_2");
    EXPECT_TRUE(back.emulated);
    for (auto mutate : std::vector<std::function<void(nlohmann::json&)>>{
             [](auto& d) { d["schema"] = "stagebench"; }, [](auto& d) { d["schema_version"] = 2; },
             [](auto& d) { d["logits"][1] = nullptr; }, [](auto& d) { d["tokens"] = "1,2,3"; },
             [](auto& d) { d.erase("model"); },
             [](auto& d) { d["logits"] = nlohmann::json::array(); }}) {
        nlohmann::json d = j;
        mutate(d);
        try {
            logits_from_json(d, "r.json");
            ADD_FAILURE() << d.dump();
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            EXPECT_EQ(std::string(e.what()).rfind("'r.json': ", 0), 0u) << e.what();
        }
    }
}

}  // namespace
}  // namespace sb
