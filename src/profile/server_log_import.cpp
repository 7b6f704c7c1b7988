#include "profile/server_log_import.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/utf8.hpp"

namespace sb {

namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;  // engine/http_engine.hpp kMaxClaimedTokens
constexpr double kMaxMs = 86'400'000.0;           // a day
// Three figures printed with two decimals each: a sum may differ from its parts by rounding.
constexpr double kRoundingMs = 0.015;

enum class TimingKind { load, prompt, eval, total };

struct TimingMarker {
    const char* text;
    TimingKind kind;
};
// "prompt eval time" before "eval time": the second is inside the first.
constexpr TimingMarker kMarkers[] = {{"prompt eval time =", TimingKind::prompt},
                                     {"eval time =", TimingKind::eval},
                                     {"total time =", TimingKind::total},
                                     {"load time =", TimingKind::load}};

// The printers whose lines are read, by the name before the numbers. llama-server's slot
// prefix cuts "print_timings" to its first 12 characters ("%12.*s").
struct Printer {
    const char* needle;
    const char* name;
    bool server;
};
constexpr Printer kPrinters[] = {{"llama_perf_context_print", "llama_perf_context_print", false},
                                 {"common_perf_print", "common_perf_print", false},
                                 {"llama_print_timings", "llama_print_timings", false},
                                 {"print_timing", "print_timings", true}};

// A line as text: colour escapes (ESC [ ... letter) removed, a trailing CR dropped.
std::string clean(std::string_view line) {
    std::string o;
    o.reserve(line.size());
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
            std::size_t j = i + 2;
            while (j < line.size() && !std::isalpha(static_cast<unsigned char>(line[j])))
                ++j;
            i = j;
            continue;
        }
        o += line[i];
    }
    while (!o.empty() && (o.back() == '\r' || o.back() == ' ' || o.back() == '\t'))
        o.pop_back();
    return o;
}

// A reader over the rest of a timing line.
struct Cursor {
    std::string_view s;
    std::size_t i = 0;
    void spaces() {
        while (i < s.size() && s[i] == ' ')
            ++i;
    }
    bool lit(std::string_view w) {
        spaces();
        if (s.substr(i, w.size()) != w)
            return false;
        i += w.size();
        return true;
    }
    // A printf %f or %d as printed: [-]digits[.digits], or inf / nan (a rate over no time).
    std::optional<double> number() {
        spaces();
        const std::size_t b = i;
        if (i < s.size() && s[i] == '-')
            ++i;
        for (std::string_view w : {"inf", "nan", "-nan"})
            if (s.substr(b, w.size()) == w) {
                i = b + w.size();
                return w == "inf" ? HUGE_VAL : NAN;
            }
        const std::size_t d = i;
        while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'))
            ++i;
        if (i == d)
            return std::nullopt;
        const std::string t(s.substr(b, i - b));
        char* end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        if (end != t.c_str() + t.size())
            return std::nullopt;
        return v;
    }
    std::optional<int64_t> count() {
        spaces();
        const std::size_t b = i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
            ++i;
        if (i == b || i - b > 12)
            return std::nullopt;
        return std::stoll(std::string(s.substr(b, i - b)));
    }
    bool at_end() {
        spaces();
        return i == s.size();
    }
};

struct TimingLine {
    TimingKind kind;
    double ms = 0;
    std::optional<int64_t> n;
    bool runs = false;
};

// The numbers after a marker, exactly as the printers write them; nullopt when the line stops
// early or holds something else (cut off, damaged).
std::optional<TimingLine> read_numbers(TimingKind kind, std::string_view rest) {
    Cursor c{rest};
    TimingLine t{kind, 0, std::nullopt, false};
    const auto ms = c.number();
    if (!ms || !c.lit("ms"))
        return std::nullopt;
    t.ms = *ms;
    if (kind == TimingKind::load)
        return c.at_end() ? std::optional<TimingLine>(t) : std::nullopt;
    if (kind == TimingKind::total && c.at_end())
        return t;  // llama_print_timings' total: no count
    if (!c.lit("/"))
        return std::nullopt;
    t.n = c.count();
    if (!t.n)
        return std::nullopt;
    if (c.lit("tokens"))
        t.runs = false;
    else if (c.lit("runs"))
        t.runs = true;
    else
        return std::nullopt;
    if (kind == TimingKind::total)
        return c.at_end() && !t.runs ? std::optional<TimingLine>(t) : std::nullopt;
    // "(%8.2f ms per token, %8.2f tokens per second)": the derived figures, not read.
    if (!c.lit("(") || !c.number() || !c.lit("ms per token,") || !c.number() ||
        !c.lit("tokens per second)") || !c.at_end())
        return std::nullopt;
    return t;
}

// "id  0 | task 12 |" in llama-server's slot prefix.
void slot_and_task(std::string_view prefix, std::optional<int>& slot,
                   std::optional<int64_t>& task) {
    const std::size_t id = prefix.find(": id ");
    if (id == std::string_view::npos)
        return;
    Cursor c{prefix, id + 5};
    const auto s = c.count();
    if (!s || !c.lit("|") || !c.lit("task"))
        return;
    c.spaces();
    bool neg = c.i < prefix.size() && prefix[c.i] == '-';
    if (neg)
        ++c.i;
    const auto t = c.count();
    if (!t || !c.lit("|") || *s > 1'000'000)
        return;
    slot = static_cast<int>(*s);
    task = neg ? -*t : *t;
}

std::string quoted_line(std::string_view line) {
    std::string v = valid_utf8(std::string(line));
    if (v.size() > 100)
        v = utf8_prefix(v, 100) + "...";
    return "\"" + v + "\"";
}

const char* kind_name(TimingKind k) {
    switch (k) {
        case TimingKind::load:
            return "load time";
        case TimingKind::prompt:
            return "prompt eval time";
        case TimingKind::eval:
            return "eval time";
        case TimingKind::total:
            return "total time";
    }
    return "";
}

class Assembler {
  public:
    explicit Assembler(ServerLogParse& out) : out_(out) {}

    void add(int64_t line, const std::string& printer, std::optional<int> slot,
             std::optional<int64_t> task, const TimingLine& t) {
        const bool same =
            open_ && open_->printer == printer && open_->slot == slot && open_->task == task;
        if (lost_ && lost_->printer == printer && lost_->slot == slot && lost_->task == task) {
            if (t.kind == TimingKind::eval || t.kind == TimingKind::total)
                return;  // the rest of a request whose line was cut off
            lost_.reset();
        }
        switch (t.kind) {
            case TimingKind::load:
                finish();
                start(line, printer, slot, task);
                open_->load_ms = t.ms;
                return;
            case TimingKind::prompt:
                if (!(same && !has_prompt_)) {
                    finish();
                    start(line, printer, slot, task);
                }
                open_->prompt_ms = t.ms;
                open_->prompt_n = *t.n;
                has_prompt_ = true;
                return;
            case TimingKind::eval:
                if (!same || !has_prompt_ || has_eval_) {
                    skip(line,
                         "an eval time line without its request's prompt eval time line "
                         "before it");
                    return;
                }
                open_->eval_ms = t.ms;
                open_->eval_n = *t.n;
                open_->eval_runs = t.runs;
                has_eval_ = true;
                return;
            case TimingKind::total:
                if (!same || !has_eval_) {
                    skip(line, "a total time line without its request's eval time line before it");
                    return;
                }
                open_->total_ms = t.ms;
                open_->total_n = t.n;
                finish();
                return;
        }
    }

    void skip(int64_t line, std::string why) { out_.skipped.push_back({line, std::move(why)}); }

    // A timing line of this request was cut off or damaged (skipped with its reason): a
    // request that has its prompt and eval lines keeps them (without a total); otherwise it is
    // lost, and its other lines go with it without a warning each.
    void damaged(const std::string& printer, std::optional<int> slot, std::optional<int64_t> task) {
        if (open_ && open_->printer == printer && open_->slot == slot && open_->task == task) {
            if (has_prompt_ && has_eval_) {
                finish();
                return;
            }
            open_.reset();
            has_prompt_ = has_eval_ = false;
        }
        lost_ = Key{printer, slot, task};
    }

    void finish() {
        if (!open_)
            return;
        ServerLogRequest r = std::move(*open_);
        open_.reset();
        if (!has_prompt_ || !has_eval_) {
            skip(r.line, fmt::format("{}'s timings stop before its {} line (a request's lines "
                                     "cut off or lost): request skipped",
                                     r.printer, has_prompt_ ? "eval time" : "prompt eval time"));
            return;
        }
        if (const std::string why = implausible(r); !why.empty()) {
            skip(r.line, why + ": request skipped");
            return;
        }
        out_.requests.push_back(std::move(r));
    }

  private:
    void start(int64_t line, const std::string& printer, std::optional<int> slot,
               std::optional<int64_t> task) {
        open_.emplace();
        open_->line = line;
        open_->printer = printer;
        open_->slot = slot;
        open_->task = task;
        has_prompt_ = has_eval_ = false;
    }

    static std::string implausible(const ServerLogRequest& r) {
        for (auto [name, v] :
             {std::pair{"prompt eval time", r.prompt_ms}, std::pair{"eval time", r.eval_ms},
              std::pair{"total time", r.total_ms.value_or(0)},
              std::pair{"load time", r.load_ms.value_or(0)}})
            if (!(v >= 0) || v > kMaxMs)
                return fmt::format("{} {:.2f} ms cannot be true (0 to a day)", name, v);
        for (auto [name, v] : {std::pair{"prompt", r.prompt_n}, std::pair{"eval", r.eval_n},
                               std::pair{"total", r.total_n.value_or(0)}})
            if (v > kMaxTokens)
                return fmt::format("{} tokens {} cannot be true (at most 2^24)", name, v);
        if (r.total_ms) {
            const double parts = r.prompt_ms + r.eval_ms;
            // llama-server's total is its two parts; llama_perf's the context's whole life,
            // which holds them.
            const bool server = r.printer == "print_timings";
            if ((server && std::abs(*r.total_ms - parts) > kRoundingMs) ||
                (!server && *r.total_ms < parts - kRoundingMs))
                return fmt::format("total time {:.2f} ms {} prompt eval {:.2f} ms + eval {:.2f} ms",
                                   *r.total_ms, server ? "is not" : "is less than", r.prompt_ms,
                                   r.eval_ms);
        }
        if (r.total_n && r.printer == "print_timings" && *r.total_n != r.prompt_n + r.eval_n)
            return fmt::format("total tokens {} are not prompt {} + eval {}", *r.total_n,
                               r.prompt_n, r.eval_n);
        return "";
    }

    struct Key {
        std::string printer;
        std::optional<int> slot;
        std::optional<int64_t> task;
    };
    ServerLogParse& out_;
    std::optional<ServerLogRequest> open_;
    std::optional<Key> lost_;
    bool has_prompt_ = false, has_eval_ = false;
};

// "... tensors from PATH (version ...)" of llama_model_loader; "build: N (COMMIT) with" of
// common (its older spelling) or "common_params_print_info: build N (COMMIT) with".
void read_facts(const std::string& line, ServerLogParse& out) {
    // llama-server's own "srv    load_model: loading model 'PATH'" (tools/server/
    // server-context.cpp), at its default verbosity, where the loader's line is not shown.
    if (const std::size_t at = line.find("load_model: loading model '");
        !out.model_path && at != std::string::npos) {
        const std::size_t from = at + 27, close = line.rfind('\'');
        if (close != std::string::npos && close > from)
            out.model_path = valid_utf8(line.substr(from, close - from));
    }
    if (!out.model_path) {
        const std::size_t from = line.find("tensors from ");
        const std::size_t ver = line.rfind(" (version ");
        if (line.find("loaded meta data with") != std::string::npos && from != std::string::npos &&
            ver != std::string::npos && ver > from + 13)
            out.model_path = valid_utf8(line.substr(from + 13, ver - from - 13));
    }
    if (!out.build_number) {
        std::size_t b = line.find("build: ");
        std::size_t skip = 7;
        if (b == std::string::npos) {
            b = line.find(": build ");
            skip = 8;
        }
        if (b == std::string::npos)
            return;
        Cursor c{line, b + skip};
        const auto n = c.count();
        if (!n || !c.lit("("))
            return;
        const std::size_t close = line.find(')', c.i);
        if (close == std::string::npos || close - c.i > 64)
            return;
        const std::string commit = line.substr(c.i, close - c.i);
        if (commit.empty() || !std::all_of(commit.begin(), commit.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch));
            }))
            return;
        out.build_number = *n;
        out.build_commit = commit;
    }
}

}  // namespace

ServerLogParse parse_server_log(std::string_view text) {
    ServerLogParse out;
    Assembler a(out);
    std::size_t pos = 0;
    int64_t line_no = 0;
    while (pos < text.size()) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos)
            nl = text.size();
        const std::string_view raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        if (raw.find("time") == std::string_view::npos &&
            raw.find("build") == std::string_view::npos &&
            raw.find("loaded meta data") == std::string_view::npos &&
            raw.find("loading model") == std::string_view::npos)
            continue;
        const std::string line = clean(raw);
        read_facts(line, out);
        const TimingMarker* m = nullptr;
        std::size_t at = std::string::npos;
        for (const TimingMarker& k : kMarkers)
            if ((at = line.find(k.text)) != std::string::npos) {
                m = &k;
                break;
            }
        if (!m)
            continue;
        const std::string prefix = line.substr(0, at);
        const Printer* printer = nullptr;
        for (const Printer& p : kPrinters)
            if (prefix.find(p.needle) != std::string::npos) {
                printer = &p;
                break;
            }
        if (!printer)
            continue;  // another program's "time =" (a backend's, a test's)
        const auto t =
            read_numbers(m->kind, std::string_view(line).substr(at + std::strlen(m->text)));
        std::optional<int> slot;
        std::optional<int64_t> task;
        if (printer->server)
            slot_and_task(prefix, slot, task);
        if (!t) {
            a.skip(line_no, fmt::format("{} line cut off or damaged ({}): skipped",
                                        kind_name(m->kind), quoted_line(line)));
            a.damaged(printer->name, slot, task);
            continue;
        }
        if (std::find(out.printers.begin(), out.printers.end(), printer->name) ==
            out.printers.end())
            out.printers.push_back(printer->name);
        a.add(line_no, printer->name, slot, task, *t);
    }
    a.finish();
    out.n_lines = line_no;
    std::stable_sort(
        out.skipped.begin(), out.skipped.end(),
        [](const ServerLogSkip& x, const ServerLogSkip& y) { return x.line < y.line; });
    return out;
}

}  // namespace sb
