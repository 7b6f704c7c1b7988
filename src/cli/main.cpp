// A trampoline: all behaviour lives in the library, main only forwards the exit code.
#include <iostream>

#include "cli/commands.hpp"
#include "core/interrupt.hpp"

int main(int argc, char** argv) {
    sb::install_interrupt_handlers();
    sb::cli::Context ctx{std::cout, std::cerr};
    return sb::cli::run_cli(argc, argv, ctx);
}
