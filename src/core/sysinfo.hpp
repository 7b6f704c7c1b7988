#pragma once
// The machine a run was measured on, and the warnings its state calls for. Everything is read
// from files under a root directory (proc, sys, etc beneath it), so tests run on fixture trees;
// with root "/" the hostname, kernel and arch come from uname(). A file that is missing or
// unreadable leaves its field empty / std::nullopt: reading never throws.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_util.hpp"  // to_json(Warning)
#include "core/warning.hpp"

namespace sb {

struct SystemInfo {
    std::string hostname, os, kernel, cpu_model, arch;  // "" when unknown
    int cores_logical = 0;                              // online CPUs; 0 only when unknown
    std::optional<int> cores_physical;                  // distinct cores (SMT siblings merged)
    std::optional<uint64_t> mem_total_bytes, mem_available_bytes;
    std::vector<std::string> governors;  // one per cpufreq policy, in policy order; empty if none
    std::optional<double> loadavg_1m;
    bool on_battery_known = false;  // == on_battery.has_value()
    std::optional<bool> on_battery;
    // True when this process runs under user-mode emulation (qemu-aarch64 on an x86 machine):
    // proc/cpuinfo describes a CPU of another architecture than arch (x86's vendor_id/flags
    // lines under an aarch64 arch, Arm's CPU implementer/Features lines under x86_64), as
    // QEMU's user mode shows the host's file while uname names the guest's architecture.
    // nullopt when either side is unknown. A QEMU that emulates proc/cpuinfo for the guest
    // goes undetected.
    std::optional<bool> emulated;
};

// Reads the system description under root (default: the running system).
SystemInfo read_system_info(const std::string& root = "/");

// The CPU threads a run uses when none is asked for (-t 0 or no -t), for every command and
// for the RPC server the demo starts: one per physical core that does math, as llama-bench
// defaults to (llama.cpp's cpu_get_num_math), read from sysfs under root:
//  - SMT siblings count once (topology/core_cpus_list, else thread_siblings_list);
//  - efficiency cores are left out, as llama.cpp leaves out Intel's E-cores: the CPUs listed in
//    sys/devices/cpu_atom/cpus on an Intel hybrid part, and on big.LITTLE (Arm) the cores whose
//    cpu_capacity is below half of the largest. A LITTLE core takes as long per thread's share
//    as a big one takes for several, and every thread waits for the slowest at each op, so
//    using them slows prefill and decode down (the stage-level study ran 6 threads on a
//    Snapdragon 8 Gen 3: its prime and mid cores, not the two A520s). llama-bench counts them
//    on Arm; here they are left out, and -t still uses them when asked;
//  - only CPUs that are online and in allowed_cpus count (empty: all online CPUs).
// If every allowed CPU is an efficiency core, those are counted. Without topology files the
// (physical id, core id) pairs of proc/cpuinfo count, then llama.cpp's guess from the logical
// CPUs (n <= 4: n, else n / 2), and with nothing known 4 (llama.cpp's context default).
// Never less than 1; never throws.
int default_thread_count(const std::string& root, std::span<const int> allowed_cpus);

// The same for the running system (root "/"), limited to the CPUs this process may run on
// (sched_getaffinity: taskset, a container's cpuset).
int default_thread_count();

// requested when > 0, else default_thread_count(): how every command resolves -t.
int threads_or_default(int requested);

// Warnings about the machine's state for a run that uses threads_used CPU threads:
//   governor_not_performance  some cpufreq policy's governor is not "performance"
//   other_load                loadavg_1m > 0.25 * cores_logical (something else is running)
//   on_battery                running on battery (power-saving policies may apply)
//   oversubscribed            threads_used > cores_logical
//   emulated                  info.emulated: the timings are the emulator's, not a device's
// Checks whose inputs are unknown are skipped.
Warnings system_warnings(const SystemInfo& info, int threads_used);

// debug_build warnings for a stagebench and/or llama.cpp build without optimisations; the
// caller knows how each was built (e.g. NDEBUG in main(), the llama.cpp build type).
Warnings build_warnings(bool stagebench_debug, bool llama_debug);

// Resident memory of this process in bytes (/proc/self/statm under proc_root, resident pages x
// page size); nullopt when the file is missing or malformed.
std::optional<int64_t> process_rss_bytes(const std::string& proc_root = "/proc");

// JSON object with the SystemInfo fields (on_battery_known omitted); unknown values are null.
nlohmann::json to_json(const SystemInfo& info);

// Lets nlohmann convert SystemInfo implicitly: json j = info;
inline void to_json(nlohmann::json& j, const SystemInfo& info) {
    j = to_json(info);
}

}  // namespace sb
