#pragma once
// The telemetry sampler: a background thread reads every source at a fixed rate on one
// monotonic clock (sb::now_ns, the clock of the engines' stage markers) and keeps the raw time
// series. Stage boundaries are marked by the caller; at each mark the energy counters (and
// power gauges) are read synchronously, so stage energy comes from the counters at the exact
// boundaries, not from interpolated samples. Power-only sources are integrated (trapezoid)
// over the stage. An idle baseline turns gross energy into net energy (above idle).
//
// Typical use (a scenario):
//   Sampler s(discover_sources());
//   s.measure_idle(2'000'000'000);      // before the run; starts/stops the thread as needed
//   s.start();
//   s.mark("prefill", true);  ...  s.mark("prefill", false, n_prompt_tokens);
//   s.mark("decode", true);   ...  s.mark("decode", false, n_generated_tokens);
//   s.stop();
//   nlohmann::json j = to_json(s.record());   // telemetry_json.hpp
//
// Thread-safety: every public member function may be called from any thread; calls are
// serialised internally (a mark waits for at most one source read of the sampler thread, a few
// ms at worst when a counter file is being rewritten and its read is retried).
// Errors: hz outside (0, 1000] throws sb::Error(usage) from the constructor; nothing else
// throws except std::bad_alloc. Malformed readings become missing samples and warnings.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/warning.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/source.hpp"

namespace sb {

struct SamplerOptions {
    double hz = 10;                  // periodic sampling rate, (0, 1000]
    std::function<int64_t()> clock;  // empty: sb::now_ns (tests inject a fake clock)
};

// Energy of one metric over a stage: an energy counter, or an integrated power gauge of a
// sensor that has no counter.
struct EnergyStat {
    std::string metric;  // e.g. "rapl.package-0.energy_uj", "battery.BAT0.power_mw"
    std::string sensor;
    std::string method;                   // "counter" (exact boundary reads) | "power_integral"
    std::optional<double> energy_j;       // gross; null when the boundary values are missing
    std::optional<double> mean_power_mw;  // energy / duration
    std::optional<double> max_power_mw;   // highest sampled (or counter-derived) power
    std::optional<double> idle_power_mw;  // from the idle baseline, when measured
    std::optional<double> net_energy_j;   // energy_j - idle_power_mw * duration
    std::optional<double> j_per_token, net_j_per_token;  // when the stage has a token count
    bool system_total = false;                           // whole-device measurement (see Metric)
    std::optional<std::string> within;                   // nested in this sensor: never add the two
    bool below_refresh = false;  // the stage is shorter than the metric's refresh
};

// A gauge over a stage (temperature, frequency, voltage, current, percent, flags, and power
// gauges that are not integrated because their sensor has an energy counter). Values in the
// metric's canonical unit; the value in force at the stage start is the last reading at or
// before it. mean is time-weighted (sample and hold). flags: max is the OR of all values.
struct GaugeStat {
    std::string metric;
    Quantity quantity = Quantity::temperature;
    std::optional<double> start, end, min, max, mean;
    std::size_t samples = 0;  // readings inside the stage
    std::size_t missing = 0;  // of which missing (unreadable or malformed)
};

// Time at each frequency over a stage, for one cpufreq policy or GPU.
struct Residency {
    std::string sensor;
    std::string method;  // "time_in_state" (kernel counters) | "sampled" (frequency gauge)
    std::vector<std::pair<double, double>> freq_khz_fraction;  // ascending frequency
};

struct StageTelemetry {
    std::string stage;
    int occurrence = 0;  // 0 for the first begin/end pair with this name, 1 for the next...
    int64_t begin_ns = 0, end_ns = 0, duration_ns = 0;
    // How long the counter reads at each boundary took (the counters' values are from within
    // [begin_ns, begin_ns + begin_read_ns]); large values mean slow sensors (I2C, NVML).
    int64_t begin_read_ns = 0, end_read_ns = 0;
    std::optional<int64_t> tokens;
    std::vector<EnergyStat> energy;
    std::vector<GaugeStat> gauges;
    std::vector<Residency> residency;
    // Totals from the first system-total metric with a value (battery, psys, VDD_IN); null
    // when the device has none. Per-component figures are in `energy`.
    std::optional<std::string> total_metric;
    std::optional<double> total_energy_j, total_net_energy_j, j_per_token, net_j_per_token;
    Warnings warnings;  // short windows, throttling, not on battery, missing boundary reads...
};

struct IdleBaseline {
    int64_t duration_ns = 0;
    std::map<std::string, double> power_mw;  // energy metric -> mean idle power
};

// A metric's raw series. values are as read (counters not unwrapped); cumulative is the
// unwrapped counter minus its first value (counters only, empty for gauges).
struct Series {
    Metric metric;
    std::vector<int64_t> t_ns;
    std::vector<std::optional<double>> values;
    std::vector<std::optional<double>> cumulative;
};

struct StageMark {
    std::string stage;
    bool begin = true;
    int64_t t_ns = 0;     // the boundary
    int64_t read_ns = 0;  // how long the boundary reads took after t_ns
};

struct SourceInfo {
    std::string name, source_class;
    std::vector<std::string> metrics;
    std::map<std::string, std::string> properties;
};

// Everything the sampler recorded, for the result document.
struct TelemetryRecord {
    double hz = 0;
    std::vector<SourceInfo> sources;
    std::vector<SourceClassStatus> classes;  // found/absent per family, with reasons
    std::vector<Series> series;
    std::vector<StageMark> marks;
    std::vector<StageTelemetry> stages;  // every completed begin/end pair, in begin order
    std::optional<IdleBaseline> idle;
    Warnings warnings;  // discovery + per-source read problems
};

class Sampler {
  public:
    // Takes ownership of the discovered sources. Throws sb::Error(usage) for a bad hz.
    explicit Sampler(Discovery discovery, SamplerOptions options = {});
    ~Sampler();  // stops the thread
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    // Starts the background thread (first sample at once). No-op when already running.
    void start();
    // Stops and joins the thread. Idempotent. Recorded data stays available.
    void stop();
    bool running() const;

    // One synchronous read of every periodic source at clock() (tests with a fake clock).
    void sample_now();

    // Records a stage boundary at clock() and reads every energy-capable source at that
    // instant. tokens (optional, on the end mark) is the stage's token count for J/token.
    // Returns the boundary's timestamp. Stage names may repeat (one occurrence per pair).
    int64_t mark(const std::string& stage, bool begin, std::optional<int64_t> tokens = {});

    // Measures the idle baseline: marks "idle", waits duration_ns (sampling meanwhile; starts
    // and afterwards stops the thread if it was not running) and uses that stage as baseline.
    void measure_idle(int64_t duration_ns);
    // Uses the last completed occurrence of an already marked stage as the idle baseline.
    // Returns false when there is no such stage. Summaries are computed when asked for, so the
    // baseline applies to every stage, earlier ones included.
    bool set_idle_stage(const std::string& stage);

    // The last completed occurrence of stage; nullopt when none completed.
    std::optional<StageTelemetry> stage_summary(const std::string& stage) const;
    // Every completed occurrence of stage, in order.
    std::vector<StageTelemetry> stage_summaries(const std::string& stage) const;

    // A snapshot of everything recorded so far (copies; safe while running).
    TelemetryRecord record() const;

    // All metrics, in source order (fixed after construction).
    const std::vector<Metric>& metrics() const { return metrics_; }
    std::size_t source_count() const { return sources_.size(); }

  private:
    struct CounterState {
        bool have = false;
        double prev_raw = 0, acc = 0, first = 0;
        int64_t prev_t = 0;
        int rejects = 0;
        int failed_reads = 0;  // consecutive reads that failed even after retries
        std::size_t glitches = 0, resets = 0;
    };
    struct SeriesData {
        std::vector<int64_t> t_ns;
        std::vector<std::optional<double>> raw, unwrapped;
    };
    struct MarkData {
        StageMark mark;
        std::optional<int64_t> tokens;
        std::vector<std::optional<double>> values;  // per metric: unwrapped counters, gauges
    };

    int64_t clock() const;
    void loop();
    void read_source_locked(std::size_t s, int64_t t, bool boundary, MarkData* mark);
    std::optional<double> unwrap_locked(std::size_t m, double raw, int64_t t);
    std::vector<StageTelemetry> summaries_locked(const std::string* only) const;
    StageTelemetry summarize_locked(const std::string& stage, int occurrence, std::size_t b,
                                    std::size_t e) const;

    std::vector<std::unique_ptr<Source>> sources_;
    std::vector<SourceClassStatus> classes_;
    Warnings discovery_warnings_;
    SamplerOptions options_;
    std::vector<Metric> metrics_;
    std::vector<std::size_t> first_metric_;  // per source
    std::vector<bool> boundary_source_;      // read at marks
    std::vector<std::string> source_names_;

    mutable std::mutex mu_;  // sources, series, marks, counters, idle
    std::vector<SeriesData> series_;
    std::vector<CounterState> counters_;
    std::vector<MarkData> marks_;
    std::optional<IdleBaseline> idle_;
    std::vector<std::optional<double>> buf_;

    mutable std::mutex run_mu_;  // thread start/stop
    std::condition_variable cv_;
    bool stop_requested_ = false;
    std::thread thread_;
};

}  // namespace sb
