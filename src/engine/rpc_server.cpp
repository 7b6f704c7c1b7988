#include "engine/rpc_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#include "ggml.h"

namespace sb {
namespace {

// llama.cpp's server prints one line and returns when it cannot bind; checking first gives
// the user the reason as the one error line.
void check_bindable(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const std::string where = host + ":" + std::to_string(port);
    if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
        throw input_error("rpc-server: cannot resolve host '" + host + "': " + gai_strerror(rc));
    std::string why = "no address";
    bool ok = false;
    for (addrinfo* a = res; a && !ok; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        ok = bind(fd, a->ai_addr, a->ai_addrlen) == 0;
        if (!ok)
            why = std::strerror(errno);
        close(fd);
    }
    freeaddrinfo(res);
    if (!ok)
        throw input_error("rpc-server: cannot listen on " + where + ": " + why);
}

}  // namespace

void serve_rpc(const RpcServeOptions& o, std::ostream& err) {
    if (o.port <= 0 || o.port > 65535)
        throw usage_error("rpc-server: --port must be 1..65535, not " + std::to_string(o.port));
    // ggml's CPU thread pool holds GGML_MAX_N_THREADS slots: more write past them on the first
    // graph (the server died with SIGSEGV).
    if (o.threads < 0 || o.threads > GGML_MAX_N_THREADS)
        throw usage_error("rpc-server: --threads must be 0 (default) or 1.." +
                          std::to_string(GGML_MAX_N_THREADS) + ", not " +
                          std::to_string(o.threads));
    if (o.devices.empty())
        throw usage_error("rpc-server: --device names no device");
    // Knowing every device needs every backend module loaded (this process serves, it does
    // not measure, so all of them may stay).
    const auto all = list_devices();
    std::vector<ggml_backend_dev_t> devs;
    std::string servable;  // the devices that can run whole graphs
    for (const auto& d : all)
        if (d.type != "accel")
            servable += (servable.empty() ? "" : ", ") + d.name;
    for (const auto& name : o.devices) {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
        if (!dev)
            throw input_error("rpc-server: unknown device '" + name + "' (available: " + servable +
                              missing_module_hint(name) + ")");
        // An accelerator (BLAS, AMX...) runs some ops beside the CPU; a client hands an RPC
        // device whole graphs, and the server stops on the first op it lacks.
        if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL)
            throw usage_error("rpc-server: -d " + name +
                              ": an accelerator that runs only some ops beside the CPU cannot "
                              "serve whole graphs (available: " +
                              servable + ")");
        devs.push_back(dev);
    }
    // llama.cpp's server binds an IPv4 address written as one (inet_addr): with a name or an
    // IPv6 address it prints a line and returns.
    if (inet_addr(o.host.c_str()) == INADDR_NONE)
        throw usage_error("rpc-server: -H '" + o.host +
                          "': llama.cpp's RPC server listens on an IPv4 address only (127.0.0.1, "
                          "0.0.0.0 or one of this machine's)");
    check_bindable(o.host, o.port);
    ggml_backend_reg_t rpc = nullptr;
    for (size_t i = 0; i < ggml_backend_reg_count() && !rpc; ++i)
        if (std::string(ggml_backend_reg_name(ggml_backend_reg_get(i))) == "RPC")
            rpc = ggml_backend_reg_get(i);
    if (!rpc)
        throw input_error("this llama.cpp build has no RPC backend (build with GGML_RPC=ON)");
    using start_fn_t = decltype(ggml_backend_rpc_start_server)*;
    auto start = reinterpret_cast<start_fn_t>(
        ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_start_server"));
    if (!start)
        throw input_error("this llama.cpp RPC backend cannot serve");
    if (o.host.rfind("127.", 0) != 0)
        err << "stagebench: warning: rpc-server listens on " << o.host
            << ": anyone who reaches this port can run graphs and read memory on this machine; "
               "never expose it to an open network\n";
    const int threads = threads_or_default(o.threads);
    err.flush();
    // The server loop has no stop condition of its own: SIGINT and SIGTERM end the process
    // the usual way (a measuring command turns them into "stop after this repetition").
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    // llama.cpp prints its banner (endpoint, devices) on stdout and flushes only per client:
    // line buffering shows it at once also in a log file.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const std::string endpoint = o.host + ":" + std::to_string(o.port);
    start(endpoint.c_str(), nullptr, static_cast<size_t>(threads), devs.size(), devs.data());
    throw runtime_error("rpc-server: llama.cpp's RPC server on " + endpoint +
                        " stopped (see the lines above)");
}

}  // namespace sb
