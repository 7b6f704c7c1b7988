#include "core/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/interrupt.hpp"

namespace sb {

int64_t StageDeadlines::budget_ns(const std::string& name, double factor) const {
    int64_t base = timeout_ns_;
    if (auto it = longest_.find(name); it != longest_.end())
        base = std::max(base, static_cast<int64_t>(kStageBudgetGrowth * it->second));
    return static_cast<int64_t>(factor * static_cast<double>(base));
}

std::optional<std::string> StageDeadlines::poll(const StageMark& mark, int64_t now_ns,
                                                int interrupts) {
    const char* name = mark.name.load(std::memory_order_acquire);
    const uint64_t gen = mark.generation.load(std::memory_order_acquire);
    // The stage watched before has ended (another one, or none, is marked now): keep how long
    // it took, as far as this clock saw it.
    if (gen_ && (*gen_ != gen || !name)) {
        int64_t& longest = longest_[name_];
        longest = std::max(longest, now_ns - since_ns_);
        gen_.reset();
    }
    if (!name)
        return std::nullopt;
    if (!gen_) {
        gen_ = gen;
        name_ = name;
        factor_ = mark.factor.load(std::memory_order_relaxed);
        since_ns_ = now_ns;
        interrupt_seen_ns_.reset();
    }
    const double ran_s = static_cast<double>(now_ns - since_ns_) * 1e-9;
    if (interrupts >= 2)
        return fmt::format("interrupted twice (Ctrl-C) while {} ran", name_);
    if (interrupts >= 1) {
        if (!interrupt_seen_ns_)
            interrupt_seen_ns_ = now_ns;
        if (static_cast<double>(now_ns - *interrupt_seen_ns_) * 1e-9 >= kInterruptGraceS)
            return fmt::format(
                "interrupted (Ctrl-C) while {} ran, and it did not end within "
                "{:g} s",
                name_, kInterruptGraceS);
    }
    const int64_t budget = budget_ns(name_, factor_);
    if (factor_ > 0 && now_ns - since_ns_ > budget) {
        if (mark.setup.load(std::memory_order_relaxed))
            return fmt::format("{} did not finish within {:g} s: the device stopped answering",
                               name_, static_cast<double>(budget) * 1e-9);
        return fmt::format("{} did not finish within {:g} s (--stage-timeout; it ran {:.0f} s)",
                           name_, static_cast<double>(budget) * 1e-9, ran_s);
    }
    return std::nullopt;
}

namespace {

StageMark g_mark;
std::atomic<double> g_timeout_s{kDefaultStageTimeoutS};
std::mutex g_action_mu;
std::function<void(const Overrun&)> g_action;
std::once_flag g_started;

int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void watch() {
    double timeout = g_timeout_s.load();
    StageDeadlines deadlines(timeout);
    std::optional<uint64_t> spoken;  // the stage an action that returned was called for
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (const double t = g_timeout_s.load(); t != timeout) {
            timeout = t;
            deadlines = StageDeadlines(timeout);
        }
        const bool setup = g_mark.setup.load(std::memory_order_acquire);
        const uint64_t gen = g_mark.generation.load(std::memory_order_acquire);
        auto why = deadlines.poll(g_mark, steady_ns(), interrupt_count());
        if (!why || spoken == gen)
            continue;
        std::function<void(const Overrun&)> action;
        {
            std::lock_guard<std::mutex> lock(g_action_mu);
            action = g_action;
        }
        if (action) {
            action(Overrun{*why, setup});
            spoken = gen;  // an action that returns has said its piece for this stage
        }
    }
}

}  // namespace

void set_stage_timeout(double seconds) {
    if (seconds > 0)
        g_timeout_s.store(seconds);
}

std::optional<std::string> running_setup_step() {
    const char* name = g_mark.name.load(std::memory_order_acquire);
    if (!name || !g_mark.setup.load(std::memory_order_acquire))
        return std::nullopt;
    return std::string(name);
}

void set_overrun_action(std::function<void(const Overrun&)> action) {
    std::lock_guard<std::mutex> lock(g_action_mu);
    g_action = std::move(action);
}

StageGuard::StageGuard(const char* name, double factor)
    : outer_name_(g_mark.name.load(std::memory_order_relaxed)),
      outer_factor_(g_mark.factor.load(std::memory_order_relaxed)),
      outer_setup_(g_mark.setup.load(std::memory_order_relaxed)) {
    std::call_once(g_started, [] { std::thread(watch).detach(); });
    g_mark.factor.store(factor, std::memory_order_relaxed);
    g_mark.setup.store(false, std::memory_order_relaxed);
    g_mark.generation.fetch_add(1, std::memory_order_release);
    g_mark.name.store(name, std::memory_order_release);
    defer_second_interrupt(true);
}

// The budget is factor x the stage timeout: the factor that makes it budget.seconds.
StageGuard::StageGuard(const char* name, SetupBudget budget)
    : StageGuard(name, budget.seconds / g_timeout_s.load()) {
    g_mark.setup.store(true, std::memory_order_release);
}

StageGuard::~StageGuard() {
    defer_second_interrupt(outer_name_ != nullptr);
    g_mark.factor.store(outer_factor_, std::memory_order_relaxed);
    g_mark.setup.store(outer_setup_, std::memory_order_relaxed);
    g_mark.name.store(outer_name_, std::memory_order_release);
    g_mark.generation.fetch_add(1, std::memory_order_release);
}

}  // namespace sb
