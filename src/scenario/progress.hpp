#pragma once
// The one progress reporter of a measuring command, owned by its run context: what runs now,
// for people, on the error stream (never stdout, which carries results).
//
// On a terminal, one line per device is kept at the bottom and rewritten in place: the test,
// the repetition (or round) out of how many, the stage, and an estimate of the time left from
// the work done so far. Anything else printed meanwhile (note()) goes above those lines. When
// the stream is not a terminal (a log file, CI) there is no rewriting: a plain line each time a
// device starts another test or repetition, none per stage.
//
// Printing happens only in these calls, on the caller's thread: callers call them outside timed
// regions (the measuring loop calls them between stages), so progress never lands inside a
// measurement.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace sb {

struct ProgressStep {
    std::string test;                 // e.g. "pp512+tg128"
    int rep = 0;                      // 1-based repetition or round; 0 before the first
    int reps = 0;                     // out of (the most there can be); 0: unknown
    std::string stage;                // "loading the model", "warmup", "prefill", "decode", ...
    std::string unit = "repetition";  // what rep counts: "repetition", "round"
};

class Progress {
  public:
    // enabled false: prints nothing at all (-q). terminal: rewrite lines in place. clock: ns on
    // a monotonic clock (sb::now_ns in stagebench, a fake one in tests).
    Progress(std::ostream& err, bool enabled, bool terminal, std::function<int64_t()> clock);
    ~Progress();

    // Whether the error stream is a terminal (isatty on stderr).
    static bool stderr_is_terminal();

    // The amount of work the command will do, in any unit (repetitions, rounds), and how much is
    // done: the time left is elapsed x (total - done) / done. Without a total, no estimate.
    void set_total(double units);
    void advance(double units = 1);
    // The time left in seconds, when it can be estimated.
    std::optional<double> eta_s() const;

    // What a device (its device set, e.g. "CPU", "BLAS+RPC0") is doing now.
    void step(const std::string& device, const ProgressStep& s);
    // A device finished: its line is dropped.
    void done(const std::string& device);
    // A line of its own ("measuring the idle baseline (2 s)", "test pp512 on CPU failed: ..."),
    // printed with the "stagebench: " prefix above the status lines.
    void note(const std::string& line);
    // The same, printed even when progress is off (-q): what the user must see whatever they
    // asked (a failure beside the results, the interrupt's summary).
    void notice(const std::string& line);

  private:
    void redraw();
    void erase();
    std::string line_of(const std::string& device, const ProgressStep& s) const;

    std::ostream& err_;
    bool enabled_, terminal_;
    std::function<int64_t()> clock_;
    int64_t start_ns_;
    double total_ = 0, done_ = 0;
    std::map<std::string, ProgressStep> devices_;  // in name order: lines keep their places
    int drawn_ = 0;                                // status lines on the terminal now
};

// "42 s", "3 min 5 s", "1 h 12 min".
std::string format_duration_s(double seconds);

}  // namespace sb
