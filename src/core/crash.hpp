#pragma once
// A crash inside the process (a segmentation fault, bus error, illegal instruction, arithmetic
// fault, or an abort: a C++ exception nothing caught, a failed check), most often in llama.cpp or
// in a library it loaded: a GPU driver, on a thread of its own. What the user gets instead of
// "Segmentation fault": the same end as llama.cpp's own stop (core/last_word.hpp: the running test
// recorded as failed beside the ones before, the documents written), with the crash named by its
// signal and the library its faulting instruction belongs to.
//
// Best effort: the last words are not async-signal-safe. An alarm ends the process (SIGALRM's
// default action) if they hang, say on a heap the crash corrupted; the caller ends a fault
// inside them at once.
#include <exception>
#include <string>

namespace sb {

// What main puts in front of a crash's description when it hands it to the last words as the
// reason of the stop (engine/backends.hpp describe_llama_stop tells it from llama.cpp's own).
inline constexpr const char* kCrashMarker = "stagebench crash: ";
// Seconds the last words of a crash may take before SIGALRM ends the process.
inline constexpr unsigned kCrashLastWordsS = 30;

// "segmentation fault (SIGSEGV) in libvulkan_lvp.so": the signal and the file the instruction
// at pc belongs to (its base name; "stagebench itself" for the running binary), or "at an
// address outside every loaded library (code made at run time, such as a driver's compiled
// shader)" where none holds it, or "at an unknown address" without pc; an abort is always
// libc's, so it says where to look instead.
const char* crash_description(int sig, const void* pc);

// "an exception nothing caught (vk::DeviceLostError): vk::Device::waitForFences:
// ErrorDeviceLost": the exception's type, demangled, and its what() where it is a
// std::exception.
std::string uncaught_description(const std::exception_ptr& e);

// Installs std::terminate's handler (an exception nothing caught, described as above) and the
// handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT (on an alternate stack for
// this thread, so that a stack overflow here can be described): each arms the alarm,
// describes the crash ("... sent by process N" for a signal another process sent) and calls
// on_crash, which must not return.
void install_crash_handlers(void (*on_crash)(const char* description));

}  // namespace sb
