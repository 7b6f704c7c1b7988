// Every wire API of the registry, enumerated: its name round-trips through --api, it builds the
// request of a generation, and it reads a stream as its server sends one. A wire API added to
// the registry without a script here fails WireApis.EveryApiReadsAScriptedStream.
#include "engine/wire_api.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.hpp"
#include "engine/generation.hpp"
#include "engine/generation_stream.hpp"
#include "engine/server_kind.hpp"

using namespace sb;
using nlohmann::json;

namespace {

// One API as its server speaks it: the request for kAsk (to an OpenAI-compatible server with
// no quirks), and a stream of three tokens of a three-token prompt, ended by "length".
struct Script {
    std::string path;
    json body;
    std::string stream;
};

const HttpPrompt kTokens{{11, 12, 13}, "", 3, true};
const HttpPrompt kText{{}, "a b c", 3, false};

std::map<std::string, Script> scripts() {
    const json sampling = {
        {"max_tokens", 4},    {"stream", true}, {"stream_options", {{"include_usage", true}}},
        {"temperature", 0.0}, {"top_p", 1.0},   {"seed", 7},
        {"ignore_eos", true}};
    json completions = sampling, chat = sampling;
    completions["prompt"] = {11, 12, 13};
    chat["messages"] = json::array({{{"role", "user"}, {"content", "a b c"}}});
    return {
        {"openai",
         {"/v1/completions", completions,
          "data: {\"id\":\"r1\",\"choices\":[{\"text\":\"a\"}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[{\"text\":\"b\"}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[{\"text\":\"c\",\"finish_reason\":\"length\"}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[],"
          "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\n"
          "data: [DONE]\n\n"}},
        {"openai-chat",
         {"/v1/chat/completions", chat,
          "data: {\"id\":\"r1\",\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[{\"delta\":{\"content\":\"c\"},"
          "\"finish_reason\":\"length\"}]}\n\n"
          "data: {\"id\":\"r1\",\"choices\":[],"
          "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\n"
          "data: [DONE]\n\n"}},
        {"llama",
         {"/completion",
          {{"prompt", {11, 12, 13}},
           {"n_predict", 4},
           {"stream", true},
           {"cache_prompt", false},
           {"ignore_eos", true},
           {"temperature", 0.0},
           {"top_k", 1},
           {"seed", 7}},
          "data: {\"id\":\"r1\",\"content\":\"a\",\"tokens\":[1],\"stop\":false}\n\n"
          "data: {\"content\":\"b\",\"tokens\":[2],\"stop\":false}\n\n"
          "data: {\"content\":\"c\",\"tokens\":[3],\"stop\":false}\n\n"
          "data: {\"content\":\"\",\"stop\":true,\"stop_type\":\"length\","
          "\"tokens_evaluated\":3,\"tokens_predicted\":3,"
          "\"timings\":{\"prompt_n\":3,\"prompt_ms\":0.5,\"predicted_n\":3}}\n\n"}},
        {"ollama",
         {"/api/generate",
          {{"prompt", "a b c"},
           {"raw", true},
           {"stream", true},
           {"options", {{"num_predict", 4}, {"temperature", 0.0}, {"top_k", 1}, {"seed", 7}}}},
          "{\"model\":\"m\",\"response\":\"a\",\"done\":false}\n"
          "{\"model\":\"m\",\"response\":\"b\",\"done\":false}\n"
          "{\"model\":\"m\",\"response\":\"c\",\"done\":false}\n"
          "{\"model\":\"m\",\"response\":\"\",\"done\":true,\"done_reason\":\"length\","
          "\"prompt_eval_count\":3,\"eval_count\":3,\"prompt_eval_duration\":500000}\n"}},
    };
}

// Reads bytes as a GenerationStream of api does, cut into pieces of 7 bytes.
Generation stream_of(HttpApi api, const std::string& bytes) {
    GenerationStream::Spec spec;
    spec.api = api;
    spec.n_gen = 4;
    spec.n_prompt = 3;
    spec.where = "http://x";
    GenerationStream st(std::move(spec));
    for (size_t at = 0; at < bytes.size(); at += 7)
        EXPECT_TRUE(st.on_bytes(std::string_view(bytes).substr(at, 7), 1000 + at));
    StreamOutcome o;
    o.status = 200;
    o.complete = true;
    return st.finish(o);
}

}  // namespace

TEST(WireApis, TheRegistryNamesEachApiOnceAndTheEnumeratorsInOrder) {
    const auto& all = wire_apis();
    ASSERT_GE(all.size(), 4u);
    std::map<std::string, int> seen;
    for (const WireApi* w : all) {
        const HttpApi api = parse_http_api(w->name());
        EXPECT_EQ(&wire_api(api), w) << w->name();
        EXPECT_STREQ(http_api_name(api), w->name());
        EXPECT_NE(std::string(w->help()), "") << w->name();
        EXPECT_EQ(++seen[w->name()], 1) << w->name();
    }
    EXPECT_STREQ(wire_api(HttpApi::openai).name(), "openai");
    EXPECT_STREQ(wire_api(HttpApi::openai_chat).name(), "openai-chat");
    EXPECT_STREQ(wire_api(HttpApi::llama).name(), "llama");
    EXPECT_STREQ(wire_api(HttpApi::ollama).name(), "ollama");
}

// What a runner asks of an API: its own server, whether its requests must name a model (Ollama's
// tags).
TEST(WireApis, OwnServersAndModelNamesAreTheApis) {
    EXPECT_EQ(wire_api(HttpApi::openai).own_server(), nullptr);
    EXPECT_EQ(wire_api(HttpApi::openai_chat).own_server(), nullptr);
    EXPECT_EQ(wire_api(HttpApi::llama).own_server(), &llama_server_kind());
    EXPECT_EQ(wire_api(HttpApi::ollama).own_server(), &ollama_kind());
    for (const WireApi* w : wire_apis())
        EXPECT_EQ(w->needs_model_name(), w == &wire_api(HttpApi::ollama)) << w->name();
}

// --api's choices, its help and its error are the registry's.
TEST(WireApis, HelpAndErrorsReadTheRegistry) {
    EXPECT_EQ(http_api_names(),
              (std::vector<std::string>{"openai", "openai-chat", "llama", "ollama"}));
    EXPECT_EQ(http_api_help(),
              "openai (/v1/completions), openai-chat (/v1/chat/completions), llama (llama-server "
              "/completion), ollama (/api/generate)");
    try {
        parse_http_api("grpc");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(), "--api must be openai, openai-chat, llama or ollama, not 'grpc'");
    }
}

TEST(WireApis, EveryApiBuildsItsRequest) {
    const auto s = scripts();
    for (const WireApi* w : wire_apis()) {
        SCOPED_TRACE(w->name());
        auto it = s.find(w->name());
        if (it == s.end()) {
            ADD_FAILURE() << "no script for the wire API " << w->name()
                          << ": add one to scripts() in engine/wire_api_test.cpp";
            continue;
        }
        const HttpPrompt& prompt = w->takes_token_ids() ? kTokens : kText;
        const WireRequest r = w->request(WireAsk{prompt, 4, 7, openai_compatible_kind()});
        EXPECT_EQ(r.path, it->second.path);
        EXPECT_EQ(r.body, it->second.body) << r.body.dump();
    }
}

TEST(WireApis, EveryApiReadsAScriptedStream) {
    const auto s = scripts();
    for (const WireApi* w : wire_apis()) {
        SCOPED_TRACE(w->name());
        auto it = s.find(w->name());
        if (it == s.end()) {
            ADD_FAILURE() << "no scripted stream for the wire API " << w->name()
                          << ": add one to scripts() in engine/wire_api_test.cpp";
            continue;
        }
        const Generation g = stream_of(parse_http_api(w->name()), it->second.stream);
        ASSERT_EQ(g.chunks.size(), 3u);
        for (const auto& c : g.chunks)
            EXPECT_TRUE(c.content);
        EXPECT_EQ(g.prompt_tokens, 3);
        EXPECT_EQ(g.completion_tokens, 3);
        EXPECT_EQ(g.finish_reason, "length");
        EXPECT_TRUE(g.rejected.empty());
        const RequestTiming t = compute_timing(g);
        EXPECT_EQ(t.n_out, 3);
        EXPECT_EQ(t.itl_ns.size(), 2u);
    }
}

// What each API reads beyond the common counts: the request's id, the server's timings.
TEST(WireApis, IdsAndTimingsOfTheScriptedStreams) {
    const auto s = scripts();
    const Generation openai = stream_of(HttpApi::openai, s.at("openai").stream);
    EXPECT_EQ(openai.request_id, "r1");
    EXPECT_FALSE(openai.server);
    const Generation llama = stream_of(HttpApi::llama, s.at("llama").stream);
    EXPECT_EQ(llama.request_id, "r1");
    ASSERT_TRUE(llama.server);
    EXPECT_EQ(llama.server->source, "llama-server");
    EXPECT_EQ(llama.server->prompt_ns, 500'000);
    EXPECT_EQ(llama.server->predicted_n, 3);
    const Generation ollama = stream_of(HttpApi::ollama, s.at("ollama").stream);
    EXPECT_FALSE(ollama.request_id);
    ASSERT_TRUE(ollama.server);
    EXPECT_EQ(ollama.server->source, "ollama");
    EXPECT_EQ(ollama.server->prompt_n, 3);
    EXPECT_EQ(ollama.server->prompt_ns, 500'000);
    EXPECT_FALSE(ollama.server->predicted_ns);
}

// Ollama's context is raised past its default of 2048 when the prompt and the output need it.
TEST(WireApis, OllamaAsksForTheContextItNeeds) {
    HttpPrompt p = kText;
    p.n_tokens = 2000;
    const WireRequest r = wire_api(HttpApi::ollama).request(WireAsk{p, 100, 7, ollama_kind()});
    EXPECT_EQ(r.body["options"]["num_ctx"], 2164);
}
