// Each server kind's knowledge, asked as HttpEngine asks it: discovery, request quirks, the
// timings it claims.
#include "engine/server_kind.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/error.hpp"
#include "engine/http_engine.hpp"

using namespace sb;
using nlohmann::json;

namespace {

// The kinds that recognise a /props answer or a model's owner.
std::vector<std::string> recognising_props(const json& props) {
    std::vector<std::string> out;
    for (const ServerKind* k : server_kinds()) {
        json about = json::object();
        if (k->recognises_props(props, about))
            out.push_back(k->name());
    }
    return out;
}

std::vector<std::string> owning(const std::string& owned_by) {
    std::vector<std::string> out;
    for (const ServerKind* k : server_kinds())
        if (k->owns_models(owned_by))
            out.push_back(k->name());
    return out;
}

}  // namespace

TEST(ServerKinds, NamesAndTimingSourcesAreUnique) {
    std::set<std::string> names;
    for (const ServerKind* k : server_kinds()) {
        EXPECT_TRUE(names.insert(k->name()).second) << k->name();
        if (*k->timings_source()) {
            EXPECT_EQ(kind_of_timings(k->timings_source()), k) << k->name();
        }
    }
    EXPECT_EQ(names, (std::set<std::string>{"llama-server", "vllm", "mlc-llm", "ollama",
                                            "openai-compatible"}));
    EXPECT_EQ(server_kinds().back(), &openai_compatible_kind());
    EXPECT_EQ(kind_of_timings("mlc"), &mlc_llm_kind());
    EXPECT_EQ(kind_of_timings(""), nullptr);
    EXPECT_EQ(kind_of_timings("tgi"), nullptr);
}

TEST(ServerKinds, DiscoveryRecognisesEachKindByWhatItAnswers) {
    json about = json::object();
    const json props = {{"build_info", "b1"},
                        {"model_path", "/m.gguf"},
                        {"total_slots", 2},
                        {"other", 1},
                        {"default_generation_settings", {{"n_ctx", 512}}}};
    EXPECT_TRUE(llama_server_kind().recognises_props(props, about));
    EXPECT_EQ(
        about,
        (json{
            {"build_info", "b1"}, {"model_path", "/m.gguf"}, {"total_slots", 2}, {"n_ctx", 512}}));
    EXPECT_EQ(recognising_props(props), std::vector<std::string>{"llama-server"});
    EXPECT_EQ(recognising_props({{"default_generation_settings", json::object()}}),
              std::vector<std::string>{"llama-server"});
    EXPECT_TRUE(recognising_props({{"model", "x"}}).empty());

    EXPECT_EQ(owning("llamacpp"), std::vector<std::string>{"llama-server"});
    EXPECT_EQ(owning("vllm"), std::vector<std::string>{"vllm"});
    EXPECT_EQ(owning("MLC-LLM"), std::vector<std::string>{"mlc-llm"});
    EXPECT_TRUE(owning("library").empty());
    EXPECT_TRUE(owning("").empty());
}

// Ollama is found through its own API: /api/version, then /api/tags' models.
TEST(ServerKinds, OllamaIsDiscoveredThroughItsOwnApi) {
    std::map<std::string, HttpResponse> answers = {
        {"/api/version", {200, R"({"version":"0.5.1"})"}},
        {"/api/tags", {200, R"({"models":[{"name":"qwen:0.5b"},{"size":3}]})"}}};
    std::vector<std::string> asked;
    const ServerGet get = [&](const std::string& path) {
        asked.push_back(path);
        return answers[path];
    };
    DiscoveredServer found;
    EXPECT_TRUE(ollama_kind().discover(get, "http://o", found));
    EXPECT_EQ(asked, (std::vector<std::string>{"/api/version", "/api/tags"}));
    EXPECT_EQ(found.models, std::vector<std::string>{"qwen:0.5b"});
    EXPECT_EQ(found.about, (json{{"version", "0.5.1"}}));

    answers["/api/version"] = {404, "not found"};
    try {
        ollama_kind().discover(get, "http://o", found);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_STREQ(e.what(),
                     "http://o does not answer Ollama's /api/version (HTTP 404); is it an Ollama "
                     "server?");
    }
    // The others are found the common way.
    for (const ServerKind* k : server_kinds())
        if (k != &ollama_kind()) {
            EXPECT_FALSE(k->discover(get, "http://o", found)) << k->name();
        }
}

// The OpenAI request of each kind: vLLM's min_tokens, llama-server's cold prefill and tokens
// per chunk; llama-server alone bans tokens.
TEST(ServerKinds, RequestQuirks) {
    const HttpPrompt prompt{{}, "a b", 2, false};
    auto body = [&](const ServerKind& k) {
        return wire_api(HttpApi::openai_chat).request(WireAsk{prompt, 5, 1, k}).body;
    };
    const json plain = body(openai_compatible_kind());
    EXPECT_FALSE(plain.contains("min_tokens"));
    EXPECT_FALSE(plain.contains("cache_prompt"));
    EXPECT_EQ(body(mlc_llm_kind()), plain);
    json vllm = plain;
    vllm["min_tokens"] = 5;
    EXPECT_EQ(body(vllm_kind()), vllm);
    json llama = plain;
    llama["cache_prompt"] = false;
    llama["timings_per_token"] = true;
    EXPECT_EQ(body(llama_server_kind()), llama);

    for (const ServerKind* k : server_kinds()) {
        json b = json::object();
        k->ban_tokens(b, {5, 9});
        if (k == &llama_server_kind())
            EXPECT_EQ(b, (json{{"logit_bias",
                                json::array({json::array({5, false}), json::array({9, false})})}}));
        else
            EXPECT_EQ(b, json::object()) << k->name();
        json none = json::object();
        k->ban_tokens(none, {});
        EXPECT_EQ(none, json::object()) << k->name();
        EXPECT_EQ(k->serves_unnamed_model(), k == &llama_server_kind()) << k->name();
        EXPECT_EQ(k->llama_tokenize(), k == &llama_server_kind()) << k->name();
    }
}

// What runners ask of a kind instead of its name: the server stagebench starts, whose settings
// explain reads, and how a message names one.
TEST(ServerKinds, WhatRunnersAskIsData) {
    for (const ServerKind* k : server_kinds()) {
        EXPECT_EQ(k->started_by_stagebench(), k == &llama_server_kind()) << k->name();
        EXPECT_EQ(k->reports_settings(), k == &llama_server_kind()) << k->name();
    }
    EXPECT_STREQ(ollama_kind().described_as(), "an Ollama server");
    EXPECT_STREQ(vllm_kind().described_as(), "a vLLM server");
    EXPECT_STREQ(openai_compatible_kind().described_as(), "an OpenAI-compatible server");
}

// vLLM's metrics time the tokens after the first: the stream's usage completes them.
TEST(ServerKinds, VllmTimingsAreCompletedByUsage) {
    ChunkInfo ci;
    auto s = vllm_kind().timings(json{{"first_scheduled_time", 10.0},
                                      {"first_token_time", 10.25},
                                      {"last_token_time", 11.0},
                                      {"time_in_queue", 0.5}},
                                 ci);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->prompt_ns, 250'000'000);
    EXPECT_EQ(s->predicted_ns, 750'000'000);
    EXPECT_EQ(s->queue_ns, 500'000'000);
    vllm_kind().complete_timings(*s, 16, 4);
    EXPECT_EQ(s->prompt_n, 16);
    EXPECT_EQ(s->predicted_n, 3);
    // Counts it said itself stay; other kinds' timings are not completed.
    ServerTimings l;
    l.source = "llama-server";
    llama_server_kind().complete_timings(l, 16, 4);
    EXPECT_FALSE(l.prompt_n);
    EXPECT_FALSE(l.predicted_n);
    EXPECT_TRUE(ci.rejected.empty());
}
