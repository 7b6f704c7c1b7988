// The telemetry sampler's accuracy on a live clock and thread, against what a writer thread
// put into the sensor files in the same run (its log of every write is the exact answer):
//  - power: a Jetson INA3221 rail whose current ramps; the stage's integrated energy against
//    the integral of the written power;
//  - counter: a RAPL package counter at 15 W that wraps every 0.2 s; the stage's energy against
//    the range the counter's increase may have had between the two boundary reads.
// The sampler's arithmetic is exact under a fake clock (src/telemetry/sampler_test.cpp); what
// this measures is what a real scheduler adds: a descheduled sampler reads late, a stall longer
// than a wrap period loses a wrap. Target: the median relative error of each kind under 1 %
// over ROUNDS rounds. Prints every round, the median and the worst; exits 1 on a miss.
//
//   build/bin/sampler_accuracy [rounds]      (bench/sampler_accuracy.sh runs it)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/test_util.hpp"

namespace {

using sb::testing::FixtureCopy;
using sb::testing::write_atomic;
using sb::testing::WriteLog;
using sb::testing::Writer;

std::string num(double v) {
    return fmt::format("{:.0f}\n", v);
}

const sb::EnergyStat* energy_of(const sb::StageTelemetry& s, const std::string& metric) {
    for (const auto& e : s.energy) {
        if (e.metric == metric)
            return &e;
    }
    return nullptr;
}

// Relative error of the power integral over one 600 ms stage, or a negative value when the
// sampler gave no energy at all.
double power_round() {
    FixtureCopy fx("jetson-ina3221");
    const std::string curr = fx.path("class/hwmon/hwmon1/curr1_input");
    write_atomic(fx.path("class/hwmon/hwmon1/in1_input"), "5000\n");
    sb::Discovery d;
    sb::discover_hwmon(fx.root(), d);
    sb::Sampler s(std::move(d), {100, {}});
    WriteLog log;  // I(t) = 1000 + 2000 t mA at 5 V
    Writer w(
        [&](double t) {
            const double ma = std::round(1000 + 2000 * t);
            const int64_t b = sb::now_ns();
            write_atomic(curr, num(ma));
            log.add(b, sb::now_ns(), ma * 5.0);
        },
        std::chrono::microseconds(500));
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s.mark("prefill", true);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    s.mark("prefill", false);
    s.stop();
    w.stop();
    auto st = s.stage_summary("prefill");
    const sb::EnergyStat* e = st ? energy_of(*st, "hwmon.ina3221.VDD_IN.power_mw") : nullptr;
    if (!e || !e->energy_j)
        return -1;
    const double expected = log.integral(st->begin_ns, st->end_ns) * 1e-3;
    return std::abs(*e->energy_j - expected) / expected;
}

// Relative distance of the counter energy over one 800 ms stage from the range the writer's
// log allows (0 inside it), or a negative value when the sampler gave no energy.
double counter_round() {
    FixtureCopy fx("x86-laptop-rapl");
    const std::string pkg = fx.path("class/powercap/intel-rapl:0/energy_uj");
    write_atomic(fx.path("class/powercap/intel-rapl:0/max_energy_range_uj"), "3000000\n");
    sb::Discovery d;
    sb::discover_rapl(fx.root(), d);
    sb::Sampler s(std::move(d), {100, {}});
    WriteLog log;  // 15 W, unwrapped µJ in the log, wrapped at 3 J in the file
    Writer w(
        [&](double t) {
            const double v = 1e6 + 15e6 * t;
            const int64_t b = sb::now_ns();
            write_atomic(pkg, num(std::fmod(v, 3e6)));
            log.add(b, sb::now_ns(), v);
        },
        std::chrono::microseconds(500));
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    s.mark("decode", true);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    s.mark("decode", false);
    s.stop();
    w.stop();
    auto st = s.stage_summary("decode");
    const sb::EnergyStat* e = st ? energy_of(*st, "rapl.package-0.energy_uj") : nullptr;
    if (!e || !e->energy_j)
        return -1;
    auto [lo, hi] = log.delta(st->begin_ns, st->begin_read_ns, st->end_ns, st->end_read_ns);
    lo *= 1e-6;
    hi *= 1e-6;
    const double got = *e->energy_j, eps = 1e-6;  // the file holds whole µJ
    if (got >= lo - eps && got <= hi + eps)
        return 0;
    return (got < lo ? lo - got : got - hi) / (0.5 * (lo + hi));
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
            return 1;
        }
        power.push_back(p);
        counter.push_back(c);
        fmt::print("  round {:2}: power integral {:6.3f} %   counter {:6.3f} %\n", r + 1, 100 * p,
                   100 * c);
    }
    bool ok = true;
    for (const auto& [name, v] : {std::pair{"power integral", power}, {"counter", counter}}) {
        const double m = median(v), worst = *std::max_element(v.begin(), v.end());
        const bool met = m < 0.01;
        ok = ok && met;
        fmt::print(
            "{}: median error {:.3f} %, worst {:.3f} % over {} rounds; target (median < 1 "
            "%): {}\n",
            name, 100 * m, 100 * worst, rounds, met ? "met" : "MISSED");
    }
    return ok ? 0 : 1;
}
