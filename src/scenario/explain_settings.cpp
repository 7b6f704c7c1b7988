#include "scenario/explain_settings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/json_util.hpp"
#include "core/parse.hpp"
#include "core/utf8.hpp"
#include "engine/backends.hpp"

namespace sb {

namespace {

std::string lower(std::string s) {
    for (auto& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::optional<int> to_int(const std::string& s) {
    int v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

// llama.cpp's spellings of flash attention (is_truthy / is_falsey / is_autoy).
std::string flash_attn_word(const std::string& v) {
    const std::string l = lower(v);
    if (l == "on" || l == "enabled" || l == "true" || l == "1")
        return "on";
    if (l == "off" || l == "disabled" || l == "false" || l == "0")
        return "off";
    if (l == "auto" || l == "-1")
        return "auto";
    return l;
}

// A device set as a sorted set of upper-case names ("BLAS+CPU"): order does not matter.
std::string device_key(const std::string& v) {
    std::set<std::string> names;
    for (const auto& n : split_device_set(v)) {
        std::string u;
        for (char c : n)
            u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        names.insert(u);
    }
    names.insert("CPU");  // the host CPU is always there
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : "+") + n;
    return out;
}

struct Found {
    std::optional<std::string> value;
    std::string source;
};

Found first_of(std::initializer_list<std::pair<std::optional<std::string>, const char*>> tries) {
    for (const auto& [v, source] : tries)
        if (v)
            return {v, source};
    return {};
}

std::optional<std::string> log_value(const std::map<std::string, std::string>& log,
                                     const char* key) {
    auto it = log.find(key);
    return it == log.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<std::string> props_int(const nlohmann::json& props, const char* a, const char* b) {
    const nlohmann::json& v = b ? json_field(json_field(props, a), b) : json_field(props, a);
    if (v.is_number_integer())
        return std::to_string(v.get<int64_t>());
    return std::nullopt;
}

}  // namespace

std::vector<std::string> redact_server_args(std::vector<std::string> args) {
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--api-key" && i + 1 < args.size())
            args[++i] = "***";
        else if (args[i].rfind("--api-key=", 0) == 0)
            args[i] = "--api-key=***";
    }
    return args;
}

std::string redact_api_keys(std::string text, const std::vector<std::string>& args) {
    std::vector<std::string> keys;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--api-key" && i + 1 < args.size())
            keys.push_back(args[i + 1]);
        else if (args[i].rfind("--api-key=", 0) == 0)
            keys.push_back(args[i].substr(10));
    }
    for (const auto& k : keys)
        for (size_t at; !k.empty() && (at = text.find(k)) != std::string::npos;)
            text.replace(at, k.size(), "***");
    return text;
}

std::vector<std::string> redact_command_line(std::vector<std::string> argv) {
    argv = redact_server_args(std::move(argv));
    static const std::string kFlag = "--api-key";
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    for (auto& a : argv) {
        for (size_t at = a.find(kFlag); at != std::string::npos; at = a.find(kFlag, at + 1)) {
            const size_t end = at + kFlag.size();
            // A flag of its own (not --api-key-file), at the start of a word.
            if (at > 0 && !blank(a[at - 1]) && a[at - 1] != '=' && a[at - 1] != '"' &&
                a[at - 1] != '\'')
                continue;
            if (end >= a.size() || (!blank(a[end]) && a[end] != '='))
                continue;
            size_t v = end;
            while (v < a.size() && (blank(a[v]) || (v == end && a[v] == '=')))
                ++v;
            if (v >= a.size())
                continue;
            size_t stop = v;
            if (a[v] == '"' || a[v] == '\'') {
                const size_t close = a.find(a[v], v + 1);
                stop = close == std::string::npos ? a.size() : close + 1;
            } else {
                while (stop < a.size() && !blank(a[stop]))
                    ++stop;
            }
            if (a.compare(v, stop - v, "***") != 0)
                a.replace(v, stop - v, "***");
        }
    }
    return argv;
}

void check_server_args(const std::vector<std::string>& args, int max_threads, int64_t max_tokens) {
    struct Bound {
        std::vector<std::string> names;
        int64_t lo, hi;
        std::string what;
        bool auto_minus_one = false;
    };
    const std::vector<Bound> bounds = {
        {{"-t", "--threads"}, 1, max_threads, "threads"},
        {{"-tb", "--threads-batch"}, 1, max_threads, "threads"},
        {{"-b", "--batch-size"}, 1, max_tokens, "tokens"},
        {{"-ub", "--ubatch-size"}, 1, max_tokens, "tokens"},
        {{"-c", "--ctx-size"}, 0, max_tokens, "tokens (0: the model's)"},
        {{"-np", "--parallel"}, 1, 256, "slots", true},
    };
    for (const auto& b : bounds) {
        const auto v = arg_value(args, b.names);
        if (!v)
            continue;
        const auto n = parse_decimal_int(*v);
        if (n && ((*n >= b.lo && *n <= b.hi) || (b.auto_minus_one && *n == -1)))
            continue;
        std::string flag = b.names.front();
        for (const auto& a : args)
            for (const auto& name : b.names)
                if (a == name || a.rfind(name + "=", 0) == 0)
                    flag = name;
        throw usage_error("--server-args: " + flag + " " + utf8_prefix(valid_utf8(*v), 40) +
                          ": expected " + std::to_string(b.lo) + ".." + std::to_string(b.hi) + " " +
                          b.what + (b.auto_minus_one ? " or -1 (auto)" : ""));
    }
}

std::vector<std::string> split_server_args(const std::string& text) {
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\'') {
            const auto end = text.find('\'', i + 1);
            if (end == std::string::npos)
                throw usage_error("--server-args '" + text + "': a ' quote is not closed");
            cur += text.substr(i + 1, end - i - 1);
            in_word = true;
            i = end;
        } else if (c == '"') {
            std::size_t j = i + 1;
            for (; j < text.size() && text[j] != '"'; ++j) {
                if (text[j] == '\\' && j + 1 < text.size() &&
                    (text[j + 1] == '"' || text[j + 1] == '\\' || text[j + 1] == '$'))
                    ++j;
                cur += text[j];
            }
            if (j >= text.size())
                throw usage_error("--server-args '" + text + "': a \" quote is not closed");
            in_word = true;
            i = j;
        } else if (c == '\\') {
            if (i + 1 >= text.size())
                throw usage_error("--server-args '" + text + "': it ends in a backslash");
            cur += text[++i];
            in_word = true;
        } else if (std::isspace(static_cast<unsigned char>(c))) {
            if (in_word)
                out.push_back(cur);
            cur.clear();
            in_word = false;
        } else {
            cur += c;
            in_word = true;
        }
    }
    if (in_word)
        out.push_back(cur);
    return out;
}

std::optional<std::string> arg_value(const std::vector<std::string>& args,
                                     const std::vector<std::string>& names) {
    std::optional<std::string> v;
    for (std::size_t i = 0; i < args.size(); ++i)
        for (const auto& n : names) {
            if (args[i] == n && i + 1 < args.size())
                v = args[i + 1];
            else if (args[i].rfind(n + "=", 0) == 0)
                v = args[i].substr(n.size() + 1);
        }
    return v;
}

bool has_flag(const std::vector<std::string>& args, const std::vector<std::string>& names) {
    for (const auto& a : args)
        for (const auto& n : names)
            if (a == n)
                return true;
    return false;
}

std::map<std::string, std::string> parse_startup_log(const std::string& log) {
    static const std::regex sys(
        R"(system_info: n_threads = (\d+)(?: \(n_threads_batch = (\d+)\))?)");
    static const std::regex pool(R"(llama threadpool init, n_threads = (\d+))");
    static const std::regex slots(R"(initializing, n_slots = (\d+), n_ctx_slot = (\d+))");
    static const std::regex ctx(R"(llama_context: (n_ctx|n_batch|n_ubatch|flash_attn)\s+= (\S+))");
    static const std::regex kv(
        R"(llama_kv_cache: size = .*K \(([a-z0-9_]+)\).*V \(([a-z0-9_]+)\))");
    static const std::regex mode(R"(\(load_mode = ([a-z_\-]+)\))");
    std::map<std::string, std::string> out;
    std::istringstream in(log);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, sys)) {
            out["threads"] = m[1];
            if (m[2].matched)
                out["threads_batch"] = m[2];
        } else if (std::regex_search(line, m, pool)) {
            if (!out.count("threads"))
                out["threads"] = m[1];
        } else if (std::regex_search(line, m, slots)) {
            out["slots"] = m[1];
            out["n_ctx_slot"] = m[2];
        } else if (std::regex_search(line, m, ctx)) {
            out[m[1]] = m[2];
        } else if (std::regex_search(line, m, kv)) {
            out["type_k"] = m[1];
            out["type_v"] = m[2];
        } else if (std::regex_search(line, m, mode)) {
            out["mmap"] = m[1] == "mmap" ? "on" : "off";
        } else if (line.find("warming up the model") != std::string::npos) {
            out["warmup"] = "on";
        } else if (line.find("prompt cache is enabled") != std::string::npos) {
            out["prompt_cache"] = "on";
        }
    }
    return out;
}

std::vector<ExplainSetting> compare_settings(const BenchSettings& b, const ServerFacts& f,
                                             const SamplerSettings& sampler) {
    const auto log = parse_startup_log(f.log);
    const auto& a = f.args;
    auto arg = [&](std::vector<std::string> names) { return arg_value(a, names); };
    const char* kLog = "startup log";
    const char* kProps = "/props";
    const char* kArgs = "--server-args";
    const char* kDefault = "llama-server's default";
    const std::optional<std::string> none;

    std::vector<ExplainSetting> out;
    auto add = [&](const char* name, const char* label, std::string bench, Found server,
                   bool measurable, std::string note) {
        ExplainSetting s;
        s.name = name;
        s.label = label;
        s.bench = std::move(bench);
        if (f.settings_readable) {
            s.server = server.value;
            s.source = server.value ? server.source : "";
        }
        s.note = std::move(note);
        if (!f.settings_readable) {
            s.note = "could not be read: the server is not llama-server";
        } else if (!s.server) {
            s.note = "the server does not say; not compared";
        } else {
            std::string x = s.bench, y = *s.server;
            if (s.name == "flash_attn") {
                x = flash_attn_word(x);
                y = flash_attn_word(y);
            } else if (s.name == "devices") {
                x = device_key(x);
                y = device_key(y);
            } else {
                x = lower(x);
                y = lower(y);
            }
            s.differs = x != y;
            if (s.differs && measurable)
                s.measure = "graph+" + s.name;
        }
        out.push_back(std::move(s));
    };

    // Devices: -dev names the devices that get layers ("none": none); the accelerators
    // (BLAS) run ops in every context whatever it says, and the CPU is always there.
    std::optional<std::string> dev = arg({"-dev", "--device"});
    if (dev) {
        std::string d = *dev;
        std::replace(d.begin(), d.end(), ',', '+');
        std::string set = "CPU";
        if (lower(d) != "none")
            set += "+" + d;
        if (!f.accel_devices.empty())
            set += "+" + f.accel_devices;
        dev = set;
    }
    add("devices", "devices (-dev)", b.devices,
        first_of({{dev, kArgs},
                  {f.default_devices.empty() ? none : std::optional(f.default_devices),
                   "llama-server's default (every device llama.cpp finds)"}}),
        true, "");
    const Found threads =
        first_of({{log_value(log, "threads"), kLog}, {arg({"-t", "--threads"}), kArgs}});
    add("threads", "threads (-t)", std::to_string(b.n_threads), threads, true, "");
    const Found tb = first_of({{log_value(log, "threads_batch"), kLog},
                               {arg({"-tb", "--threads-batch"}), kArgs},
                               {threads.value, "-tb defaults to -t"}});
    add("threads_batch", "prompt threads (-tb)", std::to_string(b.n_threads), tb, false,
        "the in-process engine runs one thread count for prompt and generation: not measured "
        "alone (threads, when it differs, is measured with -t's count)");
    add("n_batch", "batch (-b)", std::to_string(b.n_batch),
        first_of({{log_value(log, "n_batch"), kLog},
                  {arg({"-b", "--batch-size"}), kArgs},
                  {std::string("2048"), kDefault}}),
        true, "");
    add("n_ubatch", "micro-batch (-ub)", std::to_string(b.n_ubatch),
        first_of({{log_value(log, "n_ubatch"), kLog},
                  {arg({"-ub", "--ubatch-size"}), kArgs},
                  {std::string("512"), kDefault}}),
        true, "");
    add("n_ctx", "context per slot, KV cells (-c / -np)", std::to_string(b.n_ctx),
        first_of({{props_int(f.props, "default_generation_settings", "n_ctx"), kProps},
                  {log_value(log, "n_ctx_slot"), kLog}}),
        true, "");
    add("slots", "slots (-np)", "1",
        first_of({{props_int(f.props, "total_slots", nullptr), kProps},
                  {log_value(log, "slots"), kLog},
                  {arg({"-np", "--parallel"}), kArgs}}),
        false,
        "one client uses one slot; the others hold no work (their KV cells are the context "
        "setting's)");
    add("flash_attn", "flash attention (-fa)", b.flash_attn,
        first_of({{log_value(log, "flash_attn"), kLog},
                  {arg({"-fa", "--flash-attn"}), kArgs},
                  {std::string("auto"), kDefault}}),
        true, "");
    add("type_k", "K cache type (-ctk)", b.type_k,
        first_of({{log_value(log, "type_k"), kLog},
                  {arg({"-ctk", "--cache-type-k"}), kArgs},
                  {std::string("f16"), kDefault}}),
        true, "");
    add("type_v", "V cache type (-ctv)", b.type_v,
        first_of({{log_value(log, "type_v"), kLog},
                  {arg({"-ctv", "--cache-type-v"}), kArgs},
                  {std::string("f16"), kDefault}}),
        true, "");
    std::optional<std::string> mmap_arg;
    if (has_flag(a, {"--no-mmap"}))
        mmap_arg = "off";
    else if (has_flag(a, {"--mmap"}))
        mmap_arg = "on";
    add("mmap", "memory-mapped weights (--mmap)", "on",
        first_of(
            {{log_value(log, "mmap"), kLog}, {mmap_arg, kArgs}, {std::string("on"), kDefault}}),
        false,
        "how the weights are loaded: once loaded, the stages read the same bytes; not measured");
    add("warmup", "warm-up run (--warmup)", "on",
        first_of({{log_value(log, "warmup"), kLog},
                  {has_flag(a, {"--no-warmup"}) ? std::optional<std::string>("off") : none, kArgs},
                  {std::string("on"), kDefault}}),
        false, "explain warms every level up before timing it; not a steady-state cost");
    add("prompt_cache", "prompt cache (--cache-prompt)", "off",
        first_of(
            {{has_flag(a, {"--no-cache-prompt"}) ? std::optional<std::string>("off") : none, kArgs},
             {log_value(log, "prompt_cache"), kLog},
             {std::string("on"), kDefault}}),
        false,
        "every request's prompt is new text; what the server reused anyway is in its timings "
        "(cache_n), inside the remainder");
    std::optional<std::string> chain;
    if (json_field(json_field(f.props, "default_generation_settings"), "params").is_object())
        chain = fmt::format("top_k {}, top_p {:g}, min_p {:g}, temperature {:g}", sampler.top_k,
                            sampler.top_p, sampler.min_p, sampler.temperature);
    add("sampling", "sampling", "none (the bench samples nothing)",
        first_of({{chain, kProps},
                  {std::string("llama.cpp's defaults (top_k 40, top_p 0.95, min_p 0.05, "
                               "temperature 0.8)"),
                   kDefault}}),
        false, "in the generation level, which samples with the server's chain");
    return out;
}

// A server's word for a setting as the engine's type; a word the engine has no value for is
// the server's claim we cannot apply: bad input, named.
template <typename E>
E server_word(const std::string& word, const std::string& label) {
    if (const auto e = parse_enum<E>(word))
        return *e;
    throw input_error("the server's " + label + " '" + word + "' is not one of " +
                      enum_spellings<E>());
}

void apply_setting(LoadSpec& spec, const ExplainSetting& s) {
    if (!s.server)
        throw input_error("the server's " + s.label + " is unknown");
    const std::string& v = *s.server;
    auto number = [&]() {
        const auto n = to_int(v);
        if (!n || *n < 0)
            throw input_error("the server's " + s.label + " '" + v + "' is not a count");
        return *n;
    };
    if (s.name == "devices")
        spec.devices = DeviceSet(v);
    else if (s.name == "threads")
        spec.n_threads = number();
    else if (s.name == "n_batch")
        spec.n_batch = number();
    else if (s.name == "n_ubatch")
        spec.n_ubatch = number();
    else if (s.name == "n_ctx")
        spec.n_ctx = number();
    else if (s.name == "flash_attn")
        spec.flash_attn = server_word<FlashAttn>(flash_attn_word(v), s.label);
    else if (s.name == "type_k")
        spec.type_k = server_word<KvType>(lower(v), s.label);
    else if (s.name == "type_v")
        spec.type_v = server_word<KvType>(lower(v), s.label);
    else
        throw input_error("the setting " + s.name + " cannot be set on the in-process engine");
}

SamplerSettings sampler_from_props(const nlohmann::json& props, std::vector<std::string>& notes) {
    SamplerSettings s;
    const nlohmann::json& p =
        json_field(json_field(props, "default_generation_settings"), "params");
    if (!p.is_object())
        return s;
    auto num = [&](const char* k) -> std::optional<double> {
        const nlohmann::json& v = json_field(p, k);
        return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
    };
    if (auto v = num("top_k"))
        s.top_k = static_cast<int>(*v);
    if (auto v = num("top_p"))
        s.top_p = *v;
    if (auto v = num("min_p"))
        s.min_p = *v;
    if (auto v = num("temperature"))
        s.temperature = *v;
    // Samplers level 3 does not run: noted when the server's are not neutral.
    const std::pair<const char*, double> neutral[] = {
        {"repeat_penalty", 1.0}, {"presence_penalty", 0.0}, {"frequency_penalty", 0.0},
        {"dry_multiplier", 0.0}, {"typical_p", 1.0},        {"xtc_probability", 0.0},
        {"top_n_sigma", -1.0},   {"mirostat", 0.0},         {"dynatemp_range", 0.0}};
    for (const auto& [k, n] : neutral)
        if (auto v = num(k); v && *v != n)
            notes.push_back(fmt::format(
                "the server samples with {} = {:g}, which the generation level does not run", k,
                *v));
    return s;
}

}  // namespace sb
