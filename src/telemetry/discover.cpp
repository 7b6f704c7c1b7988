#include "telemetry/discover.hpp"

#include <set>

#include "telemetry/sysfs_util.hpp"

namespace sb {

DiscoverOptions discover_options_for_root(const std::string& sysfs_root) {
    DiscoverOptions o;
    std::string root = sysfs_root;
    while (root.size() > 1 && root.back() == '/')
        root.pop_back();
    o.sysfs_root = root;
    if (root == "/sys")
        return o;
    // A fixture tree: host-only sources would describe this machine, not the tree.
    o.try_nvml = false;
    auto slash = root.rfind('/');
    std::string parent = slash == std::string::npos ? "." : root.substr(0, slash);
    if (parent.empty())
        parent.push_back('/');
    std::string script = parent + "/bin/vcgencmd";
    o.try_vcgencmd = sysfs::is_executable(script);
    o.vcgencmd_path = o.try_vcgencmd ? script : "";
    return o;
}

Discovery discover_sources(const DiscoverOptions& o) {
    Discovery d;
    discover_thermal(o.sysfs_root, d);
    discover_hwmon(o.sysfs_root, d);
    discover_cpufreq(o.sysfs_root, d);
    discover_gpu_devfreq(o.sysfs_root, d);
    discover_gpu_drm(o.sysfs_root, d);
    discover_battery(o.sysfs_root, o.battery, d);
    discover_rapl(o.sysfs_root, d);
    discover_odpm(o.sysfs_root, d);
    if (o.try_vcgencmd) {
        discover_vcgencmd(o.vcgencmd_path, d);
    } else {
        d.classes.push_back({"rpi_throttle", 0, "not tried"});
    }
    if (o.try_nvml) {
        discover_nvml(o.nvml_library, d);
    } else {
        d.classes.push_back({"nvml", 0, "not tried"});
    }
    return d;
}

}  // namespace sb
