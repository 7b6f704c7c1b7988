// The Markdown of `stagebench sustained`: the study's table per round with its mean ± sd, the
// battery drain, and verdicts that call a drop throttling only with evidence.
#include "report/sustained_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace sb;

namespace {

SustainedRound round_of(int k, double e2e_s, double power_w, double cpu_c, double gpu_c) {
    SustainedRound r;
    r.round = k;
    r.decode_tps = 10.0 * k;
    r.e2e_s = e2e_s;
    r.prompt_tokens = 258;
    r.generated_tokens = 306;
    r.combined_tps = 564 / e2e_s;
    r.power_w = power_w;
    r.energy_j = power_w * e2e_s;
    r.j_per_token = power_w * e2e_s / 306;
    r.temp_cpu_c = cpu_c;
    r.temp_gpu_c = gpu_c;
    return r;
}

std::string markdown(const SustainedResult& r) {
    std::ostringstream out;
    write_sustained_markdown(r, out);
    return out.str();
}

}  // namespace

TEST(SustainedMarkdown, TheDrainPerRoundAndOverThePhaseWhereABatteryWasRead) {
    SustainedResult res;
    SustainedPhase& p = res.phases.emplace_back();
    p.name = "rounds";
    p.rounds = {round_of(1, 72, 1.9, 60, 58), round_of(2, 74, 2.1, 62, 58)};
    for (auto& r : p.rounds) {
        r.battery_capacity_start_pct = 80;
        r.battery_capacity_end_pct = 80;
        BatteryDrain& b = r.battery.emplace();
        b.battery = "battery.battery";
        b.span_s = r.e2e_s.value_or(0);
        b.from = "charge_counter";
        b.drain_pct = 0.02 * r.round;
        b.drain_pct_per_h = 0.02 * r.round / b.span_s * 3600;
    }
    p.across.battery_drain_pct_per_h = {2, 1.4865, 0.4907, std::nullopt, 1.0, 1.9459};
    BatteryDrain& all = p.across.battery.emplace();
    all.span_s = 160;
    all.from = "charge_counter";
    all.drain_pct = 0.0626;
    all.drain_pct_per_h = 1.40625;
    all.capacity_drain_pct = 0;
    all.capacity_drain_pct_per_h = 0;
    p.across.verdict = "stable";
    const std::string md = markdown(res);
    EXPECT_NE(md.find("| CPU °C | GPU °C | battery % | drain %/h |\n"), std::string::npos) << md;
    EXPECT_NE(md.find("| 60.0 | 58.0 | 80 → 80 | 1.00 |\n"), std::string::npos) << md;
    EXPECT_NE(md.find("| 62.0 | 58.0 | 80 → 80 | 1.95 |\n"), std::string::npos) << md;
    EXPECT_NE(md.find(" | 1.49 ± 0.49 |\n"), std::string::npos) << md;
    EXPECT_NE(md.find("drain %/h: the battery's drain over the round's request per hour, by "
                      "charge_counter against its full value\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("battery drain over the phase (first round's start to last round's end, "
                      "160.0 s): 0.063 % (1.41 %/h) by charge_counter against its full value; "
                      "0.000 % (0.00 %/h) by the capacity (whole percent)\n"),
              std::string::npos)
        << md;
    // Without a battery: no column, no line.
    for (auto& r : p.rounds)
        r.battery.reset();
    p.across.battery.reset();
    const std::string none = markdown(res);
    EXPECT_EQ(none.find("drain %/h"), std::string::npos) << none;
    EXPECT_EQ(none.find("over the phase"), std::string::npos) << none;
}

TEST(SustainedMarkdown, TheStudysTablePerRoundWithMeanAndSd) {
    SustainedResult res;
    SustainedPhase& p = res.phases.emplace_back();
    p.name = "rounds";
    // A Hailo-like round: 564 tokens in 72 s at 1.9 W.
    p.rounds = {round_of(1, 72, 1.9, 60, 58), round_of(2, 74, 2.1, 62, 58)};
    p.rounds[0].battery_capacity_start_pct = 80;
    p.rounds[0].battery_capacity_end_pct = 79;
    p.rounds[1].battery_capacity_start_pct = 79;
    p.rounds[1].battery_capacity_end_pct = 78;
    p.across.e2e_s = {2, 73, 1.4142135623730951, 0.019, 72, 74};
    p.across.combined_tps = {2, 7.7275, 0.1497, std::nullopt, 7.6216, 7.8333};
    p.across.power_w = {2, 2.0, 0.1414, std::nullopt, 1.9, 2.1};
    p.across.energy_j = {2, 146.1, 13.1522, std::nullopt, 136.8, 155.4};
    p.across.j_per_token = {2, 0.477451, 0.04298, std::nullopt, 0.447059, 0.507843};
    p.across.temp_cpu_c = {2, 61, 1.4142135623730951, std::nullopt, 60, 62};
    p.across.temp_gpu_c = {2, 58, 0, std::nullopt, 58, 58};
    p.across.decode_tps.mean = 15;
    p.across.decode_tps.stddev = 7.0710678;
    p.across.battery_drain_capacity_pct = 2;
    p.across.battery_drain_energy_pct = 0.0123;
    p.across.verdict = "stable";
    const std::string md = markdown(res);
    EXPECT_NE(md.find("| round | E2E s | tokens (prompt + generated) | combined t/s | decode t/s | "
                      "power W | energy J | J/token | CPU °C | GPU °C | battery % |\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| 1 | 72.000 | 258 + 306 | 7.83 | 10.00 | 1.900 | 136.800 | 0.4471 | 60.0 "
                      "| 58.0 | 80 → 79 |\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| mean ± sd (2 ok) | 73.000 ± 1.414 | | 7.73 ± 0.15 | 15.00 ± 7.07 | "
                      "2.000 ± 0.141 | 146.100 ± 13.152 | 0.4775 ± 0.0430 | 61.0 ± 1.4 | "
                      "58.0 ± 0.0 | 2 drained |\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("battery drain: 2 % from the capacity (whole percent) at the first round's "
                      "start to the last round's end; 0.012 % of a full charge by the battery's "
                      "energy over the requests (charge_full × voltage)\n"),
              std::string::npos)
        << md;
    // No NPU sensor, no rails: no such columns.
    EXPECT_EQ(md.find("NPU °C"), std::string::npos);
    EXPECT_EQ(md.find("CPU W"), std::string::npos);
}

TEST(SustainedMarkdown, WithoutSensorsEveryFigureOfTheMeterIsADash) {
    SustainedResult res;
    SustainedPhase& p = res.phases.emplace_back();
    p.name = "rounds";
    SustainedRound r;
    r.round = 1;
    r.decode_tps = 40;
    r.e2e_s = 0.5;
    r.prompt_tokens = 16;
    r.generated_tokens = 4;
    r.combined_tps = 40;
    p.rounds = {r};
    p.across.e2e_s = {1, 0.5, std::nullopt, std::nullopt, 0.5, 0.5};
    const std::string md = markdown(res);
    EXPECT_NE(md.find("| 1 | 0.500 | 16 + 4 | 40.00 | 40.00 | - | - | - | - | - |\n"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| mean ± sd (1 ok) | 0.500 | | - | - | - | - | - | - | - |\n"),
              std::string::npos)
        << md;
    EXPECT_EQ(md.find("battery"), std::string::npos) << md;
}

TEST(SustainedMarkdown, AVerdictShowsItsEvidenceOrTheLoad) {
    SustainedResult res;
    SustainedPhase& p = res.phases.emplace_back();
    p.name = "rounds";
    p.rounds = {round_of(1, 1, 1, 40, 40)};
    p.across.throttle_onset_round = 6;
    p.across.onset_basis = "throughput";
    p.across.throttle_evidence = {
        "cpufreq.policy7 clock 3187 MHz before round 6, 1805 MHz from "
        "it on (-43.4 %)"};
    p.across.verdict = "throttled at round 6";
    std::string md = markdown(res);
    EXPECT_NE(md.find("verdict: **throttled at round 6** (change point in throughput; evidence: "
                      "cpufreq.policy7 clock 3187 MHz before round 6, 1805 MHz from it on "
                      "(-43.4 %));"),
              std::string::npos)
        << md;

    p.across = {};
    p.across.drop_round = 9;
    p.across.onset_basis = "throughput";
    p.across.load = "1-minute load average 3.50 on 2 logical CPUs when the run started";
    p.across.verdict =
        "throughput dropped at round 9 (no clock or temperature evidence; the "
        "machine was loaded: 1-minute load average 3.50 on 2 logical CPUs when "
        "the run started)";
    md = markdown(res);
    EXPECT_NE(md.find("verdict: **" + p.across.verdict + "**; decode"), std::string::npos) << md;
    EXPECT_EQ(md.find("throttled"), std::string::npos) << md;
    EXPECT_EQ(md.find("load: "), std::string::npos) << md;  // named once, in the verdict

    // A stable phase on a loaded machine names the load on its own line.
    p.across.drop_round.reset();
    p.across.verdict = "stable";
    md = markdown(res);
    EXPECT_NE(md.find("load: 1-minute load average 3.50 on 2 logical CPUs when the run started\n"),
              std::string::npos)
        << md;
}

// A net energy that is float noise (-1e-19 J/token) prints as 0, never as "-0.0000".
TEST(SustainedMarkdown, ANetEnergyThatRoundsToZeroHasNoSign) {
    SustainedResult res;
    SustainedPhase& p = res.phases.emplace_back();
    p.name = "rounds";
    p.rounds = {round_of(1, 72, 2.0, 50, 40)};
    p.across.decode_j_per_token.median = 0.25;
    p.across.decode_net_j_per_token.median = -1e-19;
    const std::string md = markdown(res);
    EXPECT_NE(md.find("decode energy: median 0.2500 J/token gross, 0.0000 J/token net"),
              std::string::npos)
        << md;
    EXPECT_EQ(md.find("-0.0"), std::string::npos) << md;
}
