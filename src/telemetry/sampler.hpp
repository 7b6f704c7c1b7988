#pragma once
// The telemetry sampler: a background thread reads every source at a fixed rate on one
// monotonic clock (SamplerOptions::clock: sb::now_ns, or the run's) and keeps the raw time
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
//   TelemetrySection t = s.record();          // the result document's telemetry section
//
// It records in the result document's types (core/doc/telemetry_section.hpp), the one set of
// telemetry types: a stage window is a StageWindow (energy per meter, gauges, residency, the
// whole-system total), the run's record a TelemetrySection.
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

#include "core/doc/telemetry_section.hpp"
#include "core/warning.hpp"
#include "telemetry/discover.hpp"
#include "telemetry/source.hpp"

namespace sb {

struct SamplerOptions {
    double hz = 10;  // periodic sampling rate, (0, 1000]
    // The clock of every sample and mark: empty: sb::now_ns; a run's sampler is on the run's
    // clock (scenario/run_context.hpp), tests inject a fake one. The sampler's thread reads it
    // too, while it runs (start() to stop()): it must be thread-safe then.
    std::function<int64_t()> clock;
    // How measure_idle lets its duration pass on that clock: empty: sb::sleep_ns.
    std::function<void(int64_t ns)> pause = {};
};

// The document's record of a source's metric (its quantity and unit spelled out).
TelemetryMetric metric_record(const Metric& m);

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

    // Adds one sample of a replayed source (Source::replayed(), a log read beside the run) at
    // t_ns on this sampler's clock: values in the source's describe() order. Samples of a
    // source must come in time order; one at or before the source's last is dropped. Returns
    // false when no replayed source has that name. Summaries are computed when asked for, so
    // samples ingested after a stage ended count in it.
    bool ingest(const std::string& source, int64_t t_ns,
                const std::vector<std::optional<double>>& values);
    // Drops every sample of a replayed source (before the log is given again, whole, with
    // its times refined). False when no replayed source has that name.
    bool clear_replayed(const std::string& source);

    // Records a stage boundary at clock() and reads every energy-capable source at that
    // instant. tokens (optional, on the end mark) is the stage's token count for J/token.
    // Returns the boundary's timestamp. Stage names may repeat (one occurrence per pair).
    int64_t mark(const std::string& stage, bool begin, std::optional<int64_t> tokens = {});

    // Measures the idle baseline: marks "idle", waits duration_ns (SamplerOptions::pause;
    // sampling meanwhile: starts and afterwards stops the thread if it was not running) and uses
    // that stage as baseline.
    void measure_idle(int64_t duration_ns);
    // Uses the last completed occurrence of an already marked stage as the idle baseline.
    // Returns false when there is no such stage. Summaries are computed when asked for, so the
    // baseline applies to every stage, earlier ones included.
    bool set_idle_stage(const std::string& stage);

    // The window of the last completed occurrence of stage: energy per meter (an energy
    // counter read at the exact boundaries, else a power gauge of a sensor without one
    // integrated), gauges, frequency residency, the whole-system total (the first system-total
    // meter with a value, exact counters first; null when the device has none), with J/token
    // when the end mark carried tokens and net energy above the idle baseline. nullopt when
    // none completed.
    std::optional<StageWindow> stage_summary(const std::string& stage) const;
    // Every completed occurrence of stage, in order.
    std::vector<StageWindow> stage_summaries(const std::string& stage) const;

    // A snapshot of everything recorded so far (copies; safe while running): sources, classes
    // (absent ones named), metrics, every raw series (counters also unwrapped, from 0, as
    // cumulative), marks, every completed stage window in begin order, the idle baseline and
    // the warnings (discovery, per-source read problems, counter glitches and resets).
    TelemetrySection record() const;
    // The raw series of the metrics of one quantity (e.g. Quantity::frequency), as record()
    // has them; cheaper than the whole record.
    std::vector<TelemetrySeries> series_of(Quantity q) const;

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
        TelemetryMark mark;
        std::optional<int64_t> tokens;
        std::vector<std::optional<double>> values;  // per metric: unwrapped counters, gauges
    };

    int64_t clock() const;
    void loop();
    void read_source_locked(std::size_t s, int64_t t, bool boundary, MarkData* mark);
    std::optional<double> unwrap_locked(std::size_t m, double raw, int64_t t);
    std::vector<StageWindow> summaries_locked(const std::string* only) const;
    StageWindow summarize_locked(const std::string& stage, int occurrence, std::size_t b,
                                 std::size_t e) const;
    TelemetrySeries series_locked(std::size_t m) const;

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
    std::optional<IdlePower> idle_;
    std::vector<std::optional<double>> buf_;

    mutable std::mutex run_mu_;  // thread start/stop
    std::condition_variable cv_;
    bool stop_requested_ = false;
    std::thread thread_;
};

}  // namespace sb
