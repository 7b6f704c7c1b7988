#pragma once
// Helpers for the telemetry tests (header-only, not part of the library): a private copy of a
// fixture tree, file writers, a writer thread that changes files over time, a fake clock.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.hpp"

#ifndef SB_SOURCE_DIR
#error "SB_SOURCE_DIR must point at the repository root"
#endif

namespace sb::testing {

// A copy of tests/fixtures/telemetry/<device> in a fresh temporary directory, removed on
// destruction. root() is its sysfs root.
class FixtureCopy {
  public:
    explicit FixtureCopy(const std::string& device) {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / "sb_telemetry_XXXXXX").string();
        dir_ = ::mkdtemp(tmpl.data());
        std::filesystem::copy(std::string(SB_SOURCE_DIR) + "/tests/fixtures/telemetry/" + device,
                              dir_,
                              std::filesystem::copy_options::recursive |
                                  std::filesystem::copy_options::copy_symlinks);
    }
    ~FixtureCopy() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    FixtureCopy(const FixtureCopy&) = delete;
    FixtureCopy& operator=(const FixtureCopy&) = delete;
    std::string dir() const { return dir_; }
    std::string root() const { return dir_ + "/sys"; }
    std::string path(const std::string& rel) const { return root() + "/" + rel; }

  private:
    std::string dir_;
};

// Replaces a file atomically (write + rename), as a careful writer would.
inline void write_atomic(const std::string& path, const std::string& content) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << content;
    }
    std::filesystem::rename(tmp, path);
}

// Rewrites a file in place (truncate + write): readers may see it empty for a moment.
inline void write_in_place(const std::string& path, const std::string& content) {
    std::ofstream f(path, std::ios::trunc);
    f << content;
}

// Calls fn(seconds since start, on sb::now_ns) every period until destroyed.
class Writer {
  public:
    Writer(std::function<void(double)> fn, std::chrono::microseconds period)
        : t0_ns_(now_ns()), fn_(std::move(fn)) {
        fn_(0.0);
        thread_ = std::thread([this, period] {
            while (!stop_.load()) {
                std::this_thread::sleep_for(period);
                fn_(static_cast<double>(now_ns() - t0_ns_) * 1e-9);
            }
        });
    }
    ~Writer() { stop(); }
    // Ends the thread. A test reads the writer's log only after this: a write can be visible in
    // the file while the thread, descheduled, has not yet logged it.
    void stop() {
        stop_.store(true);
        if (thread_.joinable())
            thread_.join();
    }
    int64_t t0_ns() const { return t0_ns_; }

  private:
    int64_t t0_ns_;
    std::function<void(double)> fn_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// What a writer put into a counter file (unwrapped values, increasing) with the time span of
// each write, so that a test can bound what a reader may have seen in a time span without
// trusting the scheduler: a writer thread can be descheduled for tens of milliseconds.
class WriteLog {
  public:
    void add(int64_t before_ns, int64_t after_ns, double value) {
        std::lock_guard lk(mu_);
        entries_.push_back({before_ns, after_ns, value});
    }
    // [lowest, highest] value the file may have held at some instant of [t_lo, t_hi]: at least
    // the last write finished by t_lo, at most the last write started by t_hi.
    std::pair<double, double> range(int64_t t_lo, int64_t t_hi) const {
        std::lock_guard lk(mu_);
        double lo = entries_.front().value, hi = entries_.front().value;
        for (const auto& e : entries_) {
            if (e.after_ns <= t_lo)
                lo = e.value;
            if (e.before_ns <= t_hi)
                hi = e.value;
        }
        return {lo, hi};
    }
    // Range of the increase between two reads made in [b, b + b_read] and [e, e + e_read].
    std::pair<double, double> delta(int64_t b, int64_t b_read, int64_t e, int64_t e_read) const {
        auto rb = range(b, b + b_read), re = range(e, e + e_read);
        return {re.first - rb.second, re.second - rb.first};
    }

    // Integral over [ta, tb] (value x seconds) of what the file held, taking each write to
    // take effect when it finished: the analytic answer for a gauge the writer produced.
    double integral(int64_t ta, int64_t tb) const {
        std::lock_guard lk(mu_);
        double sum = 0;
        for (std::size_t k = 0; k < entries_.size(); ++k) {
            int64_t from = std::max(entries_[k].after_ns, ta);
            int64_t to = k + 1 < entries_.size() ? std::min(entries_[k + 1].after_ns, tb) : tb;
            if (to > from)
                sum += entries_[k].value * static_cast<double>(to - from) * 1e-9;
        }
        return sum;
    }

  private:
    struct Entry {
        int64_t before_ns, after_ns;
        double value;
    };
    mutable std::mutex mu_;
    std::vector<Entry> entries_;
};

// Whether a counter's measured increase is what a writer's log allows, [lo, hi], less some
// whole wraps (k >= 0): a reader stalled longer than a wrap period cannot see one, whatever it
// does. eps absorbs the file's rounding.
inline bool within_less_whole_wraps(double got, double lo, double hi, double range, double eps) {
    for (double k = 0; got + k * range <= hi + eps; ++k) {
        if (got + k * range >= lo - eps)
            return true;
    }
    return false;
}

// A clock the test moves by hand.
struct FakeClock {
    int64_t t_ns = 1'000'000'000;
    std::function<int64_t()> fn() {
        return [this] { return t_ns; };
    }
    void set_s(double s) { t_ns = 1'000'000'000 + static_cast<int64_t>(s * 1e9); }
};

}  // namespace sb::testing
