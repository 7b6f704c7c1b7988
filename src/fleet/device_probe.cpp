#include "fleet/device_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace sb {

namespace {

std::string trim_line(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos)
        return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<double> number(const std::string& s) {
    const std::string t = trim_line(s);
    if (t.empty())
        return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<std::string> nonempty(const std::string& s) {
    std::string t = trim_line(s);
    // Device-tree strings end with NUL; getprop prints nothing for an unset property.
    t.erase(std::remove(t.begin(), t.end(), '\0'), t.end());
    if (t.empty())
        return std::nullopt;
    return t;
}

// key=value lines before the first "--cpuinfo--" line, and everything after it.
std::map<std::string, std::string> key_values(const std::string& text, std::string* rest) {
    std::map<std::string, std::string> kv;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line == "--cpuinfo--") {
            if (rest)
                *rest = std::string(std::istreambuf_iterator<char>(in), {});
            break;
        }
        const auto eq = line.find('=');
        if (eq != std::string::npos)
            kv[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return kv;
}

}  // namespace

const std::string& identity_script() {
    static const std::string s =
        "echo \"arch=$(uname -m)\"; echo \"kernel=$(uname -r)\"; echo \"hostname=$(uname -n)\"; "
        "[ -r /proc/device-tree/model ] && echo \"dt_model=$(tr -d '\\000' < "
        "/proc/device-tree/model)\"; "
        "if command -v getprop >/dev/null 2>&1; then "
        "echo \"android=$(getprop ro.build.version.release)\"; "
        "echo \"android_model=$(getprop ro.product.model)\"; "
        "echo \"soc_model=$(getprop ro.soc.model)\"; "
        "echo \"board_platform=$(getprop ro.board.platform)\"; fi; "
        "echo --cpuinfo--; cat /proc/cpuinfo 2>/dev/null; true";
    return s;
}

const std::string& gate_script() {
    static const std::string s =
        "for z in /sys/class/thermal/thermal_zone*; do [ -r \"$z/temp\" ] && "
        "echo \"zone=$(cat \"$z/type\" 2>/dev/null) $(cat \"$z/temp\" 2>/dev/null)\"; done; "
        "for g in /sys/devices/system/cpu/cpufreq/policy*/scaling_governor; do [ -r \"$g\" ] && "
        "echo \"governor=$(cat \"$g\")\"; done; "
        "for b in /sys/class/power_supply/*; do [ \"$(cat \"$b/type\" 2>/dev/null)\" = Battery ] "
        "&& echo \"battery=$(cat \"$b/status\" 2>/dev/null) $(cat \"$b/capacity\" "
        "2>/dev/null)\"; done; "
        "echo \"load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null)\"; true";
    return s;
}

DeviceIdentity parse_identity(const std::string& text) {
    DeviceIdentity id;
    const auto kv = key_values(text, &id.cpuinfo);
    auto get = [&](const char* k) {
        auto it = kv.find(k);
        return it == kv.end() ? std::optional<std::string>{} : nonempty(it->second);
    };
    id.arch = get("arch").value_or("");
    id.kernel = get("kernel").value_or("");
    id.hostname = get("hostname").value_or("");
    id.android = get("android");
    id.model = id.android ? get("android_model") : get("dt_model");
    if (!id.model)
        id.model = get("dt_model");
    id.soc = get("soc_model");
    if (!id.soc)
        id.soc = get("board_platform");
    // cpuinfo: the model name, the SoC (Hardware, on ARM) and the features every core has.
    std::istringstream in(id.cpuinfo);
    std::string line;
    std::optional<std::set<std::string>> common;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key = trim_line(line.substr(0, colon)),
                          value = trim_line(line.substr(colon + 1));
        if ((key == "model name" || key == "Processor") && !id.cpu && !value.empty())
            id.cpu = value;
        else if (key == "Hardware" && !id.soc && !value.empty())
            id.soc = value;
        else if (key == "Features" || key == "flags") {
            std::set<std::string> f;
            std::istringstream words(value);
            for (std::string w; words >> w;)
                f.insert(w);
            if (!common) {
                common = f;
            } else {
                std::set<std::string> both;
                std::set_intersection(common->begin(), common->end(), f.begin(), f.end(),
                                      std::inserter(both, both.end()));
                common = both;
            }
        }
    }
    if (common)
        id.cpu_features.assign(common->begin(), common->end());
    return id;
}

std::string dist_arch(const std::string& m) {
    if (m == "x86_64" || m == "amd64")
        return "amd64";
    if (m == "aarch64" || m == "arm64" || m == "armv8l")
        return "arm64";
    return "";
}

GateState parse_gate_state(const std::string& text) {
    GateState s;
    std::set<std::string> govs;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq == std::string::npos)
            continue;
        const std::string key = line.substr(0, eq), value = trim_line(line.substr(eq + 1));
        if (key == "zone") {
            const auto sp = value.rfind(' ');
            auto mc = number(sp == std::string::npos ? value : value.substr(sp + 1));
            // Millidegrees; a zone reading nonsense (negative, above 200 C) is left out.
            if (mc && *mc > -40000 && *mc < 200000 && (!s.hottest_c || *mc / 1000 > *s.hottest_c)) {
                s.hottest_c = *mc / 1000;
                s.hottest_zone = sp == std::string::npos ? "" : trim_line(value.substr(0, sp));
            }
        } else if (key == "governor" && !value.empty()) {
            govs.insert(value);
        } else if (key == "battery") {
            const auto sp = value.rfind(' ');
            const std::string status = sp == std::string::npos ? value : value.substr(0, sp);
            if (!status.empty())
                s.on_battery = status == "Discharging";
            if (sp != std::string::npos) {
                auto pct = number(value.substr(sp + 1));
                if (pct && *pct >= 0 && *pct <= 100)
                    s.battery_pct = *pct;
            }
        } else if (key == "load") {
            auto l = number(value);
            if (l && *l >= 0)
                s.load_1m = *l;
        }
    }
    s.governors.assign(govs.begin(), govs.end());
    return s;
}

GateVerdict judge_gates(const Gates& g, const GateState& s) {
    GateVerdict v;
    if (g.cool_to_c) {
        if (!s.hottest_c)
            v.warnings.push_back(fmt::format(
                "--cool-to {:g}C not checked: the device shows no thermal zone", *g.cool_to_c));
        else if (*s.hottest_c >= *g.cool_to_c)
            v.hot = true;
    }
    const std::string gov_mode = g.governor.value_or("warn");
    if (gov_mode != "ignore") {
        std::vector<std::string> other;
        for (const auto& x : s.governors)
            if (x != "performance")
                other.push_back(x);
        if (!other.empty()) {
            std::string list;
            for (const auto& x : other)
                list += (list.empty() ? "" : ", ") + x;
            const std::string msg =
                "CPU governor " + list + ", not performance: clocks follow the load (DVFS)";
            if (gov_mode == "refuse")
                v.refusal = msg;
            else
                v.warnings.push_back(msg);
        }
    }
    if (g.min_battery_pct && s.on_battery.value_or(false) && s.battery_pct &&
        *s.battery_pct < *g.min_battery_pct)
        v.refusal = fmt::format("on battery at {:g} %, below the gate's {:g} %", *s.battery_pct,
                                *g.min_battery_pct);
    if (g.max_load && s.load_1m && *s.load_1m > *g.max_load)
        v.refusal = fmt::format("load {:g} above the gate's {:g}: something else is running",
                                *s.load_1m, *g.max_load);
    return v;
}

nlohmann::json to_json(const DeviceIdentity& id) {
    auto opt = [](const std::optional<std::string>& s) {
        return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
    };
    return {{"arch", id.arch},         {"kernel", id.kernel},
            {"hostname", id.hostname}, {"model", opt(id.model)},
            {"soc", opt(id.soc)},      {"android", opt(id.android)},
            {"cpu", opt(id.cpu)},      {"cpu_features", id.cpu_features}};
}

nlohmann::json to_json(const GateState& s) {
    auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    return {{"hottest_c", opt(s.hottest_c)},     {"hottest_zone", opt(s.hottest_zone)},
            {"governors", s.governors},          {"on_battery", opt(s.on_battery)},
            {"battery_pct", opt(s.battery_pct)}, {"load_1m", opt(s.load_1m)}};
}

}  // namespace sb
