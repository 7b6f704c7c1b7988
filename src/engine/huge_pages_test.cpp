#include "engine/huge_pages.hpp"

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace sb {
namespace {

namespace fs = std::filesystem;

TEST(HugePages, AnonymousReadWriteRangesOfAMapsText) {
    // As /proc/<pid>/maps writes them: anonymous lines end in the inode and padding.
    const char* maps =
        "55e9900b3000-55e9900b5000 r--p 00000000 fe:00 247498                     /usr/bin/head\n"
        "55e9b3ad5000-55e9b3af6000 rw-p 00000000 00:00 0                          [heap]\n"
        "7fd8122e4000-7fd8122e7000 rw-p 00000000 00:00 0 \n"
        "7fd8124ba000-7fd8124bc000 rw-p 001d3000 fe:00 332835                     /lib/libc.so.6\n"
        "7fd800000000-7fd800021000 rw-p 00000000 00:00 0\n"
        "7fd800021000-7fd804000000 ---p 00000000 00:00 0\n"
        "7fd900000000-7fd904000000 rw-s 00000000 00:01 1234                       /dev/zero "
        "(deleted)\n"
        "7ffc1a2b3000-7ffc1a2d4000 rw-p 00000000 00:00 0                          [stack]\n"
        "not a line\n"
        "7fd9zz000000-7fd904000000 rw-p 00000000 00:00 0\n"
        "7fda00000000-7fda04000000 rw-p 00000000 00:00 0";  // no newline at the end
    const std::vector<MapRange> want = {{0x7fd8122e4000, 0x7fd8122e7000},
                                        {0x7fd800000000, 0x7fd800021000},
                                        {0x7fda00000000, 0x7fda04000000}};
    EXPECT_EQ(anonymous_rw_ranges(maps), want);
    EXPECT_TRUE(anonymous_rw_ranges("").empty());
}

TEST(HugePages, NewRangesAreWhatNoEarlierMappingCovers) {
    const uintptr_t M = uintptr_t{1} << 20;
    const std::vector<MapRange> before = {{100 * M, 110 * M}, {200 * M, 201 * M}};
    const std::vector<MapRange> now = {
        {100 * M, 110 * M},     // unchanged
        {60 * M, 100 * M - 1},  // new, beside an old one
        {190 * M, 240 * M},     // an old one merged into a grown mapping: both sides new
        {300 * M, 301 * M},     // new but short
    };
    const std::vector<MapRange> want = {
        {60 * M, 100 * M - 1}, {190 * M, 200 * M}, {201 * M, 240 * M}};
    EXPECT_EQ(new_ranges(before, now, 8 * M), want);
    // The short one counts when the floor is lower; the unchanged one never.
    EXPECT_EQ(new_ranges(before, now, M).size(), 4u);
    EXPECT_TRUE(new_ranges(now, now, 0).empty());
}

TEST(HugePages, PolicyIsTheBracketedWord) {
    EXPECT_EQ(thp_policy("always [madvise] never\n"), "madvise");
    EXPECT_EQ(thp_policy("[always] madvise never"), "always");
    EXPECT_EQ(thp_policy("always madvise [never]\n"), "never");
    EXPECT_EQ(thp_policy("madvise\n"), "");
    EXPECT_EQ(thp_policy("[madvise"), "");
}

struct TempDir {
    fs::path p = fs::temp_directory_path() / ("sb_hp_" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(p); }
    ~TempDir() { fs::remove_all(p); }
};

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
}

TEST(HugePages, NothingIsAdvisedUnderNeverOrWithoutThePolicyFile) {
    TempDir d;
    write(d.p / "maps", "");
    write(d.p / "enabled", "always madvise [never]\n");
    HugePageAdvisor never((d.p / "maps").string(), (d.p / "enabled").string(), 0);
    never.snapshot();
    write(d.p / "maps", "7fda00000000-7fda04000000 rw-p 00000000 00:00 0\n");
    EXPECT_EQ(never.advise_new().policy, "never");
    EXPECT_EQ(never.advice().advised_bytes, 0u);
    EXPECT_TRUE(never.advice().ranges.empty());
    EXPECT_TRUE(never.advice().error.empty());

    HugePageAdvisor unknown((d.p / "maps").string(), (d.p / "missing").string(), 0);
    unknown.snapshot();
    EXPECT_EQ(unknown.advise_new().policy, "unknown");
    EXPECT_EQ(unknown.advice().advised_bytes, 0u);

    HugePageAdvisor no_maps((d.p / "missing").string(), (d.p / "enabled").string(), 0);
    no_maps.snapshot();
    EXPECT_NE(no_maps.advise_new().error.find("cannot read"), std::string::npos);
}

// The VmFlags of the mapping of /proc/self/smaps that holds addr ("" when none does).
std::string vm_flags_at(uintptr_t addr) {
    std::ifstream in("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        uintptr_t b = 0, e = 0;
        char dash = 0;
        std::istringstream s(line);
        if (s >> std::hex >> b >> dash >> e && dash == '-' && line.find(' ') > 8) {
            inside = b <= addr && addr < e;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0)
            return line;
    }
    return "";
}

// The real thing: a buffer allocated as ggml allocates one (posix_memalign, 64-byte aligned)
// between the snapshot and the advice is advised, whole, and the kernel marks it ("hg").
TEST(HugePages, ABufferAllocatedDuringTheLoadIsAdvised) {
    HugePageAdvisor advisor;
    advisor.snapshot();
    const size_t size = size_t{96} << 20;
    void* buf = nullptr;
    ASSERT_EQ(posix_memalign(&buf, 64, size), 0);
    const HugePageAdvice& a = advisor.advise_new();
    const uintptr_t b = reinterpret_cast<uintptr_t>(buf), e = b + size;
    if (a.policy == "never" || a.policy == "unknown") {
        EXPECT_EQ(a.advised_bytes, 0u);
        free(buf);
        GTEST_SKIP() << "transparent huge pages are '" << a.policy << "' here";
    }
    EXPECT_TRUE(a.error.empty()) << a.error;
    bool covered = false;
    for (const MapRange& r : a.ranges)
        covered |= r.begin <= b && e <= r.end + 4096;  // the mapping's last partial page
    EXPECT_TRUE(covered) << a.ranges.size() << " range(s), " << a.advised_bytes << " bytes";
    EXPECT_GE(a.advised_bytes, size - 4096);
    EXPECT_NE(vm_flags_at(b + size / 2).find(" hg"), std::string::npos) << vm_flags_at(b);
    // Once per snapshot: a later buffer is not advised by a second call.
    void* later = nullptr;
    ASSERT_EQ(posix_memalign(&later, 64, size), 0);
    EXPECT_EQ(advisor.advise_new().advised_bytes, a.advised_bytes);
    EXPECT_EQ(vm_flags_at(reinterpret_cast<uintptr_t>(later) + size / 2).find(" hg"),
              std::string::npos);
    free(later);
    free(buf);
}

// Memory the process allocates itself (the replay's weight copies) is advised by address.
TEST(HugePages, AdvisingAnAddressRangeTakesItsWholePages) {
    const size_t size = size_t{8} << 20;
    void* buf = nullptr;
    ASSERT_EQ(posix_memalign(&buf, 64, size), 0);
    const uintptr_t b = reinterpret_cast<uintptr_t>(buf);
    const uint64_t advised = advise_huge_pages(buf, size);
    HugePageAdvisor probe;
    probe.snapshot();
    const std::string policy = probe.advice().policy;
    if (policy == "never" || policy == "unknown") {
        free(buf);
        GTEST_SKIP() << "transparent huge pages are '" << policy << "' here";
    }
    // From the first page boundary at or after buf to the last one at or before its end.
    const uint64_t want = ((b + size) & ~uintptr_t{4095}) - ((b + 4095) & ~uintptr_t{4095});
    EXPECT_EQ(advised, want);
    EXPECT_NE(vm_flags_at(b + size / 2).find(" hg"), std::string::npos) << vm_flags_at(b);
    EXPECT_EQ(advise_huge_pages(buf, 100), 0u);  // no whole page in it
    free(buf);
}

}  // namespace
}  // namespace sb
