#pragma once
// tegrastats logs (NVIDIA Jetson, TX1 to Orin) read into telemetry series: the values NVIDIA's
// developer guides document for tegrastats, one row per line, each in the canonical unit of
// its quantity (telemetry/source.hpp):
//   [MM-DD-YYYY HH:MM:SS] (newer releases, local time, one-second resolution)
//   RAM X/YMB (lfb NxZMB)   -> tegrastats.ram.used_mb, .total_mb            (memory, MB)
//   SWAP X/YMB (cached ZMB) -> tegrastats.swap.used_mb, .total_mb, .cached_mb
//   CPU [X%@F,off,...] or CPU [X%,Y%,...]@F (older) or cpu [...] (TX1's first releases)
//                           -> tegrastats.cpuN.load_pct, tegrastats.cpuN.cur_freq_khz
//                              ("off": a core powered down; both values missing)
//   EMC_FREQ X%[@F] (EMC on TX1)      -> tegrastats.emc.load_pct, tegrastats.emc.freq_khz
//   GR3D_FREQ X%[@F | @[F0,F1]] (GR3D on TX1)
//                           -> tegrastats.gr3d.load_pct, tegrastats.gr3d.cur_freq_khz or
//                              tegrastats.gr3d.gpcN.cur_freq_khz (Orin's per-GPC clocks)
//   NAME@T.TC               -> tegrastats.NAME.temp_mc (a value at or below -40 C, e.g. Orin's
//                              "CV0@-256C" for a sensor that is absent, is missing)
//   NAME XmW/YmW (Orin, Xavier on newer releases) or NAME X/Y (TX2, Nano, Xavier on L4T 32)
//                           -> tegrastats.NAME.power_mw (instant), tegrastats.NAME.avg_power_mw
//                              (tegrastats' running average since it started)
// Other fields (APE, VIC_FREQ, NVENC, IRAM, ...) are named in `fields_not_read`.
// Everything read is a claim: a value outside its bounds is missing and counted; a line that
// is not a tegrastats line is skipped, counted and the first few named in a warning.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/doc/telemetry_section.hpp"
#include "core/result.hpp"
#include "core/warning.hpp"
#include "telemetry/source.hpp"

namespace sb {

struct TegrastatsRow {
    std::size_t line = 0;                       // 1-based line number in the log
    std::optional<int64_t> stamp_s;             // the date prefix, seconds since the Unix epoch
    int64_t t_ns = 0;                           // set by assign_times
    std::vector<std::optional<double>> values;  // parallel to TegrastatsLog::metrics
};

struct TegrastatsLog {
    std::vector<Metric> metrics;  // in order of first appearance
    std::vector<TegrastatsRow> rows;
    std::size_t lines = 0;      // non-empty lines seen
    std::size_t malformed = 0;  // lines skipped
    std::size_t rejected_values = 0;
    std::vector<std::string> fields_not_read;
    Warnings warnings;
    bool timestamped() const { return !rows.empty() && rows.front().stamp_s.has_value(); }
    // The metric's index, or nullopt.
    std::optional<std::size_t> find(const std::string& name) const;
};

// Reads a whole log. Never throws (a log with no tegrastats line has no rows: the caller
// decides that this is bad input). Date prefixes are local time (TZ is honoured).
TegrastatsLog parse_tegrastats(std::string_view text);

// How row times are given (import's --interval and --start).
struct TegrastatsTiming {
    std::optional<int64_t> interval_ns;  // tegrastats' --interval; nullopt: see assign_times
    std::optional<int64_t> start_ns;     // Unix time of the first line (untimestamped logs)
};

// How the times were found, for the document and the notes.
struct TegrastatsTimes {
    int64_t interval_ns = 0;
    std::string interval_from;  // "--interval", "the date stamps", "tegrastats' default"
    bool absolute = false;      // t_ns are Unix times (else: from the first line)
    std::string method;         // how t_ns were found, one sentence
    double uncertainty_ms = 0;  // the largest error a row's time can have from the method
    int segments = 0;           // runs of rows whose stamps fit one phase
};

// Gives every row its t_ns (ns since the Unix epoch when absolute, else since the first row).
// Timestamped logs: the stamps have one-second resolution, so rows of a segment are placed at
// phase + k * interval, the interval and the phase fitted together to what every stamp of the
// segment allows (the interval the one given when given; else the middle of what the stamps
// allow, or tegrastats' default 1000 ms when they leave it open and allow it); a stamp that no
// interval and phase fit (tegrastats drifting, a clock step) begins a new segment.
// uncertainty_ms bounds how far any row's time can be from where it was placed.
// Untimestamped logs: start + k * interval (start 0 when not given: relative times).
// Throws sb::Error(usage) for an interval outside 1 ms .. 1 h.
TegrastatsTimes assign_times(TegrastatsLog& log, const TegrastatsTiming& timing);

// The log as a telemetry record (source class "tegrastats", its properties, metrics, series,
// warnings); avg_power metrics included only when with_averages.
TelemetrySection tegrastats_record(const TegrastatsLog& log, const TegrastatsTimes& times,
                                   const std::string& path, bool with_averages = true);

// A --start value: "YYYY-MM-DDTHH:MM:SS" (or a space for the T), local time, or UTC with a
// trailing "Z"; seconds may have a fraction. nullopt for anything else. Returns Unix ns.
std::optional<int64_t> parse_start_time(std::string_view text);

// `stagebench import tegrastats`: the log at path read (sb::Error(input) when it cannot be
// read or holds no tegrastats line), timed, and kept as doc.telemetry with its warnings in
// doc.warnings; notes (rows, times, skipped lines) on err.
struct TegrastatsImportOptions {
    std::string path;
    TegrastatsTiming timing;
};
void import_tegrastats(const TegrastatsImportOptions& o, ResultDocument& doc, std::ostream& err);

// A log read beside a run: a Source whose samples are ingested by the run
// (Sampler::ingest) at the log's times mapped onto the run's clock, never read by the sampler.
// Its metrics are the log's instant values (no running averages: they say nothing about a
// stage); the rail `rail` (default VDD_IN, else POM_5V_IN, else none: AGX Xavier and AGX Orin
// have no input rail) is the whole-device meter.
class TegrastatsLogSource : public Source {
  public:
    // Throws sb::Error(input) when rail is given and the log has no such rail.
    TegrastatsLogSource(const TegrastatsLog& first_read, std::string path,
                        std::optional<std::string> rail);
    std::string name() const override { return "tegrastats"; }
    std::string source_class() const override { return "tegrastats"; }
    std::vector<Metric> describe() const override { return metrics_; }
    void read(int64_t, std::vector<std::optional<double>>&) override {}
    bool replayed() const override { return true; }
    std::map<std::string, std::string> properties() const override { return props_; }
    void set_property(const std::string& key, const std::string& value) { props_[key] = value; }
    // The row's values in this source's metric order (a metric the row lacks is missing).
    std::vector<std::optional<double>> values_of(const TegrastatsLog& log,
                                                 const TegrastatsRow& row) const;
    const std::string& rail() const { return rail_; }

  private:
    std::vector<Metric> metrics_;
    std::string rail_;
    std::map<std::string, std::string> props_;
};

}  // namespace sb
