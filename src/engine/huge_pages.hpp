#pragma once
// Transparent huge pages for the memory llama.cpp reads weights into.
//
// A model read into memory (--no-mmap, and every weight llama.cpp repacks for the CPU) lands in
// buffers that the load touches for the first time, page by page. With 4 KiB pages that is one
// fault per 4 KiB, and in a virtual machine each fault is dear: on the 2-core VM of
// bench/ops_speed.sh the faults were a quarter of a 1B model's load. Where the kernel gives
// transparent huge pages on request (/sys/kernel/mm/transparent_hugepage/enabled "madvise",
// most distributions), a buffer advised with madvise(MADV_HUGEPAGE) faults in 2 MiB at a time.
//
// llama.cpp allocates its buffers itself (ggml_aligned_malloc) and names them to no one, so the
// advice goes to what it mapped: the process's anonymous read-write mappings are listed before
// the load (snapshot()) and again once its buffers exist but before the first weight is read
// (llama.cpp's load-progress callback, called before each tensor), and the bytes mapped in
// between, in stretches of at least min_bytes, are advised (advise_new()). Compute is not
// meant to change: the advice only changes the page size the weights sit on (see README,
// "Huge pages"); what was advised is recorded.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// One mapping of /proc/<pid>/maps: [begin, end).
struct MapRange {
    uintptr_t begin = 0, end = 0;
    bool operator==(const MapRange&) const = default;
};

// The anonymous, private, read-write mappings of a /proc/<pid>/maps text (no path, no
// "[heap]"/"[stack]" name). Lines that do not parse are skipped.
std::vector<MapRange> anonymous_rw_ranges(std::string_view maps);

// The parts of `now` that no range of `before` covers, in stretches of at least min_bytes.
std::vector<MapRange> new_ranges(const std::vector<MapRange>& before,
                                 const std::vector<MapRange>& now, uintptr_t min_bytes);

// The kernel's policy, the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
// ("always", "madvise", "never"); "" when the text has none.
std::string thp_policy(std::string_view enabled_file);

// Advises the whole pages of [p, p + n) onto transparent huge pages; the bytes advised (0
// where the system has no madvise(MADV_HUGEPAGE) or refuses it). For memory this process
// allocated itself and has not touched yet.
uint64_t advise_huge_pages(void* p, size_t n);

// What an advice did.
struct HugePageAdvice {
    std::string policy;            // thp_policy of the kernel; "unknown" without the file
    uint64_t advised_bytes = 0;    // bytes madvise(MADV_HUGEPAGE) accepted
    std::vector<MapRange> ranges;  // the stretches advised
    std::string error;             // why nothing was advised, when something stood in the way
};

// Watches the process's mappings across a load (see the header's comment). Not thread-safe;
// one load at a time. Paths are parameters so tests read fixture files.
class HugePageAdvisor {
  public:
    explicit HugePageAdvisor(
        std::string maps_path = "/proc/self/maps",
        std::string enabled_path = "/sys/kernel/mm/transparent_hugepage/enabled",
        uintptr_t min_bytes = uintptr_t{32} << 20);
    // Lists the mappings as they are before the load.
    void snapshot();
    // Advises the stretches mapped since snapshot() (once per snapshot: later calls do
    // nothing) and returns what it did. Under "never" nothing is advised (policy says why).
    const HugePageAdvice& advise_new();
    const HugePageAdvice& advice() const { return advice_; }

  private:
    std::string maps_path_, enabled_path_;
    uintptr_t min_bytes_;
    std::vector<MapRange> before_;
    bool pending_ = false;
    HugePageAdvice advice_;
};

}  // namespace sb
