#include "scenario/sustained.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "engine/fake_engine.hpp"
#include "scenario/stage_sweep.hpp"

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

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kUs = 1'000;

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
    }
    const AcrossRounds& a = phase.across;
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(*a.throttle_onset_round, 6);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throttled at round 6");
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
