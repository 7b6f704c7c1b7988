// The one repetition loop on a scripted engine: every call, time and sample exactly, no wall
// clock. And the loop's statistics (robust rates, the CI target, the roofline's FLOPs).
#include "scenario/repetition.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "engine/fake_engine.hpp"
#include "scenario/stage_sweep.hpp"
#include "scenario/test_util.hpp"

using namespace sb;
using namespace sb::test;

namespace {

using sb::test::kMs;
using sb::test::kUs;
constexpr int64_t kT0 = 1'000'000'000;  // FakeTimeline's start

TestConfig small_test(int p, int n, int reps) {
    TestConfig c;
    c.model_path = "m.gguf";
    c.devices = "CPU";
    c.n_prompt = p;
    c.n_gen = n;
    c.reps = reps;
    c.max_reps = reps;
    c.seed = 7;
    return c;
}

// Scripted durations: load 5 ms, prefill 100 us per token, decode 10 ms (the defaults).
struct Rig {
    FakeTimeline tl;
    FakeEngine engine{tl, "E"};
    std::vector<std::string> events;  // stage marks and activities, in order
    SweepHooks hooks() {
        SweepHooks h;
        h.stage_marker = [this](const std::string& s, bool begin, std::optional<int64_t> tokens) {
            events.push_back((begin ? "begin " : "end ") + s +
                             (tokens ? " " + std::to_string(*tokens) : std::string()));
        };
        h.activity = [this](const char* what) { events.push_back(std::string("doing ") + what); };
        return h;
    }
    TestResult run(const TestConfig& c, RepetitionOptions o = {}) {
        o.clock = tl.clock();
        RepetitionRunner runner(engine, c, hooks(), std::move(o));
        while (runner.has_repeats_remaining())
            runner.do_one_repetition();
        return runner.results();
    }
    std::vector<std::string> ops() const {
        std::vector<std::string> v;
        for (const auto& c : tl.calls()) {
            std::string name = fake_op_name(c.op);
            if (c.op == FakeOp::prefill || c.op == FakeOp::fill_to_depth)
                name += ' ' + std::to_string(c.n_tokens);
            v.push_back(std::move(name));
        }
        return v;
    }
};

}  // namespace

TEST(RepetitionRunner, MeasuresEachStageFromTheEnginesTimestampsExactly) {
    Rig rig;
    const TestConfig c = small_test(4, 3, 2);
    const TestResult r = rig.run(c);

    EXPECT_EQ(rig.ops(), (std::vector<std::string>{
                             "load", "fill_to_depth 0", "prefill 4", "decode_step",  // warm-up
                             "fill_to_depth 0", "prefill 4", "decode_step", "decode_step",
                             "decode_step",  // repetition 1
                             "fill_to_depth 0", "prefill 4", "decode_step", "decode_step",
                             "decode_step"}));  // repetition 2
    EXPECT_EQ(rig.engine.loaded_spec().n_ctx, 4 + 3 + 8);
    EXPECT_EQ(rig.engine.loaded_spec().n_batch, 4);  // the prompt's cells (load_spec_for)
    EXPECT_EQ(rig.engine.loaded_spec().n_ubatch, 4);
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.stopped_by, StopReason::reps);
    EXPECT_EQ(r.reps_done, 2);
    EXPECT_EQ(r.backends, (std::vector<std::string>{"CPU"}));

    // Warm-up: load 5 ms, prefill 0.4 ms, one decode step 10 ms.
    const int64_t rep1 = kT0 + 5 * kMs + 400 * kUs + 10 * kMs;
    const int64_t rep2 = rep1 + 400 * kUs + 30 * kMs;
    ASSERT_TRUE(r.prefill && r.decode);
    EXPECT_EQ(r.prefill->n_tokens, 4);
    EXPECT_EQ(r.prefill->duration_ns, (std::vector<int64_t>{400 * kUs, 400 * kUs}));
    EXPECT_EQ(r.prefill->start_ns, (std::vector<int64_t>{rep1, rep2}));
    EXPECT_EQ(r.prefill->tokens_per_s, (std::vector<double>{10'000, 10'000}));
    EXPECT_EQ(r.decode->start_ns, (std::vector<int64_t>{rep1 + 400 * kUs, rep2 + 400 * kUs}));
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>{30 * kMs, 30 * kMs}));
    EXPECT_EQ(r.decode->token_latency_ns, (std::vector<int64_t>(6, 10 * kMs)));
    EXPECT_EQ(r.decode->token_latency_counts, (std::vector<int64_t>{3, 3}));
    EXPECT_EQ(r.decode->tokens_per_s, (std::vector<double>{100, 100}));
    EXPECT_EQ(r.decode->kv_depth_start, 4);
    EXPECT_EQ(r.ttft_ns, (std::vector<int64_t>{400 * kUs + 10 * kMs, 400 * kUs + 10 * kMs}));
    EXPECT_DOUBLE_EQ(*r.ttft.median, 10.4e6);
    EXPECT_DOUBLE_EQ(*r.decode->itl.median, 10e6);
    EXPECT_EQ(r.started_ns, kT0);
    EXPECT_EQ(r.finished_ns, rep2 + 400 * kUs + 30 * kMs);

    // Stage marks just outside the timed regions, in order, with the tokens on the end marks.
    EXPECT_EQ(rig.events, (std::vector<std::string>{
                              "doing loading the model", "doing warmup", "doing prefill",
                              "begin prefill", "end prefill 4", "doing decode", "begin decode",
                              "end decode 3", "doing prefill", "begin prefill", "end prefill 4",
                              "doing decode", "begin decode", "end decode 3"}));
}

TEST(RepetitionRunner, InputsAreSeededPerRepetitionAndStartWithBos) {
    Rig rig;
    rig.engine.bos = 5;
    const TestConfig c = small_test(6, 2, 2);
    rig.run(c);
    const auto prefills = rig.tl.calls_of(FakeOp::prefill);
    const auto decodes = rig.tl.calls_of(FakeOp::decode_step);
    ASSERT_EQ(prefills.size(), 3u);
    for (const auto& p : prefills)
        EXPECT_EQ(p.token, 5);  // the sequence starts at position 0
    // The warm-up decodes the BOS token; repetition k decodes random_tokens(gen_seed(seed, k)).
    ASSERT_EQ(decodes.size(), 5u);
    EXPECT_EQ(decodes[0].token, 5);
    for (int rep = 0; rep < 2; ++rep) {
        const auto gen = random_tokens(2, 1000, gen_seed(7, rep));
        EXPECT_EQ(decodes[1 + 2 * rep].token, gen[0]);
        EXPECT_EQ(decodes[2 + 2 * rep].token, gen[1]);
    }
    EXPECT_NE(random_tokens(6, 1000, prompt_seed(7, 0)), random_tokens(6, 1000, prompt_seed(7, 1)));
    EXPECT_EQ(prompt_seed(7, -1), 7u * 1000003 - 1);
    EXPECT_EQ(gen_seed(7, 3), 7u * 7919 + 3);
}

TEST(Workload, SequenceTokensAreTheRandomTokensWithBosFirstOnlyWhenGiven) {
    const auto r = random_tokens(5, 1000, 9);
    EXPECT_EQ(sequence_tokens(5, 1000, 9, std::nullopt), r);
    auto with_bos = r;
    with_bos[0] = 1;
    EXPECT_EQ(sequence_tokens(5, 1000, 9, 1), with_bos);
    EXPECT_TRUE(sequence_tokens(0, 1000, 9, 1).empty());
}

TEST(RepetitionRunner, AtDepthTheCacheIsFilledEveryRepetitionAndNoBosIsForced) {
    Rig rig;
    TestConfig c = small_test(4, 1, 1);
    c.n_depth = 32;
    c.warmup = false;
    const TestResult r = rig.run(c);
    EXPECT_EQ(rig.ops(),
              (std::vector<std::string>{"load", "fill_to_depth 32", "prefill 4", "decode_step"}));
    EXPECT_EQ(rig.tl.calls_of(FakeOp::prefill)[0].token,
              random_tokens(4, 1000, prompt_seed(7, 0))[0]);
    EXPECT_EQ(r.decode->kv_depth_start, 36);
    EXPECT_EQ(rig.engine.loaded_spec().n_ctx, 32 + 4 + 1 + 8);
    EXPECT_EQ(rig.engine.loaded_spec().n_batch, 32 + 4);
    EXPECT_EQ(rig.engine.loaded_spec().n_ubatch, 32 + 4);
    EXPECT_EQ(rig.events.front(), "doing loading the model");
    EXPECT_EQ(rig.events[1], "doing filling the KV cache");
}

TEST(RepetitionRunner, WithoutAPromptDecodeIsTimedAloneAtDepthAsLlamaBenchsTgTest) {
    // -p 0: the cache filled to the depth (restored from the engine's copy after the first
    // time), then the generated tokens alone; no prefill stage, no TTFT.
    Rig rig;
    TestConfig c = small_test(0, 2, 2);
    c.n_depth = 16;
    const TestResult r = rig.run(c);
    EXPECT_EQ(rig.ops(),
              (std::vector<std::string>{"load", "fill_to_depth 16", "decode_step",
                                        "fill_to_depth 16", "decode_step", "decode_step",
                                        "fill_to_depth 16", "decode_step", "decode_step"}));
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_FALSE(r.prefill);
    ASSERT_TRUE(r.decode);
    EXPECT_EQ(r.decode->kv_depth_start, 16);
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>{20 * kMs, 20 * kMs}));
    EXPECT_TRUE(r.ttft_ns.empty());
    EXPECT_EQ(r.config.test_name(), "tg2 @ d16");
    EXPECT_EQ(rig.engine.loaded_spec().n_batch, 16);  // the depth's cells
    c.n_depth = 0;
    EXPECT_EQ(load_spec_for(c).n_batch, 1);  // never 0: llama.cpp needs a batch of one
    EXPECT_EQ(load_spec_for(c).n_ubatch, 1);
}

TEST(LoadSpecFor, TheBatchesAreTheCellsBeforeDecodingAsInLlamaBenchsPromptTest) {
    // llama-bench's prompt test gets a context of depth + prompt cells, and llama.cpp clamps
    // the batch (-b) and the micro-batch (-ub) to it; the test's context holds the generated
    // tokens too, so its sizes are clamped here to the same cells.
    TestConfig c = small_test(512, 128, 1);
    LoadSpec s = load_spec_for(c);
    EXPECT_EQ(s.n_ctx, 512 + 128 + 8);
    EXPECT_EQ(s.n_batch, 512);  // not 648: the generated tokens are never a batch
    EXPECT_EQ(s.n_ubatch, 512);
    c.n_prompt = 64;
    s = load_spec_for(c);
    EXPECT_EQ(s.n_batch, 64);
    EXPECT_EQ(s.n_ubatch, 64);  // not 200: the prompt's own size
    c.n_depth = 4096;
    s = load_spec_for(c);
    EXPECT_EQ(s.n_batch, 2048);  // -b: the depth is filled in chunks of it
    EXPECT_EQ(s.n_ubatch, 512);
    c.n_depth = 0;
    c.n_prompt = 512;
    c.n_batch = 128;
    c.n_ubatch = 256;  // larger than the batch: llama.cpp would clamp it too
    s = load_spec_for(c);
    EXPECT_EQ(s.n_batch, 128);
    EXPECT_EQ(s.n_ubatch, 128);
}

TEST(RepetitionRunner, InterTokenLatenciesAndTtftAreTheScriptedTimes) {
    Rig rig;
    // Token k of every repetition takes 10 + k ms; prefill 2 ms per token.
    rig.engine.script().duration_ns = [](const FakeCall& call) -> int64_t {
        switch (call.op) {
            case FakeOp::prefill:
                return 2 * kMs * call.n_tokens;
            case FakeOp::decode_step:
                return (10 + (call.index == 0 ? 0 : (call.index - 1) % 4)) * kMs;
            default:
                return 0;
        }
    };
    const TestResult r = rig.run(small_test(3, 4, 3));
    std::vector<int64_t> want;
    for (int rep = 0; rep < 3; ++rep)
        for (int64_t k : {10, 11, 12, 13})
            want.push_back(k * kMs);
    EXPECT_EQ(r.decode->token_latency_ns, want);
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>(3, 46 * kMs)));
    EXPECT_EQ(r.ttft_ns, (std::vector<int64_t>(3, 6 * kMs + 10 * kMs)));
    EXPECT_DOUBLE_EQ(*r.decode->itl.median, 11.5e6);
    EXPECT_DOUBLE_EQ(*r.decode->itl.min, 10e6);
    EXPECT_DOUBLE_EQ(*r.decode->itl.max, 13e6);
    EXPECT_DOUBLE_EQ(*r.decode->robust.tokens_per_s, 1e9 / 11.5e6);
    EXPECT_DOUBLE_EQ(*r.prefill->throughput.median, 500);
}

TEST(RepetitionRunner, StopsAtTheCiTargetOnceTheMinimumIsReached) {
    // Identical repetitions: the robust CI has zero width, so the minimum is enough.
    Rig rig;
    TestConfig c = small_test(8, 4, 3);
    c.target_ci = 0.02;
    c.max_reps = 50;
    const TestResult r = rig.run(c);
    EXPECT_EQ(r.reps_done, 3);
    EXPECT_EQ(r.stopped_by, StopReason::target_ci);
    EXPECT_EQ(r.prefill->duration_ns.size(), 3u);
}

TEST(RepetitionRunner, NoisyStartRepeatsUntilTheFirstRepetitionThatMeetsTheTarget) {
    // The first four repetitions' prefills take 1, 3, 1, 3 ms per token, then every one 1 ms:
    // the runner must stop at the first repetition (>= reps) whose samples meet the target.
    auto prefill_ns = [](int rep) -> int64_t { return (rep < 4 && rep % 2 ? 3 : 1) * kMs; };
    Rig rig;
    rig.engine.script().duration_ns = [&](const FakeCall& call) -> int64_t {
        if (call.op == FakeOp::prefill)
            return call.index == 0 ? kMs : prefill_ns(call.index - 1) * call.n_tokens;
        return call.op == FakeOp::decode_step ? 10 * kMs : 0;
    };
    TestConfig c = small_test(2, 2, 3);
    c.target_ci = 0.05;
    c.max_reps = 40;
    const TestResult r = rig.run(c);

    // The same rule on the planted samples, repetition by repetition.
    TestResult probe;
    probe.prefill = prefill_of(2, {});
    probe.decode = decode_of(0, 2, std::nullopt, 0);
    int expect = 0;
    for (int rep = 0; rep < c.max_reps; ++rep) {
        probe.prefill->duration_ns.push_back(2 * prefill_ns(rep));
        probe.prefill->tokens_per_s.push_back(2 * 1e9 / (2 * prefill_ns(rep)));
        for (int k = 0; k < 2; ++k)
            probe.decode->token_latency_ns.push_back(10 * kMs);
        probe.decode->token_latency_counts.push_back(2);
        if (rep + 1 >= c.reps && target_ci_reached(probe, *c.target_ci)) {
            expect = rep + 1;
            break;
        }
    }
    ASSERT_GT(expect, c.reps);  // the noise made it repeat past the minimum
    ASSERT_LT(expect, c.max_reps);
    EXPECT_EQ(r.reps_done, expect);
    EXPECT_EQ(r.stopped_by, StopReason::target_ci);
    EXPECT_EQ(r.prefill->duration_ns, probe.prefill->duration_ns);
}

TEST(RepetitionRunner, StopsAtMaxRepsWhenTheTargetIsOutOfReach) {
    Rig rig;
    // Prefill alternates between 1 and 5 ms per token for ever.
    rig.engine.script().duration_ns = [](const FakeCall& call) -> int64_t {
        if (call.op == FakeOp::prefill)
            return (call.index % 2 ? 5 : 1) * kMs * call.n_tokens;
        return call.op == FakeOp::decode_step ? kMs : 0;
    };
    TestConfig c = small_test(2, 1, 2);
    c.target_ci = 0.001;
    c.max_reps = 7;
    const TestResult r = rig.run(c);
    EXPECT_EQ(r.reps_done, 7);
    EXPECT_EQ(r.stopped_by, StopReason::max_reps);
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::prefill).size(), 8u);  // warm-up + 7
}

TEST(RepetitionRunner, AnInterruptStopsBeforeTheNextRepetitionAndKeepsWhatWasMeasured) {
    Rig rig;
    RepetitionOptions o;
    // The interrupt comes during repetition 2 (the warm-up's decode step is the first).
    o.interrupted = [&] { return rig.tl.calls_of(FakeOp::decode_step).size() >= 5; };
    const TestResult r = rig.run(small_test(4, 2, 5), o);
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.stopped_by, StopReason::interrupt);
    EXPECT_EQ(r.reps_done, 2);
    EXPECT_EQ(r.prefill->duration_ns.size(), 2u);
    EXPECT_EQ(r.decode->token_latency_ns.size(), 4u);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::prefill).size(), 3u);
    EXPECT_FALSE(r.error);
}

TEST(RepetitionRunner, AnInterruptInsideALongDecodeStopsAtTheNextTokenKeepingTheTokensBefore) {
    Rig rig;
    RepetitionOptions o;
    // Repetition 2's tenth token (decode steps: the warm-up's, 100 of repetition 1, then 10).
    o.interrupted = [&] { return rig.tl.calls_of(FakeOp::decode_step).size() >= 111; };
    const TestResult r = rig.run(small_test(4, 100, 3), o);
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.stopped_by, StopReason::interrupt);
    EXPECT_EQ(rig.tl.calls_of(FakeOp::decode_step).size(), 111u);  // not 201
    EXPECT_EQ(r.reps_done, 2);                                     // the second one shorter
    EXPECT_EQ(r.prefill->duration_ns.size(), 2u);
    EXPECT_EQ(r.decode->token_latency_ns.size(), 110u);
    EXPECT_EQ(r.decode->token_latency_counts, (std::vector<int64_t>{100, 10}));
    ASSERT_EQ(r.decode->tokens_per_s.size(), 2u);
    EXPECT_DOUBLE_EQ(r.decode->tokens_per_s[1], 100.0);  // 10 tokens of 10 ms
    EXPECT_EQ(r.decode->duration_ns[1], 100 * kMs);
    EXPECT_EQ(
        r.notes,
        (std::vector<std::string>{"interrupted in repetition 2: its decode ran 10 of 100 tokens"}));
    EXPECT_FALSE(r.error);
}

TEST(RepetitionRunner, ADecodeStepAbortedByTheInterruptEndsTheDecodeKeepingTheStepsBefore) {
    Rig rig;
    bool stop = false;
    rig.engine.script().before = [&](const FakeCall& call) {
        // Repetition 2's tenth step (0: the warm-up's, 1-100: repetition 1's).
        if (call.op == FakeOp::decode_step && call.index == 110) {
            stop = true;  // llama.cpp's abort callback saw the flag inside the step
            throw runtime_error("interrupted (Ctrl-C) during decode");
        }
    };
    RepetitionOptions o;
    o.interrupted = [&] { return stop; };
    const TestResult r = rig.run(small_test(4, 100, 3), o);
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.reps_done, 2);
    EXPECT_EQ(r.decode->token_latency_counts, (std::vector<int64_t>{100, 9}));
    EXPECT_EQ(r.decode->duration_ns.size(), 2u);
    EXPECT_EQ(
        r.notes,
        (std::vector<std::string>{"interrupted in repetition 2: its decode ran 9 of 100 tokens"}));
}

TEST(RepetitionRunner, AStageAbortedByTheInterruptIsAnInterruptionNotAFailure) {
    Rig rig;
    bool stop = false;
    rig.engine.script().before = [&](const FakeCall& call) {
        if (call.op == FakeOp::prefill && call.index == 2) {  // repetition 2's
            stop = true;  // llama.cpp's abort callback saw the flag and gave up the prefill
            throw runtime_error("interrupted (Ctrl-C) during prefill");
        }
    };
    RepetitionOptions o;
    o.interrupted = [&] { return stop; };
    const TestResult r = rig.run(small_test(4, 2, 4), o);
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.stopped_by, StopReason::interrupt);
    EXPECT_FALSE(r.error_kind);
    EXPECT_EQ(r.reps_done, 1);
    EXPECT_EQ(r.prefill->duration_ns.size(), 1u);
}

TEST(RepetitionRunner, TheProcessInterruptFlagIsPolledByDefault) {
    Rig rig;
    rig.engine.script().before = [](const FakeCall& call) {
        if (call.op == FakeOp::decode_step && call.index == 1)
            request_interrupt();  // during the first measured repetition
    };
    const TestResult r = rig.run(small_test(4, 1, 3));
    clear_interrupt();
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.reps_done, 1);
}

TEST(RepetitionRunner, AFailedLoadIsRecordedNotThrown) {
    Rig rig;
    TestConfig c = small_test(4, 2, 3);
    c.model_path = "";  // the fake refuses it as input
    const TestResult r = rig.run(c);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.stopped_by, StopReason::error);
    EXPECT_EQ(r.error_kind, ErrorKind::input);
    EXPECT_EQ(r.error, "E: no model");
    EXPECT_EQ(r.reps_done, 0);
    EXPECT_FALSE(r.prefill);
    EXPECT_FALSE(r.decode);
    EXPECT_EQ(rig.ops(), (std::vector<std::string>{"load"}));
}

TEST(RepetitionRunner, AFailedPrefillStopsTheTestWithWhatCameBefore) {
    Rig rig;
    rig.engine.script().before = [](const FakeCall& call) {
        if (call.op == FakeOp::prefill && call.index == 2)  // repetition 2's
            throw runtime_error("llama_decode failed during prefill (code -3) at token 0");
    };
    const TestResult r = rig.run(small_test(4, 2, 4));
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error_kind, ErrorKind::runtime);
    EXPECT_EQ(r.error, "llama_decode failed during prefill (code -3) at token 0");
    EXPECT_EQ(r.reps_done, 1);
    EXPECT_EQ(r.prefill->duration_ns.size(), 1u);
    EXPECT_EQ(r.decode->duration_ns.size(), 1u);
    EXPECT_DOUBLE_EQ(*r.prefill->duration.median, 400e3);  // summaries of what was measured
    EXPECT_EQ(rig.tl.calls().back().op, FakeOp::prefill);  // nothing ran after the failure
}

TEST(RepetitionRunner, AFailureOnTheThirdDecodeStepKeepsTheTokensBeforeIt) {
    Rig rig;
    rig.engine.script().before = [](const FakeCall& call) {
        if (call.op == FakeOp::decode_step && call.index == 2)
            throw std::runtime_error("device lost");
    };
    // Decode steps: the warm-up's (0), then repetition 1's first (1) and second (2).
    const TestResult r = rig.run(small_test(4, 3, 2));
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error, "device lost");
    EXPECT_EQ(r.error_kind, ErrorKind::runtime);
    EXPECT_EQ(r.reps_done, 0);
    EXPECT_EQ(r.prefill->duration_ns.size(), 1u);
    EXPECT_TRUE(r.decode->duration_ns.empty());
    EXPECT_EQ(r.decode->token_latency_ns, (std::vector<int64_t>{10 * kMs}));
    EXPECT_TRUE(r.ttft_ns.empty());
}

TEST(RepetitionRunner, AFailingWarmupFailsTheTest) {
    Rig rig;
    rig.engine.script().before = [](const FakeCall& call) {
        if (call.op == FakeOp::decode_step)
            throw input_error("unknown KV cache type");
    };
    const TestResult r = rig.run(small_test(4, 3, 2));
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error_kind, ErrorKind::input);
    EXPECT_EQ(r.reps_done, 0);
    EXPECT_TRUE(r.prefill->duration_ns.empty());
}

TEST(RepetitionRunner, APlantedSlowRepetitionAndAStalledTokenAreStalls) {
    Rig rig;
    rig.engine.script().duration_ns = [](const FakeCall& call) -> int64_t {
        if (call.op == FakeOp::prefill)  // repetition 5 (call 5: the warm-up is call 0) 3x
            return (call.index == 5 ? 3 : 1) * kMs * call.n_tokens;
        if (call.op == FakeOp::decode_step)  // token 9 of the measured ones: 150 ms
            return call.index == 10 ? 150 * kMs : kMs;
        return 0;
    };
    const TestResult r = rig.run(small_test(100, 4, 7));
    EXPECT_EQ(r.prefill->stalls.indices, (std::vector<size_t>{4}));
    EXPECT_DOUBLE_EQ(r.prefill->stalls.excess, 200e6);
    EXPECT_EQ(r.decode->token_stalls.indices, (std::vector<size_t>{9}));
    EXPECT_DOUBLE_EQ(r.decode->token_stalls.excess, 149e6);
    EXPECT_EQ(r.decode->stalls.indices, (std::vector<size_t>{2}));
    // The robust rates stay at the typical repetition's.
    EXPECT_DOUBLE_EQ(*r.prefill->robust.tokens_per_s, 1000);
    EXPECT_DOUBLE_EQ(*r.decode->robust.tokens_per_s, 1000);
    ASSERT_TRUE(stall_warning(r));
}

TEST(RepetitionRunner, RooflineFromTheEnginesModelFacts) {
    Rig rig;
    rig.engine.weights = 1'000'000'000;
    rig.engine.kv_bytes_per_token = 1000;
    rig.engine.params = 1000;
    rig.engine.model_shape = ModelShape{2, 4, 10, 4};
    RepetitionOptions o;
    o.membw_gbps = 200;
    const TestResult r = rig.run(small_test(3, 4, 2), o);
    // Decode: 100 tokens/s; bytes per token = weights + KV at depth 3 + 4 / 2.
    EXPECT_DOUBLE_EQ(*r.roofline.decode_bytes_per_token, 1e9 + 5 * 1000);
    EXPECT_DOUBLE_EQ(*r.roofline.decode_bandwidth_gbps, (1e9 + 5000) * 100 / 1e9);
    EXPECT_DOUBLE_EQ(*r.roofline.decode_bandwidth_fraction, (1e9 + 5000) * 100 / 1e9 / 200);
    EXPECT_DOUBLE_EQ(*r.roofline.prefill_gflops,
                     prefill_flops(1000, *rig.engine.model_shape, 0, 3) / 300e3);
    // Without the facts, or when not asked: missing, not zero.
    Rig bare;
    const TestResult b = bare.run(small_test(3, 4, 2));
    EXPECT_FALSE(b.roofline.decode_bytes_per_token);
    EXPECT_FALSE(b.roofline.prefill_gflops);
    RepetitionOptions off;
    off.roofline = false;
    EXPECT_FALSE(rig.run(small_test(3, 4, 2), off).roofline.decode_bytes_per_token);
}

TEST(RepetitionRunner, TwoEnginesMoveTheStateAndTtftIncludesTheTransfer) {
    FakeTimeline tl;
    FakeEngine a(tl, "A"), b(tl, "B");
    a.backends = {"CPU"};
    b.backends = {"RPC0", "CPU"};
    for (FakeEngine* e : {&a, &b})
        e->load(load_spec_for(small_test(8, 2, 1)));
    b.script().duration_ns = [](const FakeCall& call) -> int64_t {
        return call.op == FakeOp::restore_state ? 3 * kMs : 20 * kMs;  // decode 20 ms on B
    };
    const int64_t t_start = tl.now_ns();
    std::vector<std::string> marks;
    SweepHooks h;
    h.stage_marker = [&](const std::string& s, bool begin, std::optional<int64_t>) {
        marks.push_back((begin ? "+" : "-") + s);
    };
    RepetitionOptions o;
    o.decode_engine = &b;
    o.load = false;
    o.clock = tl.clock();
    TestConfig c = small_test(8, 2, 2);
    RepetitionRunner runner(a, c, h, o);
    while (runner.has_repeats_remaining())
        runner.do_one_repetition();
    const TestResult r = runner.results();

    std::vector<std::string> seq;
    for (const auto& call : tl.calls())
        if (call.start_ns >= t_start)
            seq.push_back(call.engine + "." + fake_op_name(call.op));
    const std::vector<std::string> rep = {"A.fill_to_depth", "A.prefill",     "A.save_state",
                                          "B.restore_state", "B.decode_step", "B.decode_step"};
    std::vector<std::string> want = {"A.fill_to_depth", "A.prefill", "A.save_state",
                                     "B.restore_state", "B.decode_step"};  // warm-up
    for (int k = 0; k < 2; ++k)
        want.insert(want.end(), rep.begin(), rep.end());
    EXPECT_EQ(seq, want);
    EXPECT_EQ(marks, (std::vector<std::string>{"+prefill", "-prefill", "+transfer", "-transfer",
                                               "+decode", "-decode", "+prefill", "-prefill",
                                               "+transfer", "-transfer", "+decode", "-decode"}));
    EXPECT_EQ(r.backends, (std::vector<std::string>{"CPU", "RPC0"}));
    EXPECT_TRUE(r.notes.empty());

    const TransferSamples& t = runner.transfer();
    EXPECT_EQ(t.save_ns, (std::vector<int64_t>{kMs, kMs}));
    EXPECT_EQ(t.restore_ns, (std::vector<int64_t>{3 * kMs, 3 * kMs}));
    EXPECT_EQ(t.transfer_ns, (std::vector<int64_t>{4 * kMs, 4 * kMs}));
    EXPECT_EQ(t.bytes, (std::vector<int64_t>{8 * 1024, 8 * 1024}));
    ASSERT_EQ(t.start_ns.size(), 2u);
    EXPECT_EQ(t.start_ns[0], r.prefill->start_ns[0] + 800 * kUs);
    // Prefill 0.8 ms on A, the transfer 4 ms, the first token 20 ms on B.
    EXPECT_EQ(r.ttft_ns, (std::vector<int64_t>(2, 800 * kUs + 4 * kMs + 20 * kMs)));
    EXPECT_EQ(runner.e2e_ns(), (std::vector<int64_t>(2, 800 * kUs + 4 * kMs + 40 * kMs)));
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>(2, 40 * kMs)));
    EXPECT_EQ(b.n_cached(), 10);
}

TEST(RepetitionRunner, ADriverCanFailOrInterruptATestItself) {
    Rig rig;
    RepetitionOptions o;
    o.clock = rig.tl.clock();
    RepetitionRunner runner(rig.engine, small_test(4, 2, 5), {}, o);
    runner.do_one_repetition();
    EXPECT_TRUE(runner.has_repeats_remaining());
    runner.fail("the other mode failed: device lost", ErrorKind::runtime);
    EXPECT_FALSE(runner.has_repeats_remaining());
    const size_t calls = rig.tl.calls().size();
    runner.do_one_repetition();  // does nothing now
    EXPECT_EQ(rig.tl.calls().size(), calls);
    const TestResult r = runner.results();
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error_kind, ErrorKind::runtime);
    EXPECT_EQ(r.reps_done, 1);

    RepetitionRunner other(rig.engine, small_test(4, 2, 5), {}, o);
    other.prepare();
    other.interrupt();
    EXPECT_FALSE(other.has_repeats_remaining());
    EXPECT_EQ(other.results().stopped_by, StopReason::interrupt);
}

TEST(RepetitionRunner, AnEngineOfWholeRequestsIsMeasuredOneRequestPerRepetition) {
    Rig rig;
    rig.engine.whole_requests = true;
    rig.engine.backends.clear();  // a server does not say
    rig.engine.script().duration_ns = [](const FakeCall& c) -> int64_t {
        return c.op == FakeOp::request ? 40 * kMs : 0;  // TTFT
    };
    rig.engine.request_itl_ns = 5 * kMs;
    std::vector<std::pair<int, int>> reps;
    SweepHooks h = rig.hooks();
    h.repetition = [&](int rep, int of) { reps.emplace_back(rep, of); };
    RepetitionOptions o;
    o.load = false;
    o.clock = rig.tl.clock();
    const TestResult r = run_repetitions(rig.engine, small_test(100, 4, 2), h, o);

    // The warm-up asks for min(n_gen, 8) tokens; every repetition is one request.
    const auto requests = rig.tl.calls_of(FakeOp::request);
    ASSERT_EQ(requests.size(), 3u);
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.stopped_by, StopReason::reps);
    EXPECT_EQ(r.reps_done, 2);
    EXPECT_EQ(reps, (std::vector<std::pair<int, int>>{{1, 2}, {2, 2}}));
    // Stage marks around the request: prefill until the first token, decode after it.
    EXPECT_EQ(rig.events,
              (std::vector<std::string>{"doing warmup", "begin prefill", "end prefill 100",
                                        "begin decode", "end decode 3", "begin prefill",
                                        "end prefill 100", "begin decode", "end decode 3"}));
    // prefill = n_prompt / TTFT; decode = the 3 tokens after the first / (E2E - TTFT).
    ASSERT_TRUE(r.prefill && r.decode && r.client);
    EXPECT_EQ(r.prefill->duration_ns, (std::vector<int64_t>(2, 40 * kMs)));
    EXPECT_EQ(r.prefill->start_ns,
              (std::vector<int64_t>{requests[1].start_ns, requests[2].start_ns}));
    EXPECT_DOUBLE_EQ(*r.prefill->throughput.median, 2500);
    EXPECT_EQ(r.decode->n_tokens, 3);
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>(2, 15 * kMs)));
    EXPECT_EQ(r.decode->token_latency_ns, (std::vector<int64_t>(6, 5 * kMs)));
    EXPECT_EQ(r.ttft_ns, (std::vector<int64_t>(2, 40 * kMs)));
    EXPECT_EQ(r.client->e2e_ns, (std::vector<int64_t>(2, 55 * kMs)));
    EXPECT_EQ(r.client->tpot_ns, (std::vector<int64_t>(2, 5 * kMs)));
    EXPECT_FALSE(r.roofline.decode_bytes_per_token);
    EXPECT_TRUE(r.backends.empty());
}

TEST(RepetitionRunner, AFailedRequestHasNoKindAndOneCutOffByTheInterruptIsInterrupted) {
    Rig rig;
    rig.engine.whole_requests = true;
    rig.engine.script().before = [](const FakeCall& c) {
        if (c.op == FakeOp::request && c.index == 2)
            throw runtime_error("HTTP 500 from the server");
    };
    RepetitionOptions o;
    o.load = false;
    o.clock = rig.tl.clock();
    TestResult r = run_repetitions(rig.engine, small_test(8, 2, 3), {}, o);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.stopped_by, StopReason::error);
    EXPECT_EQ(r.error, "HTTP 500 from the server");
    EXPECT_FALSE(r.error_kind);
    EXPECT_EQ(r.reps_done, 1);
    EXPECT_EQ(r.prefill->duration_ns.size(), 1u);

    bool stop = false;
    Rig cut;
    cut.engine.whole_requests = true;
    cut.engine.script().before = [&](const FakeCall& c) {
        if (c.op == FakeOp::request && c.index == 1) {
            stop = true;  // Ctrl-C, and the wait on the server ends with an error
            throw runtime_error("interrupted");
        }
    };
    o.clock = cut.tl.clock();
    o.interrupted = [&] { return stop; };
    r = run_repetitions(cut.engine, small_test(8, 2, 3), {}, o);
    EXPECT_EQ(r.status, Status::interrupted);
    EXPECT_EQ(r.stopped_by, StopReason::interrupt);
    EXPECT_EQ(r.error, "interrupted");
    EXPECT_EQ(r.reps_done, 0);
    EXPECT_FALSE(r.prefill);  // nothing measured: no stage
}

// A round of something that is not an Engine (explain's levels 3 to 5) is measured as a request:
// the warm-up (rep -1, min(n_gen, 8) tokens) and each repetition are one call of the round, its
// stages, stalls and the test's start and end the runner's, on the run's clock.
TEST(RepetitionRunner, ARequestRoundIsMeasuredAsAnEngineOfWholeRequests) {
    FakeTimeline tl;
    std::vector<std::string> asked;
    RequestRound round = [&](const RequestSpec& q) {
        asked.push_back(std::to_string(q.rep) + ":" + std::to_string(q.n_gen));
        // TTFT 20 ms (60 ms in repetition 4), then a token every 2 ms.
        RequestMeasure m;
        m.start_ns = tl.now_ns();
        m.timing.ttft_ns = (q.rep == 4 ? 60 : 20) * kMs;
        m.timing.n_out = m.timing.n_streamed = q.n_gen;
        m.timing.itl_ns.assign(static_cast<size_t>(q.n_gen - 1), 2 * kMs);
        m.timing.e2e_ns = m.timing.ttft_ns + (q.n_gen - 1) * 2 * kMs;
        m.timing.tpot_ns = 2 * kMs;
        m.prompt_tokens = 30;
        tl.advance(m.timing.e2e_ns);
        return m;
    };
    TestConfig c = small_test(30, 10, 6);
    c.warmup = true;
    RepetitionOptions o;
    o.clock = tl.clock();
    RepetitionRunner runner(round, "generation", c, {}, o);
    while (runner.has_repeats_remaining())
        runner.do_one_repetition();
    tl.advance(kMs);
    const TestResult r = runner.results();

    EXPECT_EQ(asked,
              (std::vector<std::string>{"-1:8", "0:10", "1:10", "2:10", "3:10", "4:10", "5:10"}));
    EXPECT_EQ(r.status, Status::ok);
    EXPECT_EQ(r.reps_done, 6);
    EXPECT_EQ(r.started_ns, kT0);
    // The warm-up took 20 + 7 x 2 ms; each repetition 20 + 9 x 2 ms, the fifth 60 + 18.
    const int64_t warm = 34 * kMs, rep = 38 * kMs;
    ASSERT_TRUE(r.prefill && r.decode && r.client);
    EXPECT_EQ(r.prefill->start_ns,
              (std::vector<int64_t>{kT0 + warm, kT0 + warm + rep, kT0 + warm + 2 * rep,
                                    kT0 + warm + 3 * rep, kT0 + warm + 4 * rep,
                                    kT0 + warm + 5 * rep + 40 * kMs}));
    EXPECT_EQ(r.prefill->duration_ns,
              (std::vector<int64_t>{20 * kMs, 20 * kMs, 20 * kMs, 20 * kMs, 60 * kMs, 20 * kMs}));
    EXPECT_EQ(r.decode->duration_ns, (std::vector<int64_t>(6, 18 * kMs)));
    EXPECT_EQ(r.decode->n_tokens, 9);
    EXPECT_EQ(r.prefill->stalls.indices, (std::vector<size_t>{4}));
    EXPECT_DOUBLE_EQ(r.prefill->stalls.excess, 40e6);
    EXPECT_NEAR(*r.prefill->robust.tokens_per_s, 1500, 1e-9);  // 30 tokens in 20 ms
    EXPECT_EQ(r.finished_ns, kT0 + warm + 6 * rep + 40 * kMs + kMs);
    EXPECT_TRUE(r.backends.empty());
}

// A round that fails is the test's failure, recorded with its error (no kind: a request's).
TEST(RepetitionRunner, AFailingRequestRoundFailsTheTest) {
    FakeTimeline tl;
    RequestRound round = [&](const RequestSpec& q) -> RequestMeasure {
        if (q.rep == -1)
            throw runtime_error("the warm-up request failed");
        return {};
    };
    TestConfig c = small_test(30, 10, 1);
    c.warmup = true;
    RepetitionOptions o;
    o.clock = tl.clock();
    const TestResult r = run_repetitions(round, "server", c, {}, o);
    EXPECT_EQ(r.status, Status::failed);
    EXPECT_EQ(r.error, "the warm-up request failed");
    EXPECT_FALSE(r.error_kind);
    EXPECT_EQ(r.reps_done, 0);
}

TEST(RunTest, IsTheRunnerDrivenToTheEnd) {
    FakeTimeline tl;
    FakeEngine e(tl, "E");
    const TestResult r = run_test(e, small_test(4, 2, 3), {}, std::nullopt, tl.clock());
    EXPECT_EQ(r.reps_done, 3);
    EXPECT_EQ(r.stopped_by, StopReason::reps);
    EXPECT_EQ(r.prefill->duration_ns, (std::vector<int64_t>(3, 400 * kUs)));
    EXPECT_EQ(r.finished_ns, tl.now_ns());
}

TEST(PrefillFlops, DenseTermExcludesTheEmbeddingLookupAndAddsAttention) {
    ModelShape s;
    s.n_layer = 2;
    s.n_embd = 4;
    s.n_vocab = 10;
    s.n_attn = 4;
    // 1000 params, 40 of them the embedding; 3 tokens at depth 0: pairs = 1 + 2 + 3 = 6.
    const double expect = 2.0 * 960 * 3 + 2.0 * 40 + 4.0 * 2 * 4 * 6;
    EXPECT_DOUBLE_EQ(prefill_flops(1000, s, 0, 3), expect);
    // At depth 5 every query sees 5 more keys.
    EXPECT_DOUBLE_EQ(prefill_flops(1000, s, 5, 3) - expect, 4.0 * 2 * 4 * 15);
}

TEST(RobustRate, PrefillIsTokensOverTheMedianRepetitionAndCountsTheSlowOne) {
    StageResult s = prefill_of(512, {100'000'000, 101'000'000, 99'000'000, 100'000'000, 300'000'000,
                                     100'000'000, 100'000'000});
    finish_stage(s);
    ASSERT_TRUE(s.robust.tokens_per_s);
    EXPECT_DOUBLE_EQ(*s.robust.tokens_per_s, 512 / 0.1);
    ASSERT_TRUE(s.robust.ci95_lo && s.robust.ci95_hi && s.robust.ci95_half_rel);
    EXPECT_LE(*s.robust.ci95_lo, *s.robust.tokens_per_s);
    EXPECT_GE(*s.robust.ci95_hi, *s.robust.tokens_per_s);
    EXPECT_EQ(s.stalls.indices, (std::vector<size_t>{4}));
    EXPECT_DOUBLE_EQ(s.stalls.excess, 200'000'000);
    // The mean is pulled down by the slow repetition; the robust figure is not.
    EXPECT_LT(*s.throughput.mean, 0.95 * *s.robust.tokens_per_s);
}

TEST(RobustRate, DecodeIsTheMedianInterTokenLatencyGroupedByRepetition) {
    DecodeResult d = decode_of(5, 64, 130, 150'000'000);  // a 150 ms stall in repetition 3
    finish_decode(d);
    EXPECT_EQ(d.token_stalls.indices, (std::vector<size_t>{130}));
    EXPECT_EQ(d.token_stalls.n, 320u);
    ASSERT_TRUE(d.token_stalls.median);
    EXPECT_DOUBLE_EQ(d.token_stalls.excess, 150'000'000 - *d.token_stalls.median);
    EXPECT_EQ(d.itl.n, 320u);
    ASSERT_TRUE(d.robust.tokens_per_s && d.robust.ci95_half_rel);
    EXPECT_DOUBLE_EQ(*d.robust.tokens_per_s, 1e9 / *d.itl.median);
    EXPECT_LT(*d.robust.ci95_half_rel, 0.01);
    EXPECT_LT(*d.throughput.mean, 0.9 * *d.robust.tokens_per_s);
    // Without counts, repetitions of n_tokens are assumed.
    DecodeResult e = decode_of(5, 64, 130, 150'000'000);
    e.token_latency_counts.clear();
    finish_decode(e);
    EXPECT_EQ(e.robust.ci95_lo, d.robust.ci95_lo);
    EXPECT_EQ(e.robust.ci95_hi, d.robust.ci95_hi);
}

TEST(TargetCi, HoldsTheRobustFigureNotTheMean) {
    // Twenty prefill repetitions, one stalled: the mean's CI is wide, the median's narrow.
    std::vector<int64_t> dur(20, 100'000'000);
    for (size_t i = 0; i < dur.size(); ++i)
        dur[i] += static_cast<int64_t>(i % 4) * 200'000;
    dur[7] = 400'000'000;
    TestResult r;
    r.prefill = prefill_of(512, dur);
    r.decode = decode_of(5, 64, 70, 200'000'000);
    const Summary mean = summarize(r.prefill->tokens_per_s);
    ASSERT_TRUE(mean.ci95_half_rel);
    EXPECT_GT(*mean.ci95_half_rel, 0.05);
    EXPECT_TRUE(target_ci_reached(r, 0.02));
    EXPECT_FALSE(target_ci_reached(r, 0.0001));

    TestConfig c;
    c.reps = 3;
    c.max_reps = 50;
    c.target_ci = 0.02;
    Repetitions reps(test_repeat_rule(r, c));
    for (int64_t d : dur)
        reps.add(d);
    EXPECT_FALSE(reps.has_repeats_remaining()) << "the rule asks the robust figure's CI";
    r.reps_done = 20;
    record_stop_reason(r, c);
    EXPECT_EQ(r.stopped_by, StopReason::target_ci);
    c.target_ci = 0.0001;
    EXPECT_TRUE(reps.has_repeats_remaining());
}

// The one rounds loop: every measure once per round, forward then backward, each run numbered
// in sequence; the interrupt is polled before every run.
TEST(InterleavedRounds, HandsOutEveryRunInTheAlternatingOrder) {
    int polls = 0;
    InterleavedRounds rounds(3, 2, [&] {
        ++polls;
        return false;
    });
    std::vector<std::string> runs;
    while (rounds.has_runs_remaining()) {
        const InterleavedRounds::Run r = rounds.next();
        runs.push_back(std::to_string(r.round) + ":" + std::to_string(r.index) + "#" +
                       std::to_string(r.sequence));
    }
    EXPECT_EQ(runs,
              (std::vector<std::string>{"0:0#0", "0:1#1", "0:2#2", "1:2#3", "1:1#4", "1:0#5"}));
    EXPECT_EQ(polls, 6);
    EXPECT_FALSE(rounds.interrupted());
    EXPECT_FALSE(rounds.has_runs_remaining());
}

TEST(InterleavedRounds, AnInterruptStopsBeforeTheNextRunForGood) {
    int ran = 0;
    InterleavedRounds rounds(2, 5, [&] { return ran == 3; });
    while (rounds.has_runs_remaining()) {
        rounds.next();
        ++ran;
    }
    EXPECT_EQ(ran, 3);
    EXPECT_TRUE(rounds.interrupted());
    ran = 0;  // the poll would let it go on: an interrupt seen stays
    EXPECT_FALSE(rounds.has_runs_remaining());
    // Without a poll of its own it asks core/interrupt.hpp.
    clear_interrupt();
    InterleavedRounds plain(1, 1);
    request_interrupt();
    EXPECT_FALSE(plain.has_runs_remaining());
    EXPECT_TRUE(plain.interrupted());
    clear_interrupt();
    InterleavedRounds none(2, 0);
    EXPECT_FALSE(none.has_runs_remaining());
    EXPECT_FALSE(none.interrupted());
}
