#include "scenario/explain.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "engine/server_kind.hpp"
#include "scenario/ops_test_rig.hpp"
#include "scenario/test_util.hpp"

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

// run_explain end to end on the parts of the run's engine factory (no llama.cpp engine, no
// server, no wall clock): the model's text generation, the server stagebench starts, explain's
// requests to it and the op profiler's rig, each a scripted one.
struct ExplainRig {
    test::RunRig rr;
    test::ScriptedOpRigs rigs;
    ExplainOptions o;
    ExplainRig() {
        rigs.install(rr.engines, rr.tl);
        // A token per word (after the BOS), so that texts of words fit the context as a real
        // tokenizer's do.
        rr.engines.setup = [](FakeEngine& e, EngineKind k) {
            if (k == EngineKind::http)
                e.server_kind = &llama_server_kind();
            e.script().tokenize = [](const std::string& text, bool add_special) {
                std::vector<int32_t> out;
                if (add_special)
                    out.push_back(1);
                std::istringstream words(text);
                for (std::string w; words >> w;)
                    out.push_back(static_cast<int32_t>(2 + w.size()));
                return out;
            };
        };
        rr.engines.non_utf8_tokens = {7, 9};
        o.workload.model_path = test::tiny_gguf();
        o.n_prompt = 40;
        o.n_gen = 4;
        o.rounds = 2;
        o.workload.n_threads = 2;
        o.progress = false;
    }
    RunResult run() { return run_explain(o, rr.env("explain")); }
};

const ExplainMeasure& measure_named(const ExplainSection& s, const std::string& id) {
    for (const auto& m : s.measures)
        if (m.id == id)
            return m;
    throw std::runtime_error("no measure " + id);
}

// Every level on its part, in the rounds' order, with the times the scripted parts take: the
// graph level's stages on the fake engine (100 µs per prompt token, 10 ms per decode step), the
// text generation's prefill of its templated prompt, the server's first token 10 ms + 100 µs
// per prompt token after the request and a token every 10 ms, the op profile on the fake rig.
TEST(ExplainCommand, EveryLevelRunsOnThePartsOfTheRunsEngineFactory) {
    ExplainRig x;
    const RunResult r = x.run();
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_TRUE(r.doc.explain.has_value());
    const ExplainSection& s = *r.doc.explain;
    EXPECT_EQ(s.server_kind, "llama-server");
    EXPECT_EQ(s.chat_template, "fake chat template");
    // The server stagebench started, once, for the model; stopped at the end.
    ASSERT_EQ(x.rr.engines.started().size(), 1u);
    EXPECT_EQ(x.rr.engines.started()[0]->spec.model, test::tiny_gguf());
    EXPECT_EQ(x.rr.engines.started()[0]->spec.binary, "fake-llama-server");
    EXPECT_TRUE(x.rr.engines.started()[0]->stopped);

    const ExplainMeasure& ops = measure_named(s, "ops");
    const ExplainMeasure& graph = measure_named(s, "graph");
    const ExplainMeasure& gen = measure_named(s, "generation");
    const ExplainMeasure& server = measure_named(s, "server");
    for (const ExplainMeasure* m : {&ops, &graph, &gen, &server}) {
        ASSERT_EQ(m->runs.size(), 2u) << m->id;
        for (const auto& run : m->runs)
            EXPECT_FALSE(run.error.has_value()) << m->id << ": " << *run.error;
    }
    // Forward in round 0, backward in round 1: ops first and last.
    const int n = static_cast<int>(s.order.size());
    EXPECT_EQ(ops.runs[0].sequence, 0);
    EXPECT_EQ(ops.runs[1].sequence, 2 * n - 1);
    EXPECT_EQ(server.runs[0].sequence, n - 1);
    EXPECT_EQ(server.runs[1].sequence, n);
    // Two op profiles, each on a rig of its own (huge pages as `ops` asks by default).
    EXPECT_EQ(x.rigs.made.size(), 2u);
    EXPECT_EQ(x.rr.engines.rig_huge_pages(), (std::vector<bool>{true, true}));
    for (const auto& run : graph.runs) {
        EXPECT_EQ(run.prefill_ns, 40 * 100'000.0);
        EXPECT_EQ(run.decode_ns, 10'000'000.0);
    }
    for (const auto& run : gen.runs) {
        ASSERT_TRUE(run.prompt_tokens.has_value());
        EXPECT_LE(*run.prompt_tokens, 40);
        EXPECT_EQ(run.prefill_ns, *run.prompt_tokens * 100'000.0);
        EXPECT_EQ(run.decode_ns, 10'000'000.0);
        EXPECT_EQ(run.output_tokens, 4);
        EXPECT_EQ(*run.end_ns - *run.start_ns, *run.prompt_tokens * 100'000 + 3 * 10'000'000);
    }
    for (const auto& run : server.runs) {
        ASSERT_TRUE(run.prompt_tokens.has_value());
        EXPECT_EQ(run.prefill_ns, 10'000'000 + *run.prompt_tokens * 100'000.0);
        EXPECT_EQ(run.decode_ns, 10'000'000.0);
        EXPECT_EQ(run.output_tokens, 4);
        for (const auto& note : run.notes)  // the server counted the prompt as level 3 did
            EXPECT_EQ(note.find("the server counted"), std::string::npos) << note;
    }
    // The warm-up and one request per server run, on level 4's connection, with explain's own
    // body: /v1/completions, the synthetic model's non-UTF-8 tokens banned.
    const auto& streamed = x.rr.engines.streamed();
    ASSERT_EQ(streamed.size(), 3u);
    for (const auto& q : streamed) {
        EXPECT_EQ(q.url, "http://fake-server-0");
        EXPECT_EQ(q.connection, 0u);
        EXPECT_EQ(q.spec.path, "/v1/completions");
        EXPECT_TRUE(q.spec.body["ignore_eos"].get<bool>());
        EXPECT_EQ(q.spec.body["logit_bias"].size(), 2u);
    }
    EXPECT_EQ(streamed[1].spec.body["max_tokens"], 4);
    EXPECT_EQ(streamed[1].spec.n_prompt, *server.runs[0].prompt_tokens);
}

// Levels 3 and 4 are tests of the one repetition loop: the runner's warm-up on a level's first
// run (min(n_gen, 8) = 4 tokens: the 8-word warm text generated in-process, 3 decode steps; a
// request of 4 tokens to the server), then one repetition whose times are the runner's stages,
// exact on the fake clock.
TEST(ExplainCommand, TheTextLevelsAreTestsOfTheRepetitionRunner) {
    ExplainRig x;
    const RunResult r = x.run();
    ASSERT_EQ(r.outcome, Outcome::ok);
    const ExplainSection& s = *r.doc.explain;
    const ExplainMeasure& gen = measure_named(s, "generation");
    ASSERT_EQ(gen.runs.size(), 2u);

    // The text generator's engine (made first): its warm-up generation, once, then each run's.
    std::vector<FakeCall> calls;
    for (const FakeCall& c : x.rr.tl.calls())
        if (c.engine == "llama0")
            calls.push_back(c);
    const auto warm = std::find_if(calls.begin(), calls.end(), [](const FakeCall& c) {
        return c.op == FakeOp::prefill && c.n_tokens == 9;  // "<user>" + 8 words + "</user>..."
    });
    ASSERT_NE(warm, calls.end());
    EXPECT_EQ(
        std::count_if(calls.begin(), calls.end(),
                      [](const FakeCall& c) { return c.op == FakeOp::prefill && c.n_tokens == 9; }),
        1);
    ASSERT_GE(calls.end() - warm, 6);
    EXPECT_EQ(warm[1].op, FakeOp::decode_step);
    EXPECT_EQ(warm[2].op, FakeOp::decode_step);
    EXPECT_EQ(warm[3].op, FakeOp::decode_step);
    EXPECT_EQ(warm[4].op, FakeOp::reset);
    // The first run's generation follows at once: its prefill starts the request, the runner's
    // stages give TTFT (the prefill) and the time per token after the first.
    const FakeCall& prefill = warm[5];
    ASSERT_EQ(prefill.op, FakeOp::prefill);
    const ExplainRun& run = gen.runs[0];
    EXPECT_EQ(*run.start_ns, prefill.start_ns);
    EXPECT_EQ(*run.prompt_tokens, prefill.n_tokens);
    EXPECT_EQ(*run.prefill_ns, prefill.n_tokens * 100'000.0);
    EXPECT_EQ(*run.end_ns, prefill.end_ns + 3 * 10'000'000);
    EXPECT_EQ(*run.decode_ns, 10'000'000.0);

    // Level 4's warm-up is the runner's: the first request, 4 tokens of the warm prompt.
    const auto& streamed = x.rr.engines.streamed();
    ASSERT_EQ(streamed.size(), 3u);
    EXPECT_EQ(streamed[0].spec.body["max_tokens"], 4);
    EXPECT_EQ(streamed[0].spec.n_prompt, 0);
    const ExplainMeasure& server = measure_named(s, "server");
    EXPECT_EQ(*server.runs[0].start_ns, streamed[1].start_ns);
    EXPECT_EQ(*server.runs[1].start_ns, streamed[2].start_ns);
}

// The server stagebench started stops during the first server run: that run's error says so
// (not "cannot connect"), and no request is sent to it again; the run fails.
TEST(ExplainCommand, AServerThatStoppedFailsTheServerLevelWithWhy) {
    ExplainRig x;
    const std::string why = "the llama-server stagebench started has stopped (killed by signal 9)";
    x.rr.engines.before_stream = [&](std::size_t, const GenerationStream::Spec&) {
        if (x.rr.engines.streamed().size() == 1) {  // after the warm-up
            x.rr.engines.started()[0]->ended = why;
            throw runtime_error("cannot connect to http://fake-server-0");
        }
    };
    const RunResult r = x.run();
    EXPECT_EQ(r.outcome, Outcome::failed);
    const ExplainMeasure& server = measure_named(*r.doc.explain, "server");
    ASSERT_EQ(server.runs.size(), 2u);
    for (const auto& run : server.runs)
        EXPECT_EQ(run.error, why);
    EXPECT_EQ(x.rr.engines.streamed().size(), 1u);  // the warm-up alone got through
    for (const auto& run : measure_named(*r.doc.explain, "graph").runs)
        EXPECT_FALSE(run.error.has_value());
}

// A server whose kind reports no settings (vLLM): none is read or measured alone, the finding
// names its kind, and the server levels are measured.
TEST(ExplainCommand, AServerWhoseKindReportsNoSettingsIsMeasuredWithoutThem) {
    ExplainRig x;
    const auto tokenize = x.rr.engines.setup;
    x.rr.engines.setup = [&](FakeEngine& e, EngineKind k) {
        tokenize(e, k);
        if (k == EngineKind::http)
            e.server_kind = &vllm_kind();
    };
    const RunResult r = x.run();
    EXPECT_EQ(r.outcome, Outcome::ok);
    const ExplainSection& s = *r.doc.explain;
    EXPECT_EQ(s.server_kind, "vllm");
    EXPECT_FALSE(s.settings_read);
    for (const auto& set : s.settings)
        EXPECT_FALSE(set.measure.has_value()) << set.name;
    bool finding = false;
    for (const auto& f : s.findings)
        finding = finding || f.message.find("is vllm, not llama-server") != std::string::npos;
    EXPECT_TRUE(finding);
    EXPECT_EQ(measure_named(s, "server").runs.size(), 2u);
}

}  // namespace
}  // namespace sb
