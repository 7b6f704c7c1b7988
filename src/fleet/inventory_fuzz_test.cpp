// Inventories handed to `fleet`, mutated by a seeded generator: every outcome is either an
// inventory whose every device can be reached as written (an ssh host without spaces, control
// characters or brackets, a port of 1 to 65535, gates within their ranges) or one
// sb::Error(input) line naming the file, never another exception. The seed and the number of
// cases are printed (tests/fuzz_seed.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "fleet/inventory.hpp"
#include "fuzz_seed.hpp"

namespace sb {
namespace {

const char* kBase = R"(name = "lab"
[gates]
cool_to = "45C"
cool_timeout = "2m"
[[device]]
name = "pi5"
transport = "ssh://pi@192.168.1.20:2222"
identity = "/keys/id"
workdir = "/home/pi/sb"
env = { OMP_NUM_THREADS = "4" }
[device.gates]
min_battery = 40
max_load = 2.5
[[device]]
name = "s24"
transport = "adb://R5CT1234"
[[device]]
name = "a76"
transport = "exec"
prefix = ["qemu-aarch64", "-cpu", "cortex-a76"]
arch = "arm64"
)";

// Values a user (or a damaged file) may put where a string or number goes.
const std::vector<std::string> kValues = {
    "\"ssh://u@[::1\"",
    "\"ssh://u@[::1]:22\"",
    "\"ssh://u@::1\"",
    "\"ssh://[fe80::1%eth0]\"",
    "\"ssh://u@h:0\"",
    "\"ssh://u@h:65536\"",
    "\"ssh://u@h:0x16\"",
    "\"ssh://-oProxy=x\"",
    "\"ssh://u@h\\nx\"",
    "\"ssh://u@]h[\"",
    "\"adb://\"",
    "\"adb://a b\"",
    "\"local\"",
    "\"exec\"",
    "\"pi\\n5\"",
    "\"\\u0001\"",
    "\"\"",
    "-1",
    "0",
    "1e309",
    "nan",
    "inf",
    "-inf",
    "1e9",
    "86400",
    "86401",
    "\"0s\"",
    "\"-5s\"",
    "\"1e999s\"",
    "\"10m\"",
    "\"45C\"",
    "\"0x2D\"",
    "\"250C\"",
    "\"nanC\"",
    "101",
    "-0.5",
    "[]",
    "{}",
    "[\"-o\"]",
    "true",
    "\"refuse\"",
    "\"maybe\"",
    "2.5",
    "\"arm64\"",
};

std::string mutate(std::mt19937_64& rng) {
    std::string text = kBase;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
        switch (rng() % 4) {
            case 0: {  // a value replaced
                std::vector<std::size_t> eqs;
                for (std::size_t at = text.find(" = "); at != std::string::npos;
                     at = text.find(" = ", at + 1))
                    eqs.push_back(at + 3);
                if (eqs.empty())
                    break;
                const std::size_t at = eqs[rng() % eqs.size()];
                const std::size_t end = text.find('\n', at);
                text.replace(at, end - at, kValues[rng() % kValues.size()]);
                break;
            }
            case 1: {  // a byte inserted: brackets, quotes, newlines, controls, UTF-8 halves
                static const std::string bytes = "[]{}\"'\n\t\\=#,.:@%\x01\x7f\xc3\xff";
                text.insert(rng() % (text.size() + 1), 1, bytes[rng() % bytes.size()]);
                break;
            }
            case 2:  // cut short
                text.resize(rng() % (text.size() + 1));
                break;
            default: {  // a line dropped
                std::vector<std::size_t> starts{0};
                for (std::size_t i2 = 0; i2 + 1 < text.size(); ++i2)
                    if (text[i2] == '\n')
                        starts.push_back(i2 + 1);
                const std::size_t s = starts[rng() % starts.size()];
                const std::size_t e = text.find('\n', s);
                text.erase(s, e == std::string::npos ? std::string::npos : e - s + 1);
            }
        }
    }
    return text;
}

bool no_space_or_control(const std::string& s) {
    return std::none_of(s.begin(), s.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) == 0x7f;
    });
}

void check_gates(const Gates& g, const std::string& text) {
    EXPECT_TRUE(!g.cool_timeout_s || (*g.cool_timeout_s > 0 && *g.cool_timeout_s <= kMaxGateWait_s))
        << text;
    EXPECT_TRUE(!g.min_battery_pct || (*g.min_battery_pct >= 0 && *g.min_battery_pct <= 100))
        << text;
    EXPECT_TRUE(!g.max_load || (*g.max_load >= 0 && std::isfinite(*g.max_load))) << text;
    EXPECT_TRUE(!g.cool_to_c || (*g.cool_to_c > -50 && *g.cool_to_c < 200)) << text;
}

TEST(InventoryFuzz, EveryMutationIsAUsableInventoryOrOneInputLine) {
    sbtest::FuzzRun fuzz(1208);
    std::mt19937_64 rng(fuzz.seed());
    int accepted = 0, refused = 0;
    for (int i = 0; i < 3000; ++i) {
        fuzz.next_case();
        const std::string text = mutate(rng);
        try {
            const Inventory inv = parse_inventory(text, "lab.toml");
            ++accepted;
            check_gates(inv.gates, text);
            for (const auto& d : inv.devices) {
                check_gates(d.gates, text);
                EXPECT_FALSE(d.name.empty()) << text;
                EXPECT_TRUE(no_space_or_control(d.name)) << text;
                if (d.kind == TransportKind::ssh) {
                    EXPECT_FALSE(d.host.empty()) << text;
                    EXPECT_TRUE(no_space_or_control(d.host) && no_space_or_control(d.user)) << text;
                    EXPECT_EQ(d.host.find_first_of("[]@/"), std::string::npos) << text;
                    EXPECT_NE(d.host[0], '-') << text;
                    EXPECT_TRUE(d.port >= 1 && d.port <= 65535) << text;
                }
                if (d.kind == TransportKind::adb) {
                    EXPECT_FALSE(d.serial.empty()) << text;
                    EXPECT_TRUE(no_space_or_control(d.serial)) << text;
                }
            }
        } catch (const Error& e) {
            ++refused;
            const std::string m = e.what();
            EXPECT_EQ(e.kind(), ErrorKind::input) << m;
            EXPECT_EQ(m.rfind("inventory 'lab.toml': ", 0), 0u) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(m.find('\r'), std::string::npos) << m;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not an sb::Error: " << e.what() << "\n" << text;
        }
    }
    // Both outcomes happen, so the generator neither only breaks nor only keeps files.
    EXPECT_GT(accepted, 100);
    EXPECT_GT(refused, 500);
}

// The YAML form of an Ansible inventory (parse_ansible_inventory on a .yml name), mutated the
// same way plus YAML's own syntax (anchors, aliases, tags, flow collections, block scalars,
// merge keys, documents): a usable inventory or one input line naming the file, never another
// exception, a crash or a leak (libyaml's documents are freed on every path; ASan builds see
// it).
const char* kYamlBase = R"(all:
  vars:
    ansible_user: pi
  hosts:
    here:
      ansible_connection: local
  children:
    boards:
      hosts:
        pi-a:
          ansible_host: 10.0.0.21
          ansible_port: 2222
          stagebench_workdir: /home/pi/sb
        pi-b: {ansible_host: "10.0.0.22", ansible_ssh_private_key_file: /keys/id}
      vars:
        ansible_ssh_common_args: '-o ProxyJump=gw'
        pkgs: [a, b]
    lab:
      children:
        boards:
)";

const std::vector<std::string> kYamlValues = {
    "",         "~",       "null",      "[]",         "{}",          "[1, 2]",
    "{a: b}",   "\"\"",    "'x y'",     "-1",         "0",           "65536",
    "0x16",     "\"::1\"", "\"[::1]\"", "-oProxy=x",  "\"a\\nb\"",   "!vault |\n  $ANSIBLE",
    "&a x",     "*a",      "*nope",     "|\n  block", ">\n  folded", "winrm",
    "local",    "ssh",     "true",      "1e9",        "\"\\u0001\"", "<<: *a",
    "\"\\xff\""};

std::string mutate_yaml(std::mt19937_64& rng) {
    std::string text = kYamlBase;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
        switch (rng() % 5) {
            case 0: {  // a value replaced
                std::vector<std::size_t> at;
                for (std::size_t p = text.find(": "); p != std::string::npos;
                     p = text.find(": ", p + 1))
                    at.push_back(p + 2);
                if (at.empty())
                    break;
                const std::size_t p = at[rng() % at.size()];
                const std::size_t end = text.find_first_of("\n,}", p);
                text.replace(p, end == std::string::npos ? std::string::npos : end - p,
                             kYamlValues[rng() % kYamlValues.size()]);
                break;
            }
            case 1: {  // a byte inserted
                static const std::string bytes = "[]{}\"'\n\t\\:#,&*!|>-?%@`\x01\x7f\xc3\xff ";
                text.insert(rng() % (text.size() + 1), 1, bytes[rng() % bytes.size()]);
                break;
            }
            case 2:  // cut short
                text.resize(rng() % (text.size() + 1));
                break;
            case 3: {  // a line's indentation changed
                std::vector<std::size_t> starts{0};
                for (std::size_t k = 0; k + 1 < text.size(); ++k)
                    if (text[k] == '\n')
                        starts.push_back(k + 1);
                const std::size_t p = starts[rng() % starts.size()];
                if (rng() % 2 && p < text.size() && text[p] == ' ')
                    text.erase(p, 2);
                else
                    text.insert(p, "  ");
                break;
            }
            default: {  // a line dropped or doubled
                std::vector<std::size_t> starts{0};
                for (std::size_t k = 0; k + 1 < text.size(); ++k)
                    if (text[k] == '\n')
                        starts.push_back(k + 1);
                const std::size_t p = starts[rng() % starts.size()];
                const std::size_t e = text.find('\n', p);
                const std::string line =
                    text.substr(p, e == std::string::npos ? std::string::npos : e - p + 1);
                if (rng() % 2)
                    text.erase(p, line.size());
                else
                    text.insert(p, line);
            }
        }
    }
    return text;
}

TEST(InventoryFuzz, EveryYamlMutationIsAUsableInventoryOrOneInputLine) {
    sbtest::FuzzRun fuzz(2207);
    std::mt19937_64 rng(fuzz.seed());
    int accepted = 0, refused = 0;
    for (int i = 0; i < 3000; ++i) {
        fuzz.next_case();
        const std::string text = mutate_yaml(rng);
        try {
            const Inventory inv = parse_ansible_inventory(text, "hosts.yml");
            ++accepted;
            EXPECT_FALSE(inv.devices.empty()) << text;
            for (const auto& d : inv.devices) {
                EXPECT_FALSE(d.name.empty()) << text;
                EXPECT_TRUE(no_space_or_control(d.name)) << text;
                EXPECT_TRUE(d.kind == TransportKind::ssh || d.kind == TransportKind::local) << text;
                if (d.kind == TransportKind::ssh) {
                    EXPECT_FALSE(d.host.empty()) << text;
                    EXPECT_TRUE(no_space_or_control(d.host) && no_space_or_control(d.user)) << text;
                    EXPECT_EQ(d.host.find_first_of("[]@/"), std::string::npos) << text;
                    EXPECT_NE(d.host[0], '-') << text;
                    EXPECT_TRUE(d.port >= 1 && d.port <= 65535) << text;
                }
            }
        } catch (const Error& e) {
            ++refused;
            const std::string m = e.what();
            EXPECT_EQ(e.kind(), ErrorKind::input) << m;
            EXPECT_EQ(m.rfind("inventory 'hosts.yml': ", 0), 0u) << m;
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(m.find('\r'), std::string::npos) << m;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not an sb::Error: " << e.what() << "\n" << text;
        }
    }
    EXPECT_GT(accepted, 100);
    EXPECT_GT(refused, 500);
}

}  // namespace
}  // namespace sb
