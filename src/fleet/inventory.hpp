#pragma once
// The fleet's inventory: a TOML file naming the devices a `fleet run` runs on and how to reach
// each (README "Fleet"):
//
//   name = "lab"                       # optional; default: the file's name without .toml
//   [gates]                            # optional defaults for every device
//   cool_to = "45C"                    # wait until the hottest thermal zone is below this
//   [[device]]
//   name = "pi5"
//   transport = "ssh://pi@192.168.1.20:22"   # or adb://SERIAL, local, exec
//   identity = "~/.ssh/id_ed25519"           # ssh only; ssh_options = ["-o", "..."] too
//                                            # (a Control* option: no shared connection)
//   workdir = "/home/pi/stagebench"          # where stagebench, models and results go
//   env = { OMP_NUM_THREADS = "4" }          # set for the measuring command
//   [device.gates]                           # this device's own gates
//   min_battery = 40
//
// An exec device runs its stagebench behind a command prefix on this machine
// (prefix = ["qemu-aarch64", "-cpu", "cortex-a76"], arch = "arm64"). stagebench = "PATH" names a
// stagebench already on the device (nothing is deployed).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sb {

enum class TransportKind { ssh, adb, local, exec };

// What is checked on a device before each command (fleet/gates.hpp). Unset: not checked.
// The longest wait a gate may be given (cool_timeout, --cool-timeout), and the longest
// --timeout: a day, as for every wait on the command line.
inline constexpr double kMaxGateWait_s = 86400;

struct Gates {
    std::optional<double> cool_to_c;        // hottest thermal zone must fall below this
    std::optional<double> cool_timeout_s;   // how long to wait for it (default 600 s): (0, a day]
    std::optional<std::string> governor;    // "warn", "refuse" or "ignore" when not performance
    std::optional<double> min_battery_pct;  // refuse on battery below this level
    std::optional<double> max_load;         // refuse while the 1-minute load is above this
    // Each field of over that is set replaces this one's.
    Gates overridden_by(const Gates& over) const;
};

struct DeviceSpec {
    std::string name;
    TransportKind kind = TransportKind::local;
    std::string transport;            // as written in the inventory
    std::string user, host;           // ssh
    int port = 22;                    // ssh
    std::string serial;               // adb
    std::vector<std::string> prefix;  // exec
    std::optional<std::string> identity;
    std::vector<std::string> ssh_options;
    std::string workdir;  // default: ~/stagebench (ssh), /data/local/tmp/stagebench (adb), a
                          // folder beside the store (local, exec)
    std::map<std::string, std::string> env;
    std::optional<std::string> stagebench;  // a stagebench already on the device
    std::optional<std::string> arch;        // the architecture an exec prefix runs (arm64...)
    Gates gates;
};

struct Inventory {
    std::string name;
    std::string path;
    Gates gates;  // the defaults
    std::vector<DeviceSpec> devices;
};

// Reads the inventory at path. Throws sb::Error(input), one line naming the file, the device
// and the key, for a file that cannot be read, is not TOML, or holds a bad value (no device, a
// device without a name or transport, two devices of one name, an unknown transport scheme or
// key, an ssh host that is not host, host:port or [IPv6]:port, a gate out of its range). Text
// of the file quoted in the line has its control characters escaped ("\n"), so the line stays
// one.
// A path whose name does not end in .toml is read as an Ansible inventory, YAML (.yml, .yaml)
// or INI (parse_ansible_inventory).
Inventory load_inventory(const std::string& path);
Inventory parse_inventory(const std::string& text, const std::string& source);

// An Ansible inventory, the one a lab keeps for its playbooks, in INI form ([group],
// [group:vars], [group:children], host lines with key=value) or, when source ends in .yml or
// .yaml, in YAML form (groups such as all: with hosts:, vars: and children:, read with
// libyaml): each host a device named as the host, reached over ssh at ansible_host (default:
// the name), ansible_port (22), ansible_user (default: $USER) with
// ansible_ssh_private_key_file and ansible_ssh_common_args, or locally
// (ansible_connection=local); stagebench_workdir is its workdir. Variables merge as Ansible
// merges them (ansible_inventory_hosts). Throws as parse_inventory for a host without a usable
// address, a connection other than ssh or local, host ranges ("pi[1:4]"), no host, and for
// what the reader does not take, with its line: a YAML key other than hosts, vars and
// children in a group, merge keys (<<), a key twice in a mapping, a second YAML document, a
// variable fleet run reads that is a list, a mapping or a tagged value (!vault).
Inventory parse_ansible_inventory(const std::string& text, const std::string& source);

// A host of an Ansible inventory with its variables merged as Ansible merges them (what
// `ansible-inventory -i FILE --list` shows in _meta.hostvars): all's, then each group the host
// is in (directly or through children) from the shallowest (a group's depth is one more than
// its deepest parent's; all is 0, a group without a parent 1) and by name within a depth,
// then the host's own. Scalars as written (without quotes); a list, mapping or tagged value is
// named in structured, never read.
struct AnsibleHost {
    std::string name;
    std::map<std::string, std::string> vars;
    std::set<std::string> structured;
};
// The hosts in the order first seen. Throws as parse_ansible_inventory.
std::vector<AnsibleHost> ansible_inventory_hosts(const std::string& text,
                                                 const std::string& source);

// "45C", "45", 45 -> 45 (degrees Celsius); nullopt when not a temperature in (-50, 200).
std::optional<double> parse_celsius(const std::string& text);

const char* transport_kind_name(TransportKind k);

}  // namespace sb
