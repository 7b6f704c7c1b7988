#pragma once
// A program run to completion for the fleet: ssh, adb, a shell. Its output is captured (or
// written to a file), it gets a deadline, and Ctrl-C ends it. Never throws for the program's
// own failure: the caller reads exit_code, timed_out and the output.
#include <string>
#include <vector>

namespace sb {

struct ProcessResult {
    int exit_code = -1;        // the program's exit status; -1 when killed or not started
    int signal = 0;            // the signal that ended it (0: none)
    bool timed_out = false;    // killed at the deadline
    bool interrupted = false;  // killed because of Ctrl-C (interrupt_requested())
    bool started = true;       // false when argv[0] could not be started
    std::string out, err;      // stdout (unless written to a file) and stderr
    bool ok() const { return exit_code == 0; }
    // The last non-empty line of stderr (else stdout), trimmed: a program's own one-line error.
    std::string last_line() const;
};

struct ProcessOptions {
    double timeout_s = 600;              // <= 0: none
    std::string stdin_path;              // "" : /dev/null
    std::string stdout_path;             // "" : captured into out; else written to this file
    std::size_t max_capture = 16 << 20;  // bytes kept of out and of err each (the rest dropped)
};

// Runs argv (argv[0] looked up on PATH) in its own process group; on the deadline or Ctrl-C
// the whole group gets SIGTERM, then SIGKILL after 2 s.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& o = {});

// s quoted for a POSIX shell: 'it'\''s'.
std::string shell_quote(const std::string& s);
// argv as one shell command line, every word quoted.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace sb
