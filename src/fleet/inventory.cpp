#include "fleet/inventory.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parse.hpp"

namespace sb {

namespace {

const std::set<std::string> kDeviceKeys = {"name",    "transport", "identity", "ssh_options",
                                           "workdir", "env",       "gates",    "stagebench",
                                           "prefix",  "arch"};
const std::set<std::string> kGateKeys = {"cool_to", "cool_timeout", "governor", "min_battery",
                                         "max_load"};

// Control characters as C escapes ("\n", "\x01"): a name, key or value of the file quoted in
// an error must not break the error's one line.
std::string escaped(std::string_view s) {
    std::string out;
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (c < 0x20 || c == 0x7f)
            out += fmt::format("\\x{:02x}", c);
        else
            out += ch;
    }
    return out;
}

// True when s holds a byte that is white space or a control character (not in a host name, a
// user name or an adb serial).
bool has_space_or_control(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return c <= 0x20 || c == 0x7f;
    });
}

struct Reader {
    std::string source;
    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw input_error(escaped(
            fmt::format("inventory '{}': {}{}", source, where.empty() ? "" : where + ": ", what)));
    }
    std::string str(const toml::node& n, const std::string& where) const {
        if (auto s = n.value<std::string>())
            return *s;
        fail(where, "expected a string");
    }
    std::vector<std::string> strings(const toml::node& n, const std::string& where) const {
        const toml::array* a = n.as_array();
        if (!a)
            fail(where, "expected an array of strings");
        std::vector<std::string> out;
        for (const auto& e : *a)
            out.push_back(str(e, where));
        return out;
    }
    double number(const toml::node& n, const std::string& where) const {
        if (auto i = n.value<int64_t>())
            return static_cast<double>(*i);
        if (auto d = n.value<double>(); d && std::isfinite(*d))
            return *d;
        fail(where, "expected a number");
    }
    Gates gates(const toml::node& n, const std::string& where) const {
        const toml::table* t = n.as_table();
        if (!t)
            fail(where, "expected a table");
        Gates g;
        for (const auto& [k, v] : *t) {
            const std::string key(k.str()), w = where + "." + key;
            if (!kGateKeys.count(key))
                fail(w,
                     "unknown key (known: cool_to, cool_timeout, governor, min_battery, "
                     "max_load)");
            if (key == "cool_to") {
                std::string text = v.is_string() ? str(v, w) : fmt::format("{}", number(v, w));
                g.cool_to_c = parse_celsius(text);
                if (!g.cool_to_c)
                    fail(w, "'" + text + "' is not a temperature (e.g. \"45C\")");
            } else if (key == "cool_timeout") {
                // A deadline: above 0 (0 or less would be no wait, or none at all) and at most
                // a day, like every wait on the command line.
                if (v.is_string()) {
                    auto ns = parse_duration(str(v, w));
                    if (!ns || *ns <= 0 || *ns > kMaxGateWait_s * 1000000000)
                        fail(w, "expected a duration above 0 and at most a day, such as \"10m\"");
                    g.cool_timeout_s = static_cast<double>(*ns) * 1e-9;
                } else {
                    g.cool_timeout_s = number(v, w);
                    if (!(*g.cool_timeout_s > 0) || *g.cool_timeout_s > kMaxGateWait_s)
                        fail(w, fmt::format("{} is not a wait: expected seconds above 0 and at "
                                            "most {} (a day), or a duration such as \"10m\"",
                                            *g.cool_timeout_s, kMaxGateWait_s));
                }
            } else if (key == "governor") {
                g.governor = str(v, w);
                if (*g.governor != "warn" && *g.governor != "refuse" && *g.governor != "ignore")
                    fail(w, "expected \"warn\", \"refuse\" or \"ignore\"");
            } else if (key == "min_battery") {
                g.min_battery_pct = number(v, w);
                if (*g.min_battery_pct < 0 || *g.min_battery_pct > 100)
                    fail(w, "expected a percentage in [0, 100]");
            } else if (key == "max_load") {
                g.max_load = number(v, w);
                if (*g.max_load < 0)
                    fail(w, "expected a load of 0 or more");
            }
        }
        return g;
    }
};

std::string expand_home(const std::string& p) {
    if (p.rfind("~/", 0) == 0) {
        const char* home = std::getenv("HOME");
        if (home && *home)
            return std::string(home) + p.substr(1);
    }
    return p;
}

void parse_transport(const Reader& r, const std::string& where, DeviceSpec& d) {
    const std::string& t = d.transport;
    if (t == "local") {
        d.kind = TransportKind::local;
    } else if (t == "exec") {
        d.kind = TransportKind::exec;
    } else if (t.rfind("adb://", 0) == 0) {
        d.kind = TransportKind::adb;
        d.serial = t.substr(6);
        if (d.serial.empty() || d.serial.find_first_of("/'\"") != std::string::npos ||
            has_space_or_control(d.serial) || d.serial[0] == '-')
            r.fail(where, "adb transport needs a serial: adb://SERIAL");
    } else if (t.rfind("ssh://", 0) == 0) {
        d.kind = TransportKind::ssh;
        std::string rest = t.substr(6);
        if (!rest.empty() && rest.back() == '/')
            rest.pop_back();
        const auto at = rest.rfind('@');
        if (at != std::string::npos) {
            d.user = rest.substr(0, at);
            rest = rest.substr(at + 1);
        }
        // host, host:port, or an IPv6 address in brackets: [::1], [fe80::1%eth0]:2222.
        std::optional<std::string> port;
        if (!rest.empty() && rest[0] == '[') {
            const auto close = rest.find(']');
            if (close == std::string::npos)
                r.fail(where,
                       "'[' without its ']': an IPv6 address goes in brackets, "
                       "ssh://user@[::1]:22");
            d.host = rest.substr(1, close - 1);
            const std::string after = rest.substr(close + 1);
            if (!after.empty() && after[0] != ':')
                r.fail(where, "expected :PORT or nothing after ']' (ssh://user@[::1]:22)");
            if (!after.empty())
                port = after.substr(1);
            const std::string address = d.host.substr(0, d.host.find('%'));
            const std::string zone =
                d.host.find('%') == std::string::npos ? "" : d.host.substr(d.host.find('%') + 1);
            if (std::count(address.begin(), address.end(), ':') < 2 ||
                address.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos ||
                (d.host.find('%') != std::string::npos &&
                 (zone.empty() ||
                  zone.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLM"
                                         "NOPQRSTUVWXYZ0123456789_.-") != std::string::npos)))
                r.fail(where, "'[" + d.host + "]' is not an IPv6 address (ssh://user@[::1]:22)");
        } else {
            if (rest.find_first_of("[]") != std::string::npos)
                r.fail(where, "'" + rest +
                                  "': brackets only around a whole IPv6 address, "
                                  "ssh://user@[::1]:22");
            const auto colon = rest.find(':');
            if (colon != std::string::npos && rest.find(':', colon + 1) != std::string::npos)
                r.fail(where, "'" + rest + "': an IPv6 address goes in brackets, ssh://user@[" +
                                  rest + "]:22");
            if (colon != std::string::npos) {
                port = rest.substr(colon + 1);
                rest = rest.substr(0, colon);
            }
            d.host = rest;
        }
        if (port) {
            const auto p = parse_decimal_int(*port);
            if (!p || port->size() > 5 ||
                port->find_first_not_of("0123456789") != std::string::npos || *p < 1 || *p > 65535)
                r.fail(where, "'" + *port + "' is not a port (ssh://user@host:22)");
            d.port = static_cast<int>(*p);
        }
        if (d.host.empty() || d.host.find_first_of("/'\"@") != std::string::npos ||
            has_space_or_control(d.host) || d.host[0] == '-' ||
            (!d.user.empty() && (d.user[0] == '-' || has_space_or_control(d.user) ||
                                 d.user.find_first_of("/'\"") != std::string::npos)))
            r.fail(where, "ssh transport needs a host: ssh://user@host:port");
    } else {
        r.fail(where,
               "unknown transport '" + t + "' (ssh://user@host:port, adb://SERIAL, local or exec)");
    }
}

}  // namespace

const char* transport_kind_name(TransportKind k) {
    switch (k) {
        case TransportKind::ssh:
            return "ssh";
        case TransportKind::adb:
            return "adb";
        case TransportKind::local:
            return "local";
        case TransportKind::exec:
            return "exec";
    }
    return "?";
}

Gates Gates::overridden_by(const Gates& over) const {
    Gates g = *this;
    if (over.cool_to_c)
        g.cool_to_c = over.cool_to_c;
    if (over.cool_timeout_s)
        g.cool_timeout_s = over.cool_timeout_s;
    if (over.governor)
        g.governor = over.governor;
    if (over.min_battery_pct)
        g.min_battery_pct = over.min_battery_pct;
    if (over.max_load)
        g.max_load = over.max_load;
    return g;
}

std::optional<double> parse_celsius(const std::string& text) {
    std::string t = text;
    while (!t.empty() && (t.back() == 'C' || t.back() == 'c' || t.back() == ' '))
        t.pop_back();
    if (t.size() >= 2 && t.compare(t.size() - 2, 2, "\xC2\xB0") == 0)  // "°"
        t.resize(t.size() - 2);
    if (t.empty())
        return std::nullopt;
    const auto v = parse_decimal(t);
    if (!v || !(*v > -50 && *v < 200))
        return std::nullopt;
    return v;
}

Inventory parse_inventory(const std::string& text, const std::string& source) {
    Reader r{source};
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        r.fail(fmt::format("line {}", e.source().begin.line), std::string(e.description()));
    }
    Inventory inv;
    inv.path = source;
    inv.name = std::filesystem::path(source).stem().string();
    for (const auto& [k, v] : root) {
        const std::string key(k.str());
        if (key == "name") {
            inv.name = r.str(v, "name");
        } else if (key == "gates") {
            inv.gates = r.gates(v, "gates");
        } else if (key != "device") {
            r.fail(key, "unknown key (known: name, gates, device)");
        }
    }
    if (inv.name.empty())
        r.fail("name", "must not be empty");
    const toml::array* devs = root["device"].as_array();
    if (!devs || devs->empty())
        r.fail("", "no [[device]] in it");
    std::set<std::string> names;
    for (std::size_t i = 0; i < devs->size(); ++i) {
        const toml::table* t = (*devs)[i].as_table();
        std::string where = fmt::format("device {}", i + 1);
        if (!t)
            r.fail(where, "expected a table ([[device]])");
        DeviceSpec d;
        if (!t->contains("name"))
            r.fail(where, "no name");
        d.name = r.str(*t->get("name"), where + ".name");
        if (d.name.empty() || d.name.find_first_not_of(
                                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                  "_-.") != std::string::npos)
            r.fail(where + ".name", "'" + d.name + "': use letters, digits, '_', '-' and '.'");
        where = "device '" + d.name + "'";
        if (!names.insert(d.name).second)
            r.fail(where, "a second device of that name");
        for (const auto& [k, v] : *t) {
            const std::string key(k.str()), w = where + "." + key;
            if (!kDeviceKeys.count(key))
                r.fail(w,
                       "unknown key (known: name, transport, identity, ssh_options, workdir, "
                       "env, gates, stagebench, prefix, arch)");
            if (key == "transport") {
                d.transport = r.str(v, w);
            } else if (key == "identity") {
                d.identity = expand_home(r.str(v, w));
            } else if (key == "ssh_options") {
                d.ssh_options = r.strings(v, w);
            } else if (key == "workdir") {
                d.workdir = expand_home(r.str(v, w));
                if (d.workdir.empty() || d.workdir.find('\'') != std::string::npos)
                    r.fail(w, "expected a path without quotes");
            } else if (key == "env") {
                const toml::table* e = v.as_table();
                if (!e)
                    r.fail(w, "expected a table of strings");
                for (const auto& [ek, ev] : *e) {
                    const std::string name(ek.str());
                    if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh"
                                                               "ijklmnopqrstuvwxyz0123456789_") !=
                                            std::string::npos)
                        r.fail(w, "'" + name + "' is not an environment variable name");
                    d.env[name] = r.str(ev, w + "." + name);
                }
            } else if (key == "gates") {
                d.gates = r.gates(v, w);
            } else if (key == "stagebench") {
                d.stagebench = r.str(v, w);
            } else if (key == "prefix") {
                d.prefix = r.strings(v, w);
            } else if (key == "arch") {
                d.arch = r.str(v, w);
                if (*d.arch != "amd64" && *d.arch != "arm64")
                    r.fail(w, "expected \"amd64\" or \"arm64\"");
            }
        }
        if (d.transport.empty())
            r.fail(where, "no transport (ssh://user@host:port, adb://SERIAL, local or exec)");
        parse_transport(r, where + ".transport", d);
        if (d.kind == TransportKind::exec && d.prefix.empty())
            r.fail(where, "an exec device needs prefix = [\"program\", \"arg\", ...]");
        if (d.kind != TransportKind::exec && !d.prefix.empty())
            r.fail(where + ".prefix", "only an exec device takes a prefix");
        if (d.kind != TransportKind::ssh && (d.identity || !d.ssh_options.empty()))
            r.fail(where, "identity and ssh_options are for ssh devices");
        inv.devices.push_back(std::move(d));
    }
    return inv;
}

namespace {

// An Ansible INI line's words: split at white space, a '...' or "..." quoted run kept whole
// (without its quotes).
std::vector<std::string> ini_words(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool any = false;
    char quote = 0;
    for (char c : line) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                cur += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            any = true;
        } else if (c == ' ' || c == '\t') {
            if (any || !cur.empty())
                out.push_back(cur);
            cur.clear();
            any = false;
        } else {
            cur += c;
        }
    }
    if (any || !cur.empty())
        out.push_back(cur);
    return out;
}

}  // namespace

namespace {

// One variable of an Ansible inventory: its text (a scalar as written, without quotes), or a
// list or mapping, which fleet run never reads (a playbook's own variables).
struct AnsibleVar {
    std::string text;
    bool scalar = true;
};
using AnsibleVars = std::map<std::string, AnsibleVar>;

// An Ansible inventory as read, INI or YAML: hosts in the order first seen, their own
// variables, each group's variables, hosts and child groups.
struct AnsibleModel {
    std::vector<std::string> order;
    std::map<std::string, AnsibleVars> host_vars, group_vars;
    std::map<std::string, std::set<std::string>> group_hosts, group_children;
    std::set<std::string> groups;

    void add_host(const std::string& group, const std::string& host) {
        if (!host_vars.count(host))
            order.push_back(host);
        host_vars[host];
        group_hosts[group].insert(host);
        groups.insert(group);
    }
};

// Each host's variables merged as Ansible merges them: the groups the host is in (with every
// group above them), shallowest first (all, then its children, then theirs: a group's depth
// is one more than its deepest parent's), groups of one depth by name, then the host's own.
std::vector<AnsibleHost> merged_hosts(const AnsibleModel& m, const Reader& r) {
    std::map<std::string, std::set<std::string>> parents;
    for (const auto& [g, children] : m.group_children)
        for (const auto& c : children)
            parents[c].insert(g);
    std::set<std::string> all_groups = m.groups;
    for (const auto& [g, c] : m.group_children) {
        all_groups.insert(g);
        all_groups.insert(c.begin(), c.end());
    }
    for (const auto& [g, v] : m.group_vars)
        all_groups.insert(g);
    // Every group without a parent is a child of all.
    std::map<std::string, int> depth;
    std::function<int(const std::string&, int)> depth_of = [&](const std::string& g, int hops) {
        if (g == "all")
            return 0;
        if (hops > static_cast<int>(all_groups.size()) + 1)
            r.fail("group '" + g + "'", "its children lead back to it");
        if (auto it = depth.find(g); it != depth.end())
            return it->second;
        int d = 1;
        for (const auto& p : parents[g])
            d = std::max(d, depth_of(p, hops + 1) + 1);
        depth[g] = d;
        return d;
    };
    for (const auto& g : all_groups)
        depth_of(g, 0);
    // The groups a host is in, directly or through children.
    auto groups_of = [&](const std::string& h) {
        std::set<std::string> out = {"all"};
        std::vector<std::string> todo;
        for (const auto& [g, hosts] : m.group_hosts)
            if (hosts.count(h))
                todo.push_back(g);
        while (!todo.empty()) {
            const std::string g = todo.back();
            todo.pop_back();
            if (!out.insert(g).second && g != "all")
                continue;
            for (const auto& p : parents[g])
                todo.push_back(p);
        }
        return out;
    };
    std::vector<AnsibleHost> out;
    for (const auto& h : m.order) {
        std::vector<std::string> gs;
        for (const auto& g : groups_of(h))
            gs.push_back(g);
        std::stable_sort(gs.begin(), gs.end(), [&](const std::string& a, const std::string& b) {
            const int da = a == "all" ? 0 : depth[a], db = b == "all" ? 0 : depth[b];
            return da != db ? da < db : a < b;
        });
        AnsibleVars vars;
        for (const auto& g : gs)
            if (auto it = m.group_vars.find(g); it != m.group_vars.end())
                for (const auto& [k, v] : it->second)
                    vars[k] = v;
        for (const auto& [k, v] : m.host_vars.at(h))
            vars[k] = v;
        AnsibleHost host{h, {}, {}};
        for (const auto& [k, v] : vars) {
            if (v.scalar)
                host.vars[k] = v.text;
            else
                host.structured.insert(k);
        }
        out.push_back(std::move(host));
    }
    return out;
}

AnsibleModel read_ini(const std::string& text, const Reader& r) {
    AnsibleModel m;
    std::string group = "ungrouped", section = "hosts";
    int line_no = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#' || line[first] == ';')
            continue;
        const std::string where = fmt::format("line {}", line_no);
        if (line[first] == '[') {
            const auto close = line.find(']', first);
            if (close == std::string::npos)
                r.fail(where, "a group header without its ']'");
            const std::string head = line.substr(first + 1, close - first - 1);
            const auto colon = head.find(':');
            group = head.substr(0, colon);
            section = colon == std::string::npos ? "hosts" : head.substr(colon + 1);
            if (section != "hosts" && section != "vars" && section != "children")
                r.fail(where, "[" + head + "]: expected [group], [group:vars] or [group:children]");
            m.groups.insert(group);
            continue;
        }
        const auto words = ini_words(line.substr(first));
        if (section == "children") {
            m.group_children[group].insert(words.at(0));
            continue;
        }
        if (section == "vars") {
            const auto eq = line.find('=');
            if (eq == std::string::npos)
                r.fail(where, "expected key=value in [" + group + ":vars]");
            auto trim = [](std::string t) {
                t.erase(0, t.find_first_not_of(" \t"));
                t.erase(t.find_last_not_of(" \t") + 1);
                if (t.size() >= 2 && (t[0] == '\'' || t[0] == '"') && t.back() == t[0])
                    t = t.substr(1, t.size() - 2);
                return t;
            };
            m.group_vars[group][trim(line.substr(first, eq - first))] = {trim(line.substr(eq + 1)),
                                                                         true};
            continue;
        }
        const std::string& host = words.at(0);
        if (host.find_first_of("[]:") != std::string::npos)
            r.fail(where, "'" + host +
                              "': host ranges and ports in the name are not read "
                              "(use ansible_host and ansible_port)");
        m.add_host(group, host);
        auto& vars = m.host_vars[host];
        for (std::size_t i = 1; i < words.size(); ++i) {
            const auto eq = words[i].find('=');
            if (eq == std::string::npos || eq == 0)
                r.fail(where, "'" + words[i] + "': expected key=value after the host");
            vars[words[i].substr(0, eq)] = {words[i].substr(eq + 1), true};
        }
    }
    return m;
}

// A YAML inventory (Ansible's yaml inventory plugin): a mapping of groups (usually all:), each
// a mapping of at most hosts: (host -> its variables or nothing), vars: and children: (group
// -> a group like this one, or nothing). Read with libyaml; anything else is refused with
// its line.
class YamlReader {
  public:
    YamlReader(const std::string& text, const Reader& r) : r_(r) {
        yaml_parser_initialize(&parser_);
        yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                     text.size());
        if (!yaml_parser_load(&parser_, &doc_)) {
            const std::string what = parser_.problem ? parser_.problem : "not YAML";
            const auto line = parser_.problem_mark.line + 1;
            yaml_parser_delete(&parser_);
            r_.fail(fmt::format("line {}", line), "not YAML: " + what);
        }
        loaded_ = true;
        // One document: a second is refused (Ansible reads one inventory per file).
        yaml_document_t next;
        if (yaml_parser_load(&parser_, &next)) {
            const bool more = yaml_document_get_root_node(&next) != nullptr;
            const auto line = next.start_mark.line + 1;
            yaml_document_delete(&next);
            if (more)
                fail_at(line, "a second YAML document: an inventory is one");
        } else {
            const auto line = parser_.problem_mark.line + 1;
            fail_at(line, std::string("not YAML: ") +
                              (parser_.problem ? parser_.problem : "a damaged document"));
        }
    }
    ~YamlReader() {
        if (loaded_)
            yaml_document_delete(&doc_);
        yaml_parser_delete(&parser_);
    }
    YamlReader(const YamlReader&) = delete;
    YamlReader& operator=(const YamlReader&) = delete;

    AnsibleModel read() {
        AnsibleModel m;
        yaml_node_t* root = yaml_document_get_root_node(&doc_);
        if (!root || is_null(root))
            return m;
        for (const auto& [key, value] : mapping(root, "the inventory (groups such as all:)"))
            group(m, key, value, 0);
        return m;
    }

  private:
    [[noreturn]] void fail_at(std::size_t line, const std::string& what) const {
        r_.fail(fmt::format("line {}", line), what);
    }
    [[noreturn]] void fail_at(yaml_node_t* n, const std::string& what) const {
        fail_at(n->start_mark.line + 1, what);
    }
    yaml_node_t* node(int id) { return yaml_document_get_node(&doc_, id); }
    static std::string scalar_text(yaml_node_t* n) {
        return std::string(reinterpret_cast<const char*>(n->data.scalar.value),
                           n->data.scalar.length);
    }
    // A plain (unquoted) null: nothing, ~, null.
    static bool is_null(yaml_node_t* n) {
        if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            return false;
        const std::string t = scalar_text(n);
        return t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL";
    }
    // A scalar with no tag of its own (a !vault value is not readable here).
    bool plain_scalar(yaml_node_t* n) const {
        if (n->type != YAML_SCALAR_NODE)
            return false;
        const std::string tag = n->tag ? reinterpret_cast<const char*>(n->tag) : "";
        return tag.empty() || tag.rfind("tag:yaml.org,2002:", 0) == 0;
    }
    std::string key_text(yaml_node_t* k, const std::string& what) {
        if (!plain_scalar(k) || is_null(k))
            fail_at(k, "expected a name as the key of " + what);
        const std::string t = scalar_text(k);
        if (t == "<<")
            fail_at(k, "merge keys (<<) are not read; write the keys out");
        return t;
    }
    // The pairs of a mapping in order; a key twice is refused.
    std::vector<std::pair<std::string, yaml_node_t*>> mapping(yaml_node_t* n,
                                                              const std::string& what) {
        if (n->type != YAML_MAPPING_NODE)
            fail_at(n, "expected a mapping for " + what);
        std::vector<std::pair<std::string, yaml_node_t*>> out;
        std::set<std::string> seen;
        for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p) {
            yaml_node_t* k = node(p->key);
            const std::string key = key_text(k, what);
            if (!seen.insert(key).second)
                fail_at(k, "'" + key + "' twice in " + what);
            out.emplace_back(key, node(p->value));
        }
        return out;
    }
    AnsibleVars vars(yaml_node_t* n, const std::string& what) {
        AnsibleVars out;
        if (is_null(n))
            return out;
        for (const auto& [k, v] : mapping(n, what)) {
            if (v->type != YAML_SCALAR_NODE)
                out[k] = {"", false};
            else if (!plain_scalar(v))
                out[k] = {"", false};  // a tagged value (!vault): not read, as a list is not
            else
                out[k] = {is_null(v) ? "" : scalar_text(v), true};
        }
        return out;
    }
    void group(AnsibleModel& m, const std::string& name, yaml_node_t* n, int level) {
        if (level > 64)
            fail_at(n, "groups nested deeper than 64");
        const std::string what = "group '" + name + "'";
        m.groups.insert(name);
        if (is_null(n))
            return;
        for (const auto& [key, value] : mapping(n, what)) {
            if (key == "hosts") {
                if (is_null(value))
                    continue;
                for (const auto& [host, hv] : mapping(value, what + "'s hosts")) {
                    if (host.find_first_of("[]") != std::string::npos ||
                        host.find(':') != std::string::npos)
                        fail_at(value, "'" + host +
                                           "': host ranges and ports in the name are not read "
                                           "(use ansible_host and ansible_port)");
                    m.add_host(name, host);
                    for (const auto& [k, v] : vars(hv, "host '" + host + "'"))
                        m.host_vars[host][k] = v;
                }
            } else if (key == "vars") {
                for (const auto& [k, v] : vars(value, what + "'s vars"))
                    m.group_vars[name][k] = v;
            } else if (key == "children") {
                if (is_null(value))
                    continue;
                for (const auto& [child, cv] : mapping(value, what + "'s children")) {
                    m.group_children[name].insert(child);
                    group(m, child, cv, level + 1);
                }
            } else {
                const std::string k = key;  // a structured binding is not captured
                yaml_node_t* at = value;
                fail_at(at, "'" + k + "' in " + what + ": expected hosts, vars or children");
            }
        }
    }

    const Reader& r_;
    yaml_parser_t parser_{};
    yaml_document_t doc_{};
    bool loaded_ = false;
};

bool yaml_name(const std::string& source) {
    const auto ext = std::filesystem::path(source).extension().string();
    return ext == ".yml" || ext == ".yaml";
}

}  // namespace

std::vector<AnsibleHost> ansible_inventory_hosts(const std::string& text,
                                                 const std::string& source) {
    Reader r{source};
    AnsibleModel m = yaml_name(source) ? YamlReader(text, r).read() : read_ini(text, r);
    if (m.order.empty())
        r.fail("", "no host in it");
    return merged_hosts(m, r);
}

Inventory parse_ansible_inventory(const std::string& text, const std::string& source) {
    Reader r{source};
    Inventory inv;
    inv.path = source;
    inv.name = std::filesystem::path(source).stem().string();
    for (const auto& host : ansible_inventory_hosts(text, source)) {
        const std::string& h = host.name;
        const std::string where = "host '" + h + "'";
        auto get = [&](const std::string& k) -> std::optional<std::string> {
            if (host.structured.count(k))
                r.fail(where, k + " is a list, a mapping or a tagged value: expected a scalar");
            auto it = host.vars.find(k);
            return it == host.vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
        DeviceSpec d;
        d.name = h;
        if (d.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_-.") != std::string::npos)
            r.fail(where, "use letters, digits, '_', '-' and '.' in a host's name");
        const std::string connection = get("ansible_connection").value_or("ssh");
        if (connection == "local") {
            d.transport = "local";
        } else if (connection == "ssh") {
            std::string user = get("ansible_user").value_or("");
            if (user.empty()) {
                const char* u = std::getenv("USER");
                user = u ? u : "";
            }
            if (user.empty())
                r.fail(where, "no ansible_user (and no USER to default to)");
            const std::string host_name = get("ansible_host").value_or(h);
            d.transport =
                "ssh://" + user + "@" +
                (host_name.find(':') != std::string::npos ? "[" + host_name + "]" : host_name) +
                ":" + get("ansible_port").value_or("22");
            if (auto k = get("ansible_ssh_private_key_file"))
                d.identity = expand_home(*k);
            if (auto a = get("ansible_ssh_common_args"))
                d.ssh_options = ini_words(*a);
        } else {
            r.fail(where, "ansible_connection '" + connection +
                              "': fleet run reaches ssh and "
                              "local hosts");
        }
        if (auto w = get("stagebench_workdir")) {
            d.workdir = expand_home(*w);
            if (d.workdir.empty() || d.workdir.find('\'') != std::string::npos)
                r.fail(where + ".stagebench_workdir", "expected a path without quotes");
        }
        parse_transport(r, where, d);
        inv.devices.push_back(std::move(d));
    }
    return inv;
}

Inventory load_inventory(const std::string& path) {
    // An Ansible inventory beside the TOML one: YAML (.yml, .yaml) or INI (any other name).
    if (std::filesystem::path(path).extension() != ".toml")
        return parse_ansible_inventory(read_input_file(path, "inventory"), path);
    return parse_inventory(read_input_file(path, "inventory"), path);
}

}  // namespace sb
