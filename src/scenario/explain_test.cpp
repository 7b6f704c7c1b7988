#include "scenario/explain.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"

namespace sb {
namespace {

ExplainSection section(int rounds) {
    ExplainSection s;
    s.rounds = rounds;
    for (const char* id : {"graph", "generation", "server"}) {
        ExplainMeasure m;
        m.id = id;
        m.level = id;
        s.measures.push_back(m);
    }
    s.order = {"graph", "generation", "server"};
    return s;
}

TEST(ExplainRounds, EveryMeasureOncePerRoundForwardThenBackward) {
    ExplainSection s = section(3);
    std::vector<std::string> ran;
    int saves = 0;
    std::ostringstream err;
    const int code = run_explain_rounds(
        s,
        [&](const ExplainMeasure& m, int round) {
            ran.push_back(m.id + std::to_string(round));
            ExplainRun r;
            r.prefill_ns = 1e6 * (m.id == "server" ? 5 : 1) + round;
            r.decode_ns = 1e5;
            return r;
        },
        [&] { ++saves; }, err, true);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(
        ran, (std::vector<std::string>{"graph0", "generation0", "server0", "server1", "generation1",
                                       "graph1", "graph2", "generation2", "server2"}));
    EXPECT_EQ(saves, 9) << "saved after every run";
    const ExplainMeasure& server = s.measures[2];
    ASSERT_EQ(server.runs.size(), 3u);
    EXPECT_EQ(server.runs[1].round, 1);
    EXPECT_EQ(server.runs[1].sequence, 3);
    EXPECT_EQ(server.prefill.n, 3);
    EXPECT_DOUBLE_EQ(*server.prefill.median_ns, 5e6 + 1);
    EXPECT_FALSE(s.parts.empty()) << "summarised";
    EXPECT_NE(err.str().find("round 2/3: server TTFT 5.00 ms"), std::string::npos) << err.str();
}

TEST(ExplainRounds, AFailedRunKeepsTheOthers) {
    ExplainSection s = section(2);
    std::ostringstream err;
    const int code = run_explain_rounds(
        s,
        [&](const ExplainMeasure& m, int round) -> ExplainRun {
            if (m.id == "generation" && round == 1)
                throw runtime_error("llama_decode failed");
            if (m.id == "server" && round == 0)
                return ExplainRun{};  // nothing measured: an error too
            ExplainRun r;
            r.prefill_ns = 1e6;
            r.decode_ns = 1e5;
            return r;
        },
        nullptr, err, false);
    EXPECT_EQ(code, 1);
    EXPECT_TRUE(err.str().empty()) << "no progress asked";
    EXPECT_EQ(s.measures[1].runs[1].error, "llama_decode failed");
    EXPECT_EQ(s.measures[2].runs[0].error, "no time was measured");
    EXPECT_EQ(s.measures[0].prefill.n, 2);
    EXPECT_EQ(s.measures[1].n_failed, 1);
    bool finding = false;
    for (const auto& f : s.findings)
        finding = finding || f.kind == "failed";
    EXPECT_TRUE(finding);
}

// llama.cpp ending the process inside a level (its abort calls the last words): the run is
// recorded at its level with llama.cpp's words, summarised and saved, and the line the process
// ends with names it.
TEST(ExplainRounds, ALlamaAbortInsideALevelIsRecordedThereAndSaved) {
    ExplainSection s = section(1);
    std::ostringstream err;
    int saves = 0;
    std::optional<std::string> said;
    run_explain_rounds(
        s,
        [&](const ExplainMeasure& m, int) -> ExplainRun {
            if (m.id == "generation") {
                said = say_last_words("llama-vocab.cpp:123: GGML_ABORT(\"unknown token\") failed");
                throw runtime_error("stopped");  // the process would have ended here
            }
            ExplainRun r;
            r.prefill_ns = 1e6;
            r.decode_ns = 1e5;
            return r;
        },
        [&] { ++saves; }, err, false);
    ASSERT_TRUE(said.has_value());
    EXPECT_EQ(*said,
              "explain: round 1/1 of generation failed: llama.cpp stopped the process: "
              "GGML_ABORT(\"unknown token\") failed");
    ASSERT_GE(s.measures[1].runs.size(), 1u);
    EXPECT_EQ(s.measures[1].runs[0].error,
              "llama.cpp stopped the process: GGML_ABORT(\"unknown token\") failed");
    EXPECT_EQ(s.measures[1].n_failed, static_cast<int>(s.measures[1].runs.size()));
    EXPECT_GE(saves, 2) << "saved by the last word, after the graph level's run";
}

TEST(ExplainRounds, CtrlCStopsBeforeTheNextRunAndKeepsWhatRan) {
    ExplainSection s = section(5);
    std::ostringstream err;
    int n = 0;
    const int code = run_explain_rounds(
        s,
        [&](const ExplainMeasure&, int) {
            if (++n == 4)
                request_interrupt();
            ExplainRun r;
            r.prefill_ns = 1e6;
            return r;
        },
        nullptr, err, false);
    clear_interrupt();
    EXPECT_EQ(code, 1);
    EXPECT_TRUE(s.interrupted);
    EXPECT_EQ(n, 4);
    EXPECT_EQ(s.measures[2].runs.size(), 2u);  // server0, server1 (round 1 runs it first)
}

TEST(ExplainRounds, BadOrdersAreUsageErrors) {
    ExplainSection s = section(1);
    s.order.push_back("nope");
    std::ostringstream err;
    EXPECT_THROW(
        run_explain_rounds(
            s, [](const ExplainMeasure&, int) { return ExplainRun{}; }, nullptr, err, false),
        Error);
    ExplainSection z = section(0);
    EXPECT_THROW(
        run_explain_rounds(
            z, [](const ExplainMeasure&, int) { return ExplainRun{}; }, nullptr, err, false),
        Error);
}

TEST(ExplainCommand, BadOptionsAreUsageErrorsBeforeAnything) {
    std::ostringstream err;
    ExplainOptions o;
    o.workload.model_path = "/nonexistent.gguf";
    o.n_gen = 1;
    try {
        run_explain(o, RunEnv(ResultDocument{}, err));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(e.what()).find("-n must be at least 2"), std::string::npos);
    }
    o.n_gen = 4;
    o.concurrency = {0};
    EXPECT_THROW(run_explain(o, RunEnv(ResultDocument{}, err)), Error);
    o.concurrency = {};
    o.server_args = "-ub '32";
    EXPECT_THROW(run_explain(o, RunEnv(ResultDocument{}, err)), Error);
}

}  // namespace
}  // namespace sb
