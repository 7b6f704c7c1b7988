#pragma once
// A program run to completion: ssh, adb and a shell for the fleet, `stagebench run` for
// decompose --mode, a sensor's command (vcgencmd). Every run has a deadline: the whole
// process group is stopped at it, whatever the program does with its output (closes it and
// keeps running, floods it while ignoring SIGPIPE, hands it to a grandchild), so the caller
// always gets its result in bounded time. Its output is captured (or written to a file) up
// to a cap, and Ctrl-C ends it too. Never throws for the program's own failure: the caller
// reads exit_code, timed_out and the output.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

struct ProcessResult {
    int exit_code = -1;        // the program's exit status; -1 when killed or not started
    int signal = 0;            // the signal that ended it (0: none)
    bool timed_out = false;    // stopped at the deadline
    bool interrupted = false;  // stopped because of Ctrl-C (interrupt_requested())
    bool over_limit = false;   // stopped: its stdout passed ProcessOptions::max_stdout_file
    std::string output_error;  // with max_stdout_file: why stdout_path could not be written
                               // (a full disk); the program was stopped there
    bool started = true;       // false when argv[0] could not be started
    bool reaped = true;        // false: it had not exited even after SIGKILL (stuck in the
                               // kernel); left behind, the result says what was seen
    std::string out, err;      // stdout (unless written to a file) and stderr
    bool ok() const { return exit_code == 0 && !over_limit && output_error.empty(); }
    // The last non-empty line of stderr (else stdout), trimmed: a program's own one-line error.
    std::string last_line() const;
};

struct ProcessOptions {
    // Seconds from the start until the group is stopped (SIGTERM, then SIGKILL after
    // kill_grace_s). 0 or less: a day (86400 s), the longest wait stagebench allows anywhere;
    // every child has a deadline.
    double timeout_s = 600;
    double kill_grace_s = 2;             // 0: SIGKILL at once (a sensor has nothing to save)
    std::string stdin_path;              // "" : /dev/null
    std::string stdout_path;             // "" : captured into out; else written to this file
    std::size_t max_capture = 16 << 20;  // bytes kept of out and of err each (the rest read
                                         // and dropped, so the program is not blocked by us)
    // With stdout_path: the most bytes written there (0: no limit). The output then passes
    // through stagebench; a program that sends more is stopped as at the deadline, the file
    // keeps the first max_stdout_file bytes, and the result says over_limit.
    std::uint64_t max_stdout_file = 0;
    // Runs to its end or its deadline even after Ctrl-C: for the clean-up that must still
    // happen then (closing what a run opened), never for a measurement.
    bool after_interrupt = false;
};

// Runs argv (argv[0] looked up on PATH) in its own process group, with SIGPIPE at its
// default, killed with stagebench (die_with_parent). Returns when the program has exited and its
// output pipes are closed, or at the deadline or on Ctrl-C: the whole group then gets SIGTERM,
// SIGKILL after kill_grace_s, and the result comes at most 3 s after that even if something outside
// the group holds the pipes or the program cannot be reaped.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& o = {});

// For a child between fork and exec (async-signal-safe): the kernel SIGKILLs it when the
// thread that forked it ends, so no child outlives stagebench however stagebench ends (a second
// Ctrl-C, SIGHUP, SIGKILL, llama.cpp's abort), and it ends at once (exit 127) when parent, the
// forking process's pid, is already gone. The request survives exec (not into a set-user-ID
// program). A child that must outlive its forking thread cannot use it: fork from a thread
// that lives as long as the child.
void die_with_parent(pid_t parent);

// s quoted for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string& s);
// argv as one shell command line, every word quoted.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace sb
