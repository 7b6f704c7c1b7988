#pragma once
// Deadlines for the waits stagebench cannot bound itself. A thread that waits inside llama.cpp
// cannot be woken: its RPC client has no timeouts, so a server that took the connection and
// then stopped answering (suspended, its machine frozen, the link cut without a reset) leaves
// the measuring thread waiting forever, and Ctrl-C, which the loop only sees between stages,
// never ends the run.
//
// An engine marks each call that may wait with a StageGuard. A watchdog thread looks at the
// marked stage every 100 ms and ends the run through the overrun action (set_overrun_action;
// in stagebench main's handler for a stop inside llama.cpp: the running command's last words
// record the running test as failed, write what was measured to --out, --db and -o json, and
// the process ends with one line and exit 1) when:
//   - a stage has run longer than its budget: factor x max(stage timeout, 10 x the longest
//     stage of the same name seen so far), the stage timeout being --stage-timeout (default
//     kDefaultStageTimeoutS). A slow device thus earns a longer budget from its own finished
//     stages, and a stage that never finishes ends the run. Factor 0: no deadline (stages on
//     local devices, which cannot stop answering, are only watched for Ctrl-C);
//   - Ctrl-C (SIGINT or SIGTERM) came while a stage ran and that stage has not ended
//     kInterruptGraceS later (the loop stops after the stage by itself when it does end);
//   - a second Ctrl-C came while a stage ran.
// Marking costs the marking thread a few uncontended atomic operations and no clock read: the
// watchdog times stages with its own clock, to its polling resolution (100 ms), so guards may
// sit inside timed regions.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace sb {

inline constexpr double kDefaultStageTimeoutS = 120;
// What main puts in front of the watchdog's line when it hands it to the last words as the
// reason of the stop (engine/backends.hpp describe_llama_stop tells it from llama.cpp's own).
inline constexpr const char* kOverrunMarker = "stagebench watchdog: ";
inline constexpr double kInterruptGraceS = 5;
// A stage's budget grows to this many times the longest stage of the same name so far.
inline constexpr double kStageBudgetGrowth = 10;

// What the watchdog knows of the one running stage: a generation counter that changes with
// every guard (so a new stage under the same name is seen as new) and the stage's name and
// budget factor while one runs.
struct StageMark {
    std::atomic<uint64_t> generation{0};
    std::atomic<const char*> name{nullptr};  // null: no stage runs
    std::atomic<double> factor{1};
    std::atomic<bool> setup{false};  // a setup step (SetupBudget): its overrun is bad input
};

// The deadline logic, on a clock the caller supplies (the thread below uses the steady clock;
// tests use a fake one). Not thread-safe: one thread calls poll().
class StageDeadlines {
  public:
    explicit StageDeadlines(double stage_timeout_s = kDefaultStageTimeoutS)
        : timeout_ns_(static_cast<int64_t>(stage_timeout_s * 1e9)) {}

    // Looks at the mark at time now_ns; interrupts is how many Ctrl-Cs have come so far.
    // Returns why the run must end now (one line, e.g. "decode did not finish within 120 s"),
    // or nullopt.
    std::optional<std::string> poll(const StageMark& mark, int64_t now_ns, int interrupts);

    // The budget of the stage named name with factor, in ns.
    int64_t budget_ns(const std::string& name, double factor) const;
    // The longest stage of each name seen ended so far, as this clock timed it.
    const std::map<std::string, int64_t>& longest_ns() const { return longest_; }

  private:
    int64_t timeout_ns_;
    std::map<std::string, int64_t> longest_;
    // The stage being watched: its generation, name, factor and when it was first seen.
    std::optional<uint64_t> gen_;
    std::string name_;
    double factor_ = 1;
    int64_t since_ns_ = 0;
    std::optional<int64_t> interrupt_seen_ns_;
};

// --stage-timeout, in seconds (> 0). Takes effect for stages that start afterwards.
void set_stage_timeout(double seconds);

// Why the watchdog ends the run: the line, and whether the stage that overran was a setup step
// (SetupBudget: connecting to a device before anything is measured, so the device cannot be
// used: bad input, exit 2) rather than a stage of a measurement (a fault while measuring, 1).
struct Overrun {
    std::string why;
    bool setup = false;
};
// What ends the run when a stage overruns: called once, on the watchdog thread; it is expected
// not to return (stagebench's main ends the process). Without an action the watchdog does
// nothing (the library never ends the process itself).
void set_overrun_action(std::function<void(const Overrun&)> action);

// A fixed budget in seconds for a setup step (e.g. registering an RPC server's devices, a few
// round trips), independent of --stage-timeout, which sizes measured stages.
struct SetupBudget {
    double seconds;
};

// The name of the setup step (a guard with a SetupBudget) running now, if one runs: a stop
// inside llama.cpp during it is the device's fault (bad input), as an overrun would be.
std::optional<std::string> running_setup_step();

// Marks a stage for as long as it lives (the first guard starts the watchdog thread). Guards
// nest on one thread: an inner guard's stage replaces the outer one's, and when it ends the
// outer stage is marked again (with a fresh clock). One thread measures at a time. name is kept
// by pointer: a string literal, or storage that is never freed.
class StageGuard {
  public:
    explicit StageGuard(const char* name, double factor = 1);
    StageGuard(const char* name, SetupBudget budget);
    ~StageGuard();
    StageGuard(const StageGuard&) = delete;
    StageGuard& operator=(const StageGuard&) = delete;

  private:
    const char* outer_name_;
    double outer_factor_;
    bool outer_setup_;
};

}  // namespace sb
