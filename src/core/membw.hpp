#pragma once
// STREAM-style memory bandwidth (copy, scale, add, triad over arrays of doubles), to tell
// whether a stage is memory-bound: decode speed is bounded by bandwidth / bytes per token.
// Bytes are counted as STREAM counts them (copy and scale: 2 arrays; add and triad: 3) and
// GB/s are 1e9 bytes per second.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "core/stats.hpp"

namespace sb {

struct MembwResult {
    // Best (highest) bandwidth of each kernel over the timed repetitions, GB/s.
    double copy_gbps = 0, scale_gbps = 0, add_gbps = 0, triad_gbps = 0;
    std::size_t array_bytes = 0;  // bytes of each of the three arrays actually used
    int threads = 0;
    Summary triad_samples_gbps;  // triad bandwidth of every timed repetition, GB/s
};

// Runs the four kernels reps times on three arrays of array_bytes_each bytes (rounded down to
// whole doubles), split into contiguous chunks over `threads` threads that also initialise
// their chunk (first touch). With reps > 1 the first repetition is a warm-up and not counted.
// Blocks for the duration; allocates 3 * array_bytes_each bytes.
// Throws sb::Error: usage when threads < 1, reps < 1 or an array holds fewer doubles than
// there are threads; runtime when the memory or the threads cannot be had, the kernels'
// results fail the STREAM-style check, or stop (when given; polled once after each kernel's
// phase, outside the timed kernels) returned true: "membw: interrupted (Ctrl-C)".
MembwResult measure_membw(std::size_t array_bytes_each, int threads, int reps,
                          const std::function<bool()>& stop = {});

// Total size of the last-level caches (each distinct instance counted once), from
// <root>/sys/devices/system/cpu/cpu*/cache/index*/; nullopt when sysfs does not say.
std::optional<std::size_t> last_level_cache_bytes(const std::string& root = "/");

// Array size for measure_membw: max(4 x last-level cache, 64 MiB), so that no array fits in
// cache (STREAM's rule); 64 MiB when the cache size is unknown.
std::size_t default_membw_array_bytes(const std::string& root = "/");

}  // namespace sb
