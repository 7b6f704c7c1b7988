#pragma once
// The core of the one repetition loop, below every folder that measures: which repetitions are
// due under a rule, and their times on an injected clock. A driver asks has_repeats_remaining()
// and times one repetition with time() (or adds one timed elsewhere, add()), as Google
// Benchmark's BenchmarkRunner asks HasRepeatsRemaining and runs DoOneRepetition.
// scenario/repetition.hpp's RepetitionRunner keeps a test's repetitions in one (its rule the
// test's config: test_repeat_rule; each repetition's time from the engine's timestamps, add());
// profile/op_replay.cpp times the replays of one graph through one (replay_rule), since
// profile/ sits below scenario/ (docs/architecture.md).
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/clock.hpp"

namespace sb {

// When repetitions stop: never before min_reps repetitions and min_spent_ns of their time,
// never after max_reps; in between, once max_spent_ns was spent or `enough` says so.
struct RepeatRule {
    int min_reps = 1;
    int max_reps = 1;
    int64_t min_spent_ns = 0;
    std::optional<int64_t> max_spent_ns;  // none: no bound on the time spent
    // Whether the samples so far (ns, in order) are enough; asked only between the minimums
    // and max_reps. Null: the minimums are enough.
    std::function<bool(const std::vector<int64_t>& samples_ns)> enough;
};

class Repetitions {
  public:
    // clock: what time() reads; null: sb::now_ns.
    explicit Repetitions(RepeatRule rule, Clock clock = {});

    // Whether another repetition is due: not stopped, and the rule says more.
    bool has_repeats_remaining() const;
    // Times one repetition: the clock read just before and just after once(), the difference
    // kept as its sample. once() returns false for a failed repetition: nothing is kept and
    // no repetition is due any more. Returns what once() returned.
    bool time(const std::function<bool()>& once);
    // Keeps a repetition timed elsewhere (an engine's own timestamps), ns.
    void add(int64_t ns);
    // No repetition is due any more (a failure, an interrupt).
    void stop() { stopped_ = true; }

    const std::vector<int64_t>& samples_ns() const { return samples_; }
    int reps() const { return static_cast<int>(samples_.size()); }
    int64_t spent_ns() const { return spent_; }
    // The least sample (interference only ever adds time); nullopt before the first.
    std::optional<int64_t> min_ns() const;

  private:
    RepeatRule rule_;
    Clock clock_;
    std::vector<int64_t> samples_;
    int64_t spent_ = 0;
    bool stopped_ = false;
};

}  // namespace sb
