// The flag ranges of flag_checks.hpp, and a seeded, time-bounded fuzz of command lines: every
// generated value of every numeric or enumerated flag of the measuring commands goes through
// the whole CLI (run_cli, in process) with a model that does not exist, so that a value the
// checks accept reaches the model and fails there. Every outcome must be exit 2 with one
// "stagebench: error:" line: naming the flag when the value is outside the range this test
// states independently, naming the model when it is inside. Never another exception, never a
// crash, never a measurement.
#include "cli/flag_checks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "cli/commands.hpp"
#include "cli/run_cli_test_util.hpp"
#include "core/error.hpp"
#include "fuzz_seed.hpp"

namespace sb::cli {
namespace {

Outcome run_flags(const std::vector<std::string>& args) {
    return run_captured(args);
}

std::string validate(const CLI::Validator& v, std::string s) {
    return v(s);
}

TEST(FlagChecks, Threads) {
    const auto v = threads_check();
    EXPECT_EQ(validate(v, "0"), "");
    EXPECT_EQ(validate(v, "1"), "");
    EXPECT_EQ(validate(v, std::to_string(max_threads())), "");
    EXPECT_NE(validate(v, std::to_string(max_threads() + 1)), "");
    EXPECT_NE(validate(v, "100000"), "");
    EXPECT_NE(validate(v, "-1"), "");
    EXPECT_NE(validate(v, "two"), "");
    EXPECT_LE(max_threads(), 512);
    EXPECT_GE(max_threads(), 4);
}

TEST(FlagChecks, OutputFormatIsParsedOnceIntoTheEnum) {
    auto parse = [](std::vector<std::string> args) {
        CLI::App app;
        OutputFormat f = OutputFormat::md;
        add_format_option(&app, f, {OutputFormat::md, OutputFormat::csv, OutputFormat::json});
        std::reverse(args.begin(), args.end());
        app.parse(args);
        return f;
    };
    EXPECT_EQ(parse({}), OutputFormat::md);
    EXPECT_EQ(parse({"-o", "csv"}), OutputFormat::csv);
    EXPECT_EQ(parse({"--output", "json"}), OutputFormat::json);
    EXPECT_THROW(parse({"-o", "jsonl"}), CLI::ValidationError);  // not offered here
    EXPECT_THROW(parse({"-o", "JSON"}), CLI::ValidationError);
    // Through a command: one usage line naming the flag, nothing run.
    const Outcome o = run_flags({"compare", "a.json", "b.json", "-o", "xml"});
    EXPECT_EQ(o.code, 2);
    EXPECT_NE(o.err.find("--output"), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

TEST(FlagChecks, TokensAndContext) {
    EXPECT_NE(validate(tokens_check(1), "0"), "");
    EXPECT_EQ(validate(tokens_check(0), "0"), "");
    EXPECT_EQ(validate(tokens_check(1), std::to_string(kMaxTokens)), "");
    EXPECT_NE(validate(tokens_check(1), std::to_string(kMaxTokens + 1)), "");
    EXPECT_NE(validate(tokens_check(1), "2147483648"), "");
    EXPECT_NE(validate(tokens_check(1), "99999999999999999999"), "");
    EXPECT_NO_THROW(check_context(512, 0, 128));
    EXPECT_THROW(check_context(kMaxTokens / 2, kMaxTokens / 2, 1), Error);
    EXPECT_THROW(check_context(kMaxTokens, kMaxTokens, kMaxTokens), Error);
}

TEST(FlagChecks, EnumeratedValues) {
    for (const char* ok : {"auto", "on", "off", "1", "0"})
        EXPECT_EQ(validate(flash_attn_check(), ok), "") << ok;
    for (const char* bad : {"maybe", "", "ON", "2"})
        EXPECT_NE(validate(flash_attn_check(), bad), "") << bad;
    for (const auto& t : kv_cache_types())
        EXPECT_EQ(validate(cache_type_check(), t), "") << t;
    for (const char* bad : {"q99", "", "F16", "q4_K", "i32"})
        EXPECT_NE(validate(cache_type_check(), bad), "") << bad;
    for (const char* ok : {"CPU", "BLAS+RPC0", "RPC0[127.0.0.1:50052]"})
        EXPECT_EQ(validate(device_set_check(), ok), "") << ok;
    for (const char* bad : {"", "+", "CPU+", "+CPU", "CPU++BLAS", "C PU", "CPU\n"})
        EXPECT_NE(validate(device_set_check(), bad), "") << bad;
}

TEST(FlagChecks, TargetCi) {
    EXPECT_DOUBLE_EQ(parse_target_ci("2%"), 0.02);
    EXPECT_DOUBLE_EQ(parse_target_ci("0.02"), 0.02);
    for (const char* bad : {"nan%", "nan", "inf", "-inf%", "0", "0%", "100%", "1", "-2%", "%", "",
                            "2%%", "1e999%", "abc"})
        EXPECT_THROW(parse_target_ci(bad), Error) << bad;
}

TEST(FlagChecks, RealRanges) {
    const auto hz = hz_check();
    EXPECT_EQ(validate(hz, "10"), "");
    for (const char* bad : {"0", "-1", "nan", "inf", "1001", "1e999", ""})
        EXPECT_NE(validate(hz, bad), "") << bad;
    const auto idle = seconds_check(true);
    EXPECT_EQ(validate(idle, "0"), "");
    for (const char* bad : {"-1", "nan", "inf", "86401"})
        EXPECT_NE(validate(idle, bad), "") << bad;
    EXPECT_NE(validate(seconds_check(false), "0"), "");
}

// ---- the fuzz --------------------------------------------------------------------------------

// What a flag accepts, stated here independently of flag_checks.cpp.
struct FlagSpec {
    std::string flag;  // as typed
    std::string name;  // as named in CLI11's message (the long name)
    std::function<bool(const std::string&)> valid;
    bool list = false;                 // a comma list: every element must be valid
    std::vector<std::string> words{};  // enumerated values to draw from, if any
};

// Decimal only: an optional sign, then digits (no hex, no octal, no space around).
std::optional<long long> as_int(const std::string& s) {
    const std::size_t digits = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (s.size() == digits || s.find_first_not_of("0123456789", digits) != std::string::npos)
        return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || end == s.c_str() || *end != '\0')
        return std::nullopt;
    return v;
}

std::function<bool(const std::string&)> int_in(long long lo, long long hi) {
    return [lo, hi](const std::string& s) {
        const auto v = as_int(s);
        return v && *v >= lo && *v <= hi;
    };
}

std::function<bool(const std::string&)> one_of(std::vector<std::string> words) {
    return [words](const std::string& s) {
        return std::find(words.begin(), words.end(), s) != words.end();
    };
}

struct CommandSpec {
    std::vector<std::string> base;  // fails on its model (or dir) once the flags pass
    std::string fails_on;           // text of that failure
    std::vector<FlagSpec> flags;
};

std::vector<CommandSpec> commands() {
    const long long T = kMaxTokens;
    const long long threads = max_threads();
    const std::vector<std::string> fa{"auto", "on", "off", "1", "0"};
    const auto& kv = kv_cache_types();
    const std::string model = "/nonexistent/stagebench-fuzz.gguf";
    std::vector<CommandSpec> c;
    // run: defaults -p 512 -n 128 -d 0 -r 5; a test's context is p + d + n + 8.
    c.push_back({{"run", "-m", model, "--membw", "off", "--idle", "0", "-q"},
                 model,
                 {{"-p", "--n-prompt", int_in(1, T - 128 - 8), true},
                  {"-n", "--n-gen", int_in(0, T - 512 - 8), true},
                  {"-d", "--n-depth", int_in(0, T - 640 - 8), true},
                  {"-t", "--threads", int_in(0, threads), true},
                  {"-b", "--batch-size", int_in(1, T), true},
                  {"-ub", "--ubatch-size", int_in(1, T), true},
                  {"-ngl", "--n-gpu-layers", int_in(-1, INT32_MAX), true},
                  {"-r", "--repetitions", int_in(1, 100000)},
                  {"--max-reps", "--max-reps", int_in(5, 100000)},
                  {"-fa", "--flash-attn", one_of(fa), true, fa},
                  {"-ctk", "--cache-type-k", one_of(kv), true, kv},
                  {"-ctv", "--cache-type-v", one_of(kv), true, kv}}});
    c.push_back({{"ops", "-m", model, "-q"},
                 model,
                 {{"-p", "--n-prompt", int_in(1, T - 8 - 1)},
                  {"-d", "--n-depth", int_in(0, T - 512 - 8 - 1)},
                  {"-t", "--threads", int_in(0, threads)},
                  {"-ub", "--ubatch-size", int_in(1, T)},
                  {"--reps", "--reps", int_in(1, 100000)},
                  {"--replay", "--replay", int_in(0, 1000)},
                  {"--huge-pages", "--huge-pages", one_of({"on", "off"}), false, {"on", "off"}},
                  {"-fa", "--flash-attn", one_of(fa), false, fa},
                  {"-ctv", "--cache-type-v", one_of(kv), false, kv}}});
    c.push_back(
        {{"hybrid", "-m", model, "--decode-device", "CPU", "--prefill-device", "BLAS", "-q"},
         model,
         {{"-p", "--n-prompt", int_in(1, T - 128 - 8), true},
          {"-n", "--n-gen", int_in(1, T - 512 - 8), true},
          {"-r", "--repetitions", int_in(1, 100000)},
          {"-t", "--threads", int_in(0, threads)},
          {"-b", "--batch-size", int_in(1, T)}}});
    c.push_back({{"sustained", "-m", model, "-q", "--idle", "0"},
                 model,
                 {{"--rounds", "--rounds", int_in(1, 100000)},
                  {"--prompt-tokens", "--prompt-tokens", int_in(1, T - 128 - 8)},
                  {"--max-tokens", "--max-tokens", int_in(1, T - 512 - 8)},
                  {"--chunk", "--chunk", int_in(1, T)},
                  {"-t", "--threads", int_in(0, threads)}}});
    c.push_back(
        {{"synth", "--preset", "tiny", "-o", "/nonexistent/dir/x.gguf"},
         "/nonexistent/dir",
         {{"--layers", "--layers", int_in(1, 512)}, {"-t", "--threads", int_in(0, threads)}}});
    c.push_back({{"demo", "--dir", "/dev/null/stagebench-fuzz", "-q"},
                 "/dev/null/stagebench-fuzz",
                 {{"--layers", "--layers", int_in(1, 512)},
                  {"-r", "--repetitions", int_in(1, 100000)},
                  {"-t", "--threads", int_in(0, threads)}}});
    return c;
}

// One value for a flag: near its bounds, huge, negative, not a number, badly formed.
std::string draw_value(std::mt19937_64& rng, const FlagSpec& f) {
    static const std::vector<std::string> specials = {"0",
                                                      "1",
                                                      "-1",
                                                      "2",
                                                      "-0",
                                                      "+3",
                                                      "2147483647",
                                                      "2147483648",
                                                      "-2147483648",
                                                      "4294967296",
                                                      "99999999999999999999",
                                                      "1e3",
                                                      "1.5",
                                                      "0x10",
                                                      "010",
                                                      "",
                                                      " ",
                                                      "abc",
                                                      "nan",
                                                      "inf",
                                                      "-inf",
                                                      "1e999",
                                                      "5 ",
                                                      "\t7",
                                                      "16777216",
                                                      "16777217",
                                                      "100000",
                                                      "20000",
                                                      "513",
                                                      "512",
                                                      "9223372036854775807",
                                                      "-9223372036854775808",
                                                      "\xc3\xa9",
                                                      "1\n2",
                                                      "--",
                                                      "%"};
    std::uniform_int_distribution<int> kind(0, 5);
    switch (kind(rng)) {
        case 0:
            return specials[rng() % specials.size()];
        case 1: {
            std::uniform_int_distribution<long long> v(-(1LL << 40), 1LL << 40);
            return std::to_string(v(rng));
        }
        case 2: {
            std::uniform_int_distribution<long long> v(-3, 600);
            return std::to_string(v(rng));
        }
        case 3:
            if (!f.words.empty())
                return f.words[rng() % f.words.size()];
            return std::to_string(static_cast<long long>(rng() % (1ULL << 26)));
        case 4: {
            std::string s = f.words.empty() ? "q" : f.words[rng() % f.words.size()];
            s[rng() % s.size()] = static_cast<char>('a' + rng() % 26);
            return s;
        }
        default: {
            std::string s;
            const int n = 1 + static_cast<int>(rng() % 8);
            for (int i = 0; i < n; ++i)
                s += "0123456789-+.,xe%"[rng() % 17];
            return s;
        }
    }
}

TEST(FlagFuzz, EveryBadValueIsOneUsageLineAndEveryGoodOneReachesTheModel) {
    sbtest::FuzzRun fuzz(20260101);
    std::mt19937_64 rng(fuzz.seed());
    const auto specs = commands();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
    int cases = 0, refused = 0;
    while (cases < 600 && std::chrono::steady_clock::now() < deadline) {
        const CommandSpec& c = specs[rng() % specs.size()];
        const FlagSpec& f = c.flags[rng() % c.flags.size()];
        std::vector<std::string> values{draw_value(rng, f)};
        if (f.list && rng() % 3 == 0)
            values.push_back(draw_value(rng, f));
        std::string value;
        for (const auto& v : values)
            value += (value.empty() ? "" : ",") + v;
        // A comma list: every element valid, none empty.
        bool valid = true;
        if (f.list) {
            std::vector<std::string> parts;
            std::string cur;
            for (char ch : value + ",") {
                if (ch == ',') {
                    parts.push_back(cur);
                    cur.clear();
                } else {
                    cur += ch;
                }
            }
            for (const auto& p : parts)
                valid = valid && !p.empty() && f.valid(p);
        } else {
            valid = f.valid(value);
        }
        auto args = c.base;
        args.push_back(f.flag);
        args.push_back(value);
        const Outcome o = run_flags(args);
        ++cases;
        fuzz.next_case();
        const std::string what = "stagebench " + c.base[0] + " " + f.flag + " '" + value + "'";
        ASSERT_EQ(o.code, 2) << what << "\n" << o.err;
        ASSERT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << what << "\n" << o.err;
        ASSERT_EQ(o.err.rfind("stagebench: error: ", 0), 0u) << what << "\n" << o.err;
        EXPECT_TRUE(o.out.empty()) << what << "\n" << o.out;
        if (valid) {
            EXPECT_NE(o.err.find(c.fails_on), std::string::npos)
                << what << " should pass the checks\n"
                << o.err;
        } else {
            ++refused;
            const bool named = o.err.find(f.name) != std::string::npos ||
                               o.err.find(f.flag + " ") != std::string::npos ||
                               o.err.find(f.flag + ":") != std::string::npos;
            EXPECT_TRUE(named) << what << " should be refused naming the flag\n" << o.err;
            EXPECT_EQ(o.err.find(c.fails_on), std::string::npos) << what << "\n" << o.err;
        }
    }
    EXPECT_GE(cases, 100) << "the fuzz ran too few cases in its time";
    EXPECT_GE(refused, cases / 4);
}

TEST(FlagFuzz, CombinationsAreCheckedBeforeAnything) {
    const std::string model = "/nonexistent/stagebench-fuzz.gguf";
    auto expect_usage = [&](std::vector<std::string> args, const std::string& needle) {
        const Outcome o = run_flags(args);
        EXPECT_EQ(o.code, 2) << o.err;
        EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
        EXPECT_NE(o.err.find(needle), std::string::npos) << o.err;
        EXPECT_EQ(o.err.find(model), std::string::npos) << o.err;
    };
    expect_usage({"run", "-m", model, "-p", "16000000", "-d", "1000000"}, "-d");
    expect_usage({"run", "-m", model, "-r", "5", "--max-reps", "3"}, "--max-reps");
    expect_usage({"run", "-m", model, "--max-reps", "0"}, "--max-reps");
    expect_usage({"run", "-m", model, "--target-ci", "nan%"}, "--target-ci");
    expect_usage({"run", "-m", model, "-p", ","}, "-p");
    expect_usage({"run", "-m", model, "--device", ""}, "--device");
    expect_usage({"run", "-m", model, "-t", "100000"}, "--threads");
    expect_usage({"run", "-m", model, "-n", "16777216", "-r", "100000"}, "-n");
    expect_usage({"run", "-m", model, "--membw", "nan"}, "--membw");
    expect_usage({"synth", "--preset", "tiny", "--layers", "0", "-o", "/tmp/x.gguf"}, "--layers");
    expect_usage({"sustained", "-m", model, "--cooldown", "inf"}, "--cooldown");
    expect_usage({"sensors", "--duration", "1000000s"}, "--duration");
    expect_usage({"membw", "--array-mib", "1e999"}, "--array-mib");
}

// ---- every number option of every command -----------------------------------------------------

struct NumberOption {
    std::vector<std::string> path;  // the subcommands leading to it
    std::string name;               // "--seed", "-p"; "" for a positional
    std::string type;               // INT, UINT or FLOAT
    bool list = false;              // takes a comma list
};

void collect(CLI::App& app, std::vector<std::string> path, std::vector<NumberOption>& out) {
    for (CLI::Option* o : app.get_options()) {
        if (o->get_type_size() == 0)
            continue;
        const std::string t = o->get_type_name();
        std::string type;
        for (const char* k : {"UINT", "INT", "FLOAT"})
            if (t.rfind(k, 0) == 0 && (t.size() == std::strlen(k) || t[std::strlen(k)] == ':')) {
                type = k;
                break;
            }
        if (type.empty())
            continue;
        std::string name;
        if (!o->get_lnames().empty())
            name = "--" + o->get_lnames()[0];
        else if (!o->get_snames().empty())
            name = "-" + o->get_snames()[0];
        out.push_back({path, name, type, o->get_delimiter() != '\0'});
    }
    for (CLI::App* sub : app.get_subcommands({})) {
        auto p = path;
        p.push_back(sub->get_name());
        collect(*sub, p, out);
    }
}

std::vector<NumberOption> number_options() {
    std::ostringstream out, err;
    Context ctx{out, err, 0, {}, {}};
    CLI::App app;
    build_app(app, ctx);
    std::vector<NumberOption> all;
    collect(app, {}, all);
    return all;
}

// A value no number option may take, of its type: hex, octal-looking is fine (decimal), a
// fraction or an exponent where an integer goes, nan and inf, a value beyond the type, junk.
std::string bad_number(std::mt19937_64& rng, const std::string& type) {
    const uint64_t n = 1 + rng() % 100000;
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(n));
    std::vector<std::string> v = {hex,
                                  "",
                                  "nan",
                                  "inf",
                                  std::to_string(n) + "k",
                                  " " + std::to_string(n),
                                  std::to_string(n) + ",",
                                  "1e999",
                                  "0x1p4",
                                  "--" + std::to_string(n)};
    if (type != "FLOAT") {
        v.insert(v.end(), {std::to_string(n) + ".5", std::to_string(n) + "e3",
                           "99999999999999999999999", "18446744073709551616"});
    }
    if (type == "UINT")
        v.insert(v.end(), {"-1", "-" + std::to_string(n), "+" + std::to_string(n)});
    return v[rng() % v.size()];
}

// The mechanism, not a list of flags: every option CLI11 converts to a number, of every
// command, refuses what CLI11 alone would have read (0x10 as 16, -1 as 2^64-1 for a seed, nan).
TEST(FlagFuzz, EveryNumberOptionOfEveryCommandTakesDecimalNumbersOnly) {
    const auto options = number_options();
    ASSERT_GE(options.size(), 60u) << "the walk over the commands found too few number options";
    std::set<std::string> flags;
    for (const auto& o : options)
        flags.insert(o.name);
    for (const char* must : {"--seed", "--dispatch-budget-us", "--n-prompt", "--db-wait", ""})
        EXPECT_TRUE(flags.count(must)) << must << " is not among the number options";
    sbtest::FuzzRun fuzz(33);
    std::mt19937_64 rng(fuzz.seed());
    for (const auto& opt : options) {
        for (int round = 0; round < 3; ++round) {
            const std::string value = bad_number(rng, opt.type);
            if (opt.name.empty() && !value.empty() && value[0] == '-')
                continue;  // a positional: that would be read as an option
            auto args = opt.path;
            if (!opt.name.empty())
                args.push_back(opt.name);
            args.push_back(value);
            fuzz.next_case();
            const Outcome o = run_flags(args);
            std::string what = "stagebench";
            for (const auto& a : args)
                what += " '" + a + "'";
            EXPECT_EQ(o.code, 2) << what << "\n" << o.err;
            EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << what << "\n" << o.err;
            EXPECT_EQ(o.err.rfind("stagebench: error: ", 0), 0u) << what << "\n" << o.err;
            EXPECT_TRUE(o.out.empty()) << what;
        }
    }
    EXPECT_GE(fuzz.cases(), 150);
}

TEST(FlagChecks, NumbersAreDecimalAndWrittenBackPlain) {
    auto parse = [](std::vector<std::string> args) {
        CLI::App app;
        int64_t i = 0;
        uint64_t u = 0;
        double d = 0;
        std::vector<int> list;
        app.add_option("-i", i);
        app.add_option("-u", u);
        app.add_option("-d", d);
        app.add_option("-l", list)->delimiter(',');
        app.add_flag("-f");
        check_numbers_strictly(app);
        std::reverse(args.begin(), args.end());
        app.parse(args);
        return std::tuple(i, u, d, list);
    };
    EXPECT_EQ(std::get<0>(parse({"-i", "010"})), 10);  // CLI11 alone: 8
    EXPECT_EQ(std::get<0>(parse({"-i", "-7"})), -7);
    EXPECT_EQ(std::get<1>(parse({"-u", "18446744073709551615"})), UINT64_MAX);
    EXPECT_EQ(std::get<2>(parse({"-d", "2.5e-3"})), 2.5e-3);
    EXPECT_EQ(std::get<3>(parse({"-l", "1,010,3"})), (std::vector<int>{1, 10, 3}));
    for (const std::vector<std::string>& bad :
         std::vector<std::vector<std::string>>{{"-i", "0x10"},
                                               {"-u", "-1"},
                                               {"-u", "18446744073709551616"},
                                               {"-u", ""},
                                               {"-d", "nan"},
                                               {"-d", "0x1p3"},
                                               {"-l", "1,0x2"}})
        EXPECT_THROW(parse(bad), CLI::ValidationError) << bad[0] << " " << bad[1];
}

TEST(FlagChecks, ListsWithAnEmptyItemAreRefusedBeforeParsing) {
    std::ostringstream out, err;
    Context ctx{out, err, 0, {}, {}};
    CLI::App app;
    build_app(app, ctx);
    auto refused = [&](const std::vector<std::string>& args) {
        try {
            check_list_items(app, args);
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::usage);
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(refused({"run", "--device", "CPU,,BLAS"}),
              "--device 'CPU,,BLAS' has an empty item (a comma list takes no empty items)");
    EXPECT_NE(refused({"run", "-p", "16,"}), "");
    EXPECT_NE(refused({"run", "-p16,32,", "-n", "1"}), "");
    EXPECT_NE(refused({"run", "--n-gen=,4"}), "");
    EXPECT_NE(refused({"run", "-p", "16", ",,32"}), "");  // the values that follow, too
    EXPECT_NE(refused({"hybrid", "-p", "1,,2"}), "");
    EXPECT_EQ(refused({"run", "--device", "CPU,BLAS", "-p", "16,32", "-n", "-1"}), "");
    // Not a list option, or another command's arguments.
    EXPECT_EQ(refused({"compare", "a,,b.json"}), "");
    EXPECT_EQ(refused({"fleet", "run", "--hosts", "f.toml", "--", "run", "-p", "1,,2"}), "");
    const Outcome o = run_flags({"run", "-m", "/nonexistent/m.gguf", "--device", "CPU,,BLAS"});
    EXPECT_EQ(o.code, 2);
    EXPECT_EQ(o.err,
              "stagebench: error: --device 'CPU,,BLAS' has an empty item (a comma list takes no "
              "empty items)\n");
}

TEST(FlagChecks, TargetCiIsCheckedAsAFlag) {
    for (const char* bad : {"", "nan", "0x1%", "150%"}) {
        const Outcome o = run_flags({"run", "-m", "/nonexistent/m.gguf", "--target-ci", bad});
        EXPECT_EQ(o.code, 2) << bad;
        EXPECT_NE(o.err.find("--target-ci"), std::string::npos) << o.err;
        EXPECT_EQ(o.err.find("/nonexistent/m.gguf"), std::string::npos) << o.err;
    }
}

}  // namespace
}  // namespace sb::cli
