#pragma once
// The seed of a seeded fuzz test, and its report. A fuzz test draws its cases from one seed: its
// own fixed one, or SB_FUZZ_SEED when set (to reproduce a failure seen with another seed, or
// to explore further). Every run prints the seed and the number of cases it tried, and every
// failure names the seed (SCOPED_TRACE), so that `SB_FUZZ_SEED=N build/bin/..._test
// --gtest_filter=...` runs the same cases again.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

namespace sbtest {

class FuzzRun {
  public:
    // fixed: the test's own seed, used unless SB_FUZZ_SEED holds a decimal number.
    explicit FuzzRun(uint64_t fixed)
        : seed_(seed_from_env(fixed)),
          name_(current_test()),
          trace_(__FILE__, __LINE__, reproduce()) {}
    ~FuzzRun() {
        std::cout << "[fuzz] " << name_ << ": " << cases_ << " cases, " << reproduce() << "\n";
    }
    FuzzRun(const FuzzRun&) = delete;
    FuzzRun& operator=(const FuzzRun&) = delete;

    uint64_t seed() const { return seed_; }
    // Counts one case tried; returns its number (0, 1, ...).
    int next_case() { return cases_++; }
    int cases() const { return cases_; }

  private:
    static uint64_t seed_from_env(uint64_t fixed) {
        const char* s = std::getenv("SB_FUZZ_SEED");
        if (!s || !*s)
            return fixed;
        char* end = nullptr;
        const unsigned long long v = std::strtoull(s, &end, 10);
        return end && *end == '\0' ? v : fixed;
    }
    static std::string current_test() {
        const auto* info = testing::UnitTest::GetInstance()->current_test_info();
        return info ? std::string(info->test_suite_name()) + "." + info->name() : "fuzz";
    }
    std::string reproduce() const {
        return "seed " + std::to_string(seed_) + " (SB_FUZZ_SEED=" + std::to_string(seed_) +
               " reproduces)";
    }
    uint64_t seed_;
    int cases_ = 0;
    std::string name_;
    testing::ScopedTrace trace_;
};

}  // namespace sbtest
