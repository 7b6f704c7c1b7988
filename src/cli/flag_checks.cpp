#include "cli/flag_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace sb::cli {

namespace {

// Decimal only (core/parse.hpp). CLI11 itself converts with strtoll(base 0) and strtold,
// which read 0x10 as 16, 010 as 8 and "nan" as a number: the checks below refuse those, and
// check_numbers_strictly() writes every integer back in plain decimal for CLI11 to convert.
std::optional<int64_t> parse_int(const std::string& s) {
    return parse_decimal_int(s);
}

std::optional<double> parse_real(const std::string& s) {
    return parse_decimal(s);
}

// Quoted for the message, shortened and with control characters shown as '?'.
std::string shown(const std::string& s) {
    std::string o = s.size() > 40 ? s.substr(0, 40) + "..." : s;
    for (char& c : o)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    return "'" + o + "'";
}

}  // namespace

int max_threads() {
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<int>(std::min<unsigned>(512, 4 * cpus));
}

CLI::Validator int_range(int64_t lo, int64_t hi, std::string range) {
    return CLI::Validator(
        [lo, hi, range](std::string& s) -> std::string {
            const auto v = parse_int(s);
            if (!v)
                return shown(s) + " is not an integer (allowed: " + range + ")";
            if (*v < lo || *v > hi)
                return std::to_string(*v) + " is out of range (allowed: " + range + ")";
            return "";
        },
        range);
}

CLI::Validator real_range(double lo, double hi, bool lo_open, bool hi_open, std::string range) {
    return CLI::Validator(
        [=](std::string& s) -> std::string {
            const auto v = parse_real(s);
            if (!v)
                return shown(s) + " is not a number (allowed: " + range + ")";
            const bool below = lo_open ? !(*v > lo) : !(*v >= lo);
            const bool above = hi_open ? !(*v < hi) : !(*v <= hi);
            if (!std::isfinite(*v) || below || above)
                return shown(s) + " is out of range (allowed: " + range + ")";
            return "";
        },
        range);
}

CLI::Validator threads_check() {
    const int hi = max_threads();
    return int_range(0, hi,
                     "0 for the default, or 1.." + std::to_string(hi) + ": 4 x the " +
                         std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                         " logical CPUs, at most 512");
}

CLI::Validator tokens_check(int64_t min) {
    return int_range(min, kMaxTokens, std::to_string(min) + ".." + std::to_string(kMaxTokens));
}

CLI::Validator batch_check() {
    return int_range(1, kMaxTokens, "1.." + std::to_string(kMaxTokens));
}

CLI::Validator gpu_layers_check() {
    return int_range(-1, INT32_MAX, "-1 (all) or 0.." + std::to_string(INT32_MAX));
}

CLI::Validator reps_check(int64_t min) {
    return int_range(min, kMaxReps, std::to_string(min) + ".." + std::to_string(kMaxReps));
}

CLI::Validator layers_check() {
    return int_range(1, kMaxLayers, "1.." + std::to_string(kMaxLayers) + " (llama.cpp's limit)");
}

CLI::Validator seconds_check(bool zero_ok) {
    return real_range(0, kMaxSeconds, !zero_ok, false,
                      std::string(zero_ok ? "0" : "more than 0") + " to 86400 seconds");
}

CLI::Validator hz_check() {
    return real_range(0, 1000, true, false, "more than 0 to 1000 Hz");
}

CLI::Validator device_set_check() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            const std::string expect =
                " (expected device names joined with +, e.g. CPU or BLAS+RPC0)";
            if (s.empty())
                return "an empty device set" + expect;
            size_t start = 0;
            while (true) {
                const size_t plus = s.find('+', start);
                const std::string part =
                    s.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
                if (part.empty())
                    return shown(s) + " has an empty device name" + expect;
                for (char c : part)
                    if (static_cast<unsigned char>(c) <= 0x20 ||
                        static_cast<unsigned char>(c) >= 0x7f)
                        return shown(s) + " is not a device name" + expect;
                if (plus == std::string::npos)
                    break;
                start = plus + 1;
            }
            return "";
        },
        "DEVICE[+DEVICE]");
}

CLI::Option* add_format_option(CLI::App* cmd, OutputFormat& target,
                               const std::vector<OutputFormat>& allowed) {
    std::vector<std::string> spellings;
    std::string listed;
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        spellings.push_back(to_string(allowed[i]));
        listed += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + spellings.back();
    }
    return cmd
        ->add_option_function<std::string>(
            "-o,--output",
            [&target](const std::string& s) { target = *parse_enum<OutputFormat>(s); },
            "stdout format: " + listed)
        ->check(CLI::IsMember(spellings))
        ->default_str(to_string(target));
}

CLI::Validator flash_attn_check() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            for (const char* v : {"auto", "on", "off", "1", "0"})
                if (s == v)
                    return "";
            return shown(s) + " is not a flash attention mode (allowed: auto, on, off)";
        },
        "auto|on|off");
}

const std::vector<std::string>& kv_cache_types() {
    // The KV cache types llama.cpp's own tools accept (common/arg.cpp, kv_cache_types).
    static const std::vector<std::string> types = {"f32",  "f16",    "bf16", "q8_0", "q4_0",
                                                   "q4_1", "iq4_nl", "q5_0", "q5_1"};
    return types;
}

CLI::Validator cache_type_check() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            const auto& types = kv_cache_types();
            if (std::find(types.begin(), types.end(), s) != types.end())
                return "";
            std::string all;
            for (const auto& t : types)
                all += (all.empty() ? "" : ", ") + t;
            return shown(s) + " is not a KV cache type (allowed: " + all + ")";
        },
        "TYPE");
}

CLI::Validator target_ci_check() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            try {
                parse_target_ci(s);
                return "";
            } catch (const Error& e) {
                return e.what();
            }
        },
        "PERCENT");
}

namespace {

enum class NumberKind { integer, unsigned_integer, real };

// The strict form of a number option's value (see check_numbers_strictly).
CLI::Validator decimal_check(NumberKind kind) {
    return CLI::Validator(
        [kind](std::string& s) -> std::string {
            switch (kind) {
                case NumberKind::integer:
                    if (const auto v = parse_decimal_int(s)) {
                        s = std::to_string(*v);
                        return "";
                    }
                    return shown(s) + " is not a decimal integer";
                case NumberKind::unsigned_integer:
                    if (const auto v = parse_decimal_uint(s)) {
                        s = std::to_string(*v);
                        return "";
                    }
                    return shown(s) + " is not a decimal integer from 0 to 18446744073709551615";
                case NumberKind::real:
                    if (parse_decimal(s))
                        return "";
                    return shown(s) + " is not a finite decimal number";
            }
            return "";
        },
        "", "decimal");
}

}  // namespace

void check_numbers_strictly(CLI::App& app) {
    for (CLI::Option* opt : app.get_options()) {
        if (opt->get_type_size() == 0)
            continue;  // a flag
        // CLI11 names the value's type first ("INT", "UINT", "FLOAT"), then its checks.
        const std::string type = opt->get_type_name();
        const auto is = [&type](const char* t) {
            const std::size_t n = std::strlen(t);
            return type.compare(0, n, t) == 0 &&
                   (type.size() == n || type[n] == ':' || type[n] == ' ');
        };
        // A transform: it runs before the option's own checks and may rewrite the value.
        if (is("INT"))
            opt->transform(decimal_check(NumberKind::integer));
        else if (is("UINT"))
            opt->transform(decimal_check(NumberKind::unsigned_integer));
        else if (is("FLOAT"))
            opt->transform(decimal_check(NumberKind::real));
    }
    for (CLI::App* sub : app.get_subcommands({}))
        check_numbers_strictly(*sub);
}

void check_list_items(CLI::App& app, const std::vector<std::string>& args) {
    CLI::App* at = &app;
    // The option named by an argument ("--device", "-p", "--device=CPU", "-p16"), searched in
    // the subcommand reached so far and the ones above it; its value, when attached.
    auto find = [&at](const std::string& arg, std::optional<std::string>& attached) {
        attached.reset();
        std::string name = arg;
        if (arg.rfind("--", 0) == 0) {
            if (const auto eq = arg.find('='); eq != std::string::npos) {
                name = arg.substr(0, eq);
                attached = arg.substr(eq + 1);
            }
        } else if (arg.size() > 2) {
            name = arg.substr(0, 2);
            attached = arg.substr(2);
        }
        for (CLI::App* a = at; a; a = a->get_parent())
            for (const CLI::Option* o : a->get_options())
                if (o->check_name(name))
                    return o;
        return static_cast<const CLI::Option*>(nullptr);
    };
    auto refuse_empty_items = [](const CLI::Option* o, const std::string& value) {
        const std::vector<std::string> items = split_list(value, o->get_delimiter());
        if (items.size() > 1 && std::find(items.begin(), items.end(), "") != items.end())
            throw usage_error(o->get_name() + " " + shown(value) +
                              " has an empty item (a comma list takes no empty items)");
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--")
            return;  // the rest is another command's (fleet run -- run ...)
        if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1]))) {
            const auto subs =
                at->get_subcommands([&arg](CLI::App* s) { return s->check_name(arg); });
            if (!subs.empty())
                at = subs.front();
            continue;
        }
        std::optional<std::string> attached;
        const CLI::Option* o = find(arg, attached);
        if (!o || o->get_delimiter() == '\0')
            continue;
        if (attached) {
            refuse_empty_items(o, *attached);
            continue;
        }
        // The values that follow, up to the next option.
        for (std::size_t j = i + 1; j < args.size(); ++j) {
            const std::string& v = args[j];
            if (v.size() > 1 && v[0] == '-' && !std::isdigit(static_cast<unsigned char>(v[1])))
                break;
            refuse_empty_items(o, v);
        }
    }
}

double parse_target_ci(const std::string& text) {
    std::string s = text;
    const bool percent = !s.empty() && s.back() == '%';
    if (percent)
        s.pop_back();
    const auto v = parse_real(s);
    const double f = v ? (percent ? *v / 100.0 : *v) : NAN;
    if (!std::isfinite(f) || !(f > 0) || !(f < 1))
        throw usage_error("--target-ci " + shown(text) +
                          ": expected a percentage strictly between 0% and 100%, like 2% or 0.02");
    return f;
}

void check_context(int64_t n_prompt, int64_t n_depth, int64_t n_gen) {
    const int64_t ctx = n_prompt + n_depth + n_gen + 8;
    if (ctx > kMaxTokens)
        throw usage_error("-p " + std::to_string(n_prompt) + " + -d " + std::to_string(n_depth) +
                          " + -n " + std::to_string(n_gen) + " needs a context of " +
                          std::to_string(ctx) + " tokens, more than " + std::to_string(kMaxTokens) +
                          " (the largest context stagebench runs)");
}

void throw_empty_list(const char* flag) {
    throw usage_error(std::string(flag) + " has no value (an empty comma list)");
}

}  // namespace sb::cli
