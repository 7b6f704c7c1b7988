// run_benchmark end to end on scripted engines (engine/fake_engine.hpp): the sweep, the
// document, the saves and the outcome, with every time from the fake clock.
#include "scenario/run_command.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

using test::RunRig;
using test::TempDir;
using test::tiny_gguf;

using sb::test::kMs;
using sb::test::kUs;

// The sweep's options: the tiny model on the CPU, nothing measured but the engines.
RunOptions sweep(std::vector<int> n_prompt, std::vector<int> n_gen, int reps) {
    RunOptions o;
    o.matrix.models = {tiny_gguf()};
    o.matrix.n_prompt = std::move(n_prompt);
    o.matrix.n_gen = std::move(n_gen);
    o.matrix.n_threads = {2};
    o.matrix.reps = reps;
    o.membw = "off";
    o.telemetry.mode = TelemetryMode::off;
    o.progress = false;
    return o;
}

// Hears the run as the CLI's reporter does.
struct Heard : RunListener {
    std::vector<std::string> events;
    void begin(const ResultDocument&) override { events.push_back("begin"); }
    void test_done(const ResultDocument& doc, const TestResult& t) override {
        events.push_back(t.config.test_name() + " " + to_string(t.status) + " of " +
                         std::to_string(doc.tests.size()));
    }
    void end(const ResultDocument&) override { events.push_back("end"); }
};

// Every test is cleared of an interrupt a test before it may have requested.
class RunBenchmark : public ::testing::Test {
  protected:
    void SetUp() override { clear_interrupt(); }
    void TearDown() override { clear_interrupt(); }
};

TEST_F(RunBenchmark, EveryTestsRepetitionsAreTheFakeClocksTimesAndReachTheListenerAndTheFile) {
    TempDir dir;
    RunRig rig;
    RunOptions o = sweep({8, 16}, {4}, 3);
    o.out_path = dir.file("r.json");
    Heard heard;
    RunEnv env = rig.env("run");
    env.listener = &heard;
    const RunResult r = run_benchmark(o, std::move(env));

    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_FALSE(r.error);
    EXPECT_EQ(exit_code_of(r.outcome), 0);
    EXPECT_EQ(heard.events,
              (std::vector<std::string>{"begin", "pp8+tg4 ok of 1", "pp16+tg4 ok of 2", "end"}));
    ASSERT_EQ(r.doc.tests.size(), 2u);
    // One in-process engine for the sweep, made by the factory.
    EXPECT_EQ(rig.engines.made(), 1);
    EXPECT_EQ(r.doc.engines["llama"]["name"], "llama.cpp");
    for (int i = 0; i < 2; ++i) {
        const TestResult& t = r.doc.tests[static_cast<size_t>(i)];
        const int p = i == 0 ? 8 : 16;
        EXPECT_EQ(t.status, Status::ok);
        EXPECT_EQ(t.reps_done, 3);
        EXPECT_EQ(t.stopped_by, StopReason::reps);
        // Prefill 100 us per token, decode 10 ms per token (the fake's defaults).
        EXPECT_EQ(t.prefill->duration_ns, std::vector<int64_t>(3, p * 100 * kUs));
        EXPECT_EQ(t.prefill->tokens_per_s, std::vector<double>(3, 10'000.0));
        EXPECT_EQ(t.decode->token_latency_ns, std::vector<int64_t>(12, 10 * kMs));
        EXPECT_EQ(t.decode->tokens_per_s, std::vector<double>(3, 100.0));
        EXPECT_DOUBLE_EQ(*t.decode->robust.tokens_per_s, 100.0);
        EXPECT_EQ(t.ttft_ns, std::vector<int64_t>(3, p * 100 * kUs + 10 * kMs));
        EXPECT_EQ(t.decode->stalls.count(), 0u);
        EXPECT_GE(t.started_ns, 1'000'000'000);  // on the fake clock
        EXPECT_GT(t.finished_ns, t.started_ns);
    }
    // A warm-up and three repetitions per test; the second test starts where the first ended.
    EXPECT_EQ(rig.tl.calls_of(FakeOp::prefill).size(), 8u);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::decode_step).size(), 2u * (1 + 3 * 4));
    EXPECT_EQ(r.doc.tests[1].started_ns, r.doc.tests[0].finished_ns);
    // The one save path wrote the final document.
    const ResultDocument back = load_result_document(*o.out_path);
    ASSERT_EQ(back.tests.size(), 2u);
    EXPECT_EQ(back.tests[1].prefill->duration_ns, r.doc.tests[1].prefill->duration_ns);
    EXPECT_EQ(back.command, "run");
}

TEST_F(RunBenchmark, AStalledTokenIsCountedWarnedAndLeftOutOfTheRobustRate) {
    RunRig rig;
    // Decode step 6 (after the warm-up's one: repetition 2, its second token) takes 100 ms.
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().duration_ns = [](const FakeCall& c) -> int64_t {
            if (c.op == FakeOp::decode_step)
                return c.index == 6 ? 100 * kMs : 10 * kMs;
            return c.op == FakeOp::prefill ? 100 * kUs * c.n_tokens : 0;
        };
    };
    const RunResult r = run_benchmark(sweep({8}, {4}, 3), rig.env());
    ASSERT_EQ(r.doc.tests.size(), 1u);
    const DecodeResult& d = *r.doc.tests[0].decode;
    EXPECT_EQ(d.token_latency_ns,
              (std::vector<int64_t>{10 * kMs, 10 * kMs, 10 * kMs, 10 * kMs, 10 * kMs, 100 * kMs,
                                    10 * kMs, 10 * kMs, 10 * kMs, 10 * kMs, 10 * kMs, 10 * kMs}));
    EXPECT_EQ(d.token_stalls.indices, (std::vector<size_t>{5}));
    EXPECT_DOUBLE_EQ(d.token_stalls.excess, 90.0 * kMs);
    EXPECT_EQ(d.duration_ns, (std::vector<int64_t>{40 * kMs, 130 * kMs, 40 * kMs}));
    // The median inter-token latency ignores the stall: 100 tokens/s.
    EXPECT_DOUBLE_EQ(*d.robust.tokens_per_s, 100.0);
    EXPECT_DOUBLE_EQ(*d.throughput.mean, (100.0 + 4e9 / (130.0 * kMs) + 100.0) / 3);
    std::vector<Warning> stalls;
    for (const auto& w : r.doc.warnings)
        if (w.code == "stalls")
            stalls.push_back(w);
    ASSERT_EQ(stalls.size(), 1u);
    EXPECT_NE(stalls[0].message.find("pp8+tg4 on CPU: 1 of 12 decode tokens stalled, 90.0 ms "
                                     "added (42.9 % of the stage)"),
              std::string::npos)
        << stalls[0].message;
    EXPECT_EQ(r.outcome, Outcome::ok);
}

TEST_F(RunBenchmark, ATestThatFailsMidSweepIsRecordedAndTheSweepGoesOn) {
    RunRig rig;
    // The second test's first measured prefill: the device goes away.
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::prefill && c.n_tokens == 16 && c.index == 4)
                throw runtime_error("device lost");
        };
    };
    RunOptions o = sweep({8, 16, 32}, {2}, 2);
    o.progress = true;
    const RunResult r = run_benchmark(o, rig.env());
    ASSERT_EQ(r.doc.tests.size(), 3u);
    EXPECT_EQ(r.doc.tests[0].status, Status::ok);
    const TestResult& failed = r.doc.tests[1];
    EXPECT_EQ(failed.status, Status::failed);
    EXPECT_EQ(failed.error, "device lost");
    EXPECT_EQ(failed.error_kind, ErrorKind::runtime);
    EXPECT_EQ(failed.stopped_by, StopReason::error);
    EXPECT_EQ(failed.reps_done, 0);  // it failed in its first repetition
    EXPECT_EQ(r.doc.tests[2].status, Status::ok);
    EXPECT_EQ(r.doc.tests[2].reps_done, 2);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_EQ(exit_code_of(r.outcome), 1);
    EXPECT_NE(rig.err.str().find("stagebench: test pp16+tg2 on CPU failed: device lost\n"),
              std::string::npos)
        << rig.err.str();
}

TEST_F(RunBenchmark, ATestThatFailsOnBadInputMakesTheOutcomeBadInputAndTheOthersRun) {
    RunRig rig;
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::load && c.index == 1)
                throw input_error("llama.cpp could not create a context");
        };
    };
    const RunResult r = run_benchmark(sweep({8, 16, 32}, {2}, 1), rig.env());
    ASSERT_EQ(r.doc.tests.size(), 3u);
    EXPECT_EQ(r.doc.tests[1].status, Status::failed);
    EXPECT_EQ(r.doc.tests[1].error_kind, ErrorKind::input);
    EXPECT_TRUE(failed_on_bad_input(r.doc.tests[1]));
    EXPECT_EQ(r.doc.tests[2].status, Status::ok);
    EXPECT_EQ(r.outcome, Outcome::bad_input);
    EXPECT_EQ(exit_code_of(r.outcome), 2);
}

TEST_F(RunBenchmark, CtrlCStopsAtTheNextRepetitionAndKeepsWhatWasMeasured) {
    TempDir dir;
    RunRig rig;
    // Ctrl-C during the second test's second repetition (its prefill): that repetition ends, no
    // third follows, and no third test starts.
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::prefill && c.n_tokens == 16 && c.index == 6)
                request_interrupt();
        };
    };
    RunOptions o = sweep({8, 16, 32}, {2}, 3);
    o.out_path = dir.file("r.json");
    const RunResult r = run_benchmark(o, rig.env());
    ASSERT_EQ(r.doc.tests.size(), 2u);
    EXPECT_EQ(r.doc.tests[0].status, Status::ok);
    const TestResult& cut = r.doc.tests[1];
    EXPECT_EQ(cut.status, Status::interrupted);
    EXPECT_EQ(cut.stopped_by, StopReason::interrupt);
    EXPECT_EQ(cut.reps_done, 2);
    EXPECT_EQ(cut.prefill->duration_ns, std::vector<int64_t>(2, 1600 * kUs));
    EXPECT_EQ(rig.tl.calls_of(FakeOp::prefill).size(), 4u + 3u);  // no third test
    EXPECT_EQ(r.outcome, Outcome::interrupted);
    EXPECT_EQ(exit_code_of(r.outcome), 1);
    // Said even with progress off (-q), and the file has both tests.
    EXPECT_NE(rig.err.str().find("stagebench: interrupted; 2 test(s) kept in " + *o.out_path),
              std::string::npos)
        << rig.err.str();
    EXPECT_EQ(load_result_document(*o.out_path).tests.size(), 2u);
}

TEST_F(RunBenchmark, AnOutputThatCannotBeWrittenMidRunStopsItAndTheResultKeepsTheTests) {
    TempDir dir;
    const std::string sub = dir.file("out");
    std::filesystem::create_directory(sub);
    RunRig rig;
    // The first save after a test fails: the folder of --out is gone by then.
    rig.engines.setup = [&](FakeEngine& e, EngineKind) {
        e.script().before = [&](const FakeCall& c) {
            if (c.op == FakeOp::load && c.index == 0)
                std::filesystem::remove_all(sub);
        };
    };
    RunOptions o = sweep({8, 16, 32}, {2}, 1);
    o.out_path = sub + "/r.json";
    const RunResult r = run_benchmark(o, rig.env());
    ASSERT_TRUE(r.error);
    EXPECT_NE(std::string(r.error->what()).find(*o.out_path), std::string::npos) << r.error->what();
    EXPECT_EQ(r.doc.tests.size(), 1u);  // the run stopped after the test whose save failed
    EXPECT_EQ(r.doc.tests[0].status, Status::ok);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(rig.err.str().find("stagebench: saving " + *o.out_path + " failed: "),
              std::string::npos)
        << rig.err.str();
}

TEST_F(RunBenchmark, AServerBehindHttpComesFromTheFactoryAndIsMeasuredByWholeRequests) {
    RunRig rig;
    RunOptions o = sweep({8}, {3}, 2);
    o.matrix.models = {"served-model"};  // a name on the server: nothing to inspect
    o.http.engines = {EngineKind::http};
    o.http.url = "http://127.0.0.1:9";
    const RunResult r = run_benchmark(o, rig.env());
    ASSERT_EQ(rig.engines.servers().size(), 1u);
    EXPECT_EQ(rig.engines.servers()[0].url, "http://127.0.0.1:9");
    EXPECT_EQ(rig.engines.servers()[0].timeouts.read_ms, 120'000);
    ASSERT_EQ(r.doc.tests.size(), 1u);
    const TestResult& t = r.doc.tests[0];
    EXPECT_EQ(t.config.engine, EngineKind::http);
    EXPECT_EQ(t.config.devices.str(), "HTTP");
    EXPECT_EQ(t.status, Status::ok);
    // The fake server: TTFT 100 us per prompt token + 10 ms, then 10 ms per token.
    EXPECT_EQ(t.ttft_ns, std::vector<int64_t>(2, 10800 * kUs));
    EXPECT_EQ(t.client->e2e_ns, std::vector<int64_t>(2, 10800 * kUs + 20 * kMs));
    EXPECT_EQ(t.decode->token_latency_ns, std::vector<int64_t>(4, 10 * kMs));
    EXPECT_EQ(r.doc.engines["http"]["started_by_stagebench"], false);
    EXPECT_EQ(r.doc.engines["http"]["api"], "openai");
    ASSERT_EQ(r.doc.models.size(), 1u);
    EXPECT_EQ(r.doc.models[0]["path"], "served-model");
    EXPECT_EQ(r.outcome, Outcome::ok);
}

// --engine http without --url: the llama-server stagebench starts comes from the run's engine
// factory, once per model and thread count, with the run's context and the model's ban; its
// tests are whole requests on its client, and it is stopped at the end.
TEST_F(RunBenchmark, TheServerStagebenchStartsComesFromTheFactoryOncePerModelAndThreads) {
    RunRig rig;
    RunOptions o = sweep({8, 16}, {3}, 2);
    o.http.engines = {EngineKind::http};
    const RunResult r = run_benchmark(o, rig.env());
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(rig.engines.started().size(), 1u);
    const FakeServerState& srv = *rig.engines.started()[0];
    EXPECT_EQ(srv.spec.binary, "fake-llama-server");
    EXPECT_EQ(srv.spec.model, tiny_gguf());
    EXPECT_EQ(srv.spec.threads, 2);
    EXPECT_EQ(srv.spec.n_ctx, 16 + 3 + 64);
    EXPECT_TRUE(srv.stopped);
    // Its client: one engine, at its URL.
    ASSERT_EQ(rig.engines.servers().size(), 1u);
    EXPECT_EQ(rig.engines.servers()[0].url, "http://fake-server-0");
    EXPECT_EQ(rig.engines.servers()[0].banned_tokens, srv.spec.banned_tokens);
    EXPECT_EQ(r.doc.engines["http"]["started_by_stagebench"], true);
    EXPECT_EQ(r.doc.engines["http"]["binary"], "fake-llama-server");
    ASSERT_EQ(r.doc.tests.size(), 2u);
    for (const TestResult& t : r.doc.tests) {
        EXPECT_EQ(t.status, Status::ok) << t.error.value_or("");
        EXPECT_EQ(t.ttft_ns, std::vector<int64_t>(2, 10 * kMs + t.config.n_prompt * 100 * kUs));
        EXPECT_TRUE(std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) {
            return n.rfind("HTTP tests ran on a llama-server that stagebench started", 0) == 0;
        }));
    }
    // Each test's warm-up request and its two repetitions, on the one server.
    EXPECT_EQ(rig.tl.calls_of(FakeOp::request).size(), 6u);
}

// A server that does not start fails its tests, recorded with why; the sweep goes on.
TEST_F(RunBenchmark, AServerThatDoesNotStartFailsItsTests) {
    RunRig rig;
    RunOptions o = sweep({8}, {3}, 1);
    o.http.engines = {EngineKind::http};
    rig.engines.before_start = [](const LlamaServerSpec&) {
        throw input_error("llama-server could not start on 'x': unknown model architecture");
    };
    const RunResult r = run_benchmark(o, rig.env());
    EXPECT_EQ(r.outcome, Outcome::failed);
    ASSERT_EQ(r.doc.tests.size(), 1u);
    EXPECT_EQ(r.doc.tests[0].status, Status::failed);
    EXPECT_EQ(r.doc.tests[0].error,
              "llama-server could not start on 'x': unknown model architecture");
    EXPECT_TRUE(rig.engines.started().empty());
}

// Without a server program, a run that needs one is bad input before anything is measured.
TEST_F(RunBenchmark, NoServerProgramIsBadInputBeforeAnything) {
    RunRig rig;
    RunOptions o = sweep({8}, {3}, 1);
    o.http.engines = {EngineKind::llama, EngineKind::http};
    rig.engines.program = "";
    try {
        run_benchmark(o, rig.env());
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_EQ(std::string(e.what()).rfind("llama-server not found", 0), 0u) << e.what();
    }
    EXPECT_TRUE(rig.tl.calls().empty());
}

TEST_F(RunBenchmark, TheLastWordRecordsTheRunningTestSavesAndHandsTheDocumentToTheCommand) {
    TempDir dir;
    RunRig rig;
    // llama.cpp stops the process in the second test's prefill (as ggml_abort would, from
    // inside the call): the run context's last word speaks.
    std::optional<std::string> line;
    rig.engines.setup = [&](FakeEngine& e, EngineKind) {
        e.script().before = [&](const FakeCall& c) {
            if (c.op == FakeOp::prefill && c.n_tokens == 16 && c.index == 3)
                line = say_last_words("ggml.c:1: Remote RPC server crashed");
        };
    };
    std::vector<ResultDocument> kept;
    RunOptions o = sweep({8, 16}, {2}, 2);
    o.out_path = dir.file("r.json");
    RunEnv env = rig.env("run");
    env.on_last_word = [&](const ResultDocument& d) { kept.push_back(d); };
    run_benchmark(o, std::move(env));
    ASSERT_TRUE(line);
    EXPECT_EQ(*line,
              "test pp16+tg2 on CPU failed: llama.cpp stopped during warmup: Remote RPC server "
              "crashed; 1 earlier test(s) kept in " +
                  *o.out_path);
    ASSERT_EQ(kept.size(), 1u);
    ASSERT_EQ(kept[0].tests.size(), 2u);
    EXPECT_EQ(kept[0].tests[0].status, Status::ok);
    const TestResult& stopped = kept[0].tests[1];
    EXPECT_EQ(stopped.status, Status::failed);
    EXPECT_FALSE(stopped.error_kind);  // a stop inside llama.cpp: its kind is not known
    EXPECT_EQ(stopped.config.n_prompt, 16);
    EXPECT_GT(stopped.started_ns, 0);
}

TEST_F(RunBenchmark, BadInputBeforeTheFirstTestThrowsAndMeasuresNothing) {
    RunRig rig;
    RunOptions o = sweep({8}, {2}, 1);
    o.matrix.models = {"/nonexistent/model.gguf"};
    EXPECT_THROW(run_benchmark(o, rig.env()), Error);
    EXPECT_EQ(rig.engines.made(), 0);
    EXPECT_TRUE(rig.tl.calls().empty());
}

}  // namespace
}  // namespace sb
