#include "core/repetitions.hpp"

#include <algorithm>
#include <utility>

#include "core/clock.hpp"

namespace sb {

Repetitions::Repetitions(RepeatRule rule, Clock clock)
    : rule_(std::move(rule)), clock_(std::move(clock)) {
    if (!clock_)
        clock_ = now_ns;
}

bool Repetitions::has_repeats_remaining() const {
    if (stopped_ || reps() >= rule_.max_reps)
        return false;
    if (reps() < rule_.min_reps || spent_ < rule_.min_spent_ns)
        return true;
    if (rule_.max_spent_ns && spent_ >= *rule_.max_spent_ns)
        return false;
    return rule_.enough && !rule_.enough(samples_);
}

bool Repetitions::time(const std::function<bool()>& once) {
    const int64_t t0 = clock_();
    const bool ok = once();
    const int64_t t1 = clock_();
    if (!ok) {
        stopped_ = true;
        return false;
    }
    add(t1 - t0);
    return true;
}

void Repetitions::add(int64_t ns) {
    samples_.push_back(ns);
    spent_ += ns;
}

std::optional<int64_t> Repetitions::min_ns() const {
    if (samples_.empty())
        return std::nullopt;
    return *std::min_element(samples_.begin(), samples_.end());
}

}  // namespace sb
