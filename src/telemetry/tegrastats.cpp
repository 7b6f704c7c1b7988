#include "telemetry/tegrastats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parse.hpp"
#include "core/utf8.hpp"

namespace sb {
namespace {

constexpr std::size_t kNamedBadLines = 5;  // malformed lines named in the warning
constexpr std::size_t kMaxLineBytes = 8192;

// Bounds of what a Jetson can report; a value outside is a claim refused.
constexpr double kMaxMemoryMb = 1e7;     // 10 TB
constexpr double kMaxFreqMhz = 100'000;  // 100 GHz
constexpr double kMaxPowerMw = 1e6;      // 1 kW
constexpr double kMinTempC = -40;        // Orin prints -256C for an absent sensor
constexpr double kMaxTempC = 200;

std::vector<std::string_view> tokens_of(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
            ++i;
        std::size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r')
            ++j;
        if (j > i)
            out.push_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

bool starts_with(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(0, p.size()) == p;
}
bool ends_with_sv(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
std::string_view strip_suffix(std::string_view s, std::string_view p) {
    return ends_with_sv(s, p) ? s.substr(0, s.size() - p.size()) : s;
}

std::optional<double> number(std::string_view s, double lo, double hi) {
    auto v = parse_decimal(s);
    if (!v || *v < lo || *v > hi)
        return std::nullopt;
    return v;
}

// "MM-DD-YYYY" "HH:MM:SS" as local time.
std::optional<int64_t> parse_stamp(std::string_view date, std::string_view time) {
    if (date.size() != 10 || time.size() != 8 || date[2] != '-' || date[5] != '-' ||
        time[2] != ':' || time[5] != ':')
        return std::nullopt;
    auto num = [](std::string_view s) { return parse_decimal_uint(s); };
    auto mon = num(date.substr(0, 2)), day = num(date.substr(3, 2)), year = num(date.substr(6, 4));
    auto h = num(time.substr(0, 2)), mi = num(time.substr(3, 2)), se = num(time.substr(6, 2));
    if (!mon || !day || !year || !h || !mi || !se || *mon < 1 || *mon > 12 || *day < 1 ||
        *day > 31 || *h > 23 || *mi > 59 || *se > 60 || *year < 1970 || *year > 9999)
        return std::nullopt;
    std::tm tm{};
    tm.tm_year = static_cast<int>(*year) - 1900;
    tm.tm_mon = static_cast<int>(*mon) - 1;
    tm.tm_mday = static_cast<int>(*day);
    tm.tm_hour = static_cast<int>(*h);
    tm.tm_min = static_cast<int>(*mi);
    tm.tm_sec = static_cast<int>(*se);
    tm.tm_isdst = -1;
    const std::time_t t = std::mktime(&tm);
    if (t == static_cast<std::time_t>(-1))
        return std::nullopt;
    return static_cast<int64_t>(t);
}

// One line being read into a row: metrics are added to the log as they first appear.
class LineReader {
  public:
    LineReader(TegrastatsLog& log, TegrastatsRow& row, std::set<std::string>& not_read,
               std::map<std::string, std::size_t>& index)
        : log_(log), row_(row), not_read_(not_read), index_(index) {}

    void set(const std::string& sensor, const std::string& field, Quantity q,
             std::optional<double> v, bool system_total = false) {
        const std::string name = sensor + "." + field;
        std::size_t m;
        if (auto f = index_.find(name); f != index_.end()) {
            m = f->second;
        } else {
            Metric mt;
            mt.name = name;
            mt.sensor = sensor;
            mt.quantity = q;
            mt.system_total = system_total;
            m = log_.metrics.size();
            log_.metrics.push_back(std::move(mt));
            index_[name] = m;
        }
        if (row_.values.size() <= m)
            row_.values.resize(m + 1);
        row_.values[m] = v;
    }
    void reject() { ++log_.rejected_values; }
    void not_read(std::string_view field) { not_read_.insert(std::string(field)); }

  private:
    TegrastatsLog& log_;
    TegrastatsRow& row_;
    std::set<std::string>& not_read_;
    std::map<std::string, std::size_t>& index_;
};

// "X/YMB" -> used, total (MB); kB for IRAM is not read.
bool read_memory(LineReader& r, const std::string& sensor, std::string_view tok) {
    if (!ends_with_sv(tok, "MB"))
        return false;
    tok = strip_suffix(tok, "MB");
    auto slash = tok.find('/');
    if (slash == std::string_view::npos)
        return false;
    auto used = number(tok.substr(0, slash), 0, kMaxMemoryMb);
    auto total = number(tok.substr(slash + 1), 0, kMaxMemoryMb);
    if (!used || !total || *used > *total) {
        r.reject();
        used = total = std::nullopt;
    }
    r.set(sensor, "used_mb", Quantity::memory, used);
    r.set(sensor, "total_mb", Quantity::memory, total);
    return true;
}

// "X%" or "X%@F" (F in MHz); "X%@[F0,F1]" per GPC.
bool read_engine(LineReader& r, const std::string& sensor, std::string_view tok,
                 const std::string& freq_field) {
    const auto at = tok.find('@');
    std::string_view load = tok.substr(0, at);
    if (!ends_with_sv(load, "%"))
        return false;
    auto pct = number(strip_suffix(load, "%"), 0, 100);
    if (!pct)
        r.reject();
    r.set(sensor, "load_pct", Quantity::percent, pct);
    if (at == std::string_view::npos)
        return true;
    std::string_view f = tok.substr(at + 1);
    if (starts_with(f, "[") && ends_with_sv(f, "]")) {
        auto items = split_list(f.substr(1, f.size() - 2));
        for (std::size_t i = 0; i < items.size(); ++i) {
            auto mhz = number(items[i], 0, kMaxFreqMhz);
            if (!mhz)
                r.reject();
            r.set(sensor + ".gpc" + std::to_string(i), freq_field, Quantity::frequency,
                  mhz ? std::optional<double>(*mhz * 1000) : std::nullopt);
        }
        return true;
    }
    auto mhz = number(f, 0, kMaxFreqMhz);
    if (!mhz)
        r.reject();
    r.set(sensor, freq_field, Quantity::frequency,
          mhz ? std::optional<double>(*mhz * 1000) : std::nullopt);
    return true;
}

// "[12%@1190,off,...]" or "[12%,off,...]@1190".
bool read_cpus(LineReader& r, std::string_view tok) {
    if (!starts_with(tok, "["))
        return false;
    const auto close = tok.find(']');
    if (close == std::string_view::npos)
        return false;
    std::optional<double> shared_mhz;
    bool has_shared = false;
    std::string_view after = tok.substr(close + 1);
    if (!after.empty()) {
        if (!starts_with(after, "@"))
            return false;
        has_shared = true;
        shared_mhz = number(after.substr(1), 0, kMaxFreqMhz);
        if (!shared_mhz)
            r.reject();
    }
    auto items = split_list(tok.substr(1, close - 1));
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string sensor = "tegrastats.cpu" + std::to_string(i);
        std::string_view it = items[i];
        std::optional<double> pct, mhz;
        if (it != "off") {
            const auto at = it.find('@');
            std::string_view load = it.substr(0, at);
            if (!ends_with_sv(load, "%"))
                return false;
            pct = number(strip_suffix(load, "%"), 0, 100);
            if (!pct)
                r.reject();
            if (at != std::string_view::npos) {
                mhz = number(it.substr(at + 1), 0, kMaxFreqMhz);
                if (!mhz)
                    r.reject();
            } else if (has_shared) {
                mhz = shared_mhz;
            }
        }
        r.set(sensor, "load_pct", Quantity::percent, pct);
        if (has_shared || it == "off" || it.find('@') != std::string_view::npos)
            r.set(sensor, "cur_freq_khz", Quantity::frequency,
                  mhz ? std::optional<double>(*mhz * 1000) : std::nullopt);
    }
    return true;
}

// "NAME@T.TC" -> temperature.
bool read_temp(LineReader& r, std::string_view tok) {
    const auto at = tok.find('@');
    if (at == std::string_view::npos || at == 0 || !ends_with_sv(tok, "C"))
        return false;
    auto v = parse_decimal(tok.substr(at + 1, tok.size() - at - 2));
    if (!v)
        return false;
    std::optional<double> mc;
    if (*v > kMinTempC && *v <= kMaxTempC)
        mc = *v * 1000;
    else if (*v > kMaxTempC)
        r.reject();  // at or below -40 C: no sensor (Orin's -256C), not a bad value
    r.set("tegrastats." + std::string(tok.substr(0, at)), "temp_mc", Quantity::temperature, mc);
    return true;
}

// "XmW/YmW" or "X/Y" after a rail's name.
bool read_rail(LineReader& r, std::string_view name, std::string_view tok) {
    const auto slash = tok.find('/');
    if (slash == std::string_view::npos)
        return false;
    std::string_view a = tok.substr(0, slash), b = tok.substr(slash + 1);
    const bool mw = ends_with_sv(a, "mW") && ends_with_sv(b, "mW");
    if (mw) {
        a = strip_suffix(a, "mW");
        b = strip_suffix(b, "mW");
    }
    if (a.empty() || b.empty() || !std::isdigit(static_cast<unsigned char>(a[0])) ||
        !std::isdigit(static_cast<unsigned char>(b[0])))
        return false;
    auto inst = number(a, 0, kMaxPowerMw), avg = number(b, 0, kMaxPowerMw);
    if (!inst || !avg)
        r.reject();
    const std::string sensor = "tegrastats." + std::string(name);
    r.set(sensor, "power_mw", Quantity::power, inst);
    r.set(sensor, "avg_power_mw", Quantity::power, avg);
    return true;
}

bool is_field_name(std::string_view s) {
    if (s.empty())
        return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
            return false;
    return true;
}

// One line into row; false when it is not a tegrastats line.
bool read_line(std::string_view line, TegrastatsLog& log, TegrastatsRow& row,
               std::set<std::string>& not_read, std::map<std::string, std::size_t>& index) {
    auto t = tokens_of(line);
    std::size_t i = 0;
    if (t.size() >= 2 && t[0].size() == 10 && t[0][2] == '-') {
        row.stamp_s = parse_stamp(t[0], t[1]);
        if (!row.stamp_s)
            return false;
        i = 2;
    }
    if (i >= t.size() || t[i] != "RAM")
        return false;
    LineReader r(log, row, not_read, index);
    bool have_ram = false;
    while (i < t.size()) {
        std::string_view k = t[i];
        std::string_view next = i + 1 < t.size() ? t[i + 1] : std::string_view();
        if (k == "RAM" || k == "SWAP") {
            if (!read_memory(r, k == "RAM" ? "tegrastats.ram" : "tegrastats.swap", next))
                return false;
            have_ram = have_ram || k == "RAM";
            i += 2;
            if (i < t.size() && t[i] == "(lfb" && i + 1 < t.size()) {
                i += 2;  // the allocator's largest free block: not a measurement of the run
            } else if (i < t.size() && t[i] == "(cached" && i + 1 < t.size()) {
                std::string_view c = strip_suffix(t[i + 1], ")");
                if (ends_with_sv(c, "MB")) {
                    auto v = number(strip_suffix(c, "MB"), 0, kMaxMemoryMb);
                    if (!v)
                        r.reject();
                    r.set("tegrastats.swap", "cached_mb", Quantity::memory, v);
                }
                i += 2;
            }
            continue;
        }
        if ((k == "CPU" || k == "cpu") && !next.empty() && next[0] == '[') {
            if (!read_cpus(r, next))
                return false;
            i += 2;
            continue;
        }
        if ((k == "EMC_FREQ" || k == "EMC") && read_engine(r, "tegrastats.emc", next, "freq_khz")) {
            i += 2;
            continue;
        }
        if ((k == "GR3D_FREQ" || k == "GR3D") &&
            read_engine(r, "tegrastats.gr3d", next, "cur_freq_khz")) {
            i += 2;
            continue;
        }
        if (read_temp(r, k)) {
            ++i;
            continue;
        }
        if (is_field_name(k) && !next.empty() && read_rail(r, k, next)) {
            i += 2;
            continue;
        }
        // A field stagebench does not read (APE 150, VIC_FREQ 0%@115, IRAM 0/252kB(lfb 252kB)).
        if (is_field_name(k) && std::isupper(static_cast<unsigned char>(k[0])))
            r.not_read(k);
        ++i;
    }
    return have_ram;
}

// The one-second date stamps as constraints on a segment's (interval, phase): each row's
// stamp bounds phase + k * interval, a strip in that plane, so what every stamp allows is a
// convex polygon. Fitting the two together is what makes the stated uncertainty hold: an
// interval fixed first from the stamps is off by up to an interval over the rows between,
// and that error grows along the segment unseen.
constexpr double kStampNs = 1e9;

struct PlanePoint {
    double interval = 0;  // ns
    double phase = 0;     // ns after the segment's first stamp
};
using ConvexPolygon = std::vector<PlanePoint>;

// What a segment's first row allows: the phase within its second, the interval the one
// given (a degenerate polygon: a segment) or anything from 1 ms to 1 h.
ConvexPolygon stamp_region(std::optional<int64_t> interval_ns) {
    const double lo = interval_ns ? static_cast<double>(*interval_ns) : 1e6;
    const double hi = interval_ns ? lo : 3600e9;
    if (interval_ns)
        return {{lo, 0}, {lo, kStampNs}};
    return {{lo, 0}, {hi, 0}, {hi, kStampNs}, {lo, kStampNs}};
}

// The part of a convex polygon where a * interval + b * phase <= c (Sutherland-Hodgman
// against one half-plane; boundaries kept, so a polygon reduced to an edge or a point stays).
ConvexPolygon clip(const ConvexPolygon& p, double a, double b, double c) {
    ConvexPolygon out;
    auto add = [&out](PlanePoint q) {
        if (out.empty() || out.back().interval != q.interval || out.back().phase != q.phase)
            out.push_back(q);
    };
    for (std::size_t i = 0; i < p.size(); ++i) {
        const PlanePoint& from = p[i];
        const PlanePoint& to = p[(i + 1) % p.size()];
        const double f0 = a * from.interval + b * from.phase - c;
        const double f1 = a * to.interval + b * to.phase - c;
        if (f0 <= 0)
            add(from);
        if ((f0 < 0 && f1 > 0) || (f0 > 0 && f1 < 0)) {
            const double t = f0 / (f0 - f1);
            add({from.interval + t * (to.interval - from.interval),
                 from.phase + t * (to.phase - from.phase)});
        }
    }
    if (out.size() > 1 && out.front().interval == out.back().interval &&
        out.front().phase == out.back().phase)
        out.pop_back();
    return out;
}

struct StampFit {
    std::size_t begin = 0, end = 0;  // rows [begin, end)
    double interval_ns = 0, phase_ns = 0;
    double uncertainty_ns = 0;  // the farthest any row's time can be from where it is placed
    bool from_default = false;  // the interval is tegrastats' default, which the stamps allow
};

// A segment's interval: the middle of what its stamps allow, or tegrastats' default 1000 ms
// when the stamps leave the interval open by more than a tenth and allow the default; its
// phase the middle of what the stamps allow at that interval. The uncertainty is the largest
// distance from a row's placed time to a time the stamps allow for it; placed times are
// linear in the row and the allowed ones a convex set, so the first and the last row bound it.
StampFit fit_segment(const ConvexPolygon& region, std::size_t begin, std::size_t end,
                     bool interval_given) {
    StampFit f;
    f.begin = begin;
    f.end = end;
    double lo = region.front().interval, hi = lo;
    for (const PlanePoint& q : region) {
        lo = std::min(lo, q.interval);
        hi = std::max(hi, q.interval);
    }
    f.interval_ns = lo + (hi - lo) / 2;
    if (!interval_given && hi - lo > 0.1 * f.interval_ns && lo <= kStampNs && kStampNs <= hi) {
        f.interval_ns = kStampNs;
        f.from_default = true;
    }
    // The phases the polygon holds at that interval: its vertices there, and its edges
    // crossing it.
    double phase_lo = 0, phase_hi = 0;
    bool any = false;
    auto hold = [&](double phase) {
        phase_lo = any ? std::min(phase_lo, phase) : phase;
        phase_hi = any ? std::max(phase_hi, phase) : phase;
        any = true;
    };
    for (std::size_t i = 0; i < region.size(); ++i) {
        const PlanePoint& from = region[i];
        const PlanePoint& to = region[(i + 1) % region.size()];
        if (from.interval == f.interval_ns)
            hold(from.phase);
        if ((from.interval - f.interval_ns) * (to.interval - f.interval_ns) < 0)
            hold(from.phase + (f.interval_ns - from.interval) / (to.interval - from.interval) *
                                  (to.phase - from.phase));
    }
    f.phase_ns = phase_lo + (phase_hi - phase_lo) / 2;
    for (const double k : {0.0, static_cast<double>(end - begin - 1)}) {
        const double placed = f.phase_ns + k * f.interval_ns;
        for (const PlanePoint& q : region)
            f.uncertainty_ns =
                std::max(f.uncertainty_ns, std::abs(q.phase + k * q.interval - placed));
    }
    return f;
}

}  // namespace

std::optional<std::size_t> TegrastatsLog::find(const std::string& name) const {
    for (std::size_t m = 0; m < metrics.size(); ++m)
        if (metrics[m].name == name)
            return m;
    return std::nullopt;
}

TegrastatsLog parse_tegrastats(std::string_view text) {
    TegrastatsLog log;
    std::set<std::string> not_read;
    std::map<std::string, std::size_t> index;
    std::vector<std::string> bad;
    std::size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        const bool complete = nl != std::string_view::npos;
        if (!complete)
            nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        auto toks = tokens_of(line);
        if (toks.empty() || toks.front()[0] == '#')
            continue;  // blank, or a note someone added (tegrastats writes neither)
        ++log.lines;
        TegrastatsRow row;
        row.line = line_no;
        // A line cut short (the last one, without its newline, as a log being written or a
        // copy cut off ends) is skipped like a bad one: its rails may be missing.
        bool ok =
            complete && line.size() <= kMaxLineBytes && read_line(line, log, row, not_read, index);
        if (ok && !log.rows.empty() && row.stamp_s.has_value() != log.timestamped())
            ok = false;  // a log mixing forms cannot be timed
        if (!ok) {
            ++log.malformed;
            if (bad.size() < kNamedBadLines) {
                std::string shown(line.substr(0, 80));
                bad.push_back(fmt::format("line {} \"{}{}\"", line_no, valid_utf8(shown),
                                          line.size() > 80 ? "..." : ""));
            }
            continue;
        }
        log.rows.push_back(std::move(row));
    }
    for (auto& r : log.rows)
        r.values.resize(log.metrics.size());
    log.fields_not_read.assign(not_read.begin(), not_read.end());
    if (log.malformed > 0) {
        std::string named;
        for (const auto& b : bad)
            named += (named.empty() ? "" : ", ") + b;
        log.warnings.push_back(
            {"tegrastats_malformed_lines",
             fmt::format("{} of {} line(s) are not tegrastats lines and were skipped: {}{}",
                         log.malformed, log.lines, named,
                         log.malformed > bad.size() ? ", ..." : ""),
             "Give the log as tegrastats wrote it (tegrastats --logfile FILE); lines cut off "
             "when it was stopped are expected at the end."});
    }
    if (log.rejected_values > 0) {
        log.warnings.push_back(
            {"tegrastats_implausible_values",
             fmt::format("{} value(s) outside what a Jetson can report were left missing",
                         log.rejected_values),
             "Check those lines of the log by hand."});
    }
    return log;
}

TegrastatsTimes assign_times(TegrastatsLog& log, const TegrastatsTiming& timing) {
    TegrastatsTimes out;
    if (timing.interval_ns && (*timing.interval_ns < 1'000'000 || *timing.interval_ns > 3600e9))
        throw usage_error("--interval must lie within 1 ms .. 1 h");
    const std::size_t n = log.rows.size();
    if (log.timestamped()) {
        out.absolute = true;
        std::vector<StampFit> fits;
        std::size_t begin = 0;
        ConvexPolygon region = stamp_region(timing.interval_ns);
        for (std::size_t j = 1; j <= n; ++j) {
            if (j < n) {
                // Row k of the segment, at phase + k * interval, lies in its stamp's second:
                // d <= phase + k * interval <= d + 1 s, d the stamp from the segment's first.
                const double k = static_cast<double>(j - begin);
                const double d =
                    static_cast<double>(*log.rows[j].stamp_s - *log.rows[begin].stamp_s) * kStampNs;
                ConvexPolygon next = clip(region, -k, -1, -d);
                next = clip(next, k, 1, d + kStampNs);
                if (!next.empty()) {
                    region = std::move(next);
                    continue;
                }
            }
            // No interval and phase fit every stamp so far (tegrastats drifting, the clock
            // set): the rows before this one are a segment.
            fits.push_back(fit_segment(region, begin, j, timing.interval_ns.has_value()));
            if (j < n) {
                begin = j;
                region = stamp_region(timing.interval_ns);
            }
        }
        const StampFit* main = nullptr;
        for (const StampFit& f : fits) {
            for (std::size_t k = f.begin; k < f.end; ++k)
                log.rows[k].t_ns =
                    *log.rows[f.begin].stamp_s * 1'000'000'000 +
                    std::llround(f.phase_ns + static_cast<double>(k - f.begin) * f.interval_ns);
            out.uncertainty_ms = std::max(out.uncertainty_ms, f.uncertainty_ns / 1e6);
            if (!main || f.end - f.begin > main->end - main->begin)
                main = &f;
        }
        out.segments = static_cast<int>(fits.size());
        out.interval_ns = timing.interval_ns.value_or(
            main ? std::max<int64_t>(1'000'000, std::llround(main->interval_ns)) : 1'000'000'000);
        out.interval_from = timing.interval_ns           ? "--interval"
                            : main && main->from_default ? "tegrastats' default"
                                                         : "the date stamps";
        out.method = fmt::format(
            "one-second date stamps; rows placed {} ms apart at the phase every stamp allows, "
            "interval and phase fitted together ({} segment(s))",
            static_cast<double>(out.interval_ns) / 1e6, out.segments);
        return out;
    }
    out.interval_ns = timing.interval_ns.value_or(1'000'000'000);
    out.interval_from = timing.interval_ns ? "--interval" : "tegrastats' default";
    out.absolute = timing.start_ns.has_value();
    const int64_t start = timing.start_ns.value_or(0);
    for (std::size_t k = 0; k < n; ++k)
        log.rows[k].t_ns = start + static_cast<int64_t>(k) * out.interval_ns;
    out.method = out.absolute ? "no date stamps: --start plus the line's index times the interval"
                              : "no date stamps and no --start: times from the first line";
    out.segments = n > 0 ? 1 : 0;
    return out;
}

TelemetrySection tegrastats_record(const TegrastatsLog& log, const TegrastatsTimes& times,
                                   const std::string& path, bool with_averages) {
    TelemetrySection t;
    TelemetrySource src;
    src.name = "tegrastats";
    src.source_class = "tegrastats";
    src.properties["file"] = path;
    src.properties["interval_ms"] =
        fmt::format("{:g}", static_cast<double>(times.interval_ns) / 1e6);
    src.properties["interval_from"] = times.interval_from;
    src.properties["times"] = times.absolute ? "unix" : "relative";
    src.properties["time_method"] = times.method;
    src.properties["time_uncertainty_ms"] = fmt::format("{:.1f}", times.uncertainty_ms);
    src.properties["lines"] = std::to_string(log.lines);
    src.properties["rows"] = std::to_string(log.rows.size());
    if (!log.fields_not_read.empty()) {
        std::string s;
        for (const auto& f : log.fields_not_read)
            s += (s.empty() ? "" : ", ") + f;
        src.properties["fields_not_read"] = s;
    }
    auto& series = t.series.emplace();
    for (std::size_t m = 0; m < log.metrics.size(); ++m) {
        const Metric& mt = log.metrics[m];
        if (!with_averages && ends_with_sv(mt.name, ".avg_power_mw"))
            continue;
        src.metrics.push_back(mt.name);
        TelemetryMetric tm;
        tm.name = mt.name;
        tm.sensor = mt.sensor;
        tm.quantity = quantity_name(mt.quantity);
        tm.unit = unit_of(mt.quantity);
        tm.system_total = mt.system_total;
        t.metrics.push_back(tm);
        TelemetrySeries se;
        se.metric = mt.name;
        se.unit = unit_of(mt.quantity);
        for (const auto& r : log.rows) {
            se.t_ns.push_back(r.t_ns);
            se.values.push_back(r.values[m]);
        }
        series.push_back(std::move(se));
    }
    t.sources.push_back(std::move(src));
    t.classes.push_back({"tegrastats", 1, ""});
    if (times.interval_ns > 0)
        t.hz = 1e9 / static_cast<double>(times.interval_ns);
    t.warnings = log.warnings;
    return t;
}

std::optional<int64_t> parse_start_time(std::string_view text) {
    bool utc = false;
    if (ends_with_sv(text, "Z")) {
        utc = true;
        text.remove_suffix(1);
    }
    if (text.size() < 19 || (text[10] != 'T' && text[10] != ' ') || text[4] != '-' ||
        text[7] != '-' || text[13] != ':' || text[16] != ':')
        return std::nullopt;
    auto num = [&](std::size_t at, std::size_t len) {
        return parse_decimal_uint(text.substr(at, len));
    };
    auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2);
    auto sec = parse_decimal(text.substr(17));
    if (!y || !mo || !d || !h || !mi || !sec || *y < 1970 || *mo < 1 || *mo > 12 || *d < 1 ||
        *d > 31 || *h > 23 || *mi > 59 || *sec < 0 || *sec >= 61 || text[17] == '+' ||
        text[17] == '-')
        return std::nullopt;
    std::tm tm{};
    tm.tm_year = static_cast<int>(*y) - 1900;
    tm.tm_mon = static_cast<int>(*mo) - 1;
    tm.tm_mday = static_cast<int>(*d);
    tm.tm_hour = static_cast<int>(*h);
    tm.tm_min = static_cast<int>(*mi);
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    const std::time_t t = utc ? timegm(&tm) : std::mktime(&tm);
    if (t == static_cast<std::time_t>(-1))
        return std::nullopt;
    return static_cast<int64_t>(t) * 1'000'000'000 + std::llround(*sec * 1e9);
}

void import_tegrastats(const TegrastatsImportOptions& o, ResultDocument& doc, std::ostream& err) {
    TegrastatsLog log = parse_tegrastats(read_input_file(o.path, "tegrastats log"));
    if (log.rows.empty())
        throw input_error(fmt::format(
            "{}: no tegrastats line ({} line(s); a line begins with RAM, after the date where "
            "tegrastats prints one)",
            o.path, log.lines));
    if (log.timestamped() && o.timing.start_ns)
        throw usage_error(o.path + ": the log has date stamps; --start is for logs without");
    const TegrastatsTimes times = assign_times(log, o.timing);
    TelemetrySection t = tegrastats_record(log, times, o.path);
    err << fmt::format(
        "stagebench: {}: {} row(s) of {} metric(s); times: {}; interval {:g} ms from {}{}\n",
        o.path, log.rows.size(), log.metrics.size(), times.method,
        static_cast<double>(times.interval_ns) / 1e6, times.interval_from,
        times.uncertainty_ms > 0
            ? fmt::format(" (each time within ±{:.0f} ms)", times.uncertainty_ms)
            : std::string());
    for (const auto& w : log.warnings)
        err << "stagebench: warning: " << w.message << "\n";
    for (const auto& w : t.warnings)
        doc.warnings.push_back(w);
    doc.telemetry = std::move(t);
    // The machine that reads the log is not the Jetson that wrote it: no system or llama.cpp
    // section of this one (as import hexagon-profile).
    doc.system = nullptr;
    doc.llama = nullptr;
}

TegrastatsLogSource::TegrastatsLogSource(const TegrastatsLog& first_read, std::string path,
                                         std::optional<std::string> rail) {
    std::vector<std::string> rails;
    for (const auto& m : first_read.metrics)
        if (ends_with_sv(m.name, ".power_mw") && !ends_with_sv(m.name, ".avg_power_mw"))
            rails.push_back(m.sensor.substr(std::string("tegrastats.").size()));
    if (rail) {
        if (std::find(rails.begin(), rails.end(), *rail) == rails.end()) {
            std::string have;
            for (const auto& r : rails)
                have += (have.empty() ? "" : ", ") + r;
            throw input_error(fmt::format("{}: no rail {} in the tegrastats log (it has: {})", path,
                                          *rail, have.empty() ? "none" : have));
        }
        rail_ = *rail;
    } else {
        // The module's input rail where the board has one (Orin NX/Nano, Xavier NX on newer
        // releases, TX2: VDD_IN; Nano: POM_5V_IN). AGX Xavier and AGX Orin have none: the
        // user names the rail.
        for (const char* pref : {"VDD_IN", "POM_5V_IN"})
            if (rail_.empty() && std::find(rails.begin(), rails.end(), pref) != rails.end())
                rail_ = pref;
    }
    for (auto m : first_read.metrics) {
        if (ends_with_sv(m.name, ".avg_power_mw"))
            continue;
        m.system_total = !rail_.empty() && m.name == "tegrastats." + rail_ + ".power_mw";
        metrics_.push_back(std::move(m));
    }
    props_["file"] = std::move(path);
    props_["rail"] = rail_.empty() ? "none" : rail_;
}

std::vector<std::optional<double>> TegrastatsLogSource::values_of(const TegrastatsLog& log,
                                                                  const TegrastatsRow& row) const {
    std::vector<std::optional<double>> out(metrics_.size());
    for (std::size_t m = 0; m < metrics_.size(); ++m)
        if (auto k = log.find(metrics_[m].name); k && *k < row.values.size())
            out[m] = row.values[*k];
    return out;
}

}  // namespace sb
