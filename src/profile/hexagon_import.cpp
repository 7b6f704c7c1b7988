#include "profile/hexagon_import.hpp"
#include "core/strings.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_util.hpp"
#include "core/utf8.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::vector<std::string> split(const std::string& s, const std::string& sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        size_t p = s.find(sep, start);
        if (p == std::string::npos) {
            out.push_back(s.substr(start));
            break;
        }
        out.push_back(s.substr(start, p - start));
        start = p + sep.size();
    }
    return out;
}

std::vector<std::string> split_ws(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!cur.empty())
                out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty())
        out.push_back(cur);
    return out;
}

std::optional<int64_t> to_int(const std::string& s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

// A decimal number as upstream prints it with %f / %.1f; from_chars, so the locale cannot change
// what is read.
std::optional<double> to_double(const std::string& s) {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

// "in0 x in1 -> out" into {in0, in1, out}; the last element is the output.
std::vector<std::string> io_list(const std::string& field) {
    std::vector<std::string> out;
    auto arrow = split(field, " -> ");
    std::string outputs = arrow.back();
    if (arrow.size() > 1) {
        std::string inputs = field.substr(0, field.size() - outputs.size() - 4);
        for (auto& s : split(inputs, " x "))
            out.push_back(trimmed(s));
    }
    out.push_back(trimmed(outputs));
    return out;
}

std::vector<int64_t> dims_of(const std::string& s) {
    std::vector<int64_t> ne;
    std::string t = s;
    if (!t.empty() && t.back() == '!')
        t.pop_back();  // non-contiguous marker
    for (auto& part : split(t, ":")) {
        auto v = to_int(trimmed(part));
        if (!v || *v < 0)
            return {};
        ne.push_back(*v);
    }
    return ne;
}

struct Timings {
    std::optional<int64_t> usec, cycles, pkts, call_usec, start, n_ops;
    std::optional<double> mhz;
    std::optional<std::vector<int64_t>> pmu;
    bool op_prefixed = false;
    // "usec 18446744073709551615": a number too large for any count (a negative one printed
    // unsigned); the line is refused naming it.
    std::string too_large;
};

bool all_digits(const std::string& s) {
    if (s.empty())
        return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c)))
            return false;
    return true;
}

// "[1,2,3]" (the PMU counters; spaces allowed) into numbers; nullopt when malformed.
std::optional<std::vector<int64_t>> counter_list(std::string text) {
    std::string t;
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c)))
            t += c;
    if (t.size() < 2 || t.front() != '[' || t.back() != ']')
        return std::nullopt;
    std::vector<int64_t> out;
    if (t.size() == 2)
        return out;
    for (auto& part : split(t.substr(1, t.size() - 2), ",")) {
        auto v = to_int(part);
        if (!v || *v < 0)
            return std::nullopt;
        out.push_back(*v);
    }
    return out;
}

// Reads "op-usec N op-cycles N op-pkts N (F) call-usec N" or "usec N cycles N [start S]
// [mhz M] [pmu [..]] [evt [..]]". Returns an error text, or empty on success.
std::string parse_timings(const std::string& text, Timings& t) {
    auto tok = split_ws(text);
    for (size_t i = 0; i < tok.size(); ++i) {
        const std::string& k = tok[i];
        auto next_int = [&](std::optional<int64_t>& dst) -> bool {
            if (i + 1 >= tok.size())
                return false;
            auto v = to_int(tok[i + 1]);
            if (!v && all_digits(tok[i + 1])) {
                if (t.too_large.empty())
                    t.too_large = k + " (" + tok[i + 1] + ")";
                v = 0;
            }
            if (!v)
                return false;
            dst = v;
            ++i;
            return true;
        };
        if (k == "op-usec" || k == "usec") {
            t.op_prefixed = t.op_prefixed || k == "op-usec";
            if (!next_int(t.usec))
                return "bad number after " + k;
        } else if (k == "op-cycles" || k == "cycles") {
            if (!next_int(t.cycles))
                return "bad number after " + k;
        } else if (k == "op-pkts" || k == "pkts") {
            if (!next_int(t.pkts))
                return "bad number after " + k;
        } else if (k == "call-usec") {
            if (!next_int(t.call_usec))
                return "bad number after call-usec";
        } else if (k == "start") {
            if (!next_int(t.start))
                return "bad number after start";
        } else if (k == "n-ops") {
            if (!next_int(t.n_ops))
                return "bad number after n-ops";
        } else if (k == "mhz") {
            if (i + 1 >= tok.size())
                return "missing value after mhz";
            t.mhz = to_double(tok[++i]);
            if (!t.mhz)
                return "bad number after mhz";
        } else if (k == "pmu" || k == "evt") {
            // "[1,2,3]" possibly split by spaces: read to the closing bracket.
            std::string list;
            while (i + 1 < tok.size()) {
                ++i;
                list += tok[i];
                if (tok[i].find(']') != std::string::npos)
                    break;
            }
            auto counters = counter_list(list);
            if (!counters)
                return "bad counter list after " + k;
            if (k == "pmu")
                t.pmu = counters;
        } else if (k.size() >= 2 && k.front() == '(' && k.back() == ')') {
            // op-pkts ratio "(0.77)"; "(inf)" or "(-nan)" when op-pkts is 0
        } else {
            return "unexpected '" + k + "' in timings";
        }
    }
    if (!t.usec)
        return "no usec value";
    return "";
}

// Why a line's numbers cannot be true (empty when they can). Such a line is refused rather than
// summed into the totals; the bounds are documented with kMaxHexagonUsec.
std::string implausible(const Timings& t) {
    if (!t.too_large.empty())
        return "implausible " + t.too_large;
    for (auto [name, v] : {std::pair{"usec", &t.usec}, std::pair{"cycles", &t.cycles},
                           std::pair{"pkts", &t.pkts}, std::pair{"call-usec", &t.call_usec},
                           std::pair{"start", &t.start}, std::pair{"n-ops", &t.n_ops}})
        if (*v && **v < 0)
            return fmt::format("negative {} ({})", name, **v);
    for (auto [name, v] : {std::pair{"usec", &t.usec}, std::pair{"call-usec", &t.call_usec}})
        if (*v && static_cast<double>(**v) > kMaxHexagonUsec)
            return fmt::format("implausible {} ({}: more than {:.0f} s)", name, **v,
                               kMaxHexagonUsec / 1e6);
    if (t.n_ops && *t.n_ops > kMaxHexagonBatchOps)
        return fmt::format("implausible n-ops ({}: more than {})", *t.n_ops, kMaxHexagonBatchOps);
    const int64_t usec = t.usec.value_or(0);
    if (t.mhz) {
        const double m = *t.mhz;
        if (!std::isfinite(m) || m < 0 || m > kMaxHexagonMhz)
            return fmt::format("implausible mhz ({}: not within 0..{:.0f})", m, kMaxHexagonMhz);
        // Upstream prints mhz 0.0 for an op under a microsecond (usec 0), never otherwise.
        if (usec > 0 && m <= 0)
            return fmt::format("implausible mhz ({}) for an op of {} usec", m, usec);
        if (usec > 0 && t.cycles) {
            const double implied = static_cast<double>(*t.cycles) / static_cast<double>(usec);
            if (std::abs(m - implied) > 0.1 + 0.01 * implied)
                return fmt::format("mhz {} disagrees with cycles/usec ({}/{} = {:.1f})", m,
                                   *t.cycles, usec, implied);
        }
    }
    if (usec > 0 && t.cycles &&
        static_cast<double>(*t.cycles) / static_cast<double>(usec) > 2 * kMaxHexagonMhz)
        return fmt::format("implausible cycles ({} in {} usec: {:.0f} MHz)", *t.cycles, usec,
                           static_cast<double>(*t.cycles) / static_cast<double>(usec));
    return "";
}

bool is_dims_token(std::string_view t) {
    int parts = 1;
    bool digit = false;
    for (char c : t) {
        if (c == ':') {
            if (!digit)
                return false;
            ++parts;
            digit = false;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            digit = true;
        } else {
            return false;
        }
    }
    return digit && parts >= 2 && parts <= 4;
}

std::string joined(const std::vector<std::string>& tok, size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i)
        s += (i > from ? " " : "") + tok[i];
    return s;
}

// The first format's tensor list (PR 16547): "<name> <ne> [x <name> <ne>]... [(<name> <ne>)]
// -> <name> <ne>", each <ne> "n0:n1:n2:n3", names possibly with spaces. Fills srcs and out;
// returns an error text or empty.
std::string parse_first_tensors(const std::vector<std::string>& tok, size_t from,
                                std::vector<TensorInfo>& srcs, TensorInfo& out) {
    size_t arrow = std::string::npos;
    for (size_t i = from; i < tok.size(); ++i)
        if (tok[i] == "->")
            arrow = i;
    if (arrow == std::string::npos)
        return "no '->' before the output tensor";
    // The output: its name (possibly empty), then its dims.
    if (arrow + 1 >= tok.size() || !is_dims_token(tok.back()))
        return "cannot read the output tensor";
    out.name = joined(tok, arrow + 1, tok.size() - 1);
    out.ne = dims_of(tok.back());
    if (out.ne.empty())
        return "cannot read the output dims '" + tok.back() + "'";
    // The inputs: names up to each dims token, "x" between them, the ids of matmul-id in
    // parentheses.
    std::vector<std::string> name;
    for (size_t i = from; i < arrow; ++i) {
        std::string t = tok[i];
        const bool paren =
            t.size() > 1 && t.back() == ')' && is_dims_token(t.substr(0, t.size() - 1));
        if (paren)
            t.pop_back();
        if (is_dims_token(t)) {
            TensorInfo s;
            s.name = joined(name, 0, name.size());
            if (paren && !s.name.empty() && s.name.front() == '(')
                s.name.erase(0, 1);
            s.ne = dims_of(t);
            srcs.push_back(std::move(s));
            name.clear();
            if (i + 1 < arrow && tok[i + 1] == "x")
                ++i;
            continue;
        }
        name.push_back(tok[i]);
    }
    if (!name.empty())
        return "input '" + joined(name, 0, name.size()) + "' has no dims";
    if (srcs.empty())
        return "no input tensor";
    return "";
}

struct Parser {
    const HexagonParseOptions& opts;
    HexagonImport imp;
    std::string mark;                       // the stage of the last marker line seen
    bool boundary = false;                  // a batch or marker line since the last record
    bool marker_boundary = false;           // a marker line since the last record
    bool graph_boundary = false;            // a graph-compute line since the last record
    std::map<std::string, int> last_batch;  // per session: its last batch line's index

    void unparsed(const std::string& text, const std::string& why) {
        imp.n_unparsed++;
        if (imp.unparsed.size() < 20)
            imp.unparsed.push_back({imp.n_lines, utf8_prefix(text, 200), why});
    }
    void refused(const std::string& text, const std::string& why) {
        imp.n_refused++;
        if (imp.refused.size() < 20)
            imp.refused.push_back({imp.n_lines, utf8_prefix(text, 200), why});
    }
    // Checks the timings; false (and the line refused or counted) when they cannot be used.
    bool timings_ok(const std::string& line, const std::string& text, Timings& t) {
        if (auto err = parse_timings(text, t); !err.empty()) {
            unparsed(line, err);
            return false;
        }
        if (auto why = implausible(t); !why.empty()) {
            refused(line, why);
            return false;
        }
        return true;
    }

    void add_record(OpRecord r, const Timings& t, const std::string& format) {
        r.node = static_cast<int>(imp.records.size());
        r.layer = parse_layer(r.out.name);
        r.no_compute = is_no_compute_op(r.op);
        r.op_ns = static_cast<double>(*t.usec) * 1000.0;
        r.op_method = "backend profiler (usec)";
        if (t.call_usec)
            r.call_ns = static_cast<double>(*t.call_usec) * 1000.0;
        r.cycles = t.cycles;
        r.mhz = t.mhz;
        r.pkts = t.pkts;
        r.start_cycles = t.start;
        r.pmu = t.pmu;
        imp.records.push_back(std::move(r));
        imp.stage_mark.push_back(mark);
        imp.boundary_before.push_back(boundary);
        imp.marker_before.push_back(marker_boundary);
        imp.graph_before.push_back(graph_boundary);
        boundary = marker_boundary = graph_boundary = false;
        imp.formats[format]++;
    }

    void other_line(const std::string& line) {
        imp.n_ignored++;
        for (const auto& [text, stage] : opts.stage_marks)
            if (!text.empty() && line.find(text) != std::string::npos) {
                mark = stage;
                boundary = marker_boundary = true;
                imp.n_marks++;
                break;
            }
    }

    void add_batch(HexagonBatch b) {
        b.records_before = imp.records.size();
        last_batch[b.device] = static_cast<int>(imp.batches.size());
        imp.batches.push_back(std::move(b));
        boundary = true;
    }

    // "ggml-hex: <sess> trace-evt <EVENT>: thread T info I start|stop CYCLES" (PR 26049).
    void trace_evt(const std::string& line, size_t idx) {
        imp.n_trace++;
        HexagonTraceEvent e;
        if (auto before = split_ws(line.substr(0, idx)); !before.empty())
            e.device = before.back();
        auto tok = split_ws(line.substr(idx + std::string("trace-evt").size()));
        std::optional<int64_t> thread, info, cycles;
        if (tok.size() != 7 || tok[0].size() < 2 || tok[0].back() != ':' || tok[1] != "thread" ||
            !(thread = to_int(tok[2])) || tok[3] != "info" || !(info = to_int(tok[4])) ||
            (tok[5] != "start" && tok[5] != "stop") || !(cycles = to_int(tok[6]))) {
            imp.n_trace--;
            unparsed(line,
                     "cannot read trace-evt (expected 'EVENT: thread T info I start|stop C')");
            return;
        }
        // The backend prints an unsigned 32-bit counter, a thread below 32 and a 15-bit info.
        if (*cycles < 0 || *cycles > 0xffffffffLL || *thread < 0 || *thread > 64 || *info < 0 ||
            *info > 0x7fff) {
            imp.n_trace--;
            refused(line, fmt::format("implausible trace-evt (thread {}, info {}, cycles {})",
                                      *thread, *info, *cycles));
            return;
        }
        e.event = tok[0].substr(0, tok[0].size() - 1);
        e.thread = static_cast<int>(*thread);
        e.info = static_cast<int>(*info);
        e.stop = tok[5] == "stop";
        e.cycles = static_cast<uint32_t>(*cycles);
        e.line = imp.n_lines;
        if (auto it = last_batch.find(e.device); it != last_batch.end())
            e.batch = it->second;
        e.records_before = imp.records.size();
        imp.events.push_back(std::move(e));
    }

    // "ggml-hex: <sess> profile-batch n-ops N batch-dur-usec N htp-ops-usec N[ evt [..]]"
    void profile_batch(const std::string& line, size_t idx) {
        std::string device = "HTP";
        if (auto before = split_ws(line.substr(0, idx)); !before.empty())
            device = before.back();
        auto tok = split_ws(line.substr(idx + std::string("profile-batch").size()));
        HexagonBatch b;
        b.device = device;
        b.line = imp.n_lines;
        b.kind = "profile-batch";
        std::optional<int64_t> n_ops, dur, htp;
        for (size_t i = 0; i < tok.size(); ++i) {
            auto num = [&](std::optional<int64_t>& dst) {
                if (i + 1 < tok.size())
                    dst = to_int(tok[++i]);
                return dst.has_value();
            };
            bool ok = true;
            if (tok[i] == "n-ops")
                ok = num(n_ops);
            else if (tok[i] == "batch-dur-usec")
                ok = num(dur);
            else if (tok[i] == "htp-ops-usec")
                ok = num(htp);
            else if (tok[i] == "evt") {
                std::string list;
                while (i + 1 < tok.size()) {
                    list += tok[++i];
                    if (list.find(']') != std::string::npos)
                        break;
                }
                b.evt_cnt = counter_list(list);
                ok = b.evt_cnt.has_value();
            } else
                ok = false;
            if (!ok) {
                unparsed(line, "cannot read profile-batch near '" + tok[i] + "'");
                return;
            }
        }
        if (!dur) {
            unparsed(line, "profile-batch without batch-dur-usec");
            return;
        }
        for (auto [name, v] : {std::pair{"n-ops", n_ops}, std::pair{"batch-dur-usec", dur},
                               std::pair{"htp-ops-usec", htp}}) {
            std::string why;
            if (v && *v < 0)
                why = fmt::format("negative {} ({})", name, *v);
            else if (v && std::string(name) != "n-ops" && static_cast<double>(*v) > kMaxHexagonUsec)
                why = fmt::format("implausible {} ({}: more than {:.0f} s)", name, *v,
                                  kMaxHexagonUsec / 1e6);
            else if (v && std::string(name) == "n-ops" && *v > kMaxHexagonBatchOps)
                why = fmt::format("implausible n-ops ({}: more than {})", *v, kMaxHexagonBatchOps);
            if (!why.empty()) {
                refused(line, why);
                return;
            }
        }
        b.usec = static_cast<double>(*dur);
        b.n_ops = n_ops;
        b.htp_ops_usec = htp;
        add_batch(std::move(b));
    }

    // The first format (PR 16547): "ggml-hex: <sess> <OP> <tensors> : op-usec ... call-usec N".
    void first_format(const std::string& line, size_t at) {
        const std::string body = line.substr(at);
        const size_t colon = body.rfind(" : op-usec ");
        if (colon == std::string::npos) {
            unparsed(line, "expected ' : op-usec' after the tensors");
            return;
        }
        auto tok = split_ws(body.substr(0, colon));
        if (tok.size() < 4) {
            unparsed(line, "expected a session, an op and tensors after ggml-hex:");
            return;
        }
        OpRecord r;
        r.backend = tok[0];
        // ggml_op_name() of the node, except MUL_MAT_ID's own wording.
        r.op = tok[1] == "matmul-id" ? "MUL_MAT_ID" : tok[1];
        if (auto err = parse_first_tensors(tok, 2, r.srcs, r.out); !err.empty()) {
            unparsed(line, err);
            return;
        }
        Timings t;
        if (!timings_ok(line, body.substr(colon + 3), t))
            return;
        add_record(std::move(r), t, "first (PR 16547)");
    }

    // "profile-op" lines: PR 17500 to the pinned tree.
    void profile_op(const std::string& line, size_t idx) {
        // The session name right before "profile-op" ("HTP0", "HTP1:0").
        std::string device = "HTP";
        {
            auto before = split_ws(line.substr(0, idx));
            if (!before.empty() && before.back().rfind("HTP", 0) == 0)
                device = before.back();
        }
        size_t p = idx + std::string("profile-op").size();
        while (p < line.size() && line[p] == ' ')
            ++p;
        size_t q = p;
        while (q < line.size() && (std::isalnum(static_cast<unsigned char>(line[q])) ||
                                   line[q] == '_' || line[q] == '+' || line[q] == '-'))
            ++q;
        if (q == p) {
            unparsed(line, "no op name after profile-op");
            return;
        }
        const std::string op = line.substr(p, q - p);
        if (q >= line.size() || (line[q] != ':' && line[q] != '|')) {
            unparsed(line, "expected ':' or '|' after the op name");
            return;
        }
        const bool pipe = line[q] == '|';
        std::vector<std::string> fields;
        for (auto& f : split(line.substr(q + 1), pipe ? "|" : " : "))
            fields.push_back(trimmed(f));
        if (fields.size() < 2) {
            unparsed(line, "too few fields");
            return;
        }
        Timings t;
        if (op == "OPBATCH") {
            if (!timings_ok(line, fields.back(), t))
                return;
            HexagonBatch b;
            b.device = device;
            b.line = imp.n_lines;
            b.kind = "OPBATCH";
            b.usec = static_cast<double>(*t.usec);
            b.cycles = t.cycles;
            b.mhz = t.mhz;
            if (fields.size() >= 2) {
                Timings nt;
                if (parse_timings(fields[1] + " usec 0", nt).empty()) {
                    if (auto why = implausible(nt); !why.empty()) {
                        refused(line, why);
                        return;
                    }
                    b.n_ops = nt.n_ops;
                }
            }
            if (fields.size() >= 3 && fields[2].rfind("evt-cnt ", 0) == 0)
                b.evt_cnt = counter_list("[" + fields[2].substr(8) + "]");
            b.start = t.start;
            add_batch(std::move(b));
            return;
        }
        if (fields.size() < 4) {
            unparsed(line, "expected names, dims and types before the timings");
            return;
        }
        if (auto err = parse_timings(fields.back(), t); !err.empty()) {
            unparsed(line, err);
            return;
        }
        auto names = io_list(fields[0]);
        auto dims = io_list(fields[1]);
        auto types = io_list(fields[2]);
        OpRecord r;
        r.op = op;
        r.backend = device;
        r.out.name = names.back();
        r.out.ne = dims_of(dims.back());
        if (r.out.ne.empty()) {
            unparsed(line, "cannot read the output dims '" + dims.back() + "'");
            return;
        }
        if (auto why = implausible(t); !why.empty()) {
            refused(line, why);
            return;
        }
        r.out.type = types.back();
        const size_t n_in = std::max({names.size(), dims.size(), types.size()}) - 1;
        for (size_t i = 0; i < n_in; ++i) {
            TensorInfo s;
            if (names.size() > 1 && i + 1 < names.size())
                s.name = names[i];
            if (dims.size() > 1 && i + 1 < dims.size())
                s.ne = dims_of(dims[i]);
            if (types.size() > 1 && i + 1 < types.size())
                s.type = types[i];
            r.srcs.push_back(s);
        }
        // The kernel path: the pipe format's field before the timings ("hvx-tiled vtcm N").
        if (pipe && fields.size() >= 6 && !fields[fields.size() - 2].empty() &&
            fields[fields.size() - 2] != "----")
            r.kernel = fields[fields.size() - 2];
        const std::string format = pipe               ? "pipe (PR 24954)"
                                   : t.op_prefixed    ? "op-usec (PR 17500)"
                                   : t.start || t.mhz ? "usec start mhz (PR 24592)"
                                                      : "usec (PR 22269)";
        add_record(std::move(r), t, format);
    }

    void feed(std::string text) {
        imp.n_lines++;
        text = strip_log_escapes(text);
        // Names, devices and unparsed lines are quoted in the result document.
        make_valid_utf8(text);
        if (const size_t idx = text.find("profile-op"); idx != std::string::npos)
            return profile_op(text, idx);
        const size_t hex = text.find("ggml-hex: ");
        if (hex == std::string::npos)
            return other_line(text);
        if (const size_t idx = text.find(" profile-batch", hex); idx != std::string::npos)
            return profile_batch(text, idx + 1);
        if (const size_t idx = text.find(" trace-evt ", hex); idx != std::string::npos)
            return trace_evt(text, idx + 1);
        if (text.find(" trace-op ", hex) != std::string::npos) {
            imp.n_trace++;
            return;
        }
        // Verbose logging: the host hands the backend a new graph.
        if (text.find(" graph-compute n_nodes ", hex) != std::string::npos) {
            imp.n_ignored++;
            imp.n_graph_lines++;
            graph_boundary = boundary = true;
            return;
        }
        if (text.find(" op-usec ", hex) != std::string::npos)
            return first_format(text, hex + std::string("ggml-hex: ").size());
        other_line(text);
    }
};

}  // namespace

std::string strip_log_escapes(const std::string& line) {
    std::string out;
    out.reserve(line.size());
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '\x1b') {
            // CSI: ESC '[' parameters, then one final byte in 0x40..0x7E.
            if (i + 1 < line.size() && line[i + 1] == '[') {
                size_t j = i + 2;
                while (j < line.size() && (static_cast<unsigned char>(line[j]) < 0x40 ||
                                           static_cast<unsigned char>(line[j]) > 0x7e))
                    ++j;
                i = j;  // the final byte (or the end)
            }
            continue;
        }
        out += line[i];
    }
    if (!out.empty() && out.back() == '\r')
        out.pop_back();
    return out;
}

HexagonImport parse_hexagon_profile(std::istream& in) {
    return parse_hexagon_profile(in, HexagonParseOptions{});
}

HexagonImport parse_hexagon_profile(std::istream& in, const HexagonParseOptions& opts) {
    Parser p{opts, {}, {}, false, false, false, {}};
    std::string text;
    for (uint64_t n = 1; std::getline(in, text); ++n) {
        // A log of millions of lines takes seconds: Ctrl-C or SIGTERM ends it (nothing is
        // measured here, the log stays as it is).
        if (n % 4096 == 0 && interrupt_requested())
            throw runtime_error("import interrupted (Ctrl-C or SIGTERM) at line " +
                                std::to_string(n) + " of the log");
        p.feed(text);
    }
    return std::move(p.imp);
}

std::optional<int64_t> matmul_tokens(const OpRecord& r) {
    if (r.op.rfind("MUL_MAT", 0) != 0 || r.out.ne.empty())
        return std::nullopt;
    // MUL_MAT_ID's output is [rows, experts used, tokens]; MUL_MAT's [rows, tokens, ...]. The log
    // writes two dims when ne[2] and ne[3] are 1.
    const size_t dim = r.op.rfind("MUL_MAT_ID", 0) == 0 ? 2 : 1;
    return dim < r.out.ne.size() ? r.out.ne[dim] : 1;
}

// The output projection (result_output: the logits), a graph's last node: a mat-mul of
// output.weight, or of token_embd.weight where the embeddings are tied.
bool is_output_projection(const OpRecord& r) {
    if (r.op.rfind("MUL_MAT", 0) != 0)
        return false;
    if (r.out.name == "result_output")
        return true;
    return !r.srcs.empty() &&
           (r.srcs[0].name == "output.weight" || r.srcs[0].name == "token_embd.weight");
}

StageSplit split_stages(const HexagonImport& imp) {
    const auto& recs = imp.records;
    const size_t n = recs.size();
    auto flag = [](const std::vector<bool>& v, size_t i) { return i < v.size() && v[i]; };
    auto mark_of = [&](size_t i) {
        return i < imp.stage_mark.size() ? imp.stage_mark[i] : std::string();
    };
    StageSplit sp;
    sp.stage.assign(n, "");
    sp.graph.assign(n, 0);

    // Segments: cut at OPBATCH and marker lines and where the layer index falls back.
    std::vector<size_t> seg(n, 0);
    std::vector<bool> seg_new_graph;
    // The last record's layer, -1 before any (a plain int: GCC 12 took the std::optional for
    // maybe-uninitialised here).
    int last_layer = -1;
    bool seg_unlayered = false;  // the current segment has no record with a layer yet
    bool after_output = false;   // the record before was the output projection
    for (size_t i = 0; i < n; ++i) {
        const auto& r = recs[i];
        const bool reset = r.layer && last_layer >= 0 && *r.layer < last_layer;
        if (i == 0 || flag(imp.boundary_before, i) || after_output) {
            seg_new_graph.push_back(i == 0 || flag(imp.marker_before, i) ||
                                    flag(imp.graph_before, i) || after_output || reset);
            seg_unlayered = true;
        } else if (reset) {
            // The next graph began at the last cut when only unlayered ops (its inputs) came
            // since; otherwise here.
            if (seg_unlayered)
                seg_new_graph.back() = true;
            else
                seg_new_graph.push_back(true);
        }
        seg[i] = seg_new_graph.size() - 1;
        if (r.layer) {
            last_layer = *r.layer;
            seg_unlayered = false;
        }
        after_output = is_output_projection(r);
        if (after_output)
            last_layer = -1;  // the next graph's layers count from its own start
    }

    // A segment's stage by the tokens of its mat-muls (unmarked records only).
    const size_t n_seg = seg_new_graph.size();
    std::vector<std::string> seg_stage(n_seg);
    std::vector<int> seg_prefill(n_seg, 0), seg_decode(n_seg, 0);
    bool marked = false, by_tokens = false;
    for (size_t i = 0; i < n; ++i) {
        if (!mark_of(i).empty()) {
            marked = true;
            continue;
        }
        if (auto t = matmul_tokens(recs[i])) {
            if (*t > 1)
                seg_prefill[seg[i]]++;
            else
                seg_decode[seg[i]]++;
        }
    }
    for (size_t k = 0; k < n_seg; ++k)
        seg_stage[k] = seg_prefill[k] > 0 ? "prefill" : seg_decode[k] > 0 ? "decode" : "";
    // Segments without mat-muls: the stage before them, the first ones the stage after.
    std::string prev;
    for (size_t k = 0; k < n_seg; ++k) {
        if (seg_stage[k].empty())
            seg_stage[k] = prev;
        else
            prev = seg_stage[k];
    }
    std::string next;
    for (size_t k = n_seg; k-- > 0;) {
        if (!seg_stage[k].empty())
            next = seg_stage[k];
        else
            seg_stage[k] = next;
    }

    std::string prev_stage;
    size_t prev_seg = 0;
    for (size_t i = 0; i < n; ++i) {
        std::string st = mark_of(i);
        if (st.empty()) {
            st = seg_stage[seg[i]].empty() ? "log" : seg_stage[seg[i]];
            if (st != "log")
                by_tokens = true;
        }
        const bool new_graph =
            i == 0 || st != prev_stage || (seg[i] != prev_seg && seg_new_graph[seg[i]]);
        if (!sp.n_graphs.count(st))
            sp.order.push_back(st);
        int& g = sp.n_graphs[st];
        if (new_graph)
            ++g;
        sp.stage[i] = st;
        sp.graph[i] = g - 1;
        prev_stage = st;
        prev_seg = seg[i];
    }
    sp.method = marked && by_tokens ? "markers+tokens"
                : marked            ? "markers"
                : by_tokens         ? "tokens"
                                    : "none";
    return sp;
}

json to_json(const HexagonImport& imp) {
    auto lines = [](const std::vector<UnparsedLine>& v) {
        json a = json::array();
        for (const auto& u : v)
            a.push_back({{"line", u.line}, {"text", u.text}, {"reason", u.reason}});
        return a;
    };
    // Per session, never added across sessions (they run at once); per stage in
    // stages[].npu_pipeline.
    std::map<std::string, double> batch_usec;
    std::map<std::string, int> batch_kinds;
    for (const auto& b : imp.batches) {
        batch_usec[b.device] += b.usec;
        batch_kinds[b.kind]++;
    }
    return json{{"n_lines", imp.n_lines},
                {"n_records", imp.records.size()},
                {"n_ignored", imp.n_ignored},
                {"n_trace", imp.n_trace},
                {"n_trace_events", imp.events.size()},
                {"n_graph_lines", imp.n_graph_lines},
                {"n_unparsed", imp.n_unparsed},
                {"unparsed", lines(imp.unparsed)},
                {"n_refused", imp.n_refused},
                {"refused", lines(imp.refused)},
                {"formats", imp.formats},
                {"n_batches", imp.batches.size()},
                {"batch_kinds", batch_kinds},
                {"batch_usec_by_session", batch_usec}};
}

}  // namespace sb
