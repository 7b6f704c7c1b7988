#include "profile/hexagon_import.hpp"
#include "core/strings.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

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

std::optional<double> to_double(const std::string& s) {
    if (s.empty())
        return std::nullopt;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size())
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
};

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
            if (k == "pmu") {
                t.pmu = counter_list(list);
                if (!t.pmu)
                    return "bad counter list after pmu";
            }
        } else if (k.size() >= 2 && k.front() == '(' && k.back() == ')') {
            // op-pkts ratio "(0.77)"
        } else {
            return "unexpected '" + k + "' in timings";
        }
    }
    if (!t.usec)
        return "no usec value";
    return "";
}

// A time, count or clock that cannot be negative (or, for the clock, zero); such a line is
// refused rather than summed into the totals. Empty when all are plausible.
std::string negative_timing(const Timings& t) {
    auto check = [](const char* name, const std::optional<int64_t>& v) -> std::string {
        return v && *v < 0 ? fmt::format("negative {} ({})", name, *v) : std::string();
    };
    for (auto [name, v] : {std::pair{"usec", &t.usec}, std::pair{"cycles", &t.cycles},
                           std::pair{"pkts", &t.pkts}, std::pair{"call-usec", &t.call_usec},
                           std::pair{"start", &t.start}, std::pair{"n-ops", &t.n_ops}})
        if (auto e = check(name, *v); !e.empty())
            return e;
    if (t.mhz && !(std::isfinite(*t.mhz) && *t.mhz > 0))
        return fmt::format("implausible mhz ({})", *t.mhz);
    return "";
}

}  // namespace

HexagonImport parse_hexagon_profile(std::istream& in) {
    return parse_hexagon_profile(in, HexagonParseOptions{});
}

HexagonImport parse_hexagon_profile(std::istream& in, const HexagonParseOptions& opts) {
    HexagonImport imp;
    std::string mark;              // the stage of the last marker line seen
    bool boundary = false;         // an OPBATCH or marker line since the last record
    bool marker_boundary = false;  // a marker line since the last record
    std::string line;
    auto unparsed = [&](const std::string& text, const std::string& why) {
        imp.n_unparsed++;
        if (imp.unparsed.size() < 20)
            imp.unparsed.push_back({imp.n_lines, utf8_prefix(text, 200), why});
    };
    while (std::getline(in, line)) {
        imp.n_lines++;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        // Names, devices and unparsed lines are quoted in the result document.
        make_valid_utf8(line);
        const size_t idx = line.find("profile-op");
        if (idx == std::string::npos) {
            imp.n_ignored++;
            for (const auto& [text, stage] : opts.stage_marks)
                if (!text.empty() && line.find(text) != std::string::npos) {
                    mark = stage;
                    boundary = marker_boundary = true;
                    imp.n_marks++;
                    break;
                }
            continue;
        }
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
            continue;
        }
        const std::string op = line.substr(p, q - p);
        if (q >= line.size() || (line[q] != ':' && line[q] != '|')) {
            unparsed(line, "expected ':' or '|' after the op name");
            continue;
        }
        const bool pipe = line[q] == '|';
        std::vector<std::string> fields;
        if (pipe) {
            for (auto& f : split(line.substr(q + 1), "|"))
                fields.push_back(trimmed(f));
        } else {
            for (auto& f : split(line.substr(q + 1), " : "))
                fields.push_back(trimmed(f));
        }
        if (fields.size() < 2) {
            unparsed(line, "too few fields");
            continue;
        }
        Timings t;
        if (auto err = parse_timings(fields.back(), t); !err.empty()) {
            unparsed(line, err);
            continue;
        }
        if (auto err = negative_timing(t); !err.empty()) {
            unparsed(line, err);
            continue;
        }
        if (op == "OPBATCH") {
            HexagonBatch b;
            b.device = device;
            b.line = imp.n_lines;
            b.usec = static_cast<double>(*t.usec);
            b.cycles = t.cycles;
            if (fields.size() >= 2) {
                Timings nt;
                if (parse_timings(fields[1] + " usec 0", nt).empty() && negative_timing(nt).empty())
                    b.n_ops = nt.n_ops;
            }
            if (fields.size() >= 3 && fields[2].rfind("evt-cnt ", 0) == 0)
                b.evt_cnt = counter_list("[" + fields[2].substr(8) + "]");
            imp.batches.push_back(b);
            boundary = true;
            continue;
        }
        if (fields.size() < 4) {
            unparsed(line, "expected names, dims and types before the timings");
            continue;
        }
        auto names = io_list(fields[0]);
        auto dims = io_list(fields[1]);
        auto types = io_list(fields[2]);
        OpRecord r;
        r.node = static_cast<int>(imp.records.size());
        r.op = op;
        r.backend = device;
        r.out.name = names.back();
        r.out.ne = dims_of(dims.back());
        if (r.out.ne.empty()) {
            unparsed(line, "cannot read the output dims '" + dims.back() + "'");
            continue;
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
        r.layer = parse_layer(r.out.name);
        r.no_compute = is_no_compute_op(op);
        r.op_ns = static_cast<double>(*t.usec) * 1000.0;
        r.op_method = "backend profiler (usec)";
        if (t.call_usec)
            r.call_ns = static_cast<double>(*t.call_usec) * 1000.0;
        r.cycles = t.cycles;
        r.mhz = t.mhz;
        r.pkts = t.pkts;
        r.start_cycles = t.start;
        r.pmu = t.pmu;
        // The kernel path: the pipe format's field before the timings ("hvx-tiled vtcm N").
        if (pipe && fields.size() >= 6 && !fields[fields.size() - 2].empty() &&
            fields[fields.size() - 2] != "----")
            r.kernel = fields[fields.size() - 2];
        imp.records.push_back(std::move(r));
        imp.stage_mark.push_back(mark);
        imp.boundary_before.push_back(boundary);
        imp.marker_before.push_back(marker_boundary);
        boundary = marker_boundary = false;
        const std::string fmt = pipe            ? "usec (pipe)"
                                : t.op_prefixed ? "op-usec/call-usec"
                                                : "usec (colon)";
        imp.formats[fmt]++;
    }
    return imp;
}

std::optional<int64_t> matmul_tokens(const OpRecord& r) {
    if (r.op.rfind("MUL_MAT", 0) != 0 || r.out.ne.empty())
        return std::nullopt;
    // MUL_MAT_ID's output is [rows, experts used, tokens]; MUL_MAT's [rows, tokens, ...]. The log
    // writes two dims when ne[2] and ne[3] are 1.
    const size_t dim = r.op.rfind("MUL_MAT_ID", 0) == 0 ? 2 : 1;
    return dim < r.out.ne.size() ? r.out.ne[dim] : 1;
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
    std::optional<int> last_layer;
    bool seg_unlayered = false;  // the current segment has no record with a layer yet
    for (size_t i = 0; i < n; ++i) {
        const auto& r = recs[i];
        const bool reset = r.layer && last_layer && *r.layer < *last_layer;
        if (i == 0 || flag(imp.boundary_before, i)) {
            seg_new_graph.push_back(i == 0 || flag(imp.marker_before, i) || reset);
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
            last_layer = r.layer;
            seg_unlayered = false;
        }
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
    json unparsed = json::array();
    for (const auto& u : imp.unparsed)
        unparsed.push_back({{"line", u.line}, {"text", u.text}, {"reason", u.reason}});
    double batch_usec = 0;
    for (const auto& b : imp.batches)
        batch_usec += b.usec;
    return json{{"n_lines", imp.n_lines},
                {"n_records", imp.records.size()},
                {"n_ignored", imp.n_ignored},
                {"n_unparsed", imp.n_unparsed},
                {"unparsed", unparsed},
                {"formats", imp.formats},
                {"n_batches", imp.batches.size()},
                {"batch_usec_total", imp.batches.empty() ? json(nullptr) : json(batch_usec)}};
}

}  // namespace sb
