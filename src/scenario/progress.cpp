#include "scenario/progress.hpp"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace sb {

std::string format_duration_s(double s) {
    if (!(s >= 0) || !std::isfinite(s))
        return "?";
    const auto total = static_cast<long long>(std::llround(s));
    if (total < 60)
        return fmt::format("{} s", total);
    if (total < 3600)
        return fmt::format("{} min {} s", total / 60, total % 60);
    return fmt::format("{} h {} min", total / 3600, (total % 3600) / 60);
}

Progress::Progress(std::ostream& err, bool enabled, bool terminal, std::function<int64_t()> clock)
    : err_(err),
      enabled_(enabled),
      terminal_(terminal),
      clock_(std::move(clock)),
      start_ns_(clock_()) {}

Progress::~Progress() {
    // The status lines go; what the command prints next starts on a clean line.
    erase();
}

bool Progress::stderr_is_terminal() {
    return isatty(STDERR_FILENO) == 1;
}

void Progress::set_total(double units) {
    total_ = units;
}

void Progress::advance(double units) {
    done_ += units;
    if (terminal_)
        redraw();
}

std::optional<double> Progress::eta_s() const {
    if (!(total_ > 0) || !(done_ > 0))
        return std::nullopt;
    const double elapsed_s = static_cast<double>(clock_() - start_ns_) * 1e-9;
    return std::max(0.0, elapsed_s * (total_ - done_) / done_);
}

std::string Progress::line_of(const std::string& device, const ProgressStep& s) const {
    std::string line = "stagebench: " + s.test + " on " + device;
    if (s.rep > 0)
        line += s.reps > 0 ? fmt::format(": {} {}/{}", s.unit, s.rep, s.reps)
                           : fmt::format(": {} {}", s.unit, s.rep);
    return line;
}

void Progress::step(const std::string& device, const ProgressStep& s) {
    if (!enabled_)
        return;
    auto it = devices_.find(device);
    const bool new_line = it == devices_.end() || it->second.test != s.test ||
                          it->second.rep != s.rep || it->second.reps != s.reps;
    devices_[device] = s;
    if (terminal_) {
        redraw();
    } else if (new_line) {
        err_ << line_of(device, s) << (s.rep > 0 ? "" : ": " + s.stage) << "\n";
        err_.flush();
    }
}

void Progress::done(const std::string& device) {
    if (devices_.erase(device) && terminal_ && enabled_)
        redraw();
}

void Progress::note(const std::string& line) {
    if (!enabled_)
        return;
    notice(line);
}

void Progress::notice(const std::string& line) {
    erase();
    err_ << "stagebench: " << line << "\n";
    if (terminal_)
        redraw();
    err_.flush();
}

void Progress::erase() {
    if (!terminal_ || drawn_ == 0)
        return;
    // Up to the first status line, then clear from there to the end of the screen.
    if (drawn_ > 1)
        err_ << "\x1b[" << (drawn_ - 1) << "A";
    err_ << "\r\x1b[J";
    drawn_ = 0;
    err_.flush();
}

void Progress::redraw() {
    if (!enabled_ || !terminal_)
        return;
    erase();
    const auto eta = eta_s();
    int n = 0;
    for (const auto& [device, s] : devices_) {
        if (n++ > 0)
            err_ << "\n";
        err_ << line_of(device, s) << ", " << s.stage;
        if (eta)
            err_ << " (about " << format_duration_s(*eta) << " left)";
    }
    drawn_ = n;
    err_.flush();
}

}  // namespace sb
