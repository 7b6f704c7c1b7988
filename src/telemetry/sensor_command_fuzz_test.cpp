// Seeded fuzz of a sensor's child process (`vcgencmd get_throttled` on a Raspberry Pi): the
// command answers, fails, prints garbage or bytes that are not UTF-8, floods its output
// ignoring SIGPIPE, closes its output and keeps running, hands its output to a grandchild or
// dies by a signal, at discovery and at a later read. Discovery and reading never throw,
// never take longer than the command's deadline (2 s) and the kill, and give the flags only
// from a well-formed answer; a command that failed is absent with a warning. The seed and the
// number of cases are printed (tests/fuzz_seed.hpp).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fuzz_seed.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/test_util.hpp"

namespace sb {
namespace {

struct Behaviour {
    std::string sh;         // what the command does
    bool answers = false;   // prints a well-formed throttled=0x50005 and exits 0 at once
    bool overruns = false;  // does not end within the deadline
};

const std::vector<Behaviour>& behaviours() {
    static const std::vector<Behaviour> b = {
        {"echo throttled=0x50005", true, false},
        {"printf 'throttled=0x50005'", true, false},
        {"echo throttled=0x50005; exit 1", false, false},
        {"echo 'throttled=0xZZ'", false, false},
        {"printf 'throttled=\\377\\376\\n'", false, false},
        {"echo", false, false},
        {"exit 0", false, false},
        {"kill -SEGV $$", false, false},
        {"head -c 100000 /dev/zero | tr '\\0' 'x'", false, false},
        {"echo throttled=0x50005; exec >&- 2>&-; sleep 60", false, true},
        {"trap '' PIPE; yes throttled=0x50005", false, true},
        {"sleep 60 & echo throttled=0x50005", false, true},  // a grandchild holds the pipe
        {"sleep 60", false, true},
    };
    return b;
}

double seconds_since_t0(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(SensorCommandFuzz, AMisbehavingCommandCostsItsDeadlineAtMostAndIsAbsentWithAWarning) {
    sbtest::FuzzRun fuzz(33);
    std::mt19937_64 rng(fuzz.seed());
    testing::FixtureCopy fx("rpi5");
    const std::string script = fx.dir() + "/bin/vcgencmd";
    const std::string state = fx.dir() + "/discovered";
    while (fuzz.cases() < 16) {
        const int case_no = fuzz.next_case();
        const Behaviour& at_discovery = behaviours()[rng() % behaviours().size()];
        const Behaviour& later = behaviours()[rng() % behaviours().size()];
        SCOPED_TRACE("case " + std::to_string(case_no) + ": '" + at_discovery.sh + "' then '" +
                     later.sh + "'");
        std::remove(state.c_str());
        {
            std::ofstream f(script, std::ios::trunc);
            f << "#!/bin/sh\nif [ -e " << state << " ]; then\n"
              << later.sh << "\nelse\ntouch " << state << "\n"
              << at_discovery.sh << "\nfi\n";
        }
        ::chmod(script.c_str(), 0755);

        Discovery d;
        auto t0 = std::chrono::steady_clock::now();
        discover_vcgencmd(script, d);
        EXPECT_LT(seconds_since_t0(t0), at_discovery.overruns ? 7.0 : 5.0);
        ASSERT_EQ(d.classes.size(), 1u);
        EXPECT_EQ(d.classes[0].found, at_discovery.answers ? 1 : 0);
        if (!at_discovery.answers) {
            EXPECT_TRUE(d.sources.empty());
            EXPECT_EQ(d.warnings.size(), 1u);
            continue;
        }
        ASSERT_EQ(d.sources.size(), 1u);
        std::vector<std::optional<double>> v(1);
        t0 = std::chrono::steady_clock::now();
        d.sources[0]->read(0, v);
        EXPECT_LT(seconds_since_t0(t0), later.overruns ? 7.0 : 5.0);
        if (later.answers) {
            EXPECT_EQ(v[0], static_cast<double>(0x50005));
            EXPECT_TRUE(d.sources[0]->warnings().empty());
        } else {
            EXPECT_FALSE(v[0]);
            EXPECT_EQ(d.sources[0]->warnings().size(), 1u);
        }
        // The next refresh: an overrun is not waited on again.
        t0 = std::chrono::steady_clock::now();
        d.sources[0]->read(int64_t{2'000'000'000}, v);
        if (later.overruns) {
            EXPECT_LT(seconds_since_t0(t0), 0.5);
        }
    }
}

}  // namespace
}  // namespace sb
