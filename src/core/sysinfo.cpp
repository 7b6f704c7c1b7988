#include "core/sysinfo.hpp"
#include "core/strings.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json_util.hpp"
#include "core/utf8.hpp"

namespace sb {

namespace fs = std::filesystem;

namespace {

// A file of /proc, /sys or /etc: only a regular file (those are), at most 1 MiB, opened without
// blocking (a FIFO in a fixture tree is skipped, not waited on), made valid UTF-8 (its text
// reaches the result document).
std::optional<std::string> read_text(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return std::nullopt;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return std::nullopt;
    }
    std::string text;
    char buf[8192];
    while (text.size() < (1u << 20)) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0)
            break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    make_valid_utf8(text);
    return text;
}

// First line of a one-value sysfs/procfs file, trimmed; nullopt when missing or empty.
std::optional<std::string> read_sysfs_value(const fs::path& p) {
    auto text = read_text(p);
    if (!text) {
        return std::nullopt;
    }
    std::string v = trimmed(text->substr(0, text->find('\n')));
    if (v.empty()) {
        return std::nullopt;
    }
    return v;
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
    T v{};
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data()) {
        return std::nullopt;
    }
    return v;
}

// Entries of dir whose names start with prefix, sorted by the number after the prefix (cpu10
// after cpu9); entries without a number after the prefix are skipped.
std::vector<fs::path> numbered_entries(const fs::path& dir, std::string_view prefix) {
    std::vector<std::pair<long, fs::path>> found;
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0) {
            continue;
        }
        const std::string_view rest = std::string_view(name).substr(prefix.size());
        const auto n = parse_number<long>(rest);
        if (!n || std::to_string(*n) != rest) {
            continue;
        }
        found.emplace_back(*n, it->path());
    }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> out;
    for (auto& [n, p] : found) {
        out.push_back(std::move(p));
    }
    return out;
}

// CPU list syntax of sysfs ("0-3,6,8-9") as a set of CPU numbers; nullopt when malformed.
std::optional<std::set<long>> parse_cpu_list(std::string_view s) {
    std::set<long> cpus;
    std::stringstream ss{std::string(s)};
    std::string part;
    while (std::getline(ss, part, ',')) {
        part = trimmed(part);
        if (part.empty()) {
            continue;
        }
        const auto dash = part.find('-');
        const auto lo = parse_number<long>(std::string_view(part).substr(0, dash));
        const auto hi = dash == std::string::npos
                            ? lo
                            : parse_number<long>(std::string_view(part).substr(dash + 1));
        if (!lo || !hi || *hi < *lo || *hi - *lo > 1'000'000) {
            return std::nullopt;
        }
        for (long c = *lo; c <= *hi; ++c) {
            cpus.insert(c);
        }
    }
    return cpus;
}

// /proc/cpuinfo as (key, value) pairs in file order.
std::vector<std::pair<std::string, std::string>> parse_cpuinfo(const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            continue;
        }
        out.emplace_back(trimmed(std::string_view(line).substr(0, colon)),
                         trimmed(std::string_view(line).substr(colon + 1)));
    }
    return out;
}

// Arm Ltd. (implementer 0x41) core names for the "CPU part" field of arm64 /proc/cpuinfo.
std::string arm_part_name(const std::string& implementer, const std::string& part) {
    static const std::map<std::string, std::string> kArm = {
        {"0xd03", "Cortex-A53"},  {"0xd04", "Cortex-A35"},  {"0xd05", "Cortex-A55"},
        {"0xd07", "Cortex-A57"},  {"0xd08", "Cortex-A72"},  {"0xd09", "Cortex-A73"},
        {"0xd0a", "Cortex-A75"},  {"0xd0b", "Cortex-A76"},  {"0xd0c", "Neoverse-N1"},
        {"0xd0d", "Cortex-A77"},  {"0xd40", "Neoverse-V1"}, {"0xd41", "Cortex-A78"},
        {"0xd44", "Cortex-X1"},   {"0xd46", "Cortex-A510"}, {"0xd47", "Cortex-A710"},
        {"0xd48", "Cortex-X2"},   {"0xd49", "Neoverse-N2"}, {"0xd4d", "Cortex-A715"},
        {"0xd4e", "Cortex-X3"},   {"0xd4f", "Neoverse-V2"}, {"0xd80", "Cortex-A520"},
        {"0xd81", "Cortex-A720"}, {"0xd82", "Cortex-X4"},
    };
    if (implementer == "0x41") {
        if (auto it = kArm.find(part); it != kArm.end()) {
            return it->second;
        }
    }
    return "CPU part " + part;
}

std::string cpu_model_from(const std::vector<std::pair<std::string, std::string>>& info) {
    std::string model_name, hardware, processor, implementer;
    std::vector<std::string> parts;  // distinct core types, in order of first appearance
    for (const auto& [k, v] : info) {
        if (k == "model name" && model_name.empty()) {
            model_name = v;
        } else if (k == "Hardware" && hardware.empty()) {
            hardware = v;
        } else if (k == "Processor" && processor.empty()) {
            processor = v;
        } else if (k == "CPU implementer") {
            implementer = v;
        } else if (k == "CPU part" && !v.empty()) {
            const std::string name = arm_part_name(implementer, v);
            if (std::find(parts.begin(), parts.end(), name) == parts.end()) {
                parts.push_back(name);
            }
        }
    }
    if (!model_name.empty()) {
        return model_name;
    }
    std::string cores;
    for (const auto& p : parts) {
        if (!cores.empty()) {
            cores += " + ";
        }
        cores += p;
    }
    // On Arm the SoC name (Hardware) says more than the core types, but big.LITTLE core types
    // matter for reading the numbers, so they are kept beside it.
    const std::string& base = !hardware.empty() ? hardware : processor;
    if (base.empty()) {
        return cores;
    }
    return cores.empty() ? base : base + " (" + cores + ")";
}

std::string unquote(std::string v) {
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
        v = v.substr(1, v.size() - 2);
    }
    return v;
}

// Value of KEY in a KEY=value file (os-release, build.prop); "" when absent.
std::string key_value(const std::string& text, const std::string& key) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq != std::string::npos && trimmed(std::string_view(line).substr(0, eq)) == key) {
            return unquote(trimmed(std::string_view(line).substr(eq + 1)));
        }
    }
    return {};
}

std::string read_os(const fs::path& root) {
    for (const char* p : {"etc/os-release", "usr/lib/os-release"}) {
        if (auto text = read_text(root / p)) {
            std::string name = key_value(*text, "PRETTY_NAME");
            if (name.empty()) {
                name = trimmed(key_value(*text, "NAME") + " " + key_value(*text, "VERSION_ID"));
            }
            if (!name.empty()) {
                return name;
            }
        }
    }
    // Android has no os-release.
    if (auto text = read_text(root / "system/build.prop")) {
        const std::string release = key_value(*text, "ro.build.version.release");
        if (!release.empty()) {
            return "Android " + release;
        }
    }
    return {};
}

std::optional<uint64_t> meminfo_bytes(const std::string& text, std::string_view key) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos || std::string_view(line).substr(0, colon) != key) {
            continue;
        }
        const std::string v = trimmed(std::string_view(line).substr(colon + 1));
        const auto kib = parse_number<uint64_t>(v);
        if (!kib) {
            return std::nullopt;
        }
        return *kib * 1024;  // /proc/meminfo's "kB" is KiB
    }
    return std::nullopt;
}

std::optional<bool> read_on_battery(const fs::path& root) {
    bool external_online = false, external_seen = false, battery_seen = false;
    bool discharging = false, charging_or_full = false;
    std::error_code ec;
    fs::directory_iterator it(root / "sys/class/power_supply", ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const fs::path dir = it->path();
        const std::string type = read_sysfs_value(dir / "type").value_or("");
        if (type == "Mains" || type.rfind("USB", 0) == 0) {
            if (const auto online = read_sysfs_value(dir / "online")) {
                external_seen = true;
                external_online = external_online || *online == "1";
            }
        } else if (type == "Battery") {
            // A peripheral's battery (mouse, headset) says nothing about the machine.
            if (read_sysfs_value(dir / "scope").value_or("") == "Device") {
                continue;
            }
            battery_seen = true;
            const std::string status = read_sysfs_value(dir / "status").value_or("");
            discharging = discharging || status == "Discharging";
            charging_or_full = charging_or_full || status == "Charging" || status == "Full" ||
                               status == "Not charging";
        }
    }
    if (external_online) {
        return false;
    }
    if (discharging) {
        return true;
    }
    if (external_seen && battery_seen) {
        return true;  // every external supply offline, and a battery present
    }
    if (charging_or_full) {
        return false;
    }
    return std::nullopt;
}

// Distinct (physical id, core id) pairs of /proc/cpuinfo; nullopt when it has none.
std::optional<int> count_cpuinfo_cores(
    const std::vector<std::pair<std::string, std::string>>& info);

std::optional<int> count_physical_cores(
    const fs::path& cpu_dir, const std::optional<std::set<long>>& online,
    const std::vector<std::pair<std::string, std::string>>& info) {
    std::set<std::string> cores;
    for (const auto& dir : numbered_entries(cpu_dir, "cpu")) {
        if (online) {
            const auto n = parse_number<long>(dir.filename().string().substr(3));
            if (n && !online->count(*n)) {
                continue;
            }
        }
        auto siblings = read_sysfs_value(dir / "topology/core_cpus_list");
        if (!siblings) {
            siblings = read_sysfs_value(dir / "topology/thread_siblings_list");
        }
        if (siblings) {
            cores.insert(*siblings);
        }
    }
    if (!cores.empty()) {
        return static_cast<int>(cores.size());
    }
    return count_cpuinfo_cores(info);
}

std::optional<int> count_cpuinfo_cores(
    const std::vector<std::pair<std::string, std::string>>& info) {
    std::set<std::pair<std::string, std::string>> ids;
    std::string physical_id;
    for (const auto& [k, v] : info) {
        if (k == "processor") {
            physical_id.clear();
        } else if (k == "physical id") {
            physical_id = v;
        } else if (k == "core id") {
            ids.emplace(physical_id, v);
        }
    }
    if (!ids.empty()) {
        return static_cast<int>(ids.size());
    }
    return std::nullopt;
}

}  // namespace

namespace {

// "x86" or "arm" for an architecture name (uname -m) or for what a cpuinfo's lines show; ""
// when it is neither or unknown.
std::string isa_family(const std::string& arch) {
    if (arch == "x86_64" || arch == "i386" || arch == "i686")
        return "x86";
    if (arch == "aarch64" || arch == "arm64" || arch.rfind("armv", 0) == 0)
        return "arm";
    return "";
}

std::string cpuinfo_family(const std::vector<std::pair<std::string, std::string>>& info) {
    for (const auto& [key, value] : info) {
        if (key == "vendor_id" || key == "flags")
            return "x86";
        if (key == "CPU implementer" || key == "Features")
            return "arm";
    }
    return "";
}

}  // namespace

SystemInfo read_system_info(const std::string& root_str) {
    SystemInfo s;
    const fs::path root(root_str.empty() ? "/" : root_str);
    const bool live = fs::path(root).lexically_normal() == fs::path("/");

    if (live) {
        utsname u{};
        if (uname(&u) == 0) {
            s.hostname = valid_utf8(u.nodename);  // any bytes a host name was set to
            s.kernel = valid_utf8(u.release);
            s.arch = valid_utf8(u.machine);
        }
    } else {
        s.hostname = read_sysfs_value(root / "proc/sys/kernel/hostname").value_or("");
        s.kernel = read_sysfs_value(root / "proc/sys/kernel/osrelease").value_or("");
        s.arch = read_sysfs_value(root / "proc/sys/kernel/arch").value_or("");
    }
    s.os = read_os(root);

    const auto cpuinfo = parse_cpuinfo(read_text(root / "proc/cpuinfo").value_or(""));
    s.cpu_model = cpu_model_from(cpuinfo);
    if (auto built = isa_family(s.arch), seen = cpuinfo_family(cpuinfo);
        !built.empty() && !seen.empty())
        s.emulated = built != seen;

    const fs::path cpu_dir = root / "sys/devices/system/cpu";
    std::optional<std::set<long>> online;
    if (auto text = read_sysfs_value(cpu_dir / "online")) {
        online = parse_cpu_list(*text);
        if (online && online->empty()) {
            online.reset();
        }
    }
    if (online) {
        s.cores_logical = static_cast<int>(online->size());
    } else {
        s.cores_logical =
            static_cast<int>(std::count_if(cpuinfo.begin(), cpuinfo.end(),
                                           [](const auto& kv) { return kv.first == "processor"; }));
        if (s.cores_logical == 0 && live) {
            s.cores_logical = static_cast<int>(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN)));
        }
    }
    s.cores_physical = count_physical_cores(cpu_dir, online, cpuinfo);

    if (auto text = read_text(root / "proc/meminfo")) {
        s.mem_total_bytes = meminfo_bytes(*text, "MemTotal");
        s.mem_available_bytes = meminfo_bytes(*text, "MemAvailable");
    }

    for (const auto& policy : numbered_entries(cpu_dir / "cpufreq", "policy")) {
        if (auto g = read_sysfs_value(policy / "scaling_governor")) {
            s.governors.push_back(*g);
        }
    }

    if (auto text = read_sysfs_value(root / "proc/loadavg")) {
        s.loadavg_1m = parse_number<double>(text->substr(0, text->find(' ')));
    }

    s.on_battery = read_on_battery(root);
    s.on_battery_known = s.on_battery.has_value();
    return s;
}

int default_thread_count(const std::string& root_str, std::span<const int> allowed_cpus) {
    const fs::path root(root_str.empty() ? "/" : root_str);
    const fs::path cpu_dir = root / "sys/devices/system/cpu";

    // The CPUs that may run threads: online, and allowed.
    std::set<long> cpus;
    if (auto text = read_sysfs_value(cpu_dir / "online"))
        if (auto online = parse_cpu_list(*text))
            cpus = *online;
    if (cpus.empty())
        for (const auto& dir : numbered_entries(cpu_dir, "cpu"))
            if (auto n = parse_number<long>(dir.filename().string().substr(3)))
                cpus.insert(*n);
    if (!allowed_cpus.empty()) {
        const std::set<long> allowed(allowed_cpus.begin(), allowed_cpus.end());
        std::set<long> both;
        for (long c : cpus)
            if (allowed.count(c))
                both.insert(c);
        // No topology to match the mask against: the mask alone says which CPUs there are.
        cpus = cpus.empty() ? allowed : both;
    }

    // Efficiency cores out, unless nothing else is left.
    auto drop = [&cpus](const std::set<long>& slow) {
        std::set<long> rest;
        for (long c : cpus)
            if (!slow.count(c))
                rest.insert(c);
        if (!rest.empty())
            cpus = std::move(rest);
    };
    if (auto atom = read_sysfs_value(root / "sys/devices/cpu_atom/cpus"))
        if (auto slow = parse_cpu_list(*atom))
            drop(*slow);
    std::map<long, long> capacity;
    for (long c : cpus)
        if (auto v = read_sysfs_value(cpu_dir / ("cpu" + std::to_string(c)) / "cpu_capacity"))
            if (auto n = parse_number<long>(*v); n && *n > 0)
                capacity[c] = *n;
    if (!capacity.empty() && capacity.size() == cpus.size()) {
        long top = 0;
        for (const auto& [c, v] : capacity)
            top = std::max(top, v);
        std::set<long> slow;
        for (const auto& [c, v] : capacity)
            if (2 * v < top)
                slow.insert(c);
        drop(slow);
    }

    // One thread per physical core: SMT siblings share one topology list.
    std::set<std::string> cores;
    bool every_cpu_known = !cpus.empty();
    for (long c : cpus) {
        const fs::path topo = cpu_dir / ("cpu" + std::to_string(c)) / "topology";
        auto siblings = read_sysfs_value(topo / "core_cpus_list");
        if (!siblings)
            siblings = read_sysfs_value(topo / "thread_siblings_list");
        if (siblings)
            cores.insert(*siblings);
        else
            every_cpu_known = false;
    }
    if (every_cpu_known)
        return static_cast<int>(cores.size());

    if (auto n = count_cpuinfo_cores(parse_cpuinfo(read_text(root / "proc/cpuinfo").value_or("")));
        n && *n > 0)
        return allowed_cpus.empty() || cpus.empty() ? *n
                                                    : std::min(*n, static_cast<int>(cpus.size()));
    const long logical = static_cast<long>(cpus.size());
    if (logical > 0)
        return static_cast<int>(logical <= 4 ? logical : logical / 2);
    return 4;
}

int default_thread_count() {
    static const int n = [] {
        std::vector<int> allowed;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int c = 0; c < CPU_SETSIZE; ++c)
                if (CPU_ISSET(c, &set))
                    allowed.push_back(c);
        return std::max(1, default_thread_count("/", allowed));
    }();
    return n;
}

int threads_or_default(int requested) {
    return requested > 0 ? requested : default_thread_count();
}

Warnings system_warnings(const SystemInfo& info, int threads_used) {
    Warnings w;
    std::vector<std::string> others;
    std::size_t slow = 0;
    for (const auto& g : info.governors) {
        if (g != "performance") {
            ++slow;
            if (std::find(others.begin(), others.end(), g) == others.end()) {
                others.push_back(g);
            }
        }
    }
    if (slow > 0) {
        w.push_back({"governor_not_performance",
                     fmt::format("cpufreq governor is {} on {} of {} policies, not 'performance': "
                                 "clocks ramp during the run and the numbers drift",
                                 fmt::join(others, "/"), slow, info.governors.size()),
                     "Set it before measuring: `sudo cpupower frequency-set -g performance`, or "
                     "write 'performance' to "
                     "/sys/devices/system/cpu/cpufreq/policy*/scaling_governor as root (on "
                     "Android: `adb shell su -c ...`)."});
    }
    if (info.loadavg_1m && info.cores_logical > 0 && *info.loadavg_1m > 0.25 * info.cores_logical) {
        w.push_back({"other_load",
                     fmt::format("1-minute load average is {:.2f} on {} logical CPUs (over 0.25 "
                                 "per CPU): other work competes with the benchmark",
                                 *info.loadavg_1m, info.cores_logical),
                     "Stop other heavy processes (see `top`) and let the load settle before "
                     "measuring."});
    }
    if (info.on_battery == true) {
        w.push_back({"on_battery",
                     "the machine runs on battery: power management may lower clocks and limit "
                     "power",
                     "Connect the charger, unless battery operation is what you mean to measure."});
    }
    if (info.cores_logical > 0 && threads_used > info.cores_logical) {
        w.push_back({"oversubscribed",
                     fmt::format("{} threads on {} logical CPUs: threads time-share cores and "
                                 "wait on each other",
                                 threads_used, info.cores_logical),
                     fmt::format("Use at most {} threads.", info.cores_logical)});
    }
    if (info.emulated == true) {
        w.push_back({"emulated",
                     fmt::format("this {} program runs under user-mode emulation on another "
                                 "architecture's CPU (qemu): the timings measure the emulator, "
                                 "not a {} device",
                                 info.arch, info.arch),
                     "Use such a run only to check that it works; measure on the device."});
    }
    return w;
}

Warnings build_warnings(bool stagebench_debug, bool llama_debug) {
    Warnings w;
    if (stagebench_debug) {
        w.push_back({"debug_build",
                     "stagebench is a debug build: its own overhead inflates the timings",
                     "Rebuild with -DCMAKE_BUILD_TYPE=Release (the default of `make`)."});
    }
    if (llama_debug) {
        w.push_back({"debug_build",
                     "llama.cpp is a debug build: its kernels run far slower than a release build",
                     "Rebuild llama.cpp with -DCMAKE_BUILD_TYPE=Release (scripts/llama.sh does)."});
    }
    return w;
}

nlohmann::json to_json(const SystemInfo& info) {
    const auto str = [](const std::string& v) {
        return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
    };
    return nlohmann::json{
        {"hostname", str(info.hostname)},
        {"os", str(info.os)},
        {"kernel", str(info.kernel)},
        {"cpu_model", str(info.cpu_model)},
        {"arch", str(info.arch)},
        {"cores_logical",
         info.cores_logical > 0 ? nlohmann::json(info.cores_logical) : nlohmann::json(nullptr)},
        {"cores_physical", opt(info.cores_physical)},
        {"mem_total_bytes", opt(info.mem_total_bytes)},
        {"mem_available_bytes", opt(info.mem_available_bytes)},
        {"governors", info.governors},
        {"loadavg_1m", opt(info.loadavg_1m)},
        {"on_battery", opt(info.on_battery)},
        {"emulated", opt(info.emulated)},
    };
}

std::optional<int64_t> process_rss_bytes(const std::string& proc_root) {
    std::ifstream f(proc_root + "/self/statm");
    int64_t size_pages = 0, resident_pages = 0;
    if (!(f >> size_pages >> resident_pages) || resident_pages < 0)
        return std::nullopt;
    const long page = sysconf(_SC_PAGESIZE);
    return resident_pages * static_cast<int64_t>(page > 0 ? page : 4096);
}

}  // namespace sb
