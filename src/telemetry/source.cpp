#include "telemetry/source.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/utf8.hpp"
#include "telemetry/sysfs_util.hpp"

namespace sb {

const char* unit_of(Quantity q) {
    switch (q) {
        case Quantity::temperature:
            return "mC";
        case Quantity::power:
            return "mW";
        case Quantity::energy:
            return "uJ";
        case Quantity::frequency:
            return "kHz";
        case Quantity::voltage:
            return "mV";
        case Quantity::current:
            return "mA";
        case Quantity::charge:
            return "uAh";
        case Quantity::percent:
            return "%";
        case Quantity::residency:
            return "ms";
        case Quantity::flags:
            return "bits";
        case Quantity::memory:
            return "MB";
    }
    return "";
}

const char* quantity_name(Quantity q) {
    switch (q) {
        case Quantity::temperature:
            return "temperature";
        case Quantity::power:
            return "power";
        case Quantity::energy:
            return "energy";
        case Quantity::frequency:
            return "frequency";
        case Quantity::voltage:
            return "voltage";
        case Quantity::current:
            return "current";
        case Quantity::charge:
            return "charge";
        case Quantity::percent:
            return "percent";
        case Quantity::residency:
            return "residency";
        case Quantity::flags:
            return "flags";
        case Quantity::memory:
            return "memory";
    }
    return "";
}

Warnings Source::warnings() const {
    Warnings out;
    for (const auto& [metric, is] : issues_) {
        if (is.malformed > 0) {
            out.push_back({"telemetry_malformed_value",
                           fmt::format("{}: {} malformed or implausible reading(s), last \"{}\"; "
                                       "those samples are missing",
                                       metric, is.malformed, is.last_raw),
                           "Check the sensor's file by hand; a driver that reports placeholder "
                           "values cannot be measured."});
        }
        if (is.failed > 0) {
            out.push_back({"telemetry_read_failed",
                           fmt::format("{}: {} failed read(s), last: {}; those samples are missing",
                                       metric, is.failed,
                                       is.last_why.empty() ? std::strerror(is.last_errno)
                                                           : is.last_why.c_str()),
                           "A sensor that is powered down or permission-restricted cannot be "
                           "read; run as a user allowed to read it."});
        }
    }
    return out;
}

void Source::note_malformed(const std::string& metric, std::string_view raw) {
    auto& is = issues_[metric];
    ++is.malformed;
    // Quoted in a warning: cut on a character boundary, so the document stays UTF-8.
    is.last_raw = utf8_prefix(sb::trim(raw), 64);
}

void Source::note_read_error(const std::string& metric, int err) {
    auto& is = issues_[metric];
    ++is.failed;
    is.last_errno = err;
    is.last_why.clear();
}

void Source::note_read_failure(const std::string& metric, const std::string& why) {
    auto& is = issues_[metric];
    ++is.failed;
    is.last_why = why;
}

sysfs::ReadResult Source::read_file(const std::string& path) {
    auto it = readers_.find(path);
    if (it == readers_.end())
        it = readers_.emplace(path, sysfs::FileReader(path)).first;
    return it->second.read();
}

std::optional<double> Source::read_number_file(const std::string& path, const std::string& metric,
                                               double scale, double lo, double hi) {
    auto r = read_file(path);
    if (!r.text) {
        note_read_error(metric, r.err);
        return std::nullopt;
    }
    auto v = sysfs::parse_number(*r.text);
    if (!v || *v * scale < lo || *v * scale > hi) {
        note_malformed(metric, *r.text);
        return std::nullopt;
    }
    return *v * scale;
}

}  // namespace sb
