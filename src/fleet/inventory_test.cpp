#include "fleet/inventory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/subprocess.hpp"

namespace sb {
namespace {

TEST(Inventory, ReadsTheIssueShapeWithGatesAndDefaults) {
    const Inventory inv = parse_inventory(R"(
name = "lab"
[gates]
cool_to = "45C"
cool_timeout = "2m"
[[device]]
name = "pi5"
transport = "ssh://pi@192.168.1.20:2222"
identity = "/keys/id_ed25519"
ssh_options = ["-o", "ProxyJump=gw"]
workdir = "/home/pi/stagebench"
env = { OMP_NUM_THREADS = "4" }
[device.gates]
governor = "refuse"
[[device]]
name = "s24"
transport = "adb://R5CT1234"
[[device]]
name = "a76"
transport = "exec"
prefix = ["qemu-aarch64", "-cpu", "cortex-a76"]
arch = "arm64"
[[device]]
name = "here"
transport = "local"
stagebench = "/opt/sb/bin/stagebench"
)",
                                          "fleet.toml");
    EXPECT_EQ(inv.name, "lab");
    ASSERT_EQ(inv.devices.size(), 4u);
    const DeviceSpec& pi = inv.devices[0];
    EXPECT_EQ(pi.kind, TransportKind::ssh);
    EXPECT_EQ(pi.user, "pi");
    EXPECT_EQ(pi.host, "192.168.1.20");
    EXPECT_EQ(pi.port, 2222);
    EXPECT_EQ(pi.identity, "/keys/id_ed25519");
    EXPECT_EQ(pi.ssh_options, (std::vector<std::string>{"-o", "ProxyJump=gw"}));
    EXPECT_EQ(pi.workdir, "/home/pi/stagebench");
    EXPECT_EQ(pi.env.at("OMP_NUM_THREADS"), "4");
    EXPECT_EQ(inv.gates.cool_to_c, 45.0);
    EXPECT_DOUBLE_EQ(*inv.gates.cool_timeout_s, 120.0);
    const Gates g = inv.gates.overridden_by(pi.gates);
    EXPECT_EQ(g.governor, "refuse");
    EXPECT_EQ(g.cool_to_c, 45.0);
    EXPECT_EQ(inv.devices[1].kind, TransportKind::adb);
    EXPECT_EQ(inv.devices[1].serial, "R5CT1234");
    EXPECT_EQ(inv.devices[2].prefix.size(), 3u);
    EXPECT_EQ(inv.devices[2].arch, "arm64");
    EXPECT_EQ(inv.devices[3].stagebench, "/opt/sb/bin/stagebench");
}

TEST(Inventory, NameDefaultsToTheFileAndSshPortTo22) {
    const Inventory inv =
        parse_inventory("[[device]]\nname = \"b\"\ntransport = \"ssh://box\"\n", "/x/desk.toml");
    EXPECT_EQ(inv.name, "desk");
    EXPECT_EQ(inv.devices[0].host, "box");
    EXPECT_EQ(inv.devices[0].user, "");
    EXPECT_EQ(inv.devices[0].port, 22);
}

// Every bad inventory is one line naming the file and where.
TEST(Inventory, BadInventoriesAreOneLineInputErrors) {
    const std::pair<const char*, const char*> cases[] = {
        {"name = \"x\"\n", "no [[device]]"},
        {"[[device]]\ntransport = \"local\"\n", "device 1: no name"},
        {"[[device]]\nname = \"a\"\n", "device 'a': no transport"},
        {"[[device]]\nname = \"a\"\ntransport = \"telnet://x\"\n", "unknown transport"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@h:99999\"\n", "not a port"},
        {"[[device]]\nname = \"a\"\ntransport = \"adb://\"\n", "needs a serial"},
        {"[[device]]\nname = \"a\"\ntransport = \"exec\"\n", "needs prefix"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\nidentity = \"k\"\n", "for ssh devices"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\n[[device]]\nname = \"a\"\n"
         "transport = \"local\"\n",
         "a second device of that name"},
        {"[[device]]\nname = \"a b\"\ntransport = \"local\"\n", "use letters"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\nworkdr = \"/x\"\n", "unknown key"},
        {"[gates]\ncool_to = \"hot\"\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "not a temperature"},
        {"[gates]\ngovernor = \"maybe\"\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "\"warn\", \"refuse\" or \"ignore\""},
        {"[gates]\nmin_battery = 140\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "percentage"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\nenv = { \"A-B\" = \"1\" }\n",
         "environment variable"},
        {"[[device]\nname = 1\n", "line 1"},
        {"[[device]]\nname = 7\ntransport = \"local\"\n", "expected a string"},
        // An IPv6 address goes in brackets, whole.
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[::1\"\n", "'[' without its ']'"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[::1:22\"\n", "without its ']'"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@::1\"\n", "goes in brackets"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@::1]:22\"\n", "brackets only"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[::1]x\"\n", "after ']'"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[host]:22\"\n", "not an IPv6 address"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[]:22\"\n", "not an IPv6 address"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@[::1]:0x16\"\n", "not a port"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@h:\"\n", "not a port"},
        {"[[device]]\nname = \"a\"\ntransport = \"ssh://u@h\\nx\"\n", "needs a host"},
        // Deadlines of gates: above 0, at most a day.
        {"[gates]\ncool_timeout = -1\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "is not a wait"},
        {"[gates]\ncool_timeout = 0\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "is not a wait"},
        {"[gates]\ncool_timeout = 1e9\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "is not a wait"},
        {"[gates]\ncool_timeout = \"0s\"\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "above 0"},
        {"[gates]\ncool_timeout = \"2d\"\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "above 0"},
        {"[gates]\ncool_to = \"0x2D\"\n[[device]]\nname = \"a\"\ntransport = \"local\"\n",
         "not a temperature"},
        // Text of the file with control characters stays on the line, escaped.
        {"[[device]]\nname = \"pi\\n5\"\ntransport = \"local\"\n", "'pi\\n5': use letters"},
        {"[[device]]\nname = \"a\"\ntransport = \"local\"\n\"we\\u0001ird\" = 1\n",
         "we\\x01ird: unknown key"},
    };
    for (const auto& [text, want] : cases) {
        try {
            parse_inventory(text, "f.toml");
            ADD_FAILURE() << "accepted: " << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input) << text;
            const std::string m = e.what();
            EXPECT_NE(m.find("inventory 'f.toml'"), std::string::npos) << m;
            EXPECT_NE(m.find(want), std::string::npos) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
    }
}

TEST(Inventory, SshHostsPortsAndIpv6) {
    const auto device = [](const std::string& transport) {
        return parse_inventory("[[device]]\nname = \"a\"\ntransport = \"" + transport + "\"\n",
                               "f.toml")
            .devices.at(0);
    };
    const DeviceSpec v6 = device("ssh://pi@[::1]:2222");
    EXPECT_EQ(v6.host, "::1");  // as ssh takes it: user@::1 -p 2222
    EXPECT_EQ(v6.user, "pi");
    EXPECT_EQ(v6.port, 2222);
    EXPECT_EQ(device("ssh://[fe80::1%eth0]").host, "fe80::1%eth0");
    EXPECT_EQ(device("ssh://[fe80::1%eth0]").port, 22);
    EXPECT_EQ(device("ssh://[2001:db8::7]/").host, "2001:db8::7");
    EXPECT_EQ(device("ssh://box:2200").port, 2200);
    EXPECT_EQ(device("ssh://u@box").user, "u");
}

TEST(Inventory, ADeviceNameWithANewlineIsRefusedOnOneLine) {
    try {
        parse_inventory("[[device]]\nname = \"pi\\n5\"\ntransport = \"local\"\n", "f.toml");
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "inventory 'f.toml': device 1.name: 'pi\\n5': use letters, digits, '_', '-' "
                  "and '.'");
    }
}

TEST(Inventory, Celsius) {
    EXPECT_EQ(parse_celsius("45C"), 45.0);
    EXPECT_EQ(parse_celsius("45"), 45.0);
    EXPECT_EQ(parse_celsius("42.5 c"), 42.5);
    EXPECT_EQ(parse_celsius("45\xC2\xB0"), 45.0);
    EXPECT_FALSE(parse_celsius(""));
    EXPECT_FALSE(parse_celsius("C"));
    EXPECT_FALSE(parse_celsius("450C"));
    EXPECT_FALSE(parse_celsius("nan"));
    EXPECT_FALSE(parse_celsius("45F"));
    EXPECT_FALSE(parse_celsius("0x2D"));
    EXPECT_FALSE(parse_celsius("inf"));
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

TEST(AnsibleInventory, HostsGroupsAndVariablesBecomeDevices) {
    const Inventory inv = parse_ansible_inventory(R"(# the lab's playbook inventory
[all:vars]
ansible_user=pi
[boards]
pi-a ansible_host=10.0.0.21 stagebench_workdir=/home/pi/sb
pi-b ansible_host=10.0.0.22 ansible_port=2222 ansible_user=root
[boards:vars]
ansible_ssh_private_key_file=/keys/lab
ansible_ssh_common_args='-o ProxyJump=gw -o "StrictHostKeyChecking=yes"'
[desk]
here ansible_connection=local
[lab:children]
boards
[lab:vars]
ansible_port=2200
)",
                                                  "hosts.ini");
    EXPECT_EQ(inv.name, "hosts");
    ASSERT_EQ(inv.devices.size(), 3u);
    const DeviceSpec &a = inv.devices[0], &b = inv.devices[1], &h = inv.devices[2];
    EXPECT_EQ(a.name, "pi-a");
    EXPECT_EQ(a.kind, TransportKind::ssh);
    // lab's port reaches its child group's hosts; a host's own variables come last.
    EXPECT_EQ(a.transport, "ssh://pi@10.0.0.21:2200");
    EXPECT_EQ(a.workdir, "/home/pi/sb");
    EXPECT_EQ(a.identity, "/keys/lab");
    EXPECT_EQ(a.ssh_options,
              (std::vector<std::string>{"-o", "ProxyJump=gw", "-o", "StrictHostKeyChecking=yes"}));
    EXPECT_EQ(b.transport, "ssh://root@10.0.0.22:2222");
    EXPECT_EQ(b.port, 2222);
    EXPECT_EQ(b.workdir, "");
    EXPECT_EQ(h.kind, TransportKind::local);
}

TEST(AnsibleInventory, WhatFleetCannotReachIsOneLine) {
    auto error = [](const std::string& text) {
        try {
            parse_ansible_inventory(text, "hosts.ini");
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_EQ(error("# nothing\n"), "inventory 'hosts.ini': no host in it");
    EXPECT_EQ(error("[boards]\npi[1:4] ansible_user=pi\n"),
              "inventory 'hosts.ini': line 2: 'pi[1:4]': host ranges and ports in the name are "
              "not read (use ansible_host and ansible_port)");
    EXPECT_EQ(error("[b]\nx ansible_connection=winrm ansible_user=u\n"),
              "inventory 'hosts.ini': host 'x': ansible_connection 'winrm': fleet run reaches ssh "
              "and local hosts");
    EXPECT_EQ(error("[b:weird]\n"),
              "inventory 'hosts.ini': line 1: [b:weird]: expected [group], [group:vars] or "
              "[group:children]");
    EXPECT_EQ(error("[b]\nx ansible_user=u foo\n"),
              "inventory 'hosts.ini': line 2: 'foo': expected key=value after the host");
    EXPECT_NE(error("[b]\nx ansible_user=u ansible_port=http\n").find("host 'x'"),
              std::string::npos);
}

// The YAML form of the same lab: the devices of the INI test above.
const char* kLabYaml = R"(# the lab's playbook inventory, YAML
all:
  vars:
    ansible_user: pi
  children:
    boards:
      hosts:
        pi-a:
          ansible_host: 10.0.0.21
          stagebench_workdir: /home/pi/sb
        pi-b: {ansible_host: 10.0.0.22, ansible_port: 2222, ansible_user: root}
      vars:
        ansible_ssh_private_key_file: /keys/lab
        ansible_ssh_common_args: '-o ProxyJump=gw -o "StrictHostKeyChecking=yes"'
    desk:
      hosts:
        here:
          ansible_connection: local
    lab:
      children:
        boards:
      vars:
        ansible_port: 2200
)";

TEST(AnsibleInventory, YamlHostsGroupsAndVariablesBecomeDevices) {
    const Inventory inv = parse_ansible_inventory(kLabYaml, "hosts.yml");
    EXPECT_EQ(inv.name, "hosts");
    ASSERT_EQ(inv.devices.size(), 3u);
    const DeviceSpec &a = inv.devices[0], &b = inv.devices[1], &h = inv.devices[2];
    EXPECT_EQ(a.name, "pi-a");
    // boards is lab's child (depth 2) and all's (depth 1): lab's port reaches it.
    EXPECT_EQ(a.transport, "ssh://pi@10.0.0.21:2200");
    EXPECT_EQ(a.workdir, "/home/pi/sb");
    EXPECT_EQ(a.identity, "/keys/lab");
    EXPECT_EQ(a.ssh_options,
              (std::vector<std::string>{"-o", "ProxyJump=gw", "-o", "StrictHostKeyChecking=yes"}));
    EXPECT_EQ(b.transport, "ssh://root@10.0.0.22:2222");
    EXPECT_EQ(h.kind, TransportKind::local);
}

TEST(AnsibleInventory, YamlItDoesNotReadIsOneLineWithItsLine) {
    auto error = [](const std::string& text) {
        try {
            parse_ansible_inventory(text, "hosts.yaml");
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::input);
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_EQ(error("# nothing\n"), "inventory 'hosts.yaml': no host in it");
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n  groups:\n    y:\n"),
              "inventory 'hosts.yaml': line 5: 'groups' in group 'all': expected hosts, vars or "
              "children");
    EXPECT_EQ(error("all:\n  hosts:\n    x: {a: 1\n"),
              "inventory 'hosts.yaml': line 4: not YAML: did not find expected ',' or '}'");
    EXPECT_EQ(error("all:\n  hosts:\n    pi[1:4]:\n"),
              "inventory 'hosts.yaml': line 3: 'pi[1:4]': host ranges and ports in the name are "
              "not read (use ansible_host and ansible_port)");
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n    x:\n"),
              "inventory 'hosts.yaml': line 4: 'x' twice in group 'all''s hosts");
    EXPECT_EQ(error("all:\n  vars: &b\n    ansible_user: u\n  hosts:\n    x:\n      <<: *b\n"),
              "inventory 'hosts.yaml': line 6: merge keys (<<) are not read; write the keys out");
    EXPECT_EQ(error("all:\n  hosts: [x, y]\n"),
              "inventory 'hosts.yaml': line 2: expected a mapping for group 'all''s hosts");
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n---\nall:\n"),
              "inventory 'hosts.yaml': line 4: a second YAML document: an inventory is one");
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n      ansible_user: u\n      ansible_port: [22]\n"),
              "inventory 'hosts.yaml': host 'x': ansible_port is a list, a mapping or a tagged "
              "value: expected a scalar");
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n      ansible_user: !vault |\n        $ANSIBLE\n"),
              "inventory 'hosts.yaml': host 'x': ansible_user is a list, a mapping or a tagged "
              "value: expected a scalar");
    EXPECT_EQ(error("all:\n  children:\n    a:\n      children:\n        b:\n"
                    "          children:\n            a:\n          hosts:\n            x:\n"),
              "inventory 'hosts.yaml': group 'b': its children lead back to it");
    // A list among a playbook's own variables is kept out of the way, not refused.
    EXPECT_EQ(error("all:\n  hosts:\n    x:\n      ansible_user: u\n      pkgs: [a, b]\n"),
              "(no error)");
}

// Debian's ansible-inventory (ansible-core) and stagebench read the same hosts and the same
// merged variables from the same files, INI and YAML: all's variables, parents before
// children whatever their names (zoo is alpha's parent), a host in two groups of different
// depths, the host's own last, quoted values, numbers, a list.
TEST(AnsibleInventory, ReadsTheSameHostsAndVariablesAsAnsibleInventory) {
    const std::string tool = "/usr/bin/ansible-inventory";
    if (::access(tool.c_str(), X_OK) != 0)
        GTEST_SKIP() << "no ansible-inventory (scripts/setup-deps.sh installs ansible-core)";
    char tmpl[] = "/tmp/sb-ansible-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const std::filesystem::path dir = tmpl;
    const std::string ini = R"([all:vars]
ansible_user=pi
shared=from-all
[zoo]
z1 ansible_host=10.0.0.9
[zoo:vars]
shared=from-zoo
rank=zoo
[zoo:children]
alpha
[alpha]
a1 ansible_port=2201 note="two words"
both
[alpha:vars]
rank=alpha
[beta]
both ansible_connection=local
[beta:vars]
rank=beta
list_var=['x', 'y']
)";
    const std::string yaml = R"(all:
  vars:
    ansible_user: pi
    shared: from-all
  children:
    zoo:
      hosts:
        z1:
          ansible_host: 10.0.0.9
      vars:
        shared: from-zoo
        rank: zoo
      children:
        alpha:
          hosts:
            a1: {ansible_port: 2201, note: "two words"}
            both:
          vars:
            rank: alpha
    beta:
      hosts:
        both:
          ansible_connection: local
      vars:
        rank: beta
        list_var: [x, y]
    lab:
      children:
        zoo:
        beta:
      hosts:
        solo:
          ansible_host: "::1"
          stagebench_workdir: ~/sb
)";
    for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
             {"hosts.ini", ini}, {"hosts.yml", yaml}}) {
        const std::string file = (dir / name).string();
        std::ofstream(file) << text;
        ProcessOptions po;
        po.timeout_s = 120;
        auto r = run_process(
            {"/usr/bin/env", "HOME=" + dir.string(), "ANSIBLE_LOCAL_TEMP=" + (dir / "tmp").string(),
             tool, "-i", file, "--list"},
            po);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto j = nlohmann::json::parse(r.out);
        std::set<std::string> theirs;
        for (const auto& [group, body] : j.items())
            if (body.is_object() && body.contains("hosts"))
                for (const auto& h : body["hosts"])
                    theirs.insert(h.get<std::string>());
        const auto ours = ansible_inventory_hosts(text, file);
        std::set<std::string> our_names;
        for (const auto& h : ours)
            our_names.insert(h.name);
        EXPECT_EQ(our_names, theirs) << name << ": " << r.out;
        for (const auto& h : ours) {
            const nlohmann::json vars =
                j["_meta"]["hostvars"].value(h.name, nlohmann::json::object());
            std::set<std::string> keys;
            for (const auto& [k, v] : vars.items()) {
                keys.insert(k);
                const std::string what = name + " " + h.name + " " + k;
                if (v.is_string()) {
                    EXPECT_EQ(h.vars.at(k), v.get<std::string>()) << what;
                } else if (v.is_number_integer()) {
                    EXPECT_EQ(h.vars.at(k), std::to_string(v.get<int64_t>())) << what;
                } else if (v.is_array() || v.is_object()) {
                    EXPECT_TRUE(h.structured.count(k) || h.vars.count(k)) << what;
                }
            }
            std::set<std::string> mine = h.structured;
            for (const auto& [k, v] : h.vars)
                mine.insert(k);
            EXPECT_EQ(mine, keys) << name << " " << h.name;
        }
        // The precedence the files were written to show, read from stagebench's side.
        for (const auto& h : ours) {
            if (h.name == "a1") {
                EXPECT_EQ(h.vars.at("rank"), "alpha") << name;  // a child over its parent
                EXPECT_EQ(h.vars.at("shared"), "from-zoo") << name;
            }
            if (h.name == "both") {
                EXPECT_EQ(h.vars.at("rank"), "alpha") << name;  // the deeper group wins
            }
        }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace sb
