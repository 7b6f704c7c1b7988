#pragma once
// A sensor log recorded beside a run (`run`/`sustained --telemetry-log tegrastats:FILE`),
// aligned to the run's stages by time. The log's lines carry wall-clock stamps; the run's stage
// marks are on the run's clock (sb::now_ns, CLOCK_MONOTONIC, in a real run). At open, the offset
// between the two clocks is read once (wall - run's clock, back to back, the closest of five
// tries; half that pair's gap is how far the offset can be off), and every row's wall time minus
// that offset is its time on the run's clock. The log's rows are then samples of a
// replayed source in the run's Sampler (Sampler::ingest), so stage energy, gauges and the
// whole-device total come from the log like from any power gauge (integrated, trapezoid). The
// log is read again, whole, whenever the run asks (sync): at the end of every test, waiting
// until the log has a line past that moment (at most two intervals and a second), and at the
// end.
//
// Errors (sb::Error(input)): a log that cannot be read, that has no tegrastats line within a
// few seconds of the start, has no date stamps (its lines cannot be placed in time), or lacks
// the named rail.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "telemetry/sampler.hpp"
#include "telemetry/tegrastats.hpp"

namespace sb {

struct TelemetryLogChoice {
    std::string kind;  // "tegrastats"
    std::string path;
    std::optional<std::string> rail;     // --telemetry-log-rail (default VDD_IN, POM_5V_IN)
    std::optional<int64_t> interval_ns;  // --telemetry-log-interval (default: from the stamps)
};

// "tegrastats:FILE" -> kind and path; sb::Error(usage) for anything else.
TelemetryLogChoice parse_telemetry_log(const std::string& spec);

// The clocks a log is read on, the run's (RunSetup): its clock (the axis of the stage marks and
// of every deadline here), how the feed waits on it between reads of the log, and the wall clock
// the log's stamps are on (read only to place them). A real run: sb::now_ns, sb::sleep_ns and
// sb::wall_ns; tests: a simulated timeline and a wall clock at an offset from it.
struct LogClocks {
    Clock clock;
    Pause pause;
    Clock wall;
};

class TelemetryLogFeed {
  public:
    // Reads the log as it is now (waiting up to wait_first_ns on clocks.clock for its first
    // complete line, reading it every 100 ms) and makes its source. Throws sb::Error(input) as
    // above.
    TelemetryLogFeed(TelemetryLogChoice choice, LogClocks clocks,
                     int64_t wait_first_ns = 5'000'000'000);

    // The source to put into the run's sampler (once; the feed keeps a pointer to it, the
    // sampler owns it).
    std::unique_ptr<Source> take_source();

    // Reads the log again and replaces the source's samples in tel; when wait_past_ns is set (on
    // the run's clock), first waits until the log has a row at or after it, reading it every 50
    // ms, at most two intervals and a second on the run's clock. Re-applies the idle baseline
    // (stage "idle") when there is one. Never throws: a log that became unreadable keeps what was
    // read, with a warning at the end.
    void sync(Sampler& tel, std::optional<int64_t> wait_past_ns);

    // The log's warnings (malformed lines, values refused, unreadable later) and, given the run's
    // stage windows, one naming the windows the log's rows do not cover.
    Warnings warnings(const std::vector<StageWindow>& stages) const;

    const std::string& rail() const;

  private:
    void read_log();

    TelemetryLogChoice choice_;
    LogClocks clocks_;
    int64_t offset_ns_ = 0;              // wall - the run's clock
    int64_t offset_uncertainty_ns_ = 0;  // the most offset_ns_ can be off by
    TegrastatsLog log_;
    TegrastatsTimes times_;
    std::unique_ptr<TegrastatsLogSource> owned_;
    TegrastatsLogSource* source_ = nullptr;
    std::optional<std::string> read_error_;
};

}  // namespace sb
