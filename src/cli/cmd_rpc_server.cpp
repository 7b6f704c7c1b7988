#include "cli/commands.hpp"
#include "cli/flag_checks.hpp"
#include "cli/shared_flags.hpp"
#include "engine/rpc_server.hpp"

namespace sb::cli {

void add_rpc_server_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand(
        "rpc-server",
        "Serve this machine's CPU (or -d devices) to `--rpc host:port` over ggml's RPC protocol, "
        "until stopped (Ctrl-C)");
    auto o = std::make_shared<RpcServeOptions>();
    cmd->add_option("-H,--host", o->host,
                    "IPv4 address to listen on (anything but loopback exposes this machine)")
        ->capture_default_str();
    cmd->add_option("-p,--port", o->port, "TCP port")->capture_default_str();
    cmd->add_option("-d,--device", o->devices,
                    "devices to offer, comma list of ggml names (see stagebench devices)")
        ->delimiter(',')
        ->capture_default_str();
    add_threads_flag(cmd, o->threads);
    cmd->callback([&ctx, o] { serve_rpc(*o, ctx.err); });
}

}  // namespace sb::cli
