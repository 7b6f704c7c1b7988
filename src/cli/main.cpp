// A trampoline: all behaviour lives in the library, main only forwards the exit code.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "engine/backends.hpp"

namespace {

// llama.cpp gave up (e.g. its RPC server died): one line instead of a core dump. Results are
// written after every test; the running command's last words record the test that was running
// as failed (--out, --db) and give the line.
void on_fatal(const char* message) {
    const std::string line = sb::say_last_words(message).value_or(
        "llama.cpp stopped: " + sb::strip_source_location(message));
    std::fprintf(stderr, "stagebench: error: %s\n", line.c_str());
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
