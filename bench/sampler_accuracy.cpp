// The telemetry sampler's accuracy on a live clock and thread, against what a writer thread
// put into the sensor files in the same run (its log of every write is the exact answer):
//  - power: a Jetson INA3221 rail whose current ramps; the stage's integrated energy against
//    the integral of the written power;
//  - counter: a RAPL package counter at 15 W that wraps every 0.2 s; the stage's energy against
//    the range the counter's increase may have had between the two boundary reads.
// The runs are telemetry/live_runs.hpp's, as the live tests run them. The sampler's arithmetic
// is exact under a fake clock (src/telemetry/sampler_test.cpp); what this measures is what a
// real scheduler adds: a descheduled sampler reads late, a stall longer than a wrap period loses
// a wrap. Target: the median relative error of each kind under 1 % over the rounds. Prints
// every round, the median and the worst; exits 1 on a miss.
//
//   build/bin/sampler_accuracy [rounds]      (bench/sampler_accuracy.sh runs it)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/stats.hpp"
#include "telemetry/live_runs.hpp"

namespace {

using sb::testing::energy_of;
using sb::testing::WriteLog;

// Relative error of the power integral over one stage, or a negative value when the sampler
// gave no energy at all.
double power_round() {
    WriteLog log;
    const auto run = sb::testing::live_ina3221_stage(log);
    const sb::StageEnergy* e =
        run.stage ? energy_of(*run.stage, "hwmon.ina3221.VDD_IN.power_mw") : nullptr;
    if (!e || !e->energy_j)
        return -1;
    const double expected = log.integral(run.stage->begin_ns, run.stage->end_ns) * 1e-3;
    return std::abs(*e->energy_j - expected) / expected;
}

// Relative distance of the counter energy over one stage from the range the writer's log
// allows (0 inside it), or a negative value when the sampler gave no energy.
double counter_round() {
    WriteLog log;
    const auto run = sb::testing::live_rapl_stage(log);
    const sb::StageEnergy* e =
        run.stage ? energy_of(*run.stage, "rapl.package-0.energy_uj") : nullptr;
    if (!e || !e->energy_j)
        return -1;
    const sb::StageWindow& st = *run.stage;
    auto [lo, hi] = log.delta(st.begin_ns, st.begin_read_ns, st.end_ns, st.end_read_ns);
    lo *= 1e-6;
    hi *= 1e-6;
    const double got = *e->energy_j, eps = 1e-6;  // the file holds whole µJ
    if (got >= lo - eps && got <= hi + eps)
        return 0;
    return (got < lo ? lo - got : got - hi) / (0.5 * (lo + hi));
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 10;
    if (rounds < 1) {
        fmt::print(stderr, "sampler_accuracy: rounds must be a positive integer\n");
        return 2;
    }
    std::vector<double> power, counter;
    for (int r = 0; r < rounds; ++r) {
        const double p = power_round(), c = counter_round();
        if (p < 0 || c < 0) {
            fmt::print(stderr, "sampler_accuracy: round {} gave no energy\n", r + 1);
            return 2;
        }
        power.push_back(p);
        counter.push_back(c);
        fmt::print("  round {:2}: power integral {:6.3f} %   counter {:6.3f} %\n", r + 1, 100 * p,
                   100 * c);
    }
    bool ok = true;
    for (const auto& [name, v] : {std::pair{"power integral", power}, {"counter", counter}}) {
        const double m = *sb::percentile(v, 0.5), worst = *std::max_element(v.begin(), v.end());
        const bool met = m < 0.01;
        ok = ok && met;
        fmt::print(
            "{}: median error {:.3f} %, worst {:.3f} % over {} rounds; target (median < 1 "
            "%): {}\n",
            name, 100 * m, 100 * worst, rounds, met ? "met" : "MISSED");
    }
    return ok ? 0 : 1;
}
