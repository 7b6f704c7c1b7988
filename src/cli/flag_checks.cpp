#include "cli/flag_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <thread>

#include "core/error.hpp"

namespace sb::cli {

namespace {

// As CLI11 converts integers (strtoll, base 0: 10, 0x10, 010), so the check and the value
// agree; nullopt when the text is not one whole integer or overflows.
std::optional<int64_t> parse_int(const std::string& s) {
    if (s.empty())
        return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno == ERANGE || end == s.c_str() || *end != '\0')
        return std::nullopt;
    return static_cast<int64_t>(v);
}

std::optional<double> parse_real(const std::string& s) {
    if (s.empty())
        return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0')
        return std::nullopt;
    return v;
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
