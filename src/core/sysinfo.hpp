#pragma once
// The machine a run was measured on, and the warnings its state calls for. Everything is read
// from files under a root directory (proc, sys, etc beneath it), so tests run on fixture trees;
// with root "/" the hostname, kernel and arch come from uname(). A file that is missing or
// unreadable leaves its field empty / std::nullopt: reading never throws.
#include <cstdint>
#include <optional>
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
};

// Reads the system description under root (default: the running system).
SystemInfo read_system_info(const std::string& root = "/");

// The CPU thread count stagebench uses when none is given: the physical cores under root (SMT
// siblings share a core's units, so more threads only contend), else the online CPUs, at
// least 1.
int default_thread_count(const std::string& root = "/");

// Warnings about the machine's state for a run that uses threads_used CPU threads:
//   governor_not_performance  some cpufreq policy's governor is not "performance"
//   other_load                loadavg_1m > 0.25 * cores_logical (something else is running)
//   on_battery                running on battery (power-saving policies may apply)
//   oversubscribed            threads_used > cores_logical
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
