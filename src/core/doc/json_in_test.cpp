// The typed reader's range rule (ObjectIn::non_negative): durations, rates and counts below 0
// are refused, naming the source and the path; absent values, null and the members it is told
// to leave alone pass.
#include "core/doc/json_in.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/result.hpp"

namespace sb {
namespace {

using nlohmann::json;

struct Sample {
    std::optional<double> rate;
    std::vector<int64_t> durations;
    json summary;
};

void read(const JsonIn& in, Sample& s) {
    ObjectIn{in}("rate", s.rate)("durations", s.durations)("summary", s.summary)
        .non_negative({"rate", "durations", "summary", "absent"}, {"ci95_lo"});
}

std::string refusal(const json& j) {
    try {
        from_json<Sample>(j, "'s.json'");
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        return e.what();
    }
    return "";
}

TEST(JsonIn, NonNegativeRefusesTheFirstValueBelowZero) {
    EXPECT_EQ(refusal(json{{"rate", 2.5}, {"durations", {1, 0, 7}}}), "");
    EXPECT_EQ(refusal(json{{"rate", nullptr}}), "");
    EXPECT_EQ(refusal(json::object()), "");
    EXPECT_EQ(refusal(json{{"rate", -0.5}}), "'s.json': rate: expected at least 0, found -0.5");
    EXPECT_EQ(refusal(json{{"durations", {3, -2, -4}}}),
              "'s.json': durations[1]: expected at least 0, found -2");
    // Inside objects at any depth, except the members named (a Student-t lower bound).
    EXPECT_EQ(refusal(json{{"summary", {{"median", 3}, {"ci95_lo", -1}}}}), "");
    EXPECT_EQ(refusal(json{{"summary", {{"median", 3}, {"n", {{"deep", -1}}}}}}),
              "'s.json': summary.n.deep: expected at least 0, found -1");
    // Unsigned JSON integers are never below 0; -0.0 is not below 0.
    EXPECT_EQ(refusal(json{{"rate", uint64_t{1} << 63}}), "");
    EXPECT_EQ(refusal(json{{"rate", -0.0}}), "");
}

TEST(JsonIn, ATestWithNegativeMeasurementsIsRefused) {
    const auto doc = [](const char* test) {
        return json::parse(std::string(R"({"schema": "stagebench.result", "tests": [)") + test +
                           "]}");
    };
    auto why = [&](const char* test) {
        try {
            from_json<ResultDocument>(doc(test), "'r.json'");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(why(R"({"config": {"n_prompt": 8, "n_gen": 2}, "prefill": {"n_tokens": 8,
              "duration_ns": [10], "tokens_per_s": [800.0], "duration": {"median": 10,
              "ci95_lo": -3}}})"),
              "");
    EXPECT_EQ(why(R"({"config": {"n_prompt": -8}})"),
              "'r.json': tests[0].config.n_prompt: expected at least 0, found -8");
    EXPECT_EQ(why(R"({"prefill": {"tokens_per_s": [-800.0]}})"),
              "'r.json': tests[0].prefill.tokens_per_s[0]: expected at least 0, found -800.0");
    EXPECT_EQ(why(R"({"decode": {"token_latency_ns": [5, -1]}})"),
              "'r.json': tests[0].decode.token_latency_ns[1]: expected at least 0, found -1");
    EXPECT_EQ(why(R"({"decode": {"throughput": {"median": -2.0}}})"),
              "'r.json': tests[0].decode.throughput.median: expected at least 0, found -2.0");
    EXPECT_EQ(why(R"({"ttft_ns": [-3]})"),
              "'r.json': tests[0].ttft_ns[0]: expected at least 0, found -3");
    EXPECT_EQ(why(R"({"client": {"output_tokens": [-4]}})"),
              "'r.json': tests[0].client.output_tokens[0]: expected at least 0, found -4");
    EXPECT_EQ(why(R"({"server": {"reps": [{"source": "llama-server", "predicted_n": -1}]}})"),
              "'r.json': tests[0].server.reps[0].predicted_n: expected at least 0, found -1");
    EXPECT_EQ(why(R"({"prefill": {"robust": {"tokens_per_s": -1}}})"),
              "'r.json': tests[0].prefill.robust.tokens_per_s: expected at least 0, found -1");
}

}  // namespace
}  // namespace sb
