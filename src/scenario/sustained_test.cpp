#include "scenario/sustained.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "engine/fake_engine.hpp"
#include "scenario/ops_test_rig.hpp"
#include "scenario/stage_sweep.hpp"
#include "scenario/test_util.hpp"

using namespace sb;

TEST(Cooldown, ParsesEveryPolicy) {
    EXPECT_EQ(parse_cooldown("0").kind, CooldownPolicy::Kind::none);
    auto f = parse_cooldown("10s");
    EXPECT_EQ(f.kind, CooldownPolicy::Kind::fixed);
    EXPECT_DOUBLE_EQ(f.seconds, 10);
    EXPECT_DOUBLE_EQ(parse_cooldown("250ms").seconds, 0.25);
    auto t = parse_cooldown("until-temp:45C");
    EXPECT_EQ(t.kind, CooldownPolicy::Kind::until_temp);
    EXPECT_DOUBLE_EQ(t.target_c, 45);
    for (const char* bad : {"soon", "-1s", "until-temp:", "until-temp:hot", "10x",
                            "until-temp:0x2DC", "until-temp:nan", "until-temp: 45"})
        EXPECT_THROW(parse_cooldown(bad), Error) << bad;
}

TEST(TraceOpsRounds, ParsesNumbersAndLast) {
    EXPECT_TRUE(parse_trace_ops_rounds("", 20).empty());
    EXPECT_EQ(parse_trace_ops_rounds("1,20", 20), (std::set<int>{1, 20}));
    EXPECT_EQ(parse_trace_ops_rounds("1,last", 20), (std::set<int>{1, 20}));
    EXPECT_EQ(parse_trace_ops_rounds("last", 3), (std::set<int>{3}));
    EXPECT_EQ(parse_trace_ops_rounds("3,1,3", 3), (std::set<int>{1, 3}));
    for (const char* bad :
         {"0", "21", "1,,2", ",1", "1,", "x", "-1", "1.5", "first", " 1", "99999999999"})
        EXPECT_THROW(parse_trace_ops_rounds(bad, 20), Error) << bad;
    try {
        parse_trace_ops_rounds("1,25", 20);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_NE(std::string(e.what()).find("1..20"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

TEST(TraceOpsRounds, ARoundCarriesItsTracedPassOnlyWhenChosen) {
    SustainedRound r;
    r.round = 2;
    const nlohmann::json plain = to_json(r);
    EXPECT_FALSE(plain.contains("ops"));
    r.ops.emplace().label = "traced pass after round 2";
    nlohmann::json traced = to_json(r);
    ASSERT_TRUE(traced.contains("ops"));
    EXPECT_EQ(traced["ops"]["label"], "traced pass after round 2");
    traced.erase("ops");
    EXPECT_EQ(traced, plain);
}

namespace {

using sb::test::kMs;
using sb::test::kUs;

TestConfig workload() {
    TestConfig c;
    c.model_path = "m.gguf";
    c.n_prompt = 16;
    c.n_gen = 8;
    c.reps = c.max_reps = 1;
    return c;
}

}  // namespace

TEST(SustainedRounds, ThrottlingOnsetIsThePlantedRound) {
    FakeTimeline tl;
    FakeEngine e(tl, "E");
    int round = 0;
    // Decode takes twice as long from round 6 on; prefill 100 us per token throughout.
    e.script().duration_ns = [&](const FakeCall& call) -> int64_t {
        if (call.op == FakeOp::decode_step)
            return (round >= 6 ? 20 : 10) * kMs;
        return call.op == FakeOp::prefill ? 100 * kUs * call.n_tokens : 0;
    };
    std::vector<int> cooled;
    RoundHooks h;
    h.cooldown = [&](int r) {
        cooled.push_back(r);
        return 0.25;
    };
    h.measure = [&](const TestConfig& c) {
        ++round;
        return run_test(e, c, {}, std::nullopt, tl.clock());
    };
    h.interrupted = [] { return false; };
    std::vector<int> after;
    h.after_round = [&](int r) { after.push_back(r); };
    SustainedPhase phase;
    const PhaseOutcome out = run_phase_rounds(workload(), 10, phase, h);

    EXPECT_EQ(out.failed, 0);
    EXPECT_FALSE(out.bad_input);
    ASSERT_EQ(phase.rounds.size(), 10u);
    for (int i = 0; i < 10; ++i) {
        const SustainedRound& r = phase.rounds[static_cast<size_t>(i)];
        EXPECT_EQ(r.round, i + 1);
        EXPECT_EQ(r.status, Status::ok);
        EXPECT_DOUBLE_EQ(*r.decode_tps, i + 1 >= 6 ? 50 : 100) << "round " << i + 1;
        EXPECT_DOUBLE_EQ(*r.prefill_tps, 10'000);
        EXPECT_DOUBLE_EQ(*r.ttft_ms, (1.6e6 + (i + 1 >= 6 ? 20e6 : 10e6)) * 1e-6);
        EXPECT_DOUBLE_EQ(*r.itl_p50_ms, i + 1 >= 6 ? 20 : 10);
        EXPECT_DOUBLE_EQ(r.cooldown_s, i == 0 ? 0 : 0.25);
        // The request end to end: 16 prompt tokens in 1.6 ms, 8 generated in 80 or 160 ms.
        const double e2e_s = 1.6e-3 + (i + 1 >= 6 ? 160e-3 : 80e-3);
        EXPECT_DOUBLE_EQ(*r.e2e_s, e2e_s);
        EXPECT_EQ(r.prompt_tokens, 16);
        EXPECT_EQ(r.generated_tokens, 8);
        EXPECT_DOUBLE_EQ(*r.combined_tps, 24 / e2e_s);
    }
    const AcrossRounds& a = phase.across;
    // No clock or temperature was read: the drop is not called throttling.
    EXPECT_EQ(a.drop_round, 6);
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throughput dropped at round 6 (no clock or temperature evidence)");
    EXPECT_NEAR(*a.e2e_s.mean, 1.6e-3 + (5 * 80e-3 + 5 * 160e-3) / 10, 1e-12);
    EXPECT_DOUBLE_EQ(*a.steady_decode_tps, 50);
    EXPECT_DOUBLE_EQ(*a.peak_to_steady, 2);
    EXPECT_DOUBLE_EQ(*a.first_last_change, -0.5);
    EXPECT_EQ(cooled, (std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(after, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
    // One warm-up before the phase, none between rounds.
    EXPECT_EQ(tl.calls_of(FakeOp::decode_step).size(), 1u + 10 * 8);
    EXPECT_EQ(tl.calls_of(FakeOp::prefill).size(), 1u + 10);
}

TEST(SustainedRounds, ABadInputRoundEndsThePhaseAndAnInterruptStopsIt) {
    FakeTimeline tl;
    FakeEngine e(tl, "E");
    int round = 0;
    e.script().before = [&](const FakeCall& call) {
        if (call.op == FakeOp::load && round == 3)
            throw input_error("unknown KV cache type 'q9'");
    };
    RoundHooks h;
    h.measure = [&](const TestConfig& c) {
        ++round;
        return run_test(e, c, {}, std::nullopt, tl.clock());
    };
    h.interrupted = [] { return false; };
    std::vector<std::string> seen;
    h.round_done = [&](int r, TestResult& t, SustainedRound& sr) {
        seen.push_back(std::to_string(r) + " " + to_string(t.status) + " " + to_string(sr.status));
    };
    SustainedPhase phase;
    PhaseOutcome out = run_phase_rounds(workload(), 10, phase, h);
    EXPECT_TRUE(out.bad_input);
    EXPECT_EQ(out.failed, 1);
    ASSERT_EQ(phase.rounds.size(), 3u);
    EXPECT_EQ(phase.rounds[2].status, Status::failed);
    EXPECT_EQ(phase.rounds[2].error, "unknown KV cache type 'q9'");
    EXPECT_FALSE(phase.rounds[2].decode_tps);
    EXPECT_EQ(seen, (std::vector<std::string>{"1 ok ok", "2 ok ok", "3 failed failed"}));
    // The failed round holds no throughput: the summary is of the two good ones.
    EXPECT_EQ(phase.across.decode_tps.n, 2u);

    // An interrupt before round 5: four rounds.
    FakeTimeline tl2;
    FakeEngine e2(tl2, "E");
    int done = 0;
    RoundHooks h2;
    h2.measure = [&](const TestConfig& c) {
        ++done;
        return run_test(e2, c, {}, std::nullopt, tl2.clock());
    };
    h2.interrupted = [&] { return done >= 4; };
    SustainedPhase phase2;
    out = run_phase_rounds(workload(), 10, phase2, h2);
    EXPECT_EQ(phase2.rounds.size(), 4u);
    EXPECT_EQ(out.failed, 0);
}

TEST(SustainedRounds, ARoundRecordIsTheFirstRepetitionOfItsTest) {
    TestResult t;
    t.started_ns = 5;
    t.finished_ns = 9;
    record_failure(t, "RPC server gone", std::nullopt);
    SustainedRound r = round_record(t, 4);
    EXPECT_EQ(r.round, 4);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error, "RPC server gone");
    EXPECT_EQ(r.start_ns, 5);
    EXPECT_EQ(r.end_ns, 9);
    EXPECT_FALSE(r.prefill_tps || r.decode_tps || r.ttft_ms || r.itl_p50_ms);
}

namespace {

// run_sustained's options for the tiny model on scripted engines.
SustainedOptions sustained_options(int rounds) {
    SustainedOptions o;
    o.workload.model_path = test::tiny_gguf();
    o.workload.n_threads = 2;
    o.rounds = rounds;
    o.prompt_tokens = 8;
    o.max_tokens = 4;
    o.telemetry.mode = TelemetryMode::off;
    o.progress = false;
    return o;
}

}  // namespace

TEST(SustainedRun, EveryRoundIsATestAndAScriptedSlowdownIsFoundAtItsRound) {
    clear_interrupt();
    test::TempDir dir;
    test::RunRig rig;
    // Decode takes twice as long from round 4 on: decode steps 1..12 are rounds 1-3 (after the
    // warm-up's step 0).
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().duration_ns = [](const FakeCall& c) -> int64_t {
            if (c.op == FakeOp::decode_step)
                return (c.index > 12 ? 20 : 10) * kMs;
            return c.op == FakeOp::prefill ? 100 * kUs * c.n_tokens : 0;
        };
    };
    SustainedOptions o = sustained_options(6);
    o.out_path = dir.file("s.json");
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(rig.engines.made(), 1);
    ASSERT_EQ(r.doc.tests.size(), 6u);
    for (int i = 0; i < 6; ++i) {
        const TestResult& t = r.doc.tests[static_cast<size_t>(i)];
        EXPECT_EQ(t.notes.back(), "sustained rounds round " + std::to_string(i + 1));
        EXPECT_EQ(t.config.warmup, i == 0);  // one warm-up before the phase
        EXPECT_EQ(t.decode->tokens_per_s, std::vector<double>{i < 3 ? 100.0 : 50.0});
    }
    ASSERT_TRUE(r.doc.sustained);
    const SustainedResult& s = *r.doc.sustained;
    EXPECT_EQ(s.config.rounds, 6);
    EXPECT_EQ(s.config.devices, "CPU");
    ASSERT_EQ(s.phases.size(), 1u);
    const SustainedPhase& ph = s.phases[0];
    EXPECT_EQ(ph.name, "rounds");
    ASSERT_EQ(ph.rounds.size(), 6u);
    for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(ph.rounds[static_cast<size_t>(i)].round, i + 1);
        EXPECT_DOUBLE_EQ(*ph.rounds[static_cast<size_t>(i)].decode_tps, i < 3 ? 100 : 50);
        EXPECT_DOUBLE_EQ(*ph.rounds[static_cast<size_t>(i)].ttft_ms, 0.8 + (i < 3 ? 10.0 : 20.0));
    }
    // The engine is scripted, no sensor: a drop, not throttling (no clock or temperature
    // evidence at the change point).
    EXPECT_FALSE(ph.across.throttle_onset_round);
    ASSERT_TRUE(ph.across.drop_round);
    EXPECT_EQ(*ph.across.drop_round, 4);
    EXPECT_EQ(ph.across.verdict.rfind("throughput dropped at round 4 (no clock or temperature "
                                      "evidence",
                                      0),
              0u)
        << ph.across.verdict;
    EXPECT_EQ(ph.across.verdict.find("throttled"), std::string::npos) << ph.across.verdict;
    EXPECT_DOUBLE_EQ(*ph.across.peak_to_steady, 2);
    // The rounds are on disk as they were returned.
    const ResultDocument back = load_result_document(*o.out_path);
    ASSERT_TRUE(back.sustained);
    EXPECT_EQ(back.sustained->phases[0].across.drop_round, 4);
    EXPECT_EQ(back.tests.size(), 6u);
}

TEST(SustainedRun, AFailedTracedPassFailsTheRunAndIsKeptWithItsRound) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(3);
    o.trace_ops_rounds = "2";
    std::vector<std::string> passes;
    o.traced_pass = [&](const TestConfig& w, const std::string& label,
                        const std::function<void(const std::string&)>&) {
        passes.push_back(label + " of pp" + std::to_string(w.n_prompt));
        RoundTracedPass p;
        p.label = label;
        p.status = PassStatus::error;
        p.error = "no such op";
        return p;
    };
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(passes, (std::vector<std::string>{"traced pass after round 2 of pp8"}));
    const SustainedPhase& ph = r.doc.sustained->phases[0];
    ASSERT_EQ(ph.rounds.size(), 3u);
    EXPECT_FALSE(ph.rounds[0].ops);
    ASSERT_TRUE(ph.rounds[1].ops);
    EXPECT_EQ(ph.rounds[1].ops->status, PassStatus::error);
    EXPECT_EQ(to_json(ph.rounds[1])["ops"]["status"], "error");
    // Every round ran and is ok; the pass's failure makes the run's outcome failed.
    for (const auto& t : r.doc.tests)
        EXPECT_EQ(t.status, Status::ok);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(rig.err.str().find("stagebench: rounds traced pass after round 2 failed: no such op"),
              std::string::npos)
        << rig.err.str();
}

// Without a scripted pass, --trace-ops-rounds traces on the op rig of the run's engine factory,
// on the run's clock, after the chosen round and outside its measured time.
TEST(SustainedRun, ATracedRoundRunsOnTheFactorysRigOnTheRunsClock) {
    clear_interrupt();
    test::RunRig rig;
    test::ScriptedOpRigs rigs;
    rigs.install(rig.engines, rig.tl);
    SustainedOptions o = sustained_options(3);
    o.trace_ops_rounds = "2";
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(rigs.made.size(), 1u);
    EXPECT_EQ(rigs.made[0].tracer->loaded.model_path, test::tiny_gguf());
    EXPECT_EQ(rigs.made[0].tracer->loaded.n_threads, 2);
    const SustainedPhase& ph = r.doc.sustained->phases[0];
    ASSERT_EQ(ph.rounds.size(), 3u);
    EXPECT_FALSE(ph.rounds[0].ops);
    EXPECT_FALSE(ph.rounds[2].ops);
    ASSERT_TRUE(ph.rounds[1].ops);
    const RoundTracedPass& pass = *ph.rounds[1].ops;
    EXPECT_EQ(pass.status, PassStatus::ok) << pass.error.value_or("");
    EXPECT_EQ(pass.label, "traced pass after round 2");
    ASSERT_EQ(pass.stages.size(), 2u);
    // The pass's window is its rig's calls on the fake timeline: after round 2's test ended,
    // before round 3's began.
    int64_t first = -1, last = -1;
    for (const FakeCall& c : rig.tl.calls())
        if (c.engine == rigs.made[0].engine) {
            if (first < 0)
                first = c.start_ns;
            last = c.end_ns;
        }
    EXPECT_EQ(pass.start_ns, first);
    EXPECT_EQ(pass.end_ns, last);
    EXPECT_GE(pass.start_ns, r.doc.tests[1].finished_ns);
    EXPECT_LE(pass.end_ns, r.doc.tests[2].started_ns);
    int rig_loads = 0;  // the rig's engine loads once (by its tracer)
    for (const FakeCall& c : rig.tl.calls_of(FakeOp::load))
        rig_loads += c.engine == rigs.made[0].engine;
    EXPECT_EQ(rig_loads, 1);
}

TEST(SustainedRun, CtrlCEndsThePhaseAfterTheRoundItCameIn) {
    clear_interrupt();
    test::RunRig rig;
    rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::prefill && c.index == 3)  // round 3's prefill
                request_interrupt();
        };
    };
    const RunResult r = run_sustained(sustained_options(10), rig.env("sustained"));
    clear_interrupt();
    EXPECT_EQ(r.doc.tests.size(), 3u);
    EXPECT_EQ(r.doc.sustained->phases[0].rounds.size(), 3u);
    EXPECT_EQ(r.outcome, Outcome::interrupted);
}

TEST(SustainedRun, TheLastWordRecordsTheRoundAsATestAndAsThePhasesNextRound) {
    clear_interrupt();
    test::RunRig rig;
    std::optional<std::string> line;
    rig.engines.setup = [&](FakeEngine& e, EngineKind) {
        e.script().before = [&](const FakeCall& c) {
            if (c.op == FakeOp::prefill && c.index == 3)  // round 3
                line = say_last_words("ggml.c:1: Remote RPC server crashed");
        };
    };
    std::vector<ResultDocument> kept;
    RunEnv env = rig.env("sustained");
    env.on_last_word = [&](const ResultDocument& d) { kept.push_back(d); };
    run_sustained(sustained_options(5), std::move(env));
    ASSERT_TRUE(line);
    EXPECT_EQ(*line,
              "rounds round 3 failed: llama.cpp stopped during prefill: Remote RPC server "
              "crashed; 2 earlier test(s) kept");
    ASSERT_EQ(kept.size(), 1u);
    ASSERT_EQ(kept[0].tests.size(), 3u);
    EXPECT_EQ(kept[0].tests[2].status, Status::failed);
    EXPECT_EQ(kept[0].tests[2].notes, (std::vector<std::string>{"sustained rounds round 3"}));
    const SustainedPhase& ph = kept[0].sustained->phases[0];
    ASSERT_EQ(ph.rounds.size(), 3u);
    EXPECT_EQ(ph.rounds[2].round, 3);
    EXPECT_EQ(ph.rounds[2].status, Status::failed);
}

// --engine http --url: the rounds ask the run's HTTP side as `run` does (HttpRun::measure), on
// the server the factory connects; every round one whole request (the first after a warm-up),
// no in-process engine made.
TEST(SustainedRun, OverHttpEveryRoundIsAWholeRequestToTheFactorysServer) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(3);
    o.workload.model_path = "served-model";  // a name on the server: nothing to inspect
    o.http.engines = {EngineKind::http};
    o.http.url = "http://127.0.0.1:9";
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(rig.engines.made(), 1);
    ASSERT_EQ(rig.engines.servers().size(), 1u);
    EXPECT_EQ(rig.engines.servers()[0].url, "http://127.0.0.1:9");
    EXPECT_EQ(r.doc.engines["http"]["started_by_stagebench"], false);
    // The warm-up request before round 1 and one request per round.
    EXPECT_EQ(rig.tl.calls_of(FakeOp::request).size(), 4u);
    ASSERT_EQ(r.doc.tests.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        const TestResult& t = r.doc.tests[static_cast<size_t>(i)];
        EXPECT_EQ(t.status, Status::ok) << t.error.value_or("");
        EXPECT_EQ(t.config.engine, EngineKind::http);
        EXPECT_EQ(t.config.devices.str(), "HTTP");
        EXPECT_EQ(t.config.model_path, "served-model");
        EXPECT_EQ(t.config.n_threads, 0);  // the server's threads are its own
        EXPECT_EQ(t.config.warmup, i == 0);
        EXPECT_EQ(t.config.reps, 1);
        // The fake server: TTFT 10 ms + 100 us per prompt token, then 10 ms per token.
        EXPECT_EQ(t.ttft_ns, std::vector<int64_t>{10800 * kUs});
        EXPECT_EQ(t.client->e2e_ns, std::vector<int64_t>{10800 * kUs + 30 * kMs});
        EXPECT_EQ(t.notes.back(), "sustained rounds round " + std::to_string(i + 1));
    }
    const SustainedPhase& ph = r.doc.sustained->phases[0];
    ASSERT_EQ(ph.rounds.size(), 3u);
    for (const SustainedRound& sr : ph.rounds) {
        EXPECT_EQ(sr.status, Status::ok);
        EXPECT_DOUBLE_EQ(*sr.ttft_ms, 10.8);
        EXPECT_DOUBLE_EQ(*sr.decode_tps, 100);  // 3 tokens after the first in 30 ms
    }
}

// --engine http -m FILE: the llama-server stagebench starts comes from the factory once, for
// the rounds' model and threads, with --chunk as every round's batch; it is stopped at the end.
TEST(SustainedRun, OverHttpWithoutUrlTheRoundsRunOnTheServerTheFactoryStarts) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(2);
    o.http.engines = {EngineKind::http};
    o.chunk = 4;
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    ASSERT_EQ(rig.engines.started().size(), 1u);
    const FakeServerState& srv = *rig.engines.started()[0];
    EXPECT_EQ(srv.spec.model, test::tiny_gguf());
    EXPECT_EQ(srv.spec.threads, 2);
    EXPECT_EQ(srv.spec.n_ctx, 8 + 4 + 64);
    EXPECT_TRUE(srv.stopped);
    EXPECT_EQ(r.doc.engines["http"]["started_by_stagebench"], true);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::request).size(), 3u);
    ASSERT_EQ(r.doc.tests.size(), 2u);
    for (const TestResult& t : r.doc.tests) {
        EXPECT_EQ(t.status, Status::ok) << t.error.value_or("");
        EXPECT_EQ(t.config.engine, EngineKind::http);
        EXPECT_EQ(t.config.n_threads, 2);
        EXPECT_EQ(t.config.n_batch, 4);
        EXPECT_EQ(t.config.n_ubatch, 4);
        EXPECT_EQ(t.ttft_ns, std::vector<int64_t>{10800 * kUs});
        EXPECT_TRUE(std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) {
            return n.rfind("HTTP tests ran on a llama-server that stagebench started", 0) == 0;
        }));
    }
    EXPECT_EQ(r.doc.sustained->phases[0].rounds.size(), 2u);
}

// In-process, a round's test is the workload the options name, whole (planned by the HTTP
// run's matrix as `run` plans its tests), with --chunk as its batch and one repetition.
TEST(SustainedRun, InProcessEveryRoundIsTheOptionsWorkloadOnTheFactorysEngine) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(2);
    o.workload.n_gpu_layers = 7;
    o.workload.flash_attn = FlashAttn::on;
    o.workload.type_k = KvType::q8_0;
    o.workload.type_v = KvType::q4_0;
    o.chunk = 1024;
    o.seed = 9;
    const RunResult r = run_sustained(o, rig.env("sustained"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(rig.engines.made(), 1);
    EXPECT_TRUE(rig.engines.servers().empty());
    EXPECT_EQ(r.doc.engines["llama"]["in_process"], true);
    ASSERT_EQ(r.doc.tests.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        TestConfig want;
        want.model_path = test::tiny_gguf();
        want.devices = "CPU";
        want.n_gpu_layers = 7;
        want.flash_attn = FlashAttn::on;
        want.type_k = KvType::q8_0;
        want.type_v = KvType::q4_0;
        want.n_threads = 2;
        want.n_batch = 1024;
        want.n_ubatch = 512;
        want.n_prompt = 8;
        want.n_gen = 4;
        want.reps = want.max_reps = 1;
        want.warmup = i == 0;
        want.seed = 9;
        const TestConfig& got = r.doc.tests[static_cast<size_t>(i)].config;
        EXPECT_EQ(to_json(got), to_json(want)) << "round " << i + 1;
    }
}

// The phase's start is read on the hooks' clock before its first round; every round's
// frequency series is asked for from there.
TEST(SustainedRounds, ThePhaseStartsOnTheHooksClock) {
    FakeTimeline tl;
    FakeEngine e(tl, "E");
    tl.advance(123);
    RoundHooks h;
    h.clock = tl.clock();
    h.measure = [&](const TestConfig& c) { return run_test(e, c, {}, std::nullopt, tl.clock()); };
    h.interrupted = [] { return false; };
    std::vector<int64_t> since;
    h.freq_series = [&](int64_t since_ns) {
        since.push_back(since_ns);
        return std::vector<TelemetrySeries>{};
    };
    SustainedPhase phase;
    run_phase_rounds(workload(), 3, phase, h);
    EXPECT_EQ(since, std::vector<int64_t>(3, 1'000'000'123));
    ASSERT_EQ(phase.rounds.size(), 3u);
    EXPECT_EQ(phase.rounds[0].start_ns, 1'000'000'123);
}

// --cooldown 10s waits on the run's clock: on the fake timeline exactly 10 s pass between one
// round's end and the next one's start, and each later round records exactly 10 s.
TEST(SustainedRun, TheCoolDownWaitsOnTheRunsClock) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(3);
    o.cooldown = "10s";
    int64_t paused = 0;
    RunEnv env = rig.env("sustained");
    env.pause = [&](int64_t ns) {
        paused += ns;
        rig.tl.advance(ns);
    };
    const RunResult r = run_sustained(o, std::move(env));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(paused, 20'000 * kMs);
    const SustainedPhase& ph = r.doc.sustained->phases[0];
    ASSERT_EQ(ph.rounds.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
        EXPECT_DOUBLE_EQ(ph.rounds[i].cooldown_s, i == 0 ? 0 : 10) << "round " << i + 1;
    ASSERT_EQ(r.doc.tests.size(), 3u);
    for (size_t i = 1; i < 3; ++i)
        EXPECT_EQ(r.doc.tests[i].started_ns - r.doc.tests[i - 1].finished_ns, 10'000 * kMs);
}

// The cool-down waits in slices of at most 100 ms: Ctrl-C one second into it ends the wait
// there, and no further round runs.
TEST(SustainedRun, CtrlCDuringTheCoolDownEndsItWithinASlice) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(3);
    o.cooldown = "10s";
    std::vector<int64_t> slices;
    RunEnv env = rig.env("sustained");
    env.pause = [&](int64_t ns) {
        slices.push_back(ns);
        rig.tl.advance(ns);
        if (slices.size() == 10)
            request_interrupt();
    };
    const RunResult r = run_sustained(o, std::move(env));
    clear_interrupt();
    EXPECT_EQ(slices, std::vector<int64_t>(10, 100 * kMs));
    EXPECT_EQ(r.outcome, Outcome::interrupted);
    EXPECT_EQ(r.doc.tests.size(), 1u);
    EXPECT_EQ(r.doc.sustained->phases[0].rounds.size(), 1u);
}

// --url is for a server: with the in-process engine it is bad input, before anything runs, as
// `run` has it (HttpRun checks both).
TEST(SustainedRun, AUrlWithTheInProcessEngineIsBadInput) {
    clear_interrupt();
    test::RunRig rig;
    SustainedOptions o = sustained_options(2);
    o.http.url = "http://127.0.0.1:9";
    try {
        run_sustained(o, rig.env("sustained"));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(), "--url needs --engine http");
    }
    EXPECT_EQ(rig.engines.made(), 0);
    EXPECT_TRUE(rig.tl.calls().empty());
}
