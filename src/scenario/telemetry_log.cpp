#include "scenario/telemetry_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace sb {
namespace {

// The offset between the wall clock and the run's, from the closest of a few back-to-back
// readings (run's clock, wall, run's clock), and how far it can be from the true offset: the
// wall was read somewhere between the two readings around it, and the offset takes their
// midpoint, so it is off by at most half their gap (rounded up).
struct ClockOffset {
    int64_t wall_minus_clock_ns = 0;
    int64_t uncertainty_ns = 0;
};

ClockOffset wall_minus_clock(const LogClocks& c) {
    ClockOffset best;
    int64_t best_gap = INT64_MAX;
    for (int i = 0; i < 5; ++i) {
        const int64_t a = c.clock(), w = c.wall(), b = c.clock();
        if (b - a < best_gap) {
            best_gap = b - a;
            best = {w - (a + (b - a) / 2), (b - a + 1) / 2};
        }
    }
    return best;
}

// The file's complete lines (a line being written has no newline yet), or nullopt.
std::optional<std::string> complete_lines(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    const auto nl = text.rfind('\n');
    text.resize(nl == std::string::npos ? 0 : nl + 1);
    return text;
}

std::string clock_text(int64_t unix_ns) {
    std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

}  // namespace

TelemetryLogChoice parse_telemetry_log(const std::string& spec) {
    const auto colon = spec.find(':');
    if (colon == std::string::npos || spec.substr(0, colon) != "tegrastats" ||
        colon + 1 == spec.size())
        throw usage_error("--telemetry-log '" + spec +
                          "': expected tegrastats:FILE (the only log kind so far)");
    TelemetryLogChoice c;
    c.kind = "tegrastats";
    c.path = spec.substr(colon + 1);
    return c;
}

TelemetryLogFeed::TelemetryLogFeed(TelemetryLogChoice choice, LogClocks clocks,
                                   int64_t wait_first_ns)
    : choice_(std::move(choice)), clocks_(std::move(clocks)) {
    if (choice_.interval_ns &&
        (*choice_.interval_ns < 1'000'000 || *choice_.interval_ns > 3'600'000'000'000))
        throw usage_error("--telemetry-log-interval must lie within 1 .. 3600000 ms");
    const ClockOffset offset = wall_minus_clock(clocks_);
    offset_ns_ = offset.wall_minus_clock_ns;
    offset_uncertainty_ns_ = offset.uncertainty_ns;
    const int64_t deadline = clocks_.clock() + wait_first_ns;
    for (;;) {
        auto text = complete_lines(choice_.path);
        if (!text)
            throw input_error("--telemetry-log: cannot read " + choice_.path);
        log_ = parse_tegrastats(*text);
        const int64_t now = clocks_.clock();
        if (!log_.rows.empty() || now >= deadline)
            break;
        clocks_.pause(std::min<int64_t>(100'000'000, deadline - now));
    }
    if (log_.rows.empty())
        throw input_error(fmt::format(
            "--telemetry-log: no tegrastats line in {} within {:g} s of the start (start "
            "`tegrastats --interval MS --logfile {}` before the run)",
            choice_.path, static_cast<double>(wait_first_ns) / 1e9, choice_.path));
    if (!log_.timestamped())
        throw input_error(
            "--telemetry-log: " + choice_.path +
            " has no date stamps, so its lines cannot be placed in the run's time; use a "
            "tegrastats that prints the date before each line (newer Jetson Linux releases), "
            "or import the log alone with `stagebench import tegrastats --start`");
    owned_ = std::make_unique<TegrastatsLogSource>(log_, choice_.path, choice_.rail);
    source_ = owned_.get();
    times_ = assign_times(log_, {choice_.interval_ns, std::nullopt});
}

std::unique_ptr<Source> TelemetryLogFeed::take_source() {
    return std::move(owned_);
}

const std::string& TelemetryLogFeed::rail() const {
    return source_->rail();
}

void TelemetryLogFeed::read_log() {
    auto text = complete_lines(choice_.path);
    if (!text) {
        read_error_ = "cannot read " + choice_.path + " any more";
        return;
    }
    TegrastatsLog log = parse_tegrastats(*text);
    if (log.rows.empty() || !log.timestamped())
        return;  // rewritten under us: keep what was read
    times_ = assign_times(log, {choice_.interval_ns, std::nullopt});
    log_ = std::move(log);
}

void TelemetryLogFeed::sync(Sampler& tel, std::optional<int64_t> wait_past_ns) {
    read_log();
    if (wait_past_ns) {
        const int64_t deadline = clocks_.clock() + 2 * times_.interval_ns + 1'000'000'000;
        for (int64_t now = clocks_.clock();
             !log_.rows.empty() && log_.rows.back().t_ns - offset_ns_ < *wait_past_ns &&
             now < deadline;
             now = clocks_.clock()) {
            clocks_.pause(std::min<int64_t>(50'000'000, deadline - now));
            read_log();
        }
    }
    tel.clear_replayed(source_->name());
    for (const auto& r : log_.rows)
        tel.ingest(source_->name(), r.t_ns - offset_ns_, source_->values_of(log_, r));
    source_->set_property("interval_ms",
                          fmt::format("{:g}", static_cast<double>(times_.interval_ns) / 1e6));
    source_->set_property("interval_from", times_.interval_from);
    source_->set_property("time_method", times_.method);
    source_->set_property("time_uncertainty_ms", fmt::format("{:.1f}", times_.uncertainty_ms));
    source_->set_property("wall_minus_monotonic_ns", std::to_string(offset_ns_));
    source_->set_property("wall_minus_monotonic_uncertainty_ns",
                          std::to_string(offset_uncertainty_ns_));
    source_->set_property("rows", std::to_string(log_.rows.size()));
    tel.set_idle_stage("idle");
}

Warnings TelemetryLogFeed::warnings(const std::vector<StageWindow>& stages) const {
    Warnings w = log_.warnings;
    if (read_error_)
        w.push_back({"telemetry_log_unreadable",
                     "--telemetry-log: " + *read_error_ + "; the rows read before are used",
                     "Keep the log in place until the run ends."});
    if (log_.rows.empty())
        return w;
    const int64_t first = log_.rows.front().t_ns - offset_ns_,
                  last = log_.rows.back().t_ns - offset_ns_;
    std::size_t outside = 0;
    std::string named;
    for (const auto& s : stages) {
        if (s.begin_ns >= first && s.end_ns <= last)
            continue;
        if (++outside <= 3)
            named += (named.empty() ? "" : ", ") + s.stage;
    }
    if (outside > 0)
        w.push_back(
            {"telemetry_log_short",
             fmt::format("--telemetry-log {} covers {} to {} (local time); {} stage window(s) "
                         "reach outside it ({}{}): their energy from its rails is held from the "
                         "nearest row, not measured",
                         choice_.path, clock_text(log_.rows.front().t_ns),
                         clock_text(log_.rows.back().t_ns), outside, named,
                         outside > 3 ? ", ..." : ""),
             "Start tegrastats before the run and stop it after the run ends."});
    return w;
}

}  // namespace sb
