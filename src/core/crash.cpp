#include "core/crash.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>

namespace sb {
namespace {

void (*g_on_crash)(const char*) = nullptr;
char g_description[512];

const char* signal_words(int sig) {
    switch (sig) {
        case SIGSEGV:
            return "segmentation fault (SIGSEGV)";
        case SIGBUS:
            return "bus error (SIGBUS)";
        case SIGILL:
            return "illegal instruction (SIGILL)";
        case SIGFPE:
            return "arithmetic fault (SIGFPE)";
        case SIGABRT:
            return "abort (SIGABRT)";
        default:
            return "fatal signal";
    }
}

const void* pc_of(const void* context) {
    if (!context)
        return nullptr;
    const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    return reinterpret_cast<const void*>(uc->uc_mcontext.pc);
#else
    (void)uc;
    return nullptr;
#endif
}

// A C++ exception nothing caught (a GPU backend's vk::DeviceLostError on its own thread):
// std::terminate's handler, in an ordinary context, names it before libstdc++ would abort.
[[noreturn]] void on_terminate() {
    alarm(kCrashLastWordsS);
    static std::string description;
    description = uncaught_description(std::current_exception());
    g_on_crash(description.c_str());
    _exit(1);
}

void on_signal(int sig, siginfo_t* info, void* context) {
    alarm(kCrashLastWordsS);
    // Sent by another process (kill -SEGV): no instruction of ours faulted.
    if (info && info->si_code <= 0 && info->si_pid != getpid()) {
        std::snprintf(g_description, sizeof g_description, "%s sent by process %d",
                      signal_words(sig), static_cast<int>(info->si_pid));
        g_on_crash(g_description);
        _exit(1);
    }
    g_on_crash(crash_description(sig, pc_of(context)));
    _exit(1);  // on_crash does not return; should it, the process still ends here
}

}  // namespace

const char* crash_description(int sig, const void* pc) {
    const char* words = signal_words(sig);
    Dl_info info{};
    if (sig == SIGABRT) {
        // abort() is always libc's: who called it is in what was printed before.
        std::snprintf(g_description, sizeof g_description,
                      "%s: an exception nothing caught or a failed check (see the lines above)",
                      words);
    } else if (!pc) {
        std::snprintf(g_description, sizeof g_description, "%s at an unknown address", words);
    } else if (dladdr(pc, &info) == 0 || !info.dli_fname) {
        std::snprintf(g_description, sizeof g_description,
                      "%s at an address outside every loaded library (code made at run time, "
                      "such as a driver's compiled shader)",
                      words);
    } else {
        // The running binary's own name comes back as it was started ("build/bin/stagebench").
        Dl_info self{};
        const bool ours = dladdr(reinterpret_cast<const void*>(&crash_description), &self) != 0 &&
                          self.dli_fbase == info.dli_fbase;
        const char* slash = std::strrchr(info.dli_fname, '/');
        std::snprintf(g_description, sizeof g_description, "%s in %s", words,
                      ours    ? "stagebench itself"
                      : slash ? slash + 1
                              : info.dli_fname);
    }
    return g_description;
}

std::string uncaught_description(const std::exception_ptr& e) {
    if (!e)
        return "std::terminate called without an exception";
    std::string type = "unknown type", what;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        what = x.what();
    } catch (...) {
    }
    // The type of the exception being handled (the one just rethrown and caught above is done
    // with; ask for the pointer's own).
    try {
        std::rethrow_exception(e);
    } catch (...) {
        if (const std::type_info* t = abi::__cxa_current_exception_type()) {
            int status = 0;
            char* name = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
            type = status == 0 && name ? name : t->name();
            std::free(name);
        }
    }
    return "an exception nothing caught (" + type + ")" + (what.empty() ? "" : ": " + what);
}

void install_crash_handlers(void (*on_crash)(const char* description)) {
    g_on_crash = on_crash;
    std::set_terminate(on_terminate);
    static char stack[64 * 1024];
    stack_t ss{};
    ss.ss_sp = stack;
    ss.ss_size = sizeof stack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
        sigaction(sig, &sa, nullptr);
}

}  // namespace sb
