#pragma once
// A built-in load generator that runs alongside a benchmark, to measure interference: CPU
// spinners at a duty cycle and memory-bandwidth hogs. Spec: comma list of
//   cpu:N[@P%]   N threads busy P % of every 10 ms period (default 100 %), on the run's clock
//   mem:N        N threads copying between two 64 MiB buffers without pause
// e.g. "cpu:2@50%,mem:1". The load runs from start() until stop() or destruction.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"

namespace sb {

struct BackgroundSpec {
    int cpu_threads = 0;
    double cpu_duty = 1.0;  // fraction of each period spent busy
    int mem_threads = 0;
    std::string text;  // as given
};

// Throws sb::Error(usage) for a malformed spec.
BackgroundSpec parse_background(const std::string& spec);

class BackgroundLoad {
  public:
    // The duty cycle is kept on clock (the run's): a spinner is busy from a period's start on
    // clock until P % of it passed, then waits with pause until the period's end. Both are
    // called from the load's threads at once, so they must be thread-safe (sb::now_ns and
    // sb::sleep_ns in a real run).
    BackgroundLoad(BackgroundSpec spec, Clock clock, Pause pause);
    ~BackgroundLoad();
    BackgroundLoad(const BackgroundLoad&) = delete;
    BackgroundLoad& operator=(const BackgroundLoad&) = delete;
    void start();
    void stop();
    // Work the load did so far: CPU busy periods completed, and bytes copied by memory hogs.
    uint64_t cpu_periods() const { return cpu_periods_; }
    uint64_t mem_bytes() const { return mem_bytes_; }

  private:
    BackgroundSpec spec_;
    Clock clock_;
    Pause pause_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> cpu_periods_{0}, mem_bytes_{0};
    std::vector<std::thread> threads_;
};

}  // namespace sb
