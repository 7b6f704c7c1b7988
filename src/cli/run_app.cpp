#include <algorithm>
#include <map>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/watchdog.hpp"
#include "store/store_name.hpp"

namespace sb::cli {
namespace {

// llama-bench spells some options with one dash and several letters (-ngl, -ub); CLI11 reads
// those as bundled short flags, so they are mapped to their long names first.
std::vector<std::string> normalise(int argc, const char* const* argv) {
    static const std::map<std::string_view, std::string_view> aliases = {
        {"-ub", "--ubatch-size"},   {"-ngl", "--n-gpu-layers"}, {"-fa", "--flash-attn"},
        {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-dev", "--device"}};
    std::vector<std::string> out;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        // `stagebench --version` is the version subcommand.
        if (i == 1 && a == "--version")
            a = "version";
        if (auto it = aliases.find(a); it != aliases.end())
            a = it->second;
        out.push_back(a);
    }
    return out;
}

// msg without the password of any store name among the arguments: CLI11 quotes arguments it
// did not expect ("The following arguments were not expected: postgresql://u:pw@h/db").
std::string without_secrets(std::string msg, int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a.rfind("--", 0) == 0 && a.find('=') != std::string_view::npos)
            a.remove_prefix(a.find('=') + 1);
        if (is_postgres_url(a) || !unusable_store_name(a).empty())
            msg = scrub_store_secrets(msg, a);
    }
    return msg;
}

}  // namespace

// Separate from cli.cpp (build_app): the agent (agent_app.cpp) links this without every
// command of the full CLI.
int run_app(int argc, const char* const* argv, Context& ctx, const std::string& name,
            AppBuilder build) {
    CLI::App app;
    app.name(name);
    ctx.exit_code = 0;
    ctx.db_path.clear();
    ctx.db_wait_s = 60;
    set_stage_timeout(kDefaultStageTimeoutS);
    ctx.argv.assign(argv, argv + argc);
    try {
        build(app, ctx);
        check_numbers_strictly(app);
        auto args = normalise(argc, argv);
        check_list_items(app, args);
        std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
        app.parse(args);
        return ctx.exit_code;
    } catch (const CLI::CallForHelp&) {
        ctx.out << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        ctx.out << app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::ParseError& e) {
        // One line, then where to look.
        ctx.err << "stagebench: error: " << without_secrets(e.what(), argc, argv) << " (see "
                << name << " --help)\n";
        return 2;
    } catch (const Error& e) {
        ctx.err << "stagebench: error: " << without_secrets(e.what(), argc, argv) << "\n";
        return e.kind() == ErrorKind::runtime ? 1 : 2;
    } catch (const std::exception& e) {
        ctx.err << "stagebench: error: " << without_secrets(e.what(), argc, argv) << "\n";
        return 1;
    }
}

}  // namespace sb::cli
