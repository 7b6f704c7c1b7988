#include "cli/commands.hpp"
#include "core/version.hpp"
#include "engine/backends.hpp"

namespace sb::cli {

void add_version_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand("version", "Print stagebench's version and its llama.cpp build");
    cmd->callback([&ctx] {
        BuildInfo b = build_info();
        ctx.out << "stagebench " << tool_version() << "\n"
                << "llama.cpp " << b.llama_tag << " (commit " << b.llama_commit << ")\n"
                << "backends:";
        for (const auto& name : b.backends_available)
            ctx.out << " " << name;
        ctx.out << (b.dynamic_backends ? " (loadable modules from " + b.llama_lib_dir + ")"
                                       : " (linked)")
                << "\n";
        if (b.cpu_variant)
            ctx.out << "cpu variant: " << *b.cpu_variant << "\n";
        if (b.cpu_features) {
            ctx.out << "cpu features:";
            for (const auto& f : *b.cpu_features)
                ctx.out << " " << f;
            ctx.out << "\n";
        }
    });
}

}  // namespace sb::cli
