#include "analysis/advise_steps.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace sb {
namespace {

using nlohmann::json;

AdviseSample sample(const std::string& devices, int p, int n, std::vector<double> pp_tps,
                    std::vector<double> tg_tps, std::optional<double> prefill_ns,
                    std::optional<double> decode_ns_per_token, std::size_t doc = 0) {
    AdviseSample s;
    s.doc = doc;
    s.devices = devices;
    s.n_prompt = p;
    s.n_gen = n;
    s.kv_depth = p;
    s.prefill_tps = std::move(pp_tps);
    s.decode_tps = std::move(tg_tps);
    s.prefill_ns = prefill_ns;
    s.decode_ns_per_token = decode_ns_per_token;
    return s;
}

// ---- collect ----

// An advise_input as advise gets it: the document read typed.
AdviseInput advise_input(const std::string& source, const json& doc) {
    return {source, from_json<ResultDocument>(doc, source)};
}

TEST(AdviseCollect, ReadsTestsHybridOpsAndSustainedIntoFacts) {
    json run = {
        {"schema", "stagebench.result"},
        {"command", "run"},
        {"tests",
         {{{"status", "ok"},
           {"config", {{"devices", "RPC0"}, {"n_prompt", 64}, {"n_gen", 16}, {"n_depth", 8}}},
           {"prefill", {{"tokens_per_s", {100.0, 110.0}}, {"duration", {{"median", 6e8}}}}},
           {"decode", {{"tokens_per_s", {20.0, 22.0}}, {"duration", {{"median", 8e8}}}}},
           {"telemetry", {{"summary", {{"decode", {{"j_per_token", {{"median", 0.25}}}}}}}}}},
          // Not samples: a failed test, a hybrid device set, another engine.
          {{"status", "failed"}, {"config", {{"devices", "CPU"}}}},
          {{"status", "ok"}, {"config", {{"devices", "CPU>RPC0"}}}},
          {{"status", "ok"}, {"config", {{"engine", "http"}}}}}}};
    json hybrid = {{"schema", "stagebench.result"},
                   {"command", "hybrid"},
                   {"hybrid",
                    {{"prefill_device", "CPU"},
                     {"decode_device", "RPC0"},
                     {"points",
                      {{{"n_prompt", 32},
                        {"n_gen", 8},
                        {"transfer", {{"duration", {{"median", 2e6}}}, {"bytes_per_token", 512}}},
                        {"e2e", {{"hybrid", {{"summary", {{"median", 9e8}}}}}}}}}}}}};
    json ops = {
        {"schema", "stagebench.result"},
        {"command", "ops"},
        {"ops",
         {{"devices", "BLAS"},
          {"stages",
           {{{"stage", "decode"},
             {"fallback", {{{"op", "ADD"}, {"backend", "CPU"}, {"count", 2}}}},
             {"decomposition", {{"parts", {{{"name", "compute"}, {"share", 1.0}}}}}},
             {"ops", {{{"op", "ADD"}, {"backend", "CPU"}, {"call_ns", 5}, {"op_ns", 3}}}}}}}}}};
    json sus = {{"schema", "stagebench.result"},
                {"command", "sustained"},
                {"sustained",
                 {{"config", {{"devices", "GPU"}}},
                  {"phases",
                   {{{"name", "baseline"}, {"across", {{"steady_decode_tps", 7.5}}}},
                    {{"name", "loaded"},
                     {"background", "cpu:1"},
                     {"across", {{"steady_decode_tps", 3.0}}}}}}}}};
    json other = {{"schema", "stagebench.result"}, {"command", "sensors"}};
    const AdviseFacts f = collect_facts(
        {advise_input("r.json", run), advise_input("h.json", hybrid), advise_input("o.json", ops),
         advise_input("s.json", sus), advise_input("x.json", other)});

    ASSERT_EQ(f.sources.size(), 5u);
    EXPECT_EQ(f.sources[1].source, "h.json");
    EXPECT_EQ(f.sources[1].command, "hybrid");

    ASSERT_EQ(f.samples.size(), 1u);
    const AdviseSample& s = f.samples[0];
    EXPECT_EQ(s.doc, 0u);
    EXPECT_EQ(s.devices, "RPC0");
    EXPECT_EQ(s.kv_depth, 72);
    EXPECT_EQ(s.prefill_tps, (std::vector<double>{100, 110}));
    EXPECT_EQ(s.decode_tps, (std::vector<double>{20, 22}));
    EXPECT_EQ(s.prefill_ns, 6e8);
    EXPECT_EQ(s.decode_ns_per_token, 5e7);  // 8e8 / 16
    EXPECT_EQ(s.prefill_j_per_token, std::nullopt);
    EXPECT_EQ(s.decode_j_per_token, 0.25);

    ASSERT_EQ(f.hybrid_points.size(), 1u);
    const HybridPointFacts& h = f.hybrid_points[0];
    EXPECT_EQ(h.doc, 1u);
    EXPECT_EQ(h.prefill, "CPU");
    EXPECT_EQ(h.decode, "RPC0");
    EXPECT_EQ(h.n_prompt, 32);
    EXPECT_EQ(h.n_gen, 8);
    EXPECT_EQ(h.transfer_ns, 2e6);
    EXPECT_EQ(h.bytes_per_token, 512);
    EXPECT_EQ(h.measured_ns, 9e8);

    ASSERT_EQ(f.ops.size(), 1u);
    EXPECT_EQ(f.ops[0].source, "o.json");
    EXPECT_EQ(f.ops[0].devices, "BLAS");
    ASSERT_EQ(f.ops[0].stages.size(), 1u);
    const OpsStageFacts& st = f.ops[0].stages[0];
    EXPECT_EQ(st.stage, "decode");
    ASSERT_EQ(st.fallback.size(), 1u);
    EXPECT_EQ(st.fallback[0].count, 2);
    EXPECT_EQ(st.fallback[0].requested, "");
    EXPECT_EQ(st.fallback[0].call_ns, std::nullopt);
    // The document's row, whole.
    EXPECT_EQ(st.fallback[0].row.op, "ADD");
    EXPECT_EQ(st.fallback[0].row.count, 2);
    EXPECT_EQ(st.fallback[0].row.penalty, std::nullopt);
    ASSERT_EQ(st.parts.size(), 1u);
    EXPECT_EQ(st.parts[0].name, "compute");
    EXPECT_EQ(st.parts[0].share, 1.0);
    ASSERT_EQ(st.ops.size(), 1u);
    EXPECT_EQ(st.ops[0].call_ns, 5);
    EXPECT_EQ(st.ops[0].op_ns, 3);

    // Only the phase without background load.
    ASSERT_EQ(f.sustained.size(), 1u);
    EXPECT_EQ(f.sustained[0].devices, "GPU");
    ASSERT_EQ(f.sustained[0].phases.size(), 1u);
    EXPECT_EQ(f.sustained[0].phases[0].name, "baseline");
    EXPECT_EQ(f.sustained[0].phases[0].steady_decode_tps, 7.5);

    EXPECT_EQ(f.notes, std::vector<std::string>{
                           "x.json: a 'sensors' document with nothing the advisor uses"});
}

TEST(AdviseCollect, NothingUsableThrows) {
    EXPECT_THROW(collect_facts({advise_input(
                     "x.json", json{{"schema", "stagebench.result"}, {"command", "sensors"}})}),
                 Error);
    EXPECT_THROW(collect_facts({}), Error);
}

// ---- fit ----

TEST(AdviseFit, RanksEveryMeasuredWorkloadApartInIncreasingOrder) {
    std::vector<AdviseSample> samples = {
        sample("GPU", 512, 16, {1000}, {}, {}, {}, 1),  // pp512: one device set only
        sample("CPU", 64, 16, {10, 30, 20}, {}, {}, {}),
        sample("GPU", 64, 16, {40, 50}, {}, {}, {}, 1),
        sample("CPU", 128, 16, {25}, {}, {}, {}),
    };
    samples[1].prefill_j_per_token = 0.5;
    samples[2].prefill_j_per_token = 0.75;
    const auto st = rank_stage(samples, "prefill");
    ASSERT_EQ(st.size(), 3u);  // pp64, pp128, pp512: by length, not by the text "pp128" < "pp64"
    EXPECT_EQ(st[0].workload, "pp64");
    EXPECT_EQ(st[1].workload, "pp128");
    EXPECT_EQ(st[2].workload, "pp512");
    ASSERT_EQ(st[0].candidates.size(), 2u);
    EXPECT_EQ(st[0].candidates[0].devices, "GPU");
    EXPECT_EQ(st[0].candidates[0].docs, std::vector<std::size_t>{1});
    EXPECT_EQ(st[0].candidates[0].median_tokens_per_s, 45);
    EXPECT_EQ(st[0].candidates[1].median_tokens_per_s, 20);
    EXPECT_EQ(st[0].candidates[1].summary.n, 3u);
    EXPECT_EQ(st[0].candidates[1].docs, std::vector<std::size_t>{0});
    ASSERT_TRUE(st[0].ratio_to_runner_up);
    EXPECT_DOUBLE_EQ(st[0].ratio_to_runner_up->ratio, 45.0 / 20.0);
    EXPECT_EQ(st[0].most_efficient, 1u);  // CPU at 0.5 J/token
    EXPECT_EQ(st[1].candidates.size(), 1u);
    EXPECT_FALSE(st[1].ratio_to_runner_up);
    EXPECT_TRUE(rank_stage(samples, "decode").empty());
}

TEST(AdviseFit, WhatElseSetsTheSpeedKeepsDeviceSetsApart) {
    // Two models on the CPU, and BLAS at two offload levels: four candidates, each labelled by
    // what differs among the samples of its device set, never pooled into one row.
    auto with = [](AdviseSample s, const char* model, int ngl) {
        s.model = model;
        s.n_gpu_layers = ngl;
        s.n_threads = 4;
        s.kv = "f16/f16";
        return s;
    };
    std::vector<AdviseSample> samples = {
        with(sample("CPU", 64, 16, {10, 11}, {}, {}, {}), "q4_0.gguf", 99),
        with(sample("CPU", 64, 16, {5, 6}, {}, {}, {}), "f16.gguf", 99),
        with(sample("BLAS", 64, 16, {30, 31}, {}, {}, {}), "q4_0.gguf", 99),
        with(sample("BLAS", 64, 16, {20, 21}, {}, {}, {}), "q4_0.gguf", 2),
    };
    label_samples(samples);
    EXPECT_EQ(samples[0].label, "CPU (model q4_0.gguf)");
    EXPECT_EQ(samples[1].label, "CPU (model f16.gguf)");
    EXPECT_EQ(samples[2].label, "BLAS (-ngl 99)");
    EXPECT_EQ(samples[3].label, "BLAS (-ngl 2)");
    const auto st = rank_stage(samples, "prefill");
    ASSERT_EQ(st.size(), 1u);
    ASSERT_EQ(st[0].candidates.size(), 4u);
    EXPECT_EQ(st[0].candidates[0].devices, "BLAS (-ngl 99)");
    EXPECT_EQ(st[0].candidates[0].device_set, "BLAS");
    EXPECT_EQ(st[0].candidates[3].devices, "CPU (model f16.gguf)");
    // One device set measured one way: its devices alone.
    std::vector<AdviseSample> one = {with(sample("CPU", 64, 16, {10}, {}, {}, {}), "a.gguf", 99)};
    label_samples(one);
    EXPECT_EQ(one[0].label, "CPU");
}

// The candidate's interval is its median's (a seeded bootstrap over the repetitions), not the
// mean's: a rate's bound is never negative, however few and spread the repetitions.
TEST(AdviseFit, ACandidatesIntervalIsItsMediansAndNeverBelowZero) {
    const std::vector<double> tps = {40, 60, 2500, 3500};
    const auto st = rank_stage({sample("BLAS", 8, 4, {}, tps, {}, {})}, "decode");
    ASSERT_EQ(st.size(), 1u);
    const StageCandidate& c = st[0].candidates[0];
    ASSERT_TRUE(c.summary.ci95_lo && c.summary.stddev && c.summary.mean);
    // The mean's Student-t interval would go below 0 (the Summary's mean interval is a
    // bootstrap now, within the repetitions' range, but it is still the mean's).
    EXPECT_LT(*c.summary.mean - t_quantile_975(3) * *c.summary.stddev / 2, 0);
    EXPECT_GE(*c.summary.ci95_lo, 40);
    const MedianCi want = median_ci(tps);
    EXPECT_EQ(c.median_ci.ci95_lo, want.ci95_lo);
    EXPECT_EQ(c.median_ci.ci95_hi, want.ci95_hi);
    ASSERT_TRUE(c.median_ci.ci95_lo && c.median_ci.ci95_hi);
    EXPECT_GE(*c.median_ci.ci95_lo, 40);
    EXPECT_LE(*c.median_ci.ci95_hi, 3500);
    EXPECT_EQ(c.median_ci.median, c.median_tokens_per_s);
}

TEST(AdviseFit, ModelsAreMediansPerLengthAndTransfersAreLines) {
    std::vector<AdviseSample> samples = {
        sample("CPU", 64, 16, {}, {}, 10.0, 2.0, 0), sample("CPU", 64, 16, {}, {}, 30.0, {}, 0),
        sample("CPU", 64, 16, {}, {}, 20.0, {}, 1), sample("CPU", 32, 16, {}, {}, 5.0, {}, 1)};
    const DeviceModels all = fit_models(samples);
    ASSERT_EQ(all.count("CPU"), 1u);
    EXPECT_EQ(all.at("CPU").prefill, (std::vector<std::pair<double, double>>{{32, 5}, {64, 20}}));
    // Decode at the middle of its KV cache: depth 64 + 16 / 2.
    EXPECT_EQ(all.at("CPU").decode_per_token, (std::vector<std::pair<double, double>>{{72, 2}}));
    const DeviceModels doc1 = fit_models(samples, 1);
    EXPECT_EQ(doc1.at("CPU").prefill, (std::vector<std::pair<double, double>>{{32, 5}, {64, 20}}));
    EXPECT_FALSE(doc1.at("CPU").can_decode());

    std::vector<HybridPointFacts> pts(3);
    for (int i = 0; i < 3; ++i) {
        pts[i].prefill = "CPU";
        pts[i].decode = "GPU";
        pts[i].n_prompt = 100 * (i + 1);
        pts[i].transfer_ns = 1000 + 10.0 * pts[i].n_prompt;
    }
    pts[1].bytes_per_token = 64;
    const auto fits = fit_transfers(pts);
    ASSERT_EQ(fits.size(), 1u);
    EXPECT_DOUBLE_EQ(fits[0].intercept_ns, 1000);
    EXPECT_DOUBLE_EQ(fits[0].ns_per_token, 10);
    EXPECT_EQ(fits[0].bytes_per_token, 64);
    EXPECT_EQ(fits[0].n_points, 3);
    EXPECT_DOUBLE_EQ(fits[0].at(50), 1500);  // below the prompts measured, the line itself
    EXPECT_TRUE(fits[0].at_bounded(50).extrapolated);
    EXPECT_FALSE(fits[0].at_bounded(200).extrapolated);
    // A line falling with the prompt (two documents of different load) would reach -7000 at
    // 400: it stays at the last measured transfer.
    const TransferFit falling = fit_transfer("A", "B", {{100, 5000}, {200, 1000}}, std::nullopt);
    EXPECT_LT(falling.intercept_ns + falling.ns_per_token * 400, 0);
    EXPECT_DOUBLE_EQ(falling.at(400), 1000);
    // One length: proportional through the origin.
    const TransferFit one = fit_transfer("A", "B", {{100, 500}, {100, 700}}, std::nullopt);
    EXPECT_EQ(one.intercept_ns, 0);
    EXPECT_EQ(one.ns_per_token, 6);
}

TEST(AdviseFit, DispatchOverheadAboveTheBudgetLargestTotalFirst) {
    OpsStageFacts st;
    st.ops = {{"ADD", "GPU", false, 30000, 1000},  {"ADD", "GPU", false, 25000, 1000},
              {"MUL", "GPU", false, 70000, 10000}, {"VIEW", "CPU", true, 50000, 0},
              {"CPY", "CPU", false, 9000, 1000},   {"", "", false, std::nullopt, 5}};
    const DispatchFit d = fit_dispatch(st, 10000);
    EXPECT_EQ(d.n_measured, 3u);  // ADD, MUL, CPY
    ASSERT_EQ(d.above_budget.size(), 2u);
    EXPECT_EQ(d.above_budget[0].op, "MUL");
    EXPECT_EQ(d.above_budget[0].total_overhead_ns, 60000);
    EXPECT_EQ(d.above_budget[1].op, "ADD");
    EXPECT_EQ(d.above_budget[1].count, 2u);
    EXPECT_EQ(d.above_budget[1].median_overhead_ns, 26500);
    EXPECT_EQ(d.above_budget[1].total_overhead_ns, 53000);
}

TEST(AdviseFit, ASustainedPhaseIsCheckedAgainstTheFastestOtherDecode) {
    AdviseFacts f;
    f.samples = {sample("CPU", 64, 16, {}, {80, 80}, {}, {}),
                 sample("GPU", 64, 16, {}, {100, 100}, {}, {}),
                 sample("NPU", 64, 16, {}, {90, 90}, {}, {})};
    f.sustained = {{"s.json",
                    "GPU",
                    {{"rounds", 85.0, 1.2, "stable"}, {"x", std::nullopt, std::nullopt, ""}}}};
    const AdviseFit fit = fit_advice(f, {});
    ASSERT_EQ(fit.sustained.size(), 1u);  // the phase without a steady state is left out
    const SustainedCheck& c = fit.sustained[0];
    EXPECT_EQ(c.phase, "rounds");
    EXPECT_EQ(c.steady_decode_tps, 85);
    ASSERT_TRUE(c.best_other);
    EXPECT_EQ(c.best_other->first, "NPU");
    EXPECT_EQ(c.best_other->second, 90);
}

// ---- predict ----

TEST(AdvisePredict, AssignmentsCrossoversAndValidation) {
    // CPU: prefill 1 ms/token, decode 20 ms/token; GPU: prefill 5 ms/token, decode 10 ms/token;
    // the transfer CPU -> GPU 1 ms + 10 us/token.
    AdviseFacts f;
    f.sources = {{"h.json", "hybrid"}};
    for (int p : {64, 256}) {
        f.samples.push_back(sample("CPU", p, 32, {}, {}, p * 1e6, 2e7));
        f.samples.push_back(sample("GPU", p, 32, {}, {}, p * 5e6, 1e7));
        HybridPointFacts h;
        h.prefill = "CPU";
        h.decode = "GPU";
        h.n_prompt = p;
        h.n_gen = 32;
        h.transfer_ns = 1e6 + 1e4 * p;
        h.measured_ns = 2 * (p * 1e6 + *h.transfer_ns + 32 * 1e7);
        f.hybrid_points.push_back(h);
    }
    const AdviseFit fit = fit_advice(f, {});
    const AdvisePredictions pred = predict_advice(f, fit, {});
    EXPECT_EQ(pred.lengths, (std::vector<std::pair<int, int>>{{64, 32}, {256, 32}}));
    ASSERT_EQ(pred.predictions.size(), 2u);
    // At pp64+tg32: CPU → GPU 64 + 1.64 + 320 ms; CPU alone 64 + 640; GPU alone 320 + 320.
    const auto& v = pred.predictions[0].assignments;
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(assignment_name(v[0].prefill, v[0].decode), "CPU → GPU");
    EXPECT_DOUBLE_EQ(v[0].e2e(), 64e6 + 1.64e6 + 320e6);
    EXPECT_EQ(assignment_name(v[1].prefill, v[1].decode), "GPU alone");
    EXPECT_EQ(assignment_name(v[2].prefill, v[2].decode), "CPU alone");
    ASSERT_EQ(pred.crossovers.size(), 1u);
    ASSERT_EQ(pred.crossovers[0].ranges.size(), 1u);
    EXPECT_EQ(pred.crossovers[0].ranges[0].best, "CPU → GPU");
    EXPECT_EQ(pred.crossovers[0].ranges[0].to_n_prompt, std::nullopt);
    ASSERT_EQ(pred.validation.size(), 2u);
    EXPECT_TRUE(pred.validation[0].own_basis);
    EXPECT_EQ(pred.validation[0].source, "h.json");
    EXPECT_DOUBLE_EQ(pred.validation[0].error(), -0.5);

    AdviseOptions asked;
    asked.n_gen = 4;
    EXPECT_EQ(prediction_lengths(f.hybrid_points, asked),
              (std::vector<std::pair<int, int>>{{512, 4}}));
}

TEST(AdvisePredict, TheCrossoverIsWhereTheBestAssignmentChanges) {
    // A: prefill 1 ns/token, decode 100 ns in all; B: prefill 2 ns/token, decode free. B is
    // faster below 100 prompt tokens, A from 100 on (a tie goes to the first name). Prompts
    // measured up to 64: the grid reaches 256.
    AdviseFit fit;
    fit.models["A"] = {{{64, 64}}, {{64, 100.0 / 8}}};
    fit.models["B"] = {{{64, 128}}, {{64, 0}}};
    const auto c = find_crossovers(fit, {{64, 8}});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].n_gen, 8);
    ASSERT_EQ(c[0].ranges.size(), 2u);
    EXPECT_EQ(c[0].ranges[0].best, "B alone");
    EXPECT_EQ(c[0].ranges[0].from_n_prompt, 1);
    EXPECT_EQ(c[0].ranges[0].to_n_prompt, 99);
    EXPECT_EQ(c[0].ranges[1].best, "A alone");
    EXPECT_EQ(c[0].ranges[1].from_n_prompt, 100);
}

// ---- sentences ----

TEST(AdviseSentences, StagePredictionCrossoverAndValidation) {
    StageChoice st;
    st.stage = "decode";
    st.workload = "tg16@d64";
    st.candidates.resize(2);
    st.candidates[0].devices = "GPU";
    st.candidates[0].median_tokens_per_s = 100;
    st.candidates[0].j_per_token = 0.125;
    st.candidates[1].devices = "CPU";
    st.ratio_to_runner_up = RatioCi{1.25, 1.0, 1.5, true};
    st.most_efficient = 0;
    EXPECT_EQ(stage_sentence(st),
              "decode: GPU is the fastest at tg16@d64 (100.0 tokens/s, 1.25× CPU with 95% CI "
              "1.00–1.50, so not distinguishable from it); the most energy-efficient is GPU at "
              "0.1250 J/token.");
    st.candidates.resize(1);
    st.ratio_to_runner_up.reset();
    st.most_efficient.reset();
    EXPECT_EQ(stage_sentence(st),
              "decode: GPU is the fastest at tg16@d64 (100.0 tokens/s, the only device set "
              "measured); no energy was measured for this stage.");

    LengthPrediction p{512, 128, {{"CPU", "GPU", 1e6, 2e6, 3e6}, {"CPU", "CPU", 9e6, 0, 3e6}}};
    EXPECT_EQ(prediction_sentence(p),
              "For a 512-token prompt and 128 generated tokens the fastest assignment is CPU → "
              "GPU: 6.00 ms end to end (1.00 ms prefill + 2.00 ms state transfer + 3.00 ms "
              "decode); next is CPU alone at 12.00 ms (2.00×).");

    Crossover c{8, {{1, 99, "B alone"}, {100, std::nullopt, "A alone"}}};
    EXPECT_EQ(crossover_sentence(c),
              "With 8 generated tokens: B alone is fastest for prompts of 1–99 tokens; A alone "
              "is fastest for prompts of 100 tokens and longer (predicted from the measured "
              "model).");
    c.measured_from = 32;
    c.measured_to = 512;
    EXPECT_EQ(crossover_sentence(c),
              "With 8 generated tokens: B alone is fastest for prompts of 1–99 tokens; A alone "
              "is fastest for prompts of 100 tokens and longer (predicted from the measured "
              "model; the prompts measured span 32–512 tokens, and beyond them the times are "
              "extrapolated, bounded by the measured rates).");

    Validation v;
    v.point.prefill = "CPU";
    v.point.decode = "GPU";
    v.point.n_prompt = 64;
    v.point.n_gen = 8;
    v.point.measured_ns = 4e6;
    EXPECT_EQ(validation_sentence(v),
              "no prediction for the hybrid CPU → GPU at pp64+tg8: CPU alone and GPU alone were "
              "not measured");
    v.predicted = Prediction{"CPU", "GPU", 1e6, 1e6, 3e6};
    EXPECT_EQ(validation_sentence(v),
              "The hybrid CPU → GPU at pp64+tg8 was predicted at 5.00 ms and measured at 4.00 ms "
              "(+25.0 %).");
}

TEST(AdviseSentences, OperatorsAndSustained) {
    OpFallback f{"RMS_NORM", "CPU", "BLAS", 3, 9000.0, 1.5, {}};
    EXPECT_EQ(fallback_sentence("decode", f),
              "decode: 3 × RMS_NORM asked of BLAS ran on CPU, 0.01 ms per stage in all, its op "
              "time there 1.50× that on BLAS.");
    EXPECT_EQ(decomposition_sentence(
                  "decode", "RPC0",
                  {{"a", {}, 0.25, ""}, {"", {}, std::nullopt, ""}, {"b", {}, 0.75, ""}}),
              "decode: the pipeline of RPC0 splits into a 25 %, b 75 %.");
    EXPECT_EQ(decomposition_sentence("decode", "RPC0", {{"", {}, std::nullopt, ""}}), std::nullopt);

    DispatchFit d;
    d.n_measured = 7;
    for (int i = 0; i < 6; ++i)
        d.above_budget.push_back({"OP" + std::to_string(i), "GPU", 2, 12500, 30000.0 - i});
    const auto s = dispatch_sentences("decode", "o.json", d, 10000);
    ASSERT_EQ(s.size(), 6u);
    EXPECT_EQ(s[0],
              "decode: OP0 on GPU spends 12.5 µs per call outside the op (median of 2; 0.03 ms "
              "in all), above the 10 µs budget: a candidate for fusion or batched dispatch.");
    EXPECT_EQ(s[5], "decode: 1 more operators above the dispatch budget are in the table.");
    d.above_budget.clear();
    EXPECT_EQ(dispatch_sentences("decode", "o.json", d, 10000),
              std::vector<std::string>{
                  "decode: no operator's dispatch overhead exceeds the 10 µs budget (o.json)."});
    d.n_measured = 0;
    EXPECT_TRUE(dispatch_sentences("decode", "o.json", d, 10000).empty());

    SustainedCheck c{"s.json", "GPU", "rounds", "", 60, std::nullopt, {{"CPU", 80}}};
    EXPECT_EQ(sustained_sentence(c),
              "Under sustained load GPU decodes at 60.0 tokens/s in the steady state (no "
              "verdict); CPU measured 80.0 tokens/s, so GPU is no longer the faster decode "
              "choice once throttled.");
    c.best_other.reset();
    c.verdict = "stable";
    EXPECT_EQ(sustained_sentence(c),
              "Under sustained load GPU decodes at 60.0 tokens/s in the steady state (stable); "
              "no other device set's decode was measured to compare with.");
}

TEST(AdviseSentences, NotesSayWhatCouldNotBeUsed) {
    AdviseFacts f;
    f.notes = {"x.json: nothing"};
    AdvisePredictions pred;
    Validation v;
    v.point.prefill = "A";
    v.point.decode = "B";
    v.point.measured_ns = 1;
    pred.validation.push_back(v);
    const AdviceText t = advice_text(f, AdviseFit{}, pred, {});
    EXPECT_TRUE(t.sentences.empty());
    EXPECT_EQ(t.notes, (std::vector<std::string>{
                           "x.json: nothing",
                           "no prediction for the hybrid A → B at pp0+tg0: A alone and B alone "
                           "were not measured",
                           "the documents hold no stage measurements to rank"}));
}

}  // namespace
}  // namespace sb
