// A trampoline: all behaviour lives in the library, main only forwards the exit code.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "core/crash.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "core/watchdog.hpp"
#include "engine/backends.hpp"
#ifdef SB_AGENT_ISA
#include "core/arm_level.hpp"
#endif

namespace {

// llama.cpp gave up (e.g. its RPC server died, or an assertion no check foresaw): one line
// instead of a core dump. Results are written after every test; the running command's last
// words record the test that was running as failed (--out), print what was measured (-o json),
// store it (--db) and give the line. Several compute threads can fail the same assertion at
// once: the first one speaks, the others wait for the exit.
void end_run(const std::string& message, const std::string& default_line, int exit_code = 1) {
    static std::atomic<bool> first{true};
    thread_local bool inside = false;
    if (inside)  // a fault while saying the last words
        std::_Exit(1);
    if (!first.exchange(false))
        for (;;)
            std::this_thread::sleep_for(std::chrono::seconds(1));
    inside = true;
    const std::string line = sb::say_last_words(message).value_or(default_line);
    std::fflush(stdout);
    std::cout.flush();
    std::fprintf(stderr, "stagebench: error: %s\n", line.c_str());
    std::fflush(stderr);
    std::_Exit(exit_code);
}

void on_fatal(const char* message) {
    // Connecting to a device before anything is measured (core/watchdog.hpp, SetupBudget): a
    // device that cannot be used, bad input.
    if (auto step = sb::running_setup_step())
        end_run(message, *step + " failed: " + sb::strip_source_location(message), 2);
    end_run(message, "llama.cpp stopped: " + sb::strip_source_location(message));
}

// A crash in the process (core/crash.hpp): most often in llama.cpp or a driver it loaded, on a
// thread of its own. The same end as llama.cpp's stop, the crash named.
void on_crash(const char* description) {
    end_run(std::string(sb::kCrashMarker) + description, std::string("crashed: ") + description);
}

// A stage that waits past its deadline, or does not end after Ctrl-C (core/watchdog.hpp): the
// same end as llama.cpp's stop, with the watchdog's line as the reason. A setup step that hangs
// (a device that took the connection and stopped answering before anything was measured) is
// a device that cannot be used: bad input, exit 2.
void on_overrun(const sb::Overrun& o) {
    end_run(sb::kOverrunMarker + o.why, o.why, o.setup ? 2 : 1);
}

// The command's exit code, unless its results did not reach standard output (a full disk, a
// reader that quit): then one line and at least 1, never 0 for results nobody got.
int stdout_written(int exit_code) {
    std::cout.flush();
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    const int err = errno;
    if (flushed && !std::ferror(stdout) && std::cout.good())
        return exit_code;
    std::fprintf(stderr, "stagebench: error: cannot write the results to standard output%s%s\n",
                 err ? ": " : "", err ? std::strerror(err) : "");
    return exit_code == 0 ? 1 : exit_code;
}

}  // namespace

int main(int argc, char** argv) {
    // A peer that goes away (an RPC server killed mid-run, a reader of stdout that quit) must
    // be an error the code reports, not a silent death by SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    sb::set_fatal_handler(on_fatal);
    sb::set_overrun_action(on_overrun);
    sb::install_crash_handlers(on_crash);
    sb::install_interrupt_handlers();
    sb::cli::Context ctx{std::cout, std::cerr, 0, {}, {}};
#ifdef SB_AGENT_ISA
    // The static agent (STAGEBENCH_AGENT=ON): its CPU kernels are built for one ARM level, and
    // on a CPU without it they would stop on an illegal instruction in the middle of a run.
    if (const auto cpu = sb::this_cpu_arm_features())
        if (const auto why = sb::arm_level_refusal(*sb::parse_arm_level(SB_AGENT_ISA), *cpu)) {
            std::fprintf(stderr, "stagebench: error: %s\n", why->c_str());
            return 2;
        }
    return stdout_written(sb::cli::run_agent_cli(argc, argv, ctx));
#else
    return stdout_written(sb::cli::run_cli(argc, argv, ctx));
#endif
}
