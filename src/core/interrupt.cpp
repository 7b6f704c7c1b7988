#include "core/interrupt.hpp"

#include <atomic>
#include <csignal>

#include "core/file_io.hpp"

namespace sb {
namespace {
std::atomic<bool> g_interrupt{false};
std::atomic<int> g_count{0};
std::atomic<bool> g_deferred{false};

extern "C" void on_signal(int sig) {
    g_interrupt.store(true);
    // The second signal ends the process the usual way, unless a stage watchdog takes it.
    if (g_count.fetch_add(1) + 1 >= 2 && !g_deferred.load()) {
        // No destructor runs after this: the temporaries of unfinished outputs go now.
        unlink_pending_outputs();
        std::signal(sig, SIG_DFL);
        std::raise(sig);
    }
}
}  // namespace

bool interrupt_requested() {
    return g_interrupt.load(std::memory_order_relaxed);
}
void request_interrupt() {
    g_interrupt.store(true);
    g_count.fetch_add(1);
}
void clear_interrupt() {
    g_interrupt.store(false);
    g_count.store(0);
}
int interrupt_count() {
    return g_count.load(std::memory_order_relaxed);
}
void defer_second_interrupt(bool deferred) {
    g_deferred.store(deferred, std::memory_order_relaxed);
}

void install_interrupt_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);
}

}  // namespace sb
