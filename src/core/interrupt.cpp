#include "core/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace sb {
namespace {
std::atomic<bool> g_interrupt{false};

extern "C" void on_signal(int sig) {
    g_interrupt.store(true);
    // The next signal of this kind ends the process the usual way.
    std::signal(sig, SIG_DFL);
}
}  // namespace

bool interrupt_requested() {
    return g_interrupt.load(std::memory_order_relaxed);
}
void request_interrupt() {
    g_interrupt.store(true);
}
void clear_interrupt() {
    g_interrupt.store(false);
}

void install_interrupt_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

}  // namespace sb
