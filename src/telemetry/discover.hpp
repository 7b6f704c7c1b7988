#pragma once
// Finding the telemetry sources of a device. Everything under a sysfs root (default "/sys";
// tests and `--sysfs-root` use fixture trees), plus two host-only sources: NVIDIA GPUs through
// NVML (loaded at run time with dlopen, never linked) and Raspberry Pi throttle flags through
// `vcgencmd get_throttled`. A family that is not on the device is reported as absent with the
// reason; discovery never throws.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/warning.hpp"
#include "telemetry/source.hpp"

namespace sb {

// Battery unit and sign calibration (see battery_source.cpp for the automatic rules).
enum class CurrentUnit { microamp, milliamp };
enum class CurrentSign {
    negative_discharge,  // kernel convention: current_now < 0 while discharging
    positive_discharge,  // some vendors flip it
};
struct BatteryCalibration {
    std::optional<CurrentUnit> unit;  // nullopt: detect from magnitudes
    std::optional<CurrentSign> sign;  // nullopt: follow `status` (Discharging/Charging)
};

struct DiscoverOptions {
    std::string sysfs_root = "/sys";
    bool try_nvml = true;
    std::string nvml_library = "libnvidia-ml.so.1";
    bool try_vcgencmd = true;
    // Path of vcgencmd; empty: "vcgencmd" on PATH (or /usr/bin/vcgencmd).
    std::string vcgencmd_path;
    BatteryCalibration battery;
};

// Options for a sysfs root given on the command line. "/sys" gives the host defaults. Any
// other root is a fixture tree: NVML is off (it would describe the host, not the tree) and
// vcgencmd is <root>/../bin/vcgencmd when that file exists, otherwise off.
DiscoverOptions discover_options_for_root(const std::string& sysfs_root);

// Whether a family was found, and if not, why.
struct SourceClassStatus {
    std::string source_class;  // thermal, hwmon, cpufreq, gpu_devfreq, battery, rapl, odpm,
                               // rpi_throttle, nvml
    int found = 0;             // sources created
    std::string note;          // why absent, or what was skipped (permission, duplicates)
};

struct Discovery {
    std::vector<std::unique_ptr<Source>> sources;  // owned; metric names unique across them
    std::vector<SourceClassStatus> classes;        // every family, in a fixed order
    Warnings warnings;                             // e.g. RAPL present but not readable
};

// Finds every source under the options' roots. Never throws.
Discovery discover_sources(const DiscoverOptions& options = {});

// The families one by one (used by discover_sources and tests). Each appends what it finds
// to d.sources and its status to d.classes.
void discover_thermal(const std::string& sysfs_root, Discovery& d);
void discover_hwmon(const std::string& sysfs_root, Discovery& d);
void discover_cpufreq(const std::string& sysfs_root, Discovery& d);
void discover_gpu_devfreq(const std::string& sysfs_root, Discovery& d);
void discover_gpu_drm(const std::string& sysfs_root, Discovery& d);
void discover_battery(const std::string& sysfs_root, const BatteryCalibration& cal, Discovery& d);
void discover_rapl(const std::string& sysfs_root, Discovery& d);
void discover_odpm(const std::string& sysfs_root, Discovery& d);
void discover_vcgencmd(const std::string& vcgencmd_path, Discovery& d);
void discover_nvml(const std::string& library, Discovery& d);

}  // namespace sb
