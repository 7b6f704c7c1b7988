#pragma once
// What the fleet reads from a device with one shell command: its identity (architecture,
// kernel, board or phone model, SoC, CPU features) and the state its gates check (the hottest
// thermal zone, the CPU governors, the battery, the load). The scripts are POSIX sh (Debian's
// dash, Android's toybox mksh); the parsers are pure and never throw.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/inventory.hpp"

namespace sb {

// The shell script printing "key=value" lines (and the CPU's feature line) on the device.
const std::string& identity_script();
const std::string& gate_script();

struct DeviceIdentity {
    std::string arch;  // uname -m: x86_64, aarch64...
    std::string kernel, hostname;
    std::optional<std::string> model;       // /proc/device-tree/model or ro.product.model
    std::optional<std::string> soc;         // ro.soc.model / ro.board.platform / cpuinfo Hardware
    std::optional<std::string> android;     // ro.build.version.release: the device is Android
    std::optional<std::string> cpu;         // model name
    std::vector<std::string> cpu_features;  // common to every core (ARM), or x86 flags
    std::string cpuinfo;                    // the raw /proc/cpuinfo
};

// Parses identity_script()'s output.
DeviceIdentity parse_identity(const std::string& text);

// "amd64" or "arm64" (the dist's names) for uname -m; "" for others.
std::string dist_arch(const std::string& uname_m);

struct GateState {
    std::optional<double> hottest_c;  // the hottest thermal zone
    std::optional<std::string> hottest_zone;
    std::vector<std::string> governors;  // distinct, sorted
    std::optional<bool> on_battery;
    std::optional<double> battery_pct;
    std::optional<double> load_1m;
};
GateState parse_gate_state(const std::string& text);

// What the gates say about a state: refusals (the command does not run) and warnings.
struct GateVerdict {
    std::optional<std::string> refusal;
    std::vector<std::string> warnings;
    bool hot = false;  // above cool_to: wait and look again
};
GateVerdict judge_gates(const Gates& g, const GateState& s);

nlohmann::json to_json(const DeviceIdentity& id);
nlohmann::json to_json(const GateState& s);

}  // namespace sb
