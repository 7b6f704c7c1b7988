// The across-rounds analysis of `stagebench sustained` on fixture rounds.
#include "analysis/sustained_summary.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace sb;

namespace {

std::vector<SustainedRound> rounds_with(const std::vector<double>& decode,
                                        const std::vector<double>& freq_khz = {}) {
    std::vector<SustainedRound> out;
    for (size_t i = 0; i < decode.size(); ++i) {
        SustainedRound r;
        r.round = static_cast<int>(i) + 1;
        r.decode_tps = decode[i];
        r.prefill_tps = 10 * decode[i];
        if (!freq_khz.empty())
            r.cpu_freq_mean_khz = freq_khz[i];
        out.push_back(r);
    }
    return out;
}

}  // namespace

TEST(SummarizeRounds, FlatDataIsStable) {
    auto a = summarize_rounds(
        rounds_with({40, 40.3, 39.8, 40.1, 40, 39.9}, {2e6, 2e6, 2e6, 2e6, 2e6, 2e6}), {});
    EXPECT_EQ(a.verdict, "stable");
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_NEAR(*a.decode_tps.mean, 40.0166, 1e-3);
    EXPECT_NEAR(*a.first_last_change, 39.9 / 40 - 1, 1e-12);
}

TEST(SummarizeRounds, AThroughputThatRoseIsNotStable) {
    // A slow first round (here 2.3 t/s under load, 13.6 at the end): no steady state to call
    // stable, whatever the rounds between.
    auto a = summarize_rounds(rounds_with({2.31, 4.10, 3.46, 2.77, 13.56}), {});
    EXPECT_EQ(a.verdict, "rose (decode +487 % from the first round to the last)");
    // Within 10 % it is still stable.
    EXPECT_EQ(summarize_rounds(rounds_with({40, 41, 40.5, 42, 43.9}), {}).verdict, "stable");
}

TEST(SummarizeRounds, ThroughputDropGivesTheDropRoundAndSteadyState) {
    auto a = summarize_rounds(rounds_with({40, 40.5, 39.5, 40, 30, 23, 23.2, 22.8, 23, 23.1}), {});
    ASSERT_TRUE(a.drop_round);
    EXPECT_EQ(a.onset_basis, "throughput");
    // No clock or temperature was read: a drop, not throttling.
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_TRUE(a.throttle_evidence.empty());
    EXPECT_EQ(a.verdict, "throughput dropped at round " + std::to_string(*a.drop_round) +
                             " (no clock or temperature evidence)");
    EXPECT_GE(*a.drop_round, 5);
    EXPECT_LE(*a.drop_round, 6);
    EXPECT_GT(*a.peak_to_steady, 1.5);
}

TEST(SummarizeRounds, FrequencyDropAloneIsDetected) {
    auto a = summarize_rounds(rounds_with({40, 40, 40, 40, 40, 40, 40, 40},
                                          {3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6}),
                              {});
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(*a.throttle_onset_round, 4);
    EXPECT_EQ(a.onset_basis, "frequency");
    EXPECT_FALSE(a.drop_round);
    EXPECT_EQ(a.verdict, "throttled at round 4");
    EXPECT_EQ(a.throttle_evidence,
              std::vector<std::string>{
                  "mean CPU clock 3000 MHz before round 4, 1200 MHz from it on (-60.0 %)"});
}

TEST(SummarizeRounds, TheEarlierOfThroughputAndFrequencyOnsetIsTheOnset) {
    // Throughput steps down after round 2, the clock only after round 5: throughput is first,
    // and a clock that fell three rounds later does not explain it.
    auto a = summarize_rounds(rounds_with({3600, 3610, 2500, 2490, 2510, 2500, 2495, 2505},
                                          {3e6, 3e6, 3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6}),
                              {});
    ASSERT_TRUE(a.drop_round && a.freq_onset_round);
    EXPECT_EQ(*a.freq_onset_round, 6);
    EXPECT_EQ(*a.drop_round, 3);
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throughput dropped at round 3 (no clock or temperature evidence)");
    // The clock steps down first and throughput follows two rounds later: frequency is first.
    a = summarize_rounds(rounds_with({40, 40, 40, 40, 40, 30, 30, 30},
                                     {3e6, 3e6, 3e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6, 1.2e6}),
                         {});
    ASSERT_TRUE(a.throttle_onset_round);
    EXPECT_EQ(*a.throttle_onset_round, 4);
    EXPECT_EQ(a.onset_basis, "frequency");
}

TEST(SummarizeRounds, SlowDeclineWithoutAStepIsDegraded) {
    // Noisy enough that no single step is significant (the best split, after round 5, has
    // |t| = 1.99 < 4), but the last round is 17.5 % below the first: degraded, no onset.
    auto a = summarize_rounds(rounds_with({40, 36, 41, 35, 39, 34, 37, 33}), {});
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_FALSE(a.freq_onset_round);
    EXPECT_TRUE(a.onset_basis.empty());
    EXPECT_EQ(a.verdict, "degraded");
    EXPECT_DOUBLE_EQ(*a.first_last_change, 33.0 / 40 - 1);
    // Without an onset the steady state is every round.
    EXPECT_DOUBLE_EQ(*a.steady_decode_tps, 295.0 / 8);
    EXPECT_DOUBLE_EQ(*a.peak_to_steady, 41 / (295.0 / 8));
    // The same noise ending 7.5 % below the start is within the 10 % a run may drift: stable.
    auto b = summarize_rounds(rounds_with({40, 36, 41, 35, 39, 34, 37, 37}), {});
    EXPECT_FALSE(b.throttle_onset_round);
    EXPECT_EQ(b.verdict, "stable");
}

namespace {

// Ten rounds whose decode rate halves from round 6 on (exactly: the change point is round 6).
std::vector<SustainedRound> halving_at_6() {
    return rounds_with({40, 40, 40, 40, 40, 20, 20, 20, 20, 20});
}

}  // namespace

TEST(SustainedVerdict, AThroughputDropWithoutSensorsIsNotThrottling) {
    const AcrossRounds a = summarize_rounds(halving_at_6(), {});
    EXPECT_EQ(a.drop_round, 6);
    EXPECT_FALSE(a.throttle_onset_round);
    EXPECT_EQ(a.onset_basis, "throughput");
    EXPECT_EQ(a.verdict, "throughput dropped at round 6 (no clock or temperature evidence)");
    EXPECT_EQ(a.verdict.find("throttl"), std::string::npos);
    EXPECT_DOUBLE_EQ(*a.steady_decode_tps, 20);
    EXPECT_DOUBLE_EQ(*a.peak_to_steady, 2);
}

TEST(SustainedVerdict, AClockLowerFromTheChangePointOnIsThrottling) {
    auto rounds = halving_at_6();
    for (auto& r : rounds) {
        r.freq["cpufreq.policy7.cur_freq_khz"].mean_khz = r.round < 6 ? 3187200 : 1804800;
        r.freq["cpufreq.policy0.cur_freq_khz"].mean_khz = 1804800;  // unchanged: no evidence
    }
    const AcrossRounds a = summarize_rounds(rounds, {});
    EXPECT_EQ(a.throttle_onset_round, 6);
    EXPECT_EQ(a.drop_round, 6);
    EXPECT_EQ(a.verdict, "throttled at round 6");
    EXPECT_EQ(a.throttle_evidence,
              std::vector<std::string>{
                  "cpufreq.policy7 clock 3187 MHz before round 6, 1805 MHz from it on (-43.4 %)"});
}

TEST(SustainedVerdict, AClockThatFellLaterOrABusClockIsNoEvidence) {
    auto later = halving_at_6();
    for (auto& r : later)  // the big cores slow down two rounds after throughput did
        r.freq["cpufreq.policy7.cur_freq_khz"].mean_khz = r.round < 8 ? 3187200 : 1804800;
    EXPECT_EQ(summarize_rounds(later, {}).verdict,
              "throughput dropped at round 6 (no clock or temperature evidence)");
    auto bus = halving_at_6();
    for (auto& r : bus)  // the memory bus follows the traffic down
        r.freq["devfreq.soc_qcom_cpu-llcc-ddr-bw.cur_freq_khz"].mean_khz =
            r.round < 6 ? 1555000 : 547000;
    EXPECT_EQ(summarize_rounds(bus, {}).verdict,
              "throughput dropped at round 6 (no clock or temperature evidence)");
    auto small = halving_at_6();
    for (auto& r : small)  // 4 % lower: within the governor's wander
        r.freq["gpu.kgsl-3d0.cur_freq_khz"].mean_khz = r.round < 6 ? 680000 : 652800;
    EXPECT_FALSE(summarize_rounds(small, {}).throttle_onset_round);
    for (auto& r : small)  // 5 % lower: a GPU clock is evidence too
        r.freq["gpu.kgsl-3d0.cur_freq_khz"].mean_khz = r.round < 6 ? 680000 : 646000;
    const AcrossRounds g = summarize_rounds(small, {});
    EXPECT_EQ(g.verdict, "throttled at round 6");
    EXPECT_EQ(g.throttle_evidence,
              std::vector<std::string>{
                  "gpu.kgsl-3d0 clock 680 MHz before round 6, 646 MHz from it on (-5.0 %)"});
}

TEST(SustainedVerdict, HeatingUpToTheChangePointIsThrottling) {
    auto rounds = halving_at_6();
    for (auto& r : rounds) {
        r.temp_start_c = 40 + 2.0 * (r.round - 1);
        r.temp_max_c = 41 + 2.0 * (r.round - 1);  // round 6 peaks at 51 °C, 11 °C above 40
    }
    const AcrossRounds a = summarize_rounds(rounds, {});
    EXPECT_EQ(a.throttle_onset_round, 6);
    EXPECT_EQ(a.verdict, "throttled at round 6");
    EXPECT_EQ(a.throttle_evidence,
              std::vector<std::string>{"hottest sensor 40.0 °C at the first round's start, "
                                       "51.0 °C in round 6 (+11.0 °C)"});
    // Warming by less than kHeatingEvidenceC is no evidence.
    for (auto& r : rounds) {
        r.temp_start_c = 40;
        r.temp_max_c = r.round <= 6 ? 44.9 : 60;  // hot only after the change
    }
    EXPECT_EQ(summarize_rounds(rounds, {}).verdict,
              "throughput dropped at round 6 (no clock or temperature evidence)");
}

TEST(SustainedVerdict, TheMachinesLoadIsNamedWhenItWasHigh) {
    SustainedResult res;
    res.phases.resize(2);
    res.phases[0].name = "baseline";
    res.phases[0].rounds = halving_at_6();
    res.phases[0].across = summarize_rounds(res.phases[0].rounds, {});
    res.phases[1].name = "loaded";
    res.phases[1].background = "cpu:2";
    res.phases[1].rounds = rounds_with({20, 20.1, 19.9, 20, 20.1, 19.9});
    res.phases[1].across = summarize_rounds(res.phases[1].rounds, {});
    const Warnings warnings{{"other_load", "1-minute load average is 3.50 on 2 logical CPUs", ""}};
    const MachineLoad system{3.5, 2};
    name_machine_load(res, system, warnings);
    EXPECT_EQ(res.phases[0].across.load,
              "1-minute load average 3.50 on 2 logical CPUs when the run started");
    EXPECT_EQ(res.phases[0].across.verdict,
              "throughput dropped at round 6 (no clock or temperature evidence; the machine was "
              "loaded: 1-minute load average 3.50 on 2 logical CPUs when the run started)");
    // The loaded phase's load is its own background load; a stable verdict stays stable.
    EXPECT_EQ(res.phases[1].across.load, "background load cpu:2");
    EXPECT_EQ(res.phases[1].across.verdict, "stable");
    // Without a document system, the warning's own text.
    name_machine_load(res, MachineLoad{}, warnings);
    EXPECT_EQ(res.phases[0].across.load, "1-minute load average is 3.50 on 2 logical CPUs");
    // A machine not loaded is not named.
    name_machine_load(res, system, {});
    EXPECT_FALSE(res.phases[0].across.load);
    EXPECT_EQ(res.phases[0].across.verdict,
              "throughput dropped at round 6 (no clock or temperature evidence)");
    // A slow decline without a step names the load too.
    AcrossRounds d = summarize_rounds(rounds_with({40, 36, 41, 35, 39, 34, 37, 33}), {});
    d.load = "background load cpu:1";
    EXPECT_EQ(verdict_text(d), "degraded (the machine was loaded: background load cpu:1)");
}

TEST(ComponentOf, NamesFromRealSensorsAndRails) {
    const std::optional<Component> cpu = Component::cpu, gpu = Component::gpu, npu = Component::npu,
                                   none;
    // Snapdragon, Pixel, Jetson, Raspberry Pi, x86 thermal zones and hwmon chips.
    EXPECT_EQ(component_of("thermal.cpu-0-0-usr.temp_mc"), cpu);
    EXPECT_EQ(component_of("thermal.gpuss-0-usr.temp_mc"), gpu);
    EXPECT_EQ(component_of("gpu.kgsl-3d0.temp_mc"), gpu);
    EXPECT_EQ(component_of("thermal.nspss-0.temp_mc"), npu);
    EXPECT_EQ(component_of("thermal.BIG.temp_mc"), cpu);
    EXPECT_EQ(component_of("thermal.LITTLE.temp_mc"), cpu);
    EXPECT_EQ(component_of("thermal.G3D.temp_mc"), gpu);
    EXPECT_EQ(component_of("thermal.TPU.temp_mc"), npu);
    EXPECT_EQ(component_of("thermal.cpu-thermal.temp_mc"), cpu);
    EXPECT_EQ(component_of("thermal.gpu-thermal.temp_mc"), gpu);
    EXPECT_EQ(component_of("thermal.x86_pkg_temp.temp_mc"), cpu);
    EXPECT_EQ(component_of("hwmon.coretemp.temp1_temp_mc"), cpu);
    EXPECT_EQ(component_of("nvml.gpu0.temp_mc"), gpu);
    EXPECT_EQ(component_of("thermal.skin-msm-therm.temp_mc"), none);
    EXPECT_EQ(component_of("thermal.battery.temp_mc"), none);
    EXPECT_EQ(component_of("battery.battery.temp_mc"), none);
    EXPECT_EQ(component_of("thermal.tj-thermal.temp_mc"), none);
    EXPECT_EQ(component_of("thermal.acpitz-0.temp_mc"), none);
    EXPECT_EQ(component_of("thermal.ap.temp_mc"), none);
    // Clocks: CPU policies and GPUs; the memory bus is nobody's own clock.
    EXPECT_EQ(component_of("cpufreq.policy0.cur_freq_khz"), cpu);
    EXPECT_EQ(component_of("devfreq.17000000_ga10b.cur_freq_khz"), gpu);
    EXPECT_EQ(component_of("devfreq.soc_qcom_cpu-llcc-ddr-bw.cur_freq_khz"), none);
    // Rails: one kind each, or none when a rail feeds two.
    EXPECT_EQ(component_of("odpm.S4M_VDD_CPUCL0.energy_uj"), cpu);
    EXPECT_EQ(component_of("odpm.S10M_VDD_TPU.energy_uj"), npu);
    EXPECT_EQ(component_of("hwmon.ina3221.VDD_CPU_GPU_CV.power_mw"), none);
    EXPECT_EQ(component_of("rapl.core.energy_uj"), cpu);
    EXPECT_EQ(component_of("rapl.dram.energy_uj"), none);
}

namespace {

StageWindow window(int64_t duration_ns, double total_j) {
    StageWindow w;
    w.duration_ns = duration_ns;
    w.total.energy_j = total_j;
    return w;
}

void add_gauge(StageWindow& w, const std::string& metric, const std::string& unit, double start,
               double end, double mean) {
    StageGauge g;
    g.metric = metric;
    g.unit = unit;
    g.start = start;
    g.end = end;
    g.mean = mean;
    w.gauges.push_back(g);
}

void add_energy(StageWindow& w, const std::string& metric, double j, bool system_total = false,
                std::optional<std::string> within = std::nullopt) {
    StageEnergy e;
    e.metric = metric;
    e.energy_j = j;
    e.system_total = system_total;
    e.within = std::move(within);
    w.energy.push_back(e);
}

// A round measured in process: 64 prompt tokens in 0.5 s, 16 generated in 1.5 s.
TestResult in_process_round() {
    TestResult t;
    t.config.n_prompt = 64;
    t.config.n_gen = 16;
    t.prefill.emplace().n_tokens = 64;
    t.prefill->duration_ns = {500'000'000};
    t.decode.emplace().n_tokens = 16;
    t.decode->duration_ns = {1'500'000'000};
    t.decode->token_latency_counts = {16};
    return t;
}

}  // namespace

TEST(RequestFigures, EndToEndAndCombinedRateOfTheMeasuredRequest) {
    SustainedRound r;
    add_request_figures(in_process_round(), r);
    EXPECT_DOUBLE_EQ(*r.e2e_s, 2.0);
    EXPECT_EQ(r.prompt_tokens, 64);
    EXPECT_EQ(r.generated_tokens, 16);
    EXPECT_DOUBLE_EQ(*r.combined_tps, 40.0);  // (64 + 16) / 2 s
    // Over HTTP: the client's E2E and the server's counts (60 prompt tokens, 20 generated).
    TestResult h = in_process_round();
    h.client.emplace();
    h.client->e2e_ns = {2'500'000'000};
    h.client->prompt_tokens = {60};
    h.client->output_tokens = {20};
    SustainedRound hr;
    add_request_figures(h, hr);
    EXPECT_DOUBLE_EQ(*hr.e2e_s, 2.5);
    EXPECT_EQ(hr.prompt_tokens, 60);
    EXPECT_EQ(hr.generated_tokens, 20);
    EXPECT_DOUBLE_EQ(*hr.combined_tps, 32.0);
    // A round that failed before decoding has no E2E.
    TestResult f = in_process_round();
    f.decode.reset();
    SustainedRound fr;
    add_request_figures(f, fr);
    EXPECT_FALSE(fr.e2e_s);
    EXPECT_FALSE(fr.combined_tps);
    EXPECT_EQ(fr.prompt_tokens, 64);
}

TEST(RequestFigures, PowerEnergyTemperaturesAndBatteryFromTheTwoWindows) {
    TestTelemetry tel;
    StageWindow pre = window(500'000'000, 2.0), dec = window(1'500'000'000, 3.0);
    // CPU: two zones, the hotter by its mean over the request (43 °C against 42 °C).
    add_gauge(pre, "thermal.cpu-0-0-usr.temp_mc", "mC", 40000, 40000, 40000);
    add_gauge(dec, "thermal.cpu-0-0-usr.temp_mc", "mC", 44000, 44000, 44000);
    add_gauge(pre, "thermal.cpu-1-0-usr.temp_mc", "mC", 42000, 42000, 42000);
    add_gauge(dec, "thermal.cpu-1-0-usr.temp_mc", "mC", 42000, 42000, 42000);
    for (StageWindow* w : {&pre, &dec}) {
        add_gauge(*w, "thermal.gpuss-0-usr.temp_mc", "mC", 39900, 39900, 39900);
        add_gauge(*w, "thermal.skin-msm-therm.temp_mc", "mC", 60000, 60000, 60000);
        add_gauge(*w, "battery.battery.voltage_mv", "mV", 3870, 3870, 3870);
        add_gauge(*w, "battery.battery.charge_full_uah", "uAh", 4800000, 4800000, 4800000);
    }
    add_gauge(pre, "battery.battery.capacity_pct", "%", 76, 76, 76);
    add_gauge(dec, "battery.battery.capacity_pct", "%", 76, 75, 75.5);
    add_energy(pre, "battery.battery.power_mw", 2.0, true);
    add_energy(dec, "battery.battery.power_mw", 3.0, true);
    // Rails: the CPU cluster rails add up; a GPU rail; a rail of two kinds counts for neither.
    add_energy(pre, "odpm.S4M_VDD_CPUCL0.energy_uj", 0.25);
    add_energy(dec, "odpm.S4M_VDD_CPUCL0.energy_uj", 0.75);
    add_energy(pre, "odpm.S2M_VDD_CPUCL2.energy_uj", 0.5);
    add_energy(dec, "odpm.S2M_VDD_CPUCL2.energy_uj", 1.0);
    add_energy(pre, "odpm.S2S_VDD_G3D.energy_uj", 0.1);
    add_energy(dec, "odpm.S2S_VDD_G3D.energy_uj", 0.3);
    add_energy(pre, "hwmon.ina3221.VDD_CPU_GPU_CV.power_mw", 9);
    add_energy(dec, "hwmon.ina3221.VDD_CPU_GPU_CV.power_mw", 9);
    tel.prefill = {pre};
    tel.decode = {dec};

    SustainedRound r;
    add_request_figures(in_process_round(), r);
    add_request_telemetry(tel, r);
    EXPECT_DOUBLE_EQ(*r.energy_j, 5.0);
    EXPECT_DOUBLE_EQ(*r.power_w, 2.5);         // 5 J over 2 s
    EXPECT_DOUBLE_EQ(*r.j_per_token, 0.3125);  // 5 J / 16 generated tokens
    EXPECT_DOUBLE_EQ(*r.power_cpu_w, 1.25);    // (0.25 + 0.75 + 0.5 + 1.0) J / 2 s
    EXPECT_DOUBLE_EQ(*r.power_gpu_w, 0.2);
    EXPECT_FALSE(r.power_npu_w);
    EXPECT_DOUBLE_EQ(*r.temp_cpu_c, 43.0);  // (40 × 0.5 + 44 × 1.5) / 2
    EXPECT_DOUBLE_EQ(*r.temp_gpu_c, 39.9);
    EXPECT_FALSE(r.temp_npu_c);  // the skin's 60 °C is no component's
    EXPECT_EQ(r.battery_capacity_start_pct, 76);
    EXPECT_EQ(r.battery_capacity_end_pct, 75);
    // 5 J of a 4.8 Ah charge at 3.87 V (66,873.6 J).
    EXPECT_NEAR(*r.battery_drain_pct, 5.0 / 66873.6 * 100, 1e-12);

    // Without a meter's total in one window there is no energy, power or J/token.
    tel.decode[0].total.energy_j.reset();
    SustainedRound partial;
    add_request_figures(in_process_round(), partial);
    add_request_telemetry(tel, partial);
    EXPECT_FALSE(partial.energy_j);
    EXPECT_FALSE(partial.power_w);
    EXPECT_FALSE(partial.j_per_token);
    EXPECT_DOUBLE_EQ(*partial.temp_cpu_c, 43.0);
    // Without charge_full, no drain from energy; the capacity still reads.
    for (StageWindow* w : {&tel.prefill[0], &tel.decode[0]})
        for (auto& g : w->gauges)
            if (g.metric == "battery.battery.charge_full_uah")
                g.mean.reset();
    SustainedRound nofull;
    add_request_telemetry(tel, nofull);
    EXPECT_FALSE(nofull.battery_drain_pct);
    EXPECT_EQ(nofull.battery_capacity_start_pct, 76);
}

TEST(RequestFigures, ARailNestedInAnotherOfItsKindIsNotAddedTwice) {
    TestTelemetry tel;
    StageWindow w = window(1'000'000'000, 10.0);
    add_energy(w, "rapl.package-0.energy_uj", 8.0);
    add_energy(w, "rapl.core.energy_uj", 5.0, false, "rapl.package-0");
    add_energy(w, "rapl.cpu-cluster.energy_uj", 6.0);
    add_energy(w, "rapl.cpu-core0.energy_uj", 4.0, false, "rapl.cpu-cluster");
    tel.decode = {w};
    SustainedRound r;
    add_request_telemetry(tel, r);
    // core (package-0 is nobody's) and cpu-cluster count; cpu-core0 is inside cpu-cluster.
    EXPECT_DOUBLE_EQ(*r.power_cpu_w, 11.0);
}

TEST(SummarizeRounds, MeanAndSdOfTheRequestFiguresAndTheBatteryDrain) {
    auto rounds = rounds_with({40, 40, 40});
    for (auto& r : rounds) {
        const double k = r.round;
        r.e2e_s = k;
        r.combined_tps = 80 / k;
        r.power_w = 2 * k;
        r.energy_j = 2 * k * k;
        r.temp_cpu_c = 40 + 2 * k;
        r.temp_gpu_c = 38;
        r.battery_capacity_start_pct = 77 - k + (k == 1 ? 0 : 1);
        r.battery_capacity_end_pct = 77 - k;
        r.battery_drain_pct = 0.1 * k;
    }
    SustainedRound failed;
    failed.round = 4;
    failed.status = Status::failed;
    failed.e2e_s = 100;  // a failed round does not count
    rounds.push_back(failed);
    AcrossRounds a = summarize_rounds(rounds, {});
    EXPECT_EQ(a.e2e_s.n, 3u);
    EXPECT_DOUBLE_EQ(*a.e2e_s.mean, 2);
    EXPECT_DOUBLE_EQ(*a.e2e_s.sd, 1);
    EXPECT_DOUBLE_EQ(*a.e2e_s.cv, 0.5);
    EXPECT_DOUBLE_EQ(*a.power_w.mean, 4);
    EXPECT_DOUBLE_EQ(*a.power_w.sd, 2);
    EXPECT_DOUBLE_EQ(*a.temp_cpu_c.mean, 44);
    EXPECT_DOUBLE_EQ(*a.temp_cpu_c.sd, 2);
    EXPECT_FALSE(a.temp_cpu_c.cv);  // a ratio of °C means nothing
    EXPECT_DOUBLE_EQ(*a.temp_gpu_c.mean, 38);
    EXPECT_DOUBLE_EQ(*a.temp_gpu_c.sd, 0);
    EXPECT_EQ(a.temp_npu_c.n, 0u);
    EXPECT_FALSE(a.temp_npu_c.mean);
    EXPECT_DOUBLE_EQ(*a.battery_drain_capacity_pct, 2);  // 76 at the start, 74 at the end
    EXPECT_NEAR(*a.battery_drain_energy_pct, 0.6, 1e-15);
    // One ok round without a drain from energy: no sum of a part.
    rounds[1].battery_drain_pct.reset();
    EXPECT_FALSE(summarize_rounds(rounds, {}).battery_drain_energy_pct);
}

namespace {

// Round k (1-based) of a phone whose charge counter falls 960 µAh per round's request (0.02 %
// of 4800000 µAh) over [10 k s, 10 k + 2 s], and 480 µAh in each 8 s cool-down between.
TestTelemetry round_battery(int k) {
    const double at_start = 3'000'000 - (k - 1) * (960 + 480);
    StageWindow pre = window(500'000'000, 2.0), dec = window(1'500'000'000, 3.0);
    pre.begin_ns = k * 10'000'000'000LL;
    pre.end_ns = pre.begin_ns + 500'000'000;
    dec.begin_ns = pre.end_ns;
    dec.end_ns = dec.begin_ns + 1'500'000'000;
    add_gauge(pre, "battery.battery.charge_counter_uah", "uAh", at_start, at_start - 240, 0);
    add_gauge(dec, "battery.battery.charge_counter_uah", "uAh", at_start - 240, at_start - 960, 0);
    add_gauge(pre, "battery.battery.capacity_pct", "%", 63, 63, 63);
    add_gauge(dec, "battery.battery.capacity_pct", "%", 63, 63 - (k == 3 ? 1 : 0), 63);
    for (StageWindow* w : {&pre, &dec})
        add_gauge(*w, "battery.battery.charge_full_uah", "uAh", 4800000, 4800000, 4800000);
    TestTelemetry tel;
    tel.prefill = {pre};
    tel.decode = {dec};
    return tel;
}

}  // namespace

TEST(RequestFigures, TheBatteryDrainOfEachRequestAndOverThePhase) {
    std::vector<SustainedRound> rounds;
    for (int k = 1; k <= 3; ++k) {
        SustainedRound r;
        r.round = k;
        r.decode_tps = 40;
        add_request_figures(in_process_round(), r);
        add_request_telemetry(round_battery(k), r);
        rounds.push_back(r);
    }
    const BatteryDrain& b = *rounds[0].battery;
    EXPECT_EQ(b.battery, "battery.battery");
    EXPECT_DOUBLE_EQ(b.span_s, 2.0);
    EXPECT_EQ(b.counter, "charge_counter");
    EXPECT_EQ(b.from, "charge_counter");
    EXPECT_NEAR(*b.drain_pct, 0.02, 1e-12);
    EXPECT_NEAR(*b.drain_pct_per_h, 36.0, 1e-9);  // 0.02 % in 2 s
    EXPECT_EQ(b.capacity_drain_pct, 0.0);
    EXPECT_EQ(rounds[2].battery->capacity_drain_pct, 1.0);

    const AcrossRounds a = summarize_rounds(rounds, {});
    ASSERT_TRUE(a.battery);
    // Round 1's start (10 s) to round 3's end (32 s): 3 × 960 + 2 × 480 µAh = 0.08 %.
    EXPECT_DOUBLE_EQ(a.battery->span_s, 22.0);
    EXPECT_NEAR(*a.battery->drain_pct, 0.08, 1e-12);
    EXPECT_NEAR(*a.battery->drain_pct_per_h, 0.08 / 22 * 3600, 1e-9);
    EXPECT_EQ(a.battery->capacity_drain_pct, 1.0);
    EXPECT_EQ(a.battery_drain_pct_per_h.n, 3u);
    EXPECT_NEAR(*a.battery_drain_pct_per_h.mean, 36.0, 1e-9);
    EXPECT_FALSE(a.battery_drain_pct_per_h.cv);  // a drain may be negative: no CV

    // No battery: nothing.
    SustainedRound none;
    add_request_telemetry(TestTelemetry{}, none);
    EXPECT_FALSE(none.battery);
    std::vector<SustainedRound> plain = rounds_with({40, 40});
    EXPECT_FALSE(summarize_rounds(plain, {}).battery);
    EXPECT_EQ(summarize_rounds(plain, {}).battery_drain_pct_per_h.n, 0u);
}

TEST(SummarizeRounds, TimeAtTheKernelReportedFloor) {
    TelemetrySeries cur, mn;
    cur.metric = "cpufreq.policy0.cur_freq_khz";
    mn.metric = "cpufreq.policy0.min_freq_khz";
    for (int i = 0; i <= 10; ++i) {
        cur.t_ns.push_back(i * 100'000'000LL);
        cur.values.push_back(i < 6 ? 2e6 : 3e5);
        mn.t_ns.push_back(i * 100'000'000LL);
        mn.values.push_back(3e5);
    }
    auto a = summarize_rounds(rounds_with({1, 1, 1, 1}), {cur, mn});
    ASSERT_EQ(a.time_at_floor.size(), 1u);
    EXPECT_NEAR(a.time_at_floor[0].seconds, 0.4, 1e-9);
    EXPECT_NEAR(a.time_at_floor[0].fraction, 0.4, 1e-9);
}

TEST(PhaseSlowdown, BaselineOverLoadedPerStageOfOkRounds) {
    SustainedPhase base, loaded;
    base.rounds = rounds_with({40, 40, 40, 40});
    loaded.rounds = rounds_with({20, 20, 20, 20});
    SustainedRound failed;
    failed.status = Status::failed;
    failed.decode_tps = 1;  // a failed round does not count
    loaded.rounds.push_back(failed);
    const auto s = phase_slowdown(base, loaded);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].stage, "prefill");
    EXPECT_DOUBLE_EQ(s[0].ratio, 2);
    EXPECT_EQ(s[1].stage, "decode");
    EXPECT_DOUBLE_EQ(s[1].ratio, 2);
    EXPECT_DOUBLE_EQ(s[1].ci_lo, 2);
    EXPECT_DOUBLE_EQ(s[1].ci_hi, 2);
    EXPECT_FALSE(s[1].no_difference);
    // A stage without rounds on one side is left out.
    for (auto& r : loaded.rounds)
        r.prefill_tps.reset();
    const auto d = phase_slowdown(base, loaded);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].stage, "decode");
    EXPECT_TRUE(phase_slowdown(base, SustainedPhase{}).empty());
}
