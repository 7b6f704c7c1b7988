// The flags many commands share are the declarations of shared_flags.cpp wherever they appear:
// the whole CLI (build_app) is walked, and every command that takes the flag shows the same
// help and default and refuses the same bad value naming the flag.
#include "cli/shared_flags.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/run_cli_test_util.hpp"

namespace sb::cli {
namespace {

// Every subcommand of the full CLI (at any depth) that has the option `name`, by its path
// ("import hexagon-profile").
std::vector<std::pair<std::string, const CLI::Option*>> options_named(const std::string& name) {
    static std::ostringstream out, err;
    static Context ctx{out, err, 0, {}, {}};
    static CLI::App app;
    static const bool built = [] {
        build_app(app, ctx);
        return true;
    }();
    (void)built;
    std::vector<std::pair<std::string, const CLI::Option*>> found;
    std::vector<std::pair<std::string, const CLI::App*>> todo;
    for (const CLI::App* sub : app.get_subcommands({}))
        todo.emplace_back(sub->get_name(), sub);
    while (!todo.empty()) {
        const auto [path, cmd] = todo.back();
        todo.pop_back();
        if (const CLI::Option* o = cmd->get_option_no_throw(name))
            found.emplace_back(path, o);
        for (const CLI::App* sub : cmd->get_subcommands({}))
            todo.emplace_back(path + " " + sub->get_name(), sub);
    }
    return found;
}

bool ends_with(const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

TEST(SharedFlags, EveryWorkloadThreadsFlagIsTheOneDeclaration) {
    // Where -t means something else: membw's threads (0: every hardware thread) and synth's
    // writer threads.
    const std::set<std::string> other{"membw", "synth"};
    std::set<std::string> shared;
    for (const auto& [cmd, opt] : options_named("--threads")) {
        if (other.count(cmd))
            continue;
        shared.insert(cmd);
        const std::string help = opt->get_description();
        EXPECT_EQ(help.rfind("CPU threads", 0), 0u) << cmd << ": " << help;
        EXPECT_TRUE(ends_with(help, " (0 = one per physical core that does math)"))
            << cmd << ": " << help;
        const std::string shown = opt->get_default_str();  // a list's: "[0]"
        EXPECT_TRUE(shown == "0" || shown == "[0]") << cmd << ": " << shown;
        EXPECT_TRUE(opt->check_sname("t")) << cmd;
        // The one check: above ggml's 512 threads is refused, naming the flag, as a usage error.
        const Outcome o = run_captured({cmd, "-t", "513"});
        EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("--threads"), std::string::npos) << cmd << ": " << o.err;
    }
    const std::set<std::string> expected{"demo",   "explain", "fidelity",  "hybrid",
                                         "logits", "ops",     "decompose", "rpc-server",
                                         "run",    "serve",   "sustained"};
    EXPECT_EQ(shared, expected);
}

TEST(SharedFlags, EveryDeviceSetFlagIsTheOneDeclaration) {
    // rpc-server's -d/--device is the list of devices it offers (ggml names), not a device set.
    const std::set<std::string> other{"rpc-server"};
    std::set<std::string> shared;
    for (const auto& [cmd, opt] : options_named("--device")) {
        if (other.count(cmd))
            continue;
        shared.insert(cmd);
        const std::string help = opt->get_description();
        EXPECT_EQ(help.rfind("device set", 0), 0u) << cmd << ": " << help;
        EXPECT_NE(help.find(" (-dev)"), std::string::npos) << cmd << ": " << help;
        EXPECT_NE(help.find("join with + to combine"), std::string::npos) << cmd << ": " << help;
        const std::string shown = opt->get_default_str();  // a list's: "[CPU]"
        EXPECT_TRUE(shown == "CPU" || shown == "[CPU]") << cmd << ": " << shown;
        const Outcome o = run_captured({cmd, "--device", "CPU BLAS"});
        EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("--device"), std::string::npos) << cmd << ": " << o.err;
    }
    const std::set<std::string> expected{"decompose", "explain", "fidelity", "logits",
                                         "ops",       "run",     "sustained"};
    EXPECT_EQ(shared, expected);
}

TEST(SharedFlags, EveryPromptAndGenFlagIsTheOneDeclaration) {
    // serve's -p and -n take a count or a uniform range LO-HI per request: another grammar.
    std::set<std::string> prompt, gen;
    for (const auto& [cmd, opt] : options_named("--n-prompt")) {
        if (cmd == "serve")
            continue;
        prompt.insert(cmd);
        EXPECT_EQ(opt->get_description().rfind("prompt tokens (prefill stage)", 0), 0u)
            << cmd << ": " << opt->get_description();
        EXPECT_TRUE(opt->check_sname("p")) << cmd;
        // run's -p 0 is a test of decode alone (llama-bench's tg); below 0 it is refused too.
        const Outcome o = run_captured({cmd, "-p", cmd == "run" ? "-1" : "0"});
        EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("--n-prompt"), std::string::npos) << cmd << ": " << o.err;
    }
    for (const auto& [cmd, opt] : options_named("--n-gen")) {
        if (cmd == "serve")
            continue;
        gen.insert(cmd);
        EXPECT_EQ(opt->get_description().rfind("generated tokens (decode stage)", 0), 0u)
            << cmd << ": " << opt->get_description();
        EXPECT_TRUE(opt->check_sname("n")) << cmd;
        const Outcome o = run_captured({cmd, "-n", "-1"});
        EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("--n-gen"), std::string::npos) << cmd << ": " << o.err;
    }
    EXPECT_EQ(prompt, (std::set<std::string>{"decompose", "demo", "explain", "fidelity", "hybrid",
                                             "logits", "ops", "run"}));
    EXPECT_EQ(gen,
              (std::set<std::string>{"decompose", "demo", "explain", "fidelity", "hybrid", "run"}));
    // explain's lower bound is its own: decode is the time per token after the first.
    const Outcome one = run_captured({"explain", "-m", "/nonexistent.gguf", "-n", "1"});
    EXPECT_EQ(one.code, 2) << one.err;
    EXPECT_NE(one.err.find("--n-gen"), std::string::npos) << one.err;
}

TEST(SharedFlags, EveryEngineLoadFlagIsTheOneDeclaration) {
    struct Flag {
        std::string name, help, bad;
        std::set<std::string> commands;
    };
    const std::vector<Flag> flags = {
        {"--batch-size", "logical batch size", "0", {"decompose", "hybrid", "ops", "run"}},
        {"--ubatch-size", "physical batch size (-ub)", "0", {"decompose", "hybrid", "ops", "run"}},
        {"--n-gpu-layers", "layers to offload (-ngl)", "-2", {"decompose", "hybrid", "ops", "run"}},
        {"--flash-attn",
         "flash attention auto|on|off (-fa)",
         "yes",
         {"decompose", "hybrid", "ops", "run"}},
        {"--cache-type-k",
         "K cache type (-ctk)",
         "q9",
         {"decompose", "fidelity", "hybrid", "ops", "run"}},
        {"--cache-type-v",
         "V cache type (-ctv)",
         "q9",
         {"decompose", "fidelity", "hybrid", "ops", "run"}},
    };
    for (const Flag& f : flags) {
        std::set<std::string> seen;
        for (const auto& [cmd, opt] : options_named(f.name)) {
            seen.insert(cmd);
            EXPECT_EQ(opt->get_description().rfind(f.help, 0), 0u)
                << cmd << " " << f.name << ": " << opt->get_description();
            EXPECT_FALSE(opt->get_default_str().empty()) << cmd << " " << f.name;
            const Outcome o = run_captured({cmd, f.name, f.bad});
            EXPECT_EQ(o.code, 2) << cmd << " " << f.name << ": " << o.err;
            EXPECT_NE(o.err.find(f.name), std::string::npos) << cmd << ": " << o.err;
        }
        EXPECT_EQ(seen, f.commands) << f.name;
    }
}

TEST(SharedFlags, OneValueEngineFlagsAreParsedIntoTheWorkload) {
    CLI::App app;
    Workload w;
    add_engine_flags(&app, w);
    EXPECT_EQ(app.get_option("--flash-attn")->get_default_str(), "auto");
    EXPECT_EQ(app.get_option("--cache-type-k")->get_default_str(), "f16");
    std::vector<std::string> args{
        "-b",           "256", "--ubatch-size",  "64",   "--n-gpu-layers", "0",
        "--flash-attn", "1",   "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"};
    std::reverse(args.begin(), args.end());
    app.parse(args);
    Workload want;
    want.n_batch = 256;
    want.n_ubatch = 64;
    want.n_gpu_layers = 0;
    want.flash_attn = FlashAttn::on;  // llama-bench's "1"
    want.type_k = KvType::q8_0;
    want.type_v = KvType::q4_0;
    EXPECT_EQ(w, want);
}

TEST(SharedFlags, EveryDocumentOutFlagIsTheOneDeclaration) {
    // Other --out flags: the file a command makes instead of printing (db export's JSON,
    // report's HTML page, synth's GGUF file, bundle's job).
    const std::set<std::string> other{"db export", "report", "synth", "bundle"};
    std::set<std::string> shared;
    for (const auto& [cmd, opt] : options_named("--out")) {
        if (other.count(cmd))
            continue;
        shared.insert(cmd);
        const std::string help = opt->get_description();
        EXPECT_EQ(help.rfind("write the ", 0), 0u) << cmd << ": " << help;
        EXPECT_NE(help.find(" (JSON) here"), std::string::npos) << cmd << ": " << help;
    }
    for (const char* cmd : {"run", "explain", "fidelity", "hybrid", "ops", "serve", "sustained",
                            "logits", "advise", "compare", "import hexagon-profile"})
        EXPECT_TRUE(shared.count(cmd)) << cmd;
}

TEST(SharedFlags, EveryStoreFlagIsOneOfTheTwoDeclarations) {
    // The measuring commands append to the store (store_hook.hpp add_db_option); the others read
    // from it (add_store_flag).
    const std::string read_end = " (a SQLite file or postgresql://user@host:port/dbname)";
    std::set<std::string> read;
    int append = 0;
    for (const auto& [cmd, opt] : options_named("--db")) {
        const std::string help = opt->get_description();
        if (help.rfind("append the result document to this results store", 0) == 0) {
            ++append;
            continue;
        }
        EXPECT_EQ(help.rfind("the results store", 0), 0u) << cmd << ": " << help;
        // fleet's, bundle's and ingest's are declared in cmd_fleet.cpp and cmd_bundle.cpp.
        EXPECT_TRUE(ends_with(help, read_end) || cmd.rfind("fleet", 0) == 0 || cmd == "bundle" ||
                    cmd == "ingest")
            << cmd << ": " << help;
        read.insert(cmd);
    }
    EXPECT_GE(append, 10);
    for (const char* cmd : {"advise", "compare", "report", "db list", "db show", "db export"})
        EXPECT_TRUE(read.count(cmd)) << cmd;
}

TEST(SharedFlags, EveryModelFileFlagIsTheOneDeclaration) {
    // serve's -m is the model's name on a server or a file, bundle's the models a command needs.
    const std::set<std::string> other{"serve", "bundle"};
    std::set<std::string> shared;
    for (const auto& [cmd, opt] : options_named("--model")) {
        if (other.count(cmd))
            continue;
        shared.insert(cmd);
        EXPECT_EQ(opt->get_description().rfind("GGUF model file", 0), 0u)
            << cmd << ": " << opt->get_description();
        EXPECT_TRUE(opt->check_sname("m")) << cmd;
    }
    EXPECT_EQ(shared, (std::set<std::string>{"decompose", "explain", "fidelity", "hybrid", "logits",
                                             "ops", "run", "sustained"}));
    // Required where the command measures one model file.
    for (const char* cmd : {"explain", "hybrid", "logits", "ops", "sustained"}) {
        const Outcome o = run_captured({cmd});
        EXPECT_EQ(o.code, 2) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("--model"), std::string::npos) << cmd << ": " << o.err;
        EXPECT_NE(o.err.find("required"), std::string::npos) << cmd << ": " << o.err;
    }
}

}  // namespace
}  // namespace sb::cli
