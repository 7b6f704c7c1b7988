// A trampoline: all behaviour lives in the library, main only forwards the exit code.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "core/interrupt.hpp"
#include "engine/backends.hpp"

namespace {

// llama.cpp gave up (e.g. its RPC server died): one line instead of a core dump. Results are
// written after every test, so what was measured before is already on disk.
void on_fatal(const char* message) {
    std::fprintf(stderr, "stagebench: error: llama.cpp stopped: %s\n", message);
    std::fflush(stderr);
    std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
    // A peer that goes away (an RPC server killed mid-run, a reader of stdout that quit) must
    // be an error the code reports, not a silent death by SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    sb::set_fatal_handler(on_fatal);
    sb::install_interrupt_handlers();
    sb::cli::Context ctx{std::cout, std::cerr, 0, {}, {}};
    return sb::cli::run_cli(argc, argv, ctx);
}
