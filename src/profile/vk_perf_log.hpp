#pragma once
// A Vulkan device's own op timer for `stagebench ops` and `decompose`: ggml-vulkan's
// timestamp-query logger (GGML_VK_PERF_LOGGER, read once when the backend initialises), its
// output read strictly and matched to a profile's ops. No ggml: pure text and arithmetic.
//
// With the logger on, every graph ggml-vulkan computes writes a timestamp after each op it
// records (and a barrier, so the ops do not overlap), submits, waits, and prints to std::cerr
// per op name (ggml-vulkan.cpp, class vk_perf_logger, the pinned tree):
//
//   ----------------
//   Vulkan Timings:
//   ADD: 8 x 210.96 us = 1687.68 us
//   MUL_MAT q4_0 m=128 n=32 k=256: 8 x 1094.33 us = 8754.64 us (1.91264 GFLOPS/s)
//   MUL_MAT_VEC q6_K m=4096 n=1 k=256: 1 x 15089.2 us = 15089.2 us (0.138712 GFLOPS/s)
//   RMS_NORM(256,32,1,1): 7 x 23027.9 us = 161195 us
//   FLASH_ATTN_EXT dst(32,8,32,1),  q(32,32,8,1),  k(32,256,4,1),  v(32,256,4,1),  m(256,32,1,1): 4
//   x ... Total time: 406424 us.
//
// An op's time is the difference between its timestamp and the one before (device ticks times
// timestampPeriod, integer nanoseconds); a line sums the ops of one name in that graph (the
// average is printed after an integer division, both with 6 significant digits). Fused ops
// print as "FUSION NAME" ("RMS_NORM_MUL RMS_NORM(256,1,1,1)"), under
// GGML_VK_PERF_LOGGER_CONCURRENT groups of ops joined by ", ". The device-timer pass
// (scenario/ops_run.hpp) runs with fusion off and without CONCURRENT, so each op is one name.
//
// The pass brackets each timed stage with marker lines of its own on the same stream
// (vk_perf_marker): the blocks between "begin prefill 0" and "end prefill 0" are the first
// prefill's graphs; blocks outside markers (load, warm-up, the KV fill) are not used.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/doc/ops_section.hpp"
#include "profile/op_trace.hpp"

namespace sb {

// The bounds of a line that can be true: at most kMaxVkPerfCount ops of one name in one graph,
// at most kMaxVkPerfUs microseconds (an hour) for them; no negative, infinite or NaN time.
inline constexpr int64_t kMaxVkPerfCount = 10'000'000;
inline constexpr double kMaxVkPerfUs = 3.6e9;

// One name's ops in one marked stage (summed over the stage's graphs and splits).
struct VkPerfTotal {
    int64_t count = 0;
    double total_us = 0;
};

// One marked stage: "prefill" 0, "decode" 3 (the fourth decode step).
struct VkPerfSection {
    std::string stage;
    int index = 0;
    int n_blocks = 0;  // "Vulkan Timings" blocks read in it (one per graph split on the device)
    std::map<std::string, VkPerfTotal> ops;
};

struct VkPerfLog {
    std::vector<VkPerfSection> sections;  // complete ones only (their end marker read)
    int n_blocks = 0;                     // every block read, in sections or not
    // Lines of the logger's that could not be read or whose values cannot be true, and blocks
    // dropped (no "Total time" line, a total that is not the sum of its lines): "line N: why:
    // text". A dropped block's lines are not used.
    std::vector<std::string> rejected;
};

// The marker line the pass writes ("stagebench-device-timer: begin prefill 0").
std::string vk_perf_marker(const std::string& stage, int index, bool begin);

// Reads the device-timer pass's stderr (other lines, llama.cpp's own logs, are skipped).
VkPerfLog parse_vk_perf_log(std::string_view text);

// The name ggml-vulkan's logger gives op r (fusion off): "MUL_MAT_VEC q4_0 m=256 n=1 k=256",
// "RMS_NORM(256,1,1,1)", "GLU" for SWIGLU; nullopt for ops that do not compute.
std::optional<std::string> vk_perf_name(const OpRecord& r);

// Whether device is one whose ops the logger times (a ggml-vulkan device: "Vulkan0").
bool is_vk_perf_device(const std::string& device);

// The device times of a stage's ops on backend, from the pass's sections of that stage (each
// a sample: one prefill, one decode step). For each logger name, the samples whose count of
// it equals the number of the stage's ops of that name on backend are used: each gives the
// mean of those ops (total / count); the op time is the median over them. Parallel to
// st.ops: nullopt for ops not on backend or not computing; else an OpTime whose op_ns is the
// device time (method: how), or none (method: why not).
struct DeviceTimeMatch {
    std::vector<std::optional<OpTime>> ops;
    int n_matched = 0;    // ops with a device time
    int n_unmatched = 0;  // computing ops on backend without one
    // Names the pass timed on the device that the profile has not there (stage notes).
    std::vector<std::string> notes;
};
DeviceTimeMatch match_vk_perf(const StageProfile& st, const std::string& backend,
                              const std::vector<VkPerfSection>& sections);

}  // namespace sb
