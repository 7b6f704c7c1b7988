#pragma once
// Helpers for the telemetry tests (header-only, not part of the library): a private copy of a
// fixture tree, file writers, a writer thread that changes files over time, a fake clock.
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

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
    ~Writer() {
        stop_.store(true);
        thread_.join();
    }
    int64_t t0_ns() const { return t0_ns_; }

  private:
    int64_t t0_ns_;
    std::function<void(double)> fn_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A clock the test moves by hand.
struct FakeClock {
    int64_t t_ns = 1'000'000'000;
    std::function<int64_t()> fn() {
        return [this] { return t_ns; };
    }
    void set_s(double s) { t_ns = 1'000'000'000 + static_cast<int64_t>(s * 1e9); }
};

}  // namespace sb::testing
