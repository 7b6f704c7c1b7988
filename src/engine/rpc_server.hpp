#pragma once
// `stagebench rpc-server`: a ggml RPC server in this process, built from the same llama.cpp as
// the client, so protocol versions always match. It offers the host CPU by default: llama.cpp's
// own rpc-server offers the first non-CPU device, which on a CPU build with the BLAS module is
// BLAS, and that backend cannot run whole graphs (the server stops on the first RMS_NORM).
#include <ostream>
#include <string>
#include <vector>

namespace sb {

struct RpcServeOptions {
    std::string host = "127.0.0.1";
    int port = 50052;
    std::vector<std::string> devices{"CPU"};  // ggml device names, offered in this order
    int threads = 0;                          // CPU threads; 0 = default_thread_count()
};

// Checks the options (threads 0..512, devices exist and can run whole graphs, host:port can be
// bound) and then serves clients one after another until the process is stopped (SIGINT,
// SIGTERM); it does not return otherwise. Prints llama.cpp's server banner on stdout. Throws
// sb::Error(usage) for a thread count above ggml's 512, an accelerator device (BLAS: it runs
// some ops beside the CPU, never a whole graph) or a host that is not an IPv4 address
// (llama.cpp's server binds nothing else), sb::Error(input) for an unknown device
// (naming the available ones) or an address that cannot be bound, and sb::Error(runtime) when
// llama.cpp's server gives up.
void serve_rpc(const RpcServeOptions& o, std::ostream& err);

}  // namespace sb
