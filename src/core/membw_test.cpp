#include "core/membw.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/error.hpp"

namespace sb {
namespace {

constexpr std::size_t kMiB = std::size_t{1024} * 1024;

std::string fixture(const std::string& name) {
#ifdef SB_SOURCE_DIR
    const std::filesystem::path src = SB_SOURCE_DIR;
#else
    const std::filesystem::path src = std::filesystem::path(__FILE__).parent_path() / "../..";
#endif
    return (src / "tests/fixtures/sysinfo" / name).string();
}

void expect_sane(const MembwResult& r) {
    for (double gbps : {r.copy_gbps, r.scale_gbps, r.add_gbps, r.triad_gbps}) {
        EXPECT_TRUE(std::isfinite(gbps));
        EXPECT_GT(gbps, 0.0);
    }
    EXPECT_GT(r.triad_gbps, 0.1);
    EXPECT_LT(r.triad_gbps, 10000.0);
    ASSERT_TRUE(r.triad_samples_gbps.max);
    EXPECT_DOUBLE_EQ(*r.triad_samples_gbps.max, r.triad_gbps);
}

TEST(Membw, SmallArraysSingleThread) {
    const MembwResult r = measure_membw(8 * kMiB, 1, 2);
    expect_sane(r);
    EXPECT_EQ(r.array_bytes, 8 * kMiB);
    EXPECT_EQ(r.threads, 1);
    EXPECT_EQ(r.triad_samples_gbps.n, 1u);  // the first of two reps is a warm-up
}

TEST(Membw, SmallArraysSeveralThreads) {
    // Sizes that do not divide evenly still cover every element (the result check reads them).
    const MembwResult r = measure_membw(8 * kMiB + 24, 3, 3);
    expect_sane(r);
    EXPECT_EQ(r.array_bytes, 8 * kMiB + 24);
    EXPECT_EQ(r.threads, 3);
    EXPECT_EQ(r.triad_samples_gbps.n, 2u);
}

TEST(Membw, OneRepIsCounted) {
    const MembwResult r = measure_membw(1 * kMiB, 2, 1);
    expect_sane(r);
    EXPECT_EQ(r.triad_samples_gbps.n, 1u);
}

TEST(Membw, AStopEndsTheKernelsAtTheNextPhase) {
    // 1000 repetitions of four kernels: Ctrl-C must not wait for them (run measures the
    // bandwidth before its first test).
    int polls = 0;
    try {
        measure_membw(1 * kMiB, 2, 1000, [&] { return ++polls >= 3; });
        FAIL() << "not stopped";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        EXPECT_STREQ(e.what(), "membw: interrupted (Ctrl-C)");
    }
    EXPECT_EQ(polls, 3);  // polled once per kernel phase, the workers gone at the third
}

TEST(Membw, InvalidArgumentsAreUsageErrors) {
    const auto kind_of = [](auto&& f) {
        try {
            f();
        } catch (const Error& e) {
            return e.kind();
        }
        ADD_FAILURE() << "no sb::Error thrown";
        return ErrorKind::runtime;
    };
    EXPECT_EQ(kind_of([] { measure_membw(0, 1, 1); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { measure_membw(8 * kMiB, 0, 1); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { measure_membw(8 * kMiB, -2, 1); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { measure_membw(8 * kMiB, 1, 0); }), ErrorKind::usage);
    EXPECT_EQ(kind_of([] { measure_membw(16, 4, 1); }), ErrorKind::usage);  // 2 doubles
}

TEST(Membw, LastLevelCacheFromSysfs) {
    // One L3 of 12 MiB shared by all CPUs (listed under two CPUs, counted once).
    EXPECT_EQ(last_level_cache_bytes(fixture("x86_laptop")), 12 * kMiB);
    // Two 32 MiB L3 instances: both count.
    EXPECT_EQ(last_level_cache_bytes(fixture("two_llc")), 64 * kMiB);
    EXPECT_FALSE(last_level_cache_bytes(fixture("empty")));
}

TEST(Membw, DefaultArraySize) {
    EXPECT_EQ(default_membw_array_bytes(fixture("x86_laptop")), 64 * kMiB);  // 4 x 12 < 64
    EXPECT_EQ(default_membw_array_bytes(fixture("two_llc")), 256 * kMiB);
    EXPECT_EQ(default_membw_array_bytes(fixture("empty")), 64 * kMiB);
    EXPECT_GE(default_membw_array_bytes(), 64 * kMiB);
}

}  // namespace
}  // namespace sb
