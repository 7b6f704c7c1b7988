#include "engine/fake_engine.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace sb {
namespace {

LoadSpec spec_of(int n_ctx) {
    LoadSpec s;
    s.model_path = "m.gguf";
    s.n_ctx = n_ctx;
    return s;
}

TEST(FakeLogits, AreTheScriptsFunctionOfTheCachedTokens) {
    FakeTimeline tl;
    FakeEngine e(tl);
    e.vocab = 4;
    std::vector<std::vector<int32_t>> seen;
    e.script().logits = [&](std::span<const int32_t> ctx) {
        seen.emplace_back(ctx.begin(), ctx.end());
        return std::vector<float>{static_cast<float>(ctx.size()), 0, 0, ctx.back() * 1.0f};
    };
    e.load(spec_of(16));
    EXPECT_THROW(e.last_logits(), Error);  // nothing computed yet
    const std::vector<int32_t> prompt{1, 2, 3};
    e.prefill(prompt);
    EXPECT_EQ(std::vector<float>(e.last_logits().begin(), e.last_logits().end()),
              (std::vector<float>{3, 0, 0, 3}));
    e.decode_step(2);
    EXPECT_EQ(std::vector<float>(e.last_logits().begin(), e.last_logits().end()),
              (std::vector<float>{4, 0, 0, 2}));
    EXPECT_EQ(seen.back(), (std::vector<int32_t>{1, 2, 3, 2}));
}

TEST(FakeLogits, EvaluateGivesEveryPositionFromFirstOutputAndTheStateCarriesTheTokens) {
    FakeTimeline tl;
    FakeEngine a(tl, "A"), b(tl, "B");
    a.vocab = b.vocab = 5;
    a.load(spec_of(16));
    b.load(spec_of(16));
    const std::vector<int32_t> t{1, 4, 2};
    std::vector<float> out;
    a.evaluate(t, 1, out);
    ASSERT_EQ(out.size(), 2u * 5);
    const auto p1 = default_fake_logits(std::span<const int32_t>(t.data(), 2), 5);
    const auto p2 = default_fake_logits(t, 5);
    EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 5), p1);
    EXPECT_EQ(std::vector<float>(out.begin() + 5, out.end()), p2);
    // ((j + t + n) % 7) / 4 after {1, 4, 2}: t = 2, n = 3.
    EXPECT_EQ(p2, (std::vector<float>{5 / 4.0f, 6 / 4.0f, 0, 1 / 4.0f, 2 / 4.0f}));
    EXPECT_EQ(tl.calls_of(FakeOp::evaluate).size(), 1u);
    // The state moves the tokens: B continues A's sequence.
    std::vector<uint8_t> state;
    a.save_state(state);
    b.restore_state(state);
    EXPECT_EQ(b.cached_tokens(), t);
    b.decode_step(3);
    const std::vector<int32_t> next{1, 4, 2, 3};
    EXPECT_EQ(std::vector<float>(b.last_logits().begin(), b.last_logits().end()),
              default_fake_logits(next, 5));
}

TEST(FakeLogits, AnEngineWithoutThemRefusesAsOneWithoutTheCapability) {
    FakeTimeline tl;
    FakeEngine e(tl);
    e.has_logits = false;
    e.load(spec_of(8));
    EXPECT_FALSE(e.caps().logits);
    try {
        e.tokenize("ab", true);
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.kind(), ErrorKind::input);
    }
    FakeEngine t(tl);
    EXPECT_EQ(t.tokenize("ab", true), (std::vector<int32_t>{1, 'a' % 1000, 'b' % 1000}));
}

TEST(FakeEngineFactory, NamesEnginesByKindAndOrderAndScriptsThem) {
    FakeTimeline tl;
    FakeEngineFactory f(tl);
    std::vector<std::string> names;
    f.setup = [&](FakeEngine& e, EngineKind kind) {
        names.push_back(e.name());
        e.vocab = kind == EngineKind::llama ? 7 : 9;
    };
    auto a = f.make(EngineKind::llama);
    HttpEngineOptions server;
    server.url = "http://127.0.0.1:1";
    auto b = f.make(EngineKind::http, server);
    EXPECT_EQ(names, (std::vector<std::string>{"llama0", "http1"}));
    EXPECT_EQ(a->n_vocab(), 7);
    EXPECT_TRUE(b->caps().measures_whole_request);
    ASSERT_EQ(f.servers().size(), 1u);
    EXPECT_EQ(f.servers()[0].url, "http://127.0.0.1:1");
    f.refuse = EngineKind::http;
    EXPECT_THROW(f.make(EngineKind::http, server), Error);
    EXPECT_EQ(f.made(), 2);
}

}  // namespace
}  // namespace sb
