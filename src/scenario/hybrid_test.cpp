#include "scenario/hybrid.hpp"

#include <gtest/gtest.h>

#include "core/document.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "engine/fake_engine.hpp"
#include "scenario/logits.hpp"
#include "scenario/test_util.hpp"

namespace sb {
namespace {

using nlohmann::json;

using sb::test::kMs;
using sb::test::kUs;

// Two fake engines on one timeline: A prefills fast (100 us per token) and decodes slowly
// (20 ms), B the other way round (1 ms per token, 5 ms); A saves a state in 1 ms, B restores it
// in 2 ms.
struct HybridRig {
    FakeTimeline tl;
    FakeEngine a{tl, "A"}, b{tl, "B"};
    HybridOptions o;
    std::vector<std::string> progress;
    HybridRig() {
        a.script().duration_ns = [](const FakeCall& c) -> int64_t {
            if (c.op == FakeOp::prefill)
                return 100 * kUs * c.n_tokens;
            return c.op == FakeOp::decode_step ? 20 * kMs : c.op == FakeOp::save_state ? kMs : 0;
        };
        b.script().duration_ns = [](const FakeCall& c) -> int64_t {
            if (c.op == FakeOp::prefill)
                return kMs * c.n_tokens;
            return c.op == FakeOp::decode_step     ? 5 * kMs
                   : c.op == FakeOp::restore_state ? 2 * kMs
                                                   : 0;
        };
        o.workload.model_path = "m.gguf";
        o.reps = 3;
        o.placement = Placement{"CPU", "RPC0"};
        const TestConfig room = hybrid_test_config(o, "CPU", 64, 16);
        a.load(load_spec_for(room));
        b.load(load_spec_for(room));
    }
    std::vector<HybridMode> modes(int p, int n) {
        return make_hybrid_modes(
            a, b, o, p, n, [](size_t, const TestConfig&) { return SweepHooks{}; }, tl.clock());
    }
    bool run(
        std::vector<HybridMode>& m, std::function<bool()> interrupted = [] { return false; }) {
        return run_interleaved(m, interrupted,
                               [this](const std::string& s) { progress.push_back(s); });
    }
    // The mode of every prefill from `from` on: which engine prefilled and which decoded next.
    std::vector<std::string> mode_order(size_t from) const {
        std::vector<std::string> out;
        const auto& calls = tl.calls();
        for (size_t i = from; i < calls.size(); ++i) {
            if (calls[i].op != FakeOp::prefill)
                continue;
            for (size_t j = i + 1; j < calls.size(); ++j)
                if (calls[j].op == FakeOp::decode_step) {
                    const std::string pre = calls[i].engine, dec = calls[j].engine;
                    out.push_back(pre != dec   ? kHybridMode
                                  : pre == "A" ? kPrefillAloneMode
                                               : kDecodeAloneMode);
                    break;
                }
        }
        return out;
    }
};

TEST(HybridPoint, WarmsUpEveryModeThenInterleavesThemInARotatingOrder) {
    HybridRig rig;
    auto modes = rig.modes(32, 4);
    const size_t from = rig.tl.calls().size();
    EXPECT_FALSE(rig.run(modes));
    const std::string h = kHybridMode, a = kPrefillAloneMode, b = kDecodeAloneMode;
    EXPECT_EQ(rig.mode_order(from), (std::vector<std::string>{h, a, b,     // warm-ups
                                                              h, a, b,     // repetition 1
                                                              a, b, h,     // repetition 2
                                                              b, h, a}));  // repetition 3
    EXPECT_EQ(rig.progress,
              (std::vector<std::string>{"pp32+tg4: warmup", "pp32+tg4: repetition 1/3",
                                        "pp32+tg4: repetition 2/3", "pp32+tg4: repetition 3/3"}));
    ASSERT_EQ(modes.size(), 3u);
    std::vector<std::string> devices;
    for (auto& m : modes) {
        const TestResult r = m.runner->results();
        devices.push_back(r.config.devices.str());
        EXPECT_EQ(r.reps_done, 3);
        EXPECT_EQ(r.stopped_by, StopReason::reps);
        EXPECT_EQ(r.status, Status::ok);
        EXPECT_FALSE(r.roofline.decode_bytes_per_token);
    }
    EXPECT_EQ(devices, (std::vector<std::string>{"CPU>RPC0", "CPU", "RPC0"}));
}

TEST(HybridPoint, TransferAndPredictionArithmeticOnScriptedTimes) {
    HybridRig rig;
    auto modes = rig.modes(32, 4);
    rig.run(modes);
    const HybridPoint pt = hybrid_point(32, 4, modes);
    EXPECT_EQ(pt.n_prompt, 32);
    EXPECT_EQ(pt.n_gen, 4);
    EXPECT_TRUE(pt.tests.empty());

    // The transfer: save 1 ms on A, restore 2 ms on B, 1024 bytes per cached token.
    const HybridTransfer& t = pt.transfer;
    EXPECT_EQ(t.save_ns, (std::vector<int64_t>{kMs, kMs, kMs}));
    EXPECT_EQ(t.restore_ns, (std::vector<int64_t>{2 * kMs, 2 * kMs, 2 * kMs}));
    EXPECT_EQ(t.duration_ns, (std::vector<int64_t>{3 * kMs, 3 * kMs, 3 * kMs}));
    EXPECT_EQ(t.bytes, (std::vector<int64_t>{32 * 1024, 32 * 1024, 32 * 1024}));
    EXPECT_DOUBLE_EQ(*t.bytes_per_token, 1024);
    EXPECT_DOUBLE_EQ(*t.gbps, 32.0 * 1024 / 3e6);
    EXPECT_DOUBLE_EQ(*t.duration.median, 3e6);

    // End to end: hybrid 3.2 ms + 3 ms + 4 x 5 ms; A alone 3.2 + 4 x 20; B alone 32 + 4 x 5.
    const int64_t hybrid = 3200 * kUs + 3 * kMs + 20 * kMs;
    const int64_t a_alone = 3200 * kUs + 80 * kMs;
    const int64_t b_alone = 32 * kMs + 20 * kMs;
    EXPECT_EQ(pt.e2e.at(kHybridMode).samples_ns, (std::vector<int64_t>(3, hybrid)));
    EXPECT_EQ(pt.e2e.at(kPrefillAloneMode).samples_ns, (std::vector<int64_t>(3, a_alone)));
    EXPECT_EQ(pt.e2e.at(kDecodeAloneMode).samples_ns, (std::vector<int64_t>(3, b_alone)));
    const auto& cmp = pt.comparison;
    EXPECT_DOUBLE_EQ(*cmp.at(kPrefillAloneMode).speedup, static_cast<double>(a_alone) / hybrid);
    EXPECT_EQ(cmp.at(kPrefillAloneMode).verdict, "hybrid faster");
    EXPECT_DOUBLE_EQ(*cmp.at(kDecodeAloneMode).speedup, static_cast<double>(b_alone) / hybrid);
    EXPECT_EQ(cmp.at(kDecodeAloneMode).verdict, "hybrid faster");
    // The typed point writes the JSON the section always had.
    const json j = to_json(pt);
    EXPECT_EQ(j["transfer"]["bytes"], json({32 * 1024, 32 * 1024, 32 * 1024}));
    EXPECT_DOUBLE_EQ(j["transfer"]["gbps"].get<double>(), 32.0 * 1024 / 3e6);
    EXPECT_EQ(j["e2e"][kHybridMode]["samples_ns"], json({hybrid, hybrid, hybrid}));

    // The hybrid is exactly its parts measured alone: A's prefill + the transfer + B's decode,
    // and its TTFT is A's prefill + the transfer + B's first token.
    const TestResult h = modes[0].runner->results();
    const TestResult pa = modes[1].runner->results();
    const TestResult pb = modes[2].runner->results();
    EXPECT_DOUBLE_EQ(
        *pa.prefill->duration.median + *t.duration.median + *pb.decode->duration.median,
        static_cast<double>(hybrid));
    EXPECT_EQ(h.ttft_ns, (std::vector<int64_t>(3, 3200 * kUs + 3 * kMs + 5 * kMs)));
    EXPECT_EQ(pb.ttft_ns, (std::vector<int64_t>(3, 32 * kMs + 5 * kMs)));
    EXPECT_EQ(h.backends, (std::vector<std::string>{"CPU"}));
}

TEST(HybridPoint, AFailingModeFailsThePointAndAnInterruptStopsEveryMode) {
    HybridRig rig;
    rig.b.script().before = [](const FakeCall& c) {
        if (c.op == FakeOp::decode_step && c.index == 6)
            throw runtime_error("RPC0 lost");
    };
    auto modes = rig.modes(8, 2);
    EXPECT_FALSE(rig.run(modes));
    // B decodes: the hybrid's warm-up (0), B alone's warm-up (1), then two per repetition:
    // the hybrid's (2, 3) and B alone's (4, 5) in repetition 1, the 7th in repetition 2.
    for (auto& m : modes) {
        const TestResult r = m.runner->results();
        EXPECT_EQ(r.status, Status::failed) << m.name;
        EXPECT_EQ(r.error, "RPC0 lost") << m.name;
        EXPECT_EQ(r.error_kind, ErrorKind::runtime) << m.name;
        EXPECT_EQ(r.stopped_by, StopReason::error) << m.name;
    }
    EXPECT_EQ(modes[1].runner->result().reps_done, 2);  // A alone ran before B in repetition 2
    EXPECT_EQ(modes[2].runner->result().reps_done, 1);
    EXPECT_EQ(rig.tl.calls().back().op, FakeOp::decode_step);  // nothing after the failure

    HybridRig quiet;
    auto modes2 = quiet.modes(8, 2);
    int rounds = 0;
    EXPECT_TRUE(quiet.run(modes2, [&] { return rounds++ == 1; }));
    for (auto& m : modes2) {
        const TestResult r = m.runner->results();
        EXPECT_EQ(r.status, Status::interrupted);
        EXPECT_EQ(r.stopped_by, StopReason::interrupt);
        EXPECT_EQ(r.reps_done, 1);  // every mode has the same repetitions
    }
}

// run_hybrid end to end on scripted engines: the engines come from the run's factory in the
// order the hybrid makes them (the prefill engine, then the decode engine).
struct HybridRunRig {
    test::RunRig rig;
    HybridOptions o;
    HybridRunRig() {
        o.workload.model_path = test::tiny_gguf();
        o.workload.n_threads = 2;
        o.placement = Placement{"CPU", "BLAS"};
        o.n_prompt = {8};
        o.n_gen = {4};
        o.reps = 2;
        o.telemetry.mode = TelemetryMode::off;
        o.progress = false;
        // As HybridRig: A (the first engine made) prefills fast and decodes slowly, B the
        // other way round; A saves a state in 1 ms, B restores it in 2 ms.
        rig.engines.setup = [](FakeEngine& e, EngineKind) {
            const bool a = e.name() == "llama0";
            e.script().duration_ns = [a](const FakeCall& c) -> int64_t {
                switch (c.op) {
                    case FakeOp::prefill:
                        return (a ? 100 * kUs : kMs) * c.n_tokens;
                    case FakeOp::decode_step:
                        return a ? 20 * kMs : 5 * kMs;
                    case FakeOp::save_state:
                        return kMs;
                    case FakeOp::restore_state:
                        return 2 * kMs;
                    default:
                        return 0;
                }
            };
        };
    }
};

TEST(HybridRun, EveryModeIsATestOfTheDocumentAndTheTransferMovesThePrompt) {
    clear_interrupt();
    test::TempDir dir;
    HybridRunRig h;
    h.o.out_path = dir.file("h.json");
    const RunResult r = run_hybrid(h.o, h.rig.env("hybrid"));
    EXPECT_EQ(r.outcome, Outcome::ok);
    EXPECT_EQ(h.rig.engines.made(), 2);
    ASSERT_EQ(r.doc.tests.size(), 3u);
    EXPECT_EQ(r.doc.tests[0].config.devices.str(), "CPU>BLAS");
    EXPECT_EQ(r.doc.tests[1].config.devices.str(), "CPU");
    EXPECT_EQ(r.doc.tests[2].config.devices.str(), "BLAS");
    for (const auto& t : r.doc.tests) {
        EXPECT_EQ(t.status, Status::ok);
        EXPECT_EQ(t.reps_done, 2);
    }
    // Both engines hold one context for every point: loaded once each, A first (CPU names no
    // accelerator), on their own device sets.
    const auto loads = h.rig.tl.calls_of(FakeOp::load);
    ASSERT_EQ(loads.size(), 2u);
    EXPECT_EQ(loads[0].engine, "llama0");
    EXPECT_EQ(loads[1].engine, "llama1");
    // Every transfer moves the 8 prompt tokens from A to B, which decodes next.
    const auto restores = h.rig.tl.calls_of(FakeOp::restore_state);
    ASSERT_EQ(restores.size(), 3u);  // the warm-up and two repetitions
    for (const auto& c : restores) {
        EXPECT_EQ(c.engine, "llama1");
        EXPECT_EQ(c.n_tokens, 8);
    }
    const HybridSection& s = *r.doc.hybrid;
    EXPECT_EQ(s.prefill_device.str(), "CPU");
    EXPECT_EQ(s.decode_device.str(), "BLAS");
    EXPECT_EQ(s.memory.load_order, (std::vector<std::string>{"prefill", "decode"}));
    ASSERT_EQ(s.points.size(), 1u);
    const HybridPoint& pt = s.points[0];
    EXPECT_EQ(pt.tests, (std::map<std::string, int>{
                            {kHybridMode, 0}, {kPrefillAloneMode, 1}, {kDecodeAloneMode, 2}}));
    EXPECT_EQ(pt.transfer.duration_ns, (std::vector<int64_t>{3 * kMs, 3 * kMs}));
    EXPECT_EQ(pt.transfer.bytes, (std::vector<int64_t>{8 * 1024, 8 * 1024}));
    // Hybrid: 0.8 ms prefill on A + 3 ms transfer + 4 x 5 ms on B.
    EXPECT_EQ(pt.e2e.at(kHybridMode).samples_ns,
              (std::vector<int64_t>(2, 800 * kUs + 3 * kMs + 20 * kMs)));
    EXPECT_EQ(r.doc.tests[0].ttft_ns, (std::vector<int64_t>(2, 800 * kUs + 3 * kMs + 5 * kMs)));
    EXPECT_EQ(pt.comparison.at(kPrefillAloneMode).verdict, "hybrid faster");
    ASSERT_TRUE(s.crossover);
    // The document on disk is the one returned, hybrid section included.
    const ResultDocument back = load_result_document(*h.o.out_path);
    ASSERT_TRUE(back.hybrid);
    EXPECT_EQ(back.hybrid->points[0].transfer.duration_ns, pt.transfer.duration_ns);
    EXPECT_EQ(back.tests.size(), 3u);
}

TEST(HybridRun, AFailedPointFailsItsModesAndTheNextPointRuns) {
    clear_interrupt();
    HybridRunRig h;
    h.o.n_prompt = {8, 16};
    // B's restore in the first point's second repetition fails: the hybrid mode, then every
    // mode of that point; the second point runs.
    h.rig.engines.setup = [](FakeEngine& e, EngineKind) {
        e.script().before = [](const FakeCall& c) {
            if (c.op == FakeOp::restore_state && c.n_tokens == 8 && c.index == 2)
                throw runtime_error("RPC0 lost");
        };
    };
    const RunResult r = run_hybrid(h.o, h.rig.env("hybrid"));
    ASSERT_EQ(r.doc.tests.size(), 6u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r.doc.tests[static_cast<size_t>(i)].status, Status::failed) << i;
        EXPECT_EQ(r.doc.tests[static_cast<size_t>(i)].error, "RPC0 lost") << i;
        EXPECT_EQ(r.doc.tests[static_cast<size_t>(i + 3)].status, Status::ok) << i;
    }
    EXPECT_EQ(r.doc.hybrid->points.size(), 2u);
    EXPECT_EQ(r.outcome, Outcome::failed);
}

TEST(HybridRun, TheLastWordRecordsEveryModeOfThePointWithWhatItMeasured) {
    clear_interrupt();
    HybridRunRig h;
    std::optional<std::string> line;
    std::vector<ResultDocument> kept;
    // The stop comes in B alone's second repetition: B's decode steps are the hybrid's warm-up
    // (0), B alone's (1), the first repetition's (the hybrid 2-5, B alone 6-9), then, the order
    // rotated, A alone, B alone (10...).
    auto durations = h.rig.engines.setup;
    h.rig.engines.setup = [&, durations](FakeEngine& e, EngineKind k) {
        durations(e, k);
        if (e.name() == "llama1")
            e.script().before = [&](const FakeCall& c) {
                if (c.op == FakeOp::decode_step && c.index == 10)
                    line = say_last_words("ggml.c:1: Remote RPC server crashed");
            };
    };
    RunEnv env = h.rig.env("hybrid");
    env.on_last_word = [&](const ResultDocument& d) { kept.push_back(d); };
    run_hybrid(h.o, std::move(env));
    ASSERT_TRUE(line);
    EXPECT_EQ(line->rfind("hybrid point pp8+tg4 failed: llama.cpp stopped during decode: Remote "
                          "RPC server crashed; 0 earlier test(s) kept",
                          0),
              0u)
        << *line;
    ASSERT_EQ(kept.size(), 1u);
    ASSERT_EQ(kept[0].tests.size(), 3u);
    for (const auto& t : kept[0].tests) {
        EXPECT_EQ(t.status, Status::failed);
        EXPECT_FALSE(t.error_kind);
    }
    // What each mode measured before the stop stays with it: one repetition of the hybrid and
    // of B alone, two of A alone.
    EXPECT_EQ(kept[0].tests[0].decode->token_latency_ns.size(), 4u);
    EXPECT_EQ(kept[0].tests[1].config.devices.str(), "CPU");
    EXPECT_EQ(kept[0].tests[1].prefill->duration_ns.size(), 2u);
    EXPECT_EQ(kept[0].tests[2].decode->token_latency_ns.size(), 4u);
}

TEST(HybridRun, FidelityComparesTheTransferredSequenceWithTheReference) {
    clear_interrupt();
    HybridRunRig h;
    h.o.fidelity.enabled = true;
    h.o.fidelity.reference_devices = "CPU";
    h.o.fidelity.top_k = 2;
    // Engines: the reference (llama0), A (llama1), B (llama2). B's logits are shifted at one
    // token, so every decode position on B is off by the same known amount.
    auto shifted = [](std::span<const int32_t> ctx) {
        auto l = default_fake_logits(ctx, 7);
        l[3] += 2.0f;
        return l;
    };
    h.rig.engines.setup = [&](FakeEngine& e, EngineKind) {
        e.vocab = 7;
        if (e.name() == "llama2")
            e.script().logits = shifted;
    };
    const RunResult r = run_hybrid(h.o, h.rig.env("hybrid"));
    ASSERT_EQ(r.doc.tests.size(), 3u);
    ASSERT_EQ(h.rig.engines.made(), 3);
    // The reference's sequence: BOS, then random tokens; what B computes at every decode
    // position differs from it by the shift.
    const auto tokens = sequence_tokens(8 + 4, 7, h.o.seed, 1);
    double kl_sum = 0;
    for (int i = 0; i < 4; ++i) {
        const std::span<const int32_t> ctx(tokens.data(), static_cast<size_t>(8 + i + 1));
        kl_sum += diff_logits(default_fake_logits(ctx, 7), shifted(ctx)).kl;
    }
    const double kl = kl_sum / 4;
    ASSERT_GT(kl, 0);
    for (size_t i = 0; i < 3; ++i) {
        const TestResult& t = r.doc.tests[i];
        ASSERT_TRUE(t.fidelity) << i;
        EXPECT_FALSE(t.fidelity->error) << *t.fidelity->error;
        // Prefill on A (the hybrid, A alone) matches the reference; on B (B alone) it is off.
        const bool prefill_on_b = i == 2, decode_on_b = i != 1;
        EXPECT_EQ(t.fidelity->prefill->kl_mean == 0, !prefill_on_b) << i;
        EXPECT_DOUBLE_EQ(t.fidelity->decode->kl_mean, decode_on_b ? kl : 0.0) << i;
        EXPECT_EQ(t.fidelity->decode->positions, 4) << i;
    }
}

}  // namespace
}  // namespace sb
