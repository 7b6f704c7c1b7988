#include <algorithm>
#include <map>
#include <string_view>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/watchdog.hpp"

namespace sb::cli {

void build_app(CLI::App& app, Context& ctx) {
    app.description(
        "stagebench: where the time and the energy of on-device LLM inference go.\n"
        "Prefill and decode measured separately, per backend, with statistics you can trust.");
    app.require_subcommand(1);
    add_version_command(app, ctx);
    add_synth_command(app, ctx);
    add_devices_command(app, ctx);
    add_run_command(app, ctx);
    add_membw_command(app, ctx);
    add_demo_command(app, ctx);
    add_sensors_command(app, ctx);
    add_sustained_command(app, ctx);
    add_ops_command(app, ctx);
    add_decompose_command(app, ctx);
    add_import_command(app, ctx);
    add_hybrid_command(app, ctx);
    add_advise_command(app, ctx);
    add_report_command(app, ctx);
    add_db_command(app, ctx);
    add_compare_command(app, ctx);
    add_trace_command(app, ctx);
    add_rpc_server_command(app, ctx);
    add_logits_command(app, ctx);
}

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

}  // namespace

int run_cli(int argc, const char* const* argv, Context& ctx) {
    CLI::App app;
    app.name("stagebench");
    ctx.exit_code = 0;
    ctx.db_path.clear();
    ctx.db_wait_s = 60;
    set_stage_timeout(kDefaultStageTimeoutS);
    ctx.argv.assign(argv, argv + argc);
    try {
        build_app(app, ctx);
        auto args = normalise(argc, argv);
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
        ctx.err << "stagebench: error: " << e.what() << " (see stagebench --help)\n";
        return 2;
    } catch (const Error& e) {
        ctx.err << "stagebench: error: " << e.what() << "\n";
        return e.kind() == ErrorKind::runtime ? 1 : 2;
    } catch (const std::exception& e) {
        ctx.err << "stagebench: error: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace sb::cli
