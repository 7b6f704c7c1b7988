#include <filesystem>

#include "cli/commands.hpp"
#include "cli/demo.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "cli/store_hook.hpp"
#include "core/document.hpp"
#include "core/result.hpp"

namespace sb::cli {

void add_demo_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "demo", "Generate a small synthetic model and measure it on every available backend");
    auto o = std::make_shared<DemoOptions>();
    cmd->add_option("--dir", o->dir, "where the model and results go")->capture_default_str();
    cmd->add_option("--preset", o->preset, "synthetic model preset")->capture_default_str();
    cmd->add_option("--layers", o->layers, "layers of the scaled-down model")
        ->check(layers_check())
        ->capture_default_str();
    add_prompt_flag(cmd, o->n_prompt);
    add_gen_flag(cmd, o->n_gen, 0);
    cmd->add_option("-r,--repetitions", o->reps, "repetitions")
        ->check(reps_check())
        ->capture_default_str();
    add_threads_flag(cmd, o->threads);
    cmd->add_flag("!--no-rpc", o->rpc, "do not start a loopback RPC server");
    add_db_option(cmd, ctx);
    bool quiet = false;
    cmd->add_flag("-q,--quiet", quiet, "no progress lines");
    cmd->callback([&ctx, o, cmd] {
        check_context(o->n_prompt, 0, o->n_gen);
        o->progress = cmd->count("--quiet") == 0;
        o->argv = ctx.argv;
        // The demo keeps its documents in <dir>/result.json and, with an RPC device,
        // <dir>/hybrid.json (also when llama.cpp stops it mid-run).
        auto documents = [o] {
            std::vector<ResultDocument> docs;
            for (const char* name : {"/result.json", "/hybrid.json"})
                if (std::filesystem::exists(o->dir + name))
                    docs.push_back(load_result_document(o->dir + name));
            return docs;
        };
        const auto last = keep_measured(ctx, documents, false);
        ctx.exit_code = run_demo(*o, ctx.out, ctx.err);
        if (!ctx.db_path.empty())
            for (const auto& d : documents())
                store_document(ctx, d);
    });
}

}  // namespace sb::cli
