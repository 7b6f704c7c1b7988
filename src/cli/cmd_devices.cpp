#include <fmt/format.h>

#include "cli/commands.hpp"
#include "engine/backends.hpp"

namespace sb::cli {

void add_devices_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand("devices", "List the backends and devices stagebench can use");
    auto rpc = std::make_shared<std::vector<std::string>>();
    cmd->add_option("--rpc", *rpc, "RPC servers host:port to add (comma list)")->delimiter(',');
    cmd->callback([&ctx, rpc] {
        for (const auto& ep : *rpc)
            add_rpc_server(ep);
        ctx.out << "| device | type | backend | description | memory |\n"
                << "| --- | --- | --- | --- | ---: |\n";
        for (const auto& d : list_devices()) {
            std::string mem = "-";
            if (d.memory_total_bytes)
                mem = fmt::format("{:.0f} MiB", *d.memory_total_bytes / 1048576.0);
            ctx.out << "| " << d.name << " | " << d.type << " | " << d.backend << " | "
                    << d.description << " | " << mem << " |\n";
        }
        // Which kernels the CPU device runs: the variant ggml chose for the features it saw.
        BuildInfo b = build_info();
        if (b.cpu_variant)
            ctx.out << "\nCPU variant: " << *b.cpu_variant << "\n";
        if (b.cpu_features) {
            ctx.out << (b.cpu_variant ? "" : "\n") << "CPU features:";
            for (const auto& f : *b.cpu_features)
                ctx.out << " " << f;
            ctx.out << "\n";
        }
    });
}

}  // namespace sb::cli
