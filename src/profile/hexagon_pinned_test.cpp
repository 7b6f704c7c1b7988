// Hexagon profile logs written with the pinned llama.cpp's own format strings.
//
// The Hexagon backend (ggml/src/ggml-hexagon/ggml-hexagon.cpp of the pinned llama.cpp) logs its
// op profile with GGML_HEXAGON_PROFILE=1 (2 adds PMU counters, 3 trace events):
//   ggml_hexagon_dump_op_prof     GGML_LOG_DEBUG("ggml-hex: %s profile-op %s|%s|...|usec %u
//                                 cycles %u start %u mhz %.1f%s\n", ...)  one line per op
//   (its PMU text)                snprintf(pmu_str, ..., " pmu [%u,%u,%u,%u,%u,%u,%u,%u]", ...)
//   ggml_hexagon_dump_batch_prof  GGML_LOG_DEBUG("ggml-hex: %s profile-op OPBATCH|----|n-ops
//                                 %u|%s|----|----|usec %u cycles %llu start %llu mhz %.1f\n")
//                                 one line per batch, written BEFORE the batch's op lines
//   (its event counts)            snprintf(evt_str, ..., "evt-cnt %u,%u,...", ...)
//   ggml_hexagon_dump_trace_events GGML_LOG_DEBUG("ggml-hex: %s trace-evt %s: thread %u ...")
// The field texts (names, dims, types, strides: "in0 x in1 -> out", dims "%d:%d" or
// "%d:%d:%d:%d") are htp_opformat's in ggml-hexagon/htp-opnode.h.
//
// These tests read each call (its format string AND its argument list) from the pinned source
// at test time, print a log holding one prefill graph and two decode graphs through them, and
// import it. A format change upstream (a field added, renamed, reordered) fails here, naming the
// file and line, before a user's log fails to import. The printed logs are also kept in
// tests/fixtures/hexagon/pinned_profile{1,2,3}.log and must equal what the source prints now
// (SB_WRITE_FIXTURES=1 rewrites them).
#include "profile/hexagon_import.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/result.hpp"
#include "profile/ops_command.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

const std::string kSourceFile = "ggml/src/ggml-hexagon/ggml-hexagon.cpp";

std::string pinned_source() {
    const std::string path = std::string(SB_LLAMA_SOURCE_DIR) + "/" + kSourceFile;
    std::ifstream f(path);
    if (!f)
        throw std::runtime_error("cannot read the pinned Hexagon backend: " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// One logging call of the source: where it is, its format string and its arguments (each an
// expression with its white space collapsed).
struct CallSite {
    int line = 0;
    std::string format;
    std::vector<std::string> args;
    std::string where() const { return fmt::format("{}:{}", kSourceFile, line); }
};

std::string collapse(const std::string& s) {
    std::string out;
    bool space = false;
    for (char c : s) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            space = !out.empty();
            continue;
        }
        if (space)
            out += ' ';
        space = false;
        out += c;
    }
    return out;
}

// The call to `func` whose format string contains `needle`. The format is the concatenation of
// the string literals of argument `fmt_arg`.
CallSite find_call(const std::string& src, const std::string& func, const std::string& needle,
                   size_t fmt_arg) {
    const size_t at = src.find(needle);
    if (at == std::string::npos)
        throw std::runtime_error("'" + needle + "' not found in " + kSourceFile);
    const size_t open = src.rfind(func + "(", at);
    if (open == std::string::npos)
        throw std::runtime_error(func + "( not found before '" + needle + "'");
    CallSite c;
    c.line = 1 + static_cast<int>(std::count(src.begin(), src.begin() + at, '\n'));
    std::vector<std::string> raw(1);
    int depth = 0;
    for (size_t i = open + func.size() + 1; i < src.size(); ++i) {
        const char ch = src[i];
        if (ch == '"') {
            const size_t start = i;
            for (++i; i < src.size() && src[i] != '"'; ++i)
                if (src[i] == '\\')
                    ++i;
            raw.back() += src.substr(start, i - start + 1);
            continue;
        }
        if (ch == '(')
            ++depth;
        if (ch == ')' && depth-- == 0)
            break;
        if (ch == ',' && depth == 0) {
            raw.emplace_back();
            continue;
        }
        raw.back() += ch;
    }
    if (raw.size() <= fmt_arg)
        throw std::runtime_error(c.where() + ": too few arguments");
    // The literal(s) of the format argument, unescaped.
    const std::string& lit = raw[fmt_arg];
    for (size_t i = 0; i < lit.size(); ++i) {
        if (lit[i] != '"')
            continue;
        for (++i; i < lit.size() && lit[i] != '"'; ++i) {
            if (lit[i] == '\\' && i + 1 < lit.size()) {
                const char e = lit[++i];
                c.format += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            } else {
                c.format += lit[i];
            }
        }
    }
    for (size_t i = fmt_arg + 1; i < raw.size(); ++i)
        c.args.push_back(collapse(raw[i]));
    return c;
}

using Value = std::variant<std::string, long long, double>;

// printf of `c.format` with the value of each argument expression taken from `values`: a
// conversion whose argument is unknown or of the wrong kind is a failure naming the line.
std::string print(const CallSite& c, const std::map<std::string, Value>& values) {
    std::string out;
    size_t next = 0;
    const std::string& f = c.format;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '%') {
            out += f[i];
            continue;
        }
        if (i + 1 < f.size() && f[i + 1] == '%') {
            out += '%';
            ++i;
            continue;
        }
        size_t j = i + 1;
        while (j < f.size() && std::string("0123456789.-+ #lhzj").find(f[j]) != std::string::npos)
            ++j;
        if (j >= f.size())
            throw std::runtime_error(c.where() + ": truncated conversion");
        const std::string spec = f.substr(i, j - i + 1);
        const char conv = f[j];
        i = j;
        if (next >= c.args.size())
            throw std::runtime_error(c.where() + ": more conversions than arguments");
        const std::string& expr = c.args[next++];
        auto v = values.find(expr);
        if (v == values.end())
            throw std::runtime_error(c.where() + ": argument '" + expr + "' (for " + spec +
                                     ") is not one this test knows: the format changed");
        char buf[512];
        if (conv == 's' && std::holds_alternative<std::string>(v->second))
            std::snprintf(buf, sizeof buf, "%s", std::get<std::string>(v->second).c_str());
        else if ((conv == 'u' || conv == 'd') && std::holds_alternative<long long>(v->second))
            std::snprintf(buf, sizeof buf, "%lld", std::get<long long>(v->second));
        else if (conv == 'f' && std::holds_alternative<double>(v->second) && spec == "%.1f")
            std::snprintf(buf, sizeof buf, "%.1f", std::get<double>(v->second));
        else
            throw std::runtime_error(c.where() + ": conversion " + spec + " for '" + expr +
                                     "' is not what this test prints");
        out += buf;
    }
    if (next != c.args.size())
        throw std::runtime_error(c.where() + ": fewer conversions than arguments");
    return out;
}

// The pinned source's logging calls.
struct PinnedFormats {
    CallSite op, batch, pmu, evt, trace;
};

PinnedFormats pinned_formats(const std::string& src = pinned_source()) {
    PinnedFormats p;
    p.op = find_call(src, "GGML_LOG_DEBUG", "profile-op %s|", 0);
    p.batch = find_call(src, "GGML_LOG_DEBUG", "profile-op OPBATCH|", 0);
    p.pmu = find_call(src, "snprintf", " pmu [%u", 2);
    p.evt = find_call(src, "snprintf", "evt-cnt %u", 2);
    p.trace = find_call(src, "GGML_LOG_DEBUG", "trace-evt %s", 0);
    return p;
}

// One op of the scripted model, as htp_opformat would describe it.
struct Op {
    std::string op;
    std::vector<std::string> names;  // inputs then the output
    std::vector<std::vector<long long>> ne;
    std::vector<std::string> types;
    std::string kparams = "----";
    long long usec = 0;
};

std::string dims_text(const std::vector<long long>& ne) {
    // htp_opformat::format_tensor_dims: two dims when ne[2] == ne[3] == 1, else four.
    std::vector<long long> n = ne;
    n.resize(4, 1);
    if (n[2] == 1 && n[3] == 1)
        return fmt::format("{}:{}", n[0], n[1]);
    return fmt::format("{}:{}:{}:{}", n[0], n[1], n[2], n[3]);
}

std::string strides_text(const std::vector<long long>& ne, const std::string& type) {
    const long long es = type == "f16" ? 2 : 4;
    std::vector<long long> n = ne;
    n.resize(4, 1);
    if (n[2] == 1 && n[3] == 1)
        return fmt::format("{}:{}", es, es * n[0]);
    return fmt::format("{}:{}:{}:{}", es, es * n[0], es * n[0] * n[1], es * n[0] * n[1] * n[2]);
}

std::string joined(const std::vector<std::string>& v) {
    // "in0 x in1 -> out" (htp_opformat::format_op_names and its siblings)
    std::string s;
    for (size_t i = 0; i + 1 < v.size(); ++i)
        s += (i ? " x " : "") + v[i];
    return v.size() > 1 ? s + " -> " + v.back() : v.back();
}

// A two-layer model's graph for `tokens` tokens (prefill when > 1): its ops with scripted
// times. The output projection has one token in prefill as well (only the last token's logits
// are computed), as in llama.cpp.
std::vector<Op> graph_ops(long long tokens, long long kv, int graph_no) {
    const long long e = 256, ff = 768, vocab = 1000, hd = 64, nh = 4;
    const bool pf = tokens > 1;
    auto t = [&](long long base) { return (pf ? base * 6 : base) + graph_no; };
    std::vector<Op> ops;
    for (int l = 0; l < 2; ++l) {
        const std::string L = std::to_string(l);
        const std::string in = l == 0 ? "inp_embd" : "l_out-" + std::to_string(l - 1);
        ops.push_back({"RMS_NORM",
                       {in, "norm-" + L},
                       {{e, tokens}, {e, tokens}},
                       {"f32", "f32"},
                       "row-block vtcm 0",
                       t(4)});
        ops.push_back({"MUL",
                       {"norm-" + L, "blk." + L + ".attn_norm.weight", "attn_norm-" + L},
                       {{e, tokens}, {e}, {e, tokens}},
                       {"f32", "f32", "f32"},
                       "----",
                       t(3)});
        for (const char* w : {"q", "k", "v"})
            ops.push_back({"MUL_MAT",
                           {std::string("blk.") + L + ".attn_" + w + ".weight", "attn_norm-" + L,
                            std::string(1, char(std::toupper(w[0]))) + "cur-" + L},
                           {{e, e}, {e, tokens}, {e, tokens}},
                           {"q4_0", "f32", "f32"},
                           "hvx-tiled vtcm 262144",
                           t(20)});
        ops.push_back({"ROPE",
                       {"Qcur-" + L, "inp_pos", "Qcur-" + L + " (rope)"},
                       {{hd, nh, tokens}, {tokens}, {hd, nh, tokens}},
                       {"f32", "i32", "f32"},
                       "----",
                       t(5)});
        ops.push_back(
            {"FLASH_ATTN_EXT",
             {"q-" + L, "k-" + L, "v-" + L, "KQ_mask", "__fattn__-" + L},
             {{hd, tokens, nh}, {hd, kv, nh}, {hd, kv, nh}, {kv, tokens}, {hd, nh, tokens}},
             {"f32", "f16", "f16", "f16", "f32"},
             "hvx vtcm 131072",
             t(30)});
        ops.push_back({"MUL_MAT",
                       {"blk." + L + ".attn_output.weight", "kqv_out-" + L, "attn_out-" + L},
                       {{e, e}, {e, tokens}, {e, tokens}},
                       {"q4_0", "f32", "f32"},
                       "hvx-tiled vtcm 262144",
                       t(20)});
        ops.push_back({"ADD",
                       {"attn_out-" + L, in, "ffn_inp-" + L},
                       {{e, tokens}, {e, tokens}, {e, tokens}},
                       {"f32", "f32", "f32"},
                       "----",
                       t(2)});
        ops.push_back({"MUL_MAT",
                       {"blk." + L + ".ffn_up.weight", "ffn_inp-" + L, "ffn_up-" + L},
                       {{e, ff}, {e, tokens}, {ff, tokens}},
                       {"q4_0", "f32", "f32"},
                       "hvx-tiled vtcm 262144",
                       t(50)});
        ops.push_back({"SILU",
                       {"ffn_up-" + L, "ffn_silu-" + L},
                       {{ff, tokens}, {ff, tokens}},
                       {"f32", "f32"},
                       "row-block vtcm 0",
                       t(6)});
        ops.push_back({"MUL_MAT",
                       {"blk." + L + ".ffn_down.weight", "ffn_silu-" + L, "l_out-" + L},
                       {{ff, e}, {ff, tokens}, {e, tokens}},
                       {"q4_0", "f32", "f32"},
                       "hvx-tiled vtcm 262144",
                       t(50)});
    }
    ops.push_back({"RMS_NORM",
                   {"l_out-1", "norm"},
                   {{e, 1}, {e, 1}},
                   {"f32", "f32"},
                   "row-block vtcm 0",
                   t(1)});
    ops.push_back({"MUL_MAT",
                   {"output.weight", "result_norm", "result_output"},
                   {{e, vocab}, {e, 1}, {vocab, 1}},
                   {"q4_0", "f32", "f32"},
                   "hvx-tiled vtcm 262144",
                   // the same work in both stages: one token
                   100 + graph_no});
    return ops;
}

struct Expected {
    std::map<std::string, double> op_usec;  // per stage
    std::map<std::string, int> count;
    std::map<std::string, std::map<std::string, double>> by_op;  // stage -> op -> usec
};

// The log of one prefill graph (7 tokens) and two decode graphs through the pinned formats, at
// GGML_HEXAGON_PROFILE=`profile`, with what its stages must sum to.
std::string pinned_log(int profile, Expected* want) {
    const PinnedFormats pf = pinned_formats();
    std::string log = "llama_context: n_ctx = 512\n";  // other output, ignored
    long long clock = 4000000;
    int graph_no = 0;
    for (auto [stage, tokens, kv] :
         {std::tuple{"prefill", 7LL, 7LL}, std::tuple{"decode", 1LL, 8LL},
          std::tuple{"decode", 1LL, 9LL}}) {
        const auto ops = graph_ops(tokens, kv, graph_no++);
        long long batch_usec = 0;
        for (const auto& o : ops)
            batch_usec += o.usec;
        std::string evt = "----";
        if (profile == 3) {
            std::map<std::string, Value> ev;
            for (int i = 0; i < 11; ++i)
                ev[fmt::format("rsp.n_traces[{}]", i)] = Value(static_cast<long long>(i % 3));
            evt = print(pf.evt, ev);
        }
        const long long bcycles = (batch_usec + 5) * 1100;
        log += print(pf.batch, {{"sess_name.c_str()", std::string("HTP0")},
                                {"rsp.n_ops", static_cast<long long>(ops.size())},
                                {"evt_str", evt},
                                {"rsp.usecs", batch_usec + 5},
                                {"(unsigned long long) batch_cycles", bcycles},
                                {"(unsigned long long) rsp.cycles_start", clock},
                                {"batch_mhz", 1100.0}});
        for (const auto& o : ops) {
            std::vector<std::string> dims, strides;
            for (size_t i = 0; i < o.ne.size(); ++i) {
                dims.push_back(dims_text(o.ne[i]));
                strides.push_back(strides_text(o.ne[i], o.types[i]));
            }
            std::string pmu;
            if (profile == 2) {
                std::map<std::string, Value> pv;
                for (int i = 0; i < 8; ++i)
                    pv[fmt::format("pmu[{}]", i)] = Value(o.usec * (i + 1));
                pmu = print(pf.pmu, pv);
            }
            const long long cycles = o.usec * 1100;
            log += print(pf.op, {{"sess_name.c_str()", std::string("HTP0")},
                                 {"node.op_name().c_str()", o.op},
                                 {"fmt.names", joined(o.names)},
                                 {"fmt.dims", joined(dims)},
                                 {"fmt.types", joined(o.types)},
                                 {"fmt.strides", joined(strides)},
                                 {"fmt.kparams", o.kparams},
                                 {"op_usec", o.usec},
                                 {"op_cycles", cycles},
                                 {"pd.cycles_start", clock},
                                 {"mhz", 1100.0},
                                 {"pmu_str", pmu}});
            clock += cycles;
            if (want) {
                want->op_usec[stage] += o.usec;
                want->count[stage]++;
                want->by_op[stage][o.op] += o.usec;
            }
        }
        if (profile == 3)
            log += print(pf.trace, {{"sess_name.c_str()", std::string("HTP0")},
                                    {"htp_event_name(e.id)", std::string("HVX_COMP")},
                                    {"t", 0LL},
                                    {"info", 3LL},
                                    {"is_stop ? \"stop\" : \"start\"", std::string("stop")},
                                    {"e.cycles", clock}});
    }
    return log;
}

const OpAggregate* find(const std::vector<OpAggregate>& v, const std::string& key) {
    for (const auto& a : v)
        if (a.key == key)
            return &a;
    return nullptr;
}

TEST(HexagonPinned, SourceHasTheProfileCalls) {
    const PinnedFormats pf = pinned_formats();
    // Printed so a failure elsewhere shows which lines of the pinned source were read.
    std::printf("op line %s: %s", pf.op.where().c_str(), pf.op.format.c_str());
    std::printf("batch line %s: %s", pf.batch.where().c_str(), pf.batch.format.c_str());
    std::printf("pmu %s, evt %s, trace %s\n", pf.pmu.where().c_str(), pf.evt.where().c_str(),
                pf.trace.where().c_str());
    EXPECT_EQ(pf.op.args.size(), 12u) << pf.op.where();
    EXPECT_EQ(pf.batch.args.size(), 7u) << pf.batch.where();
    EXPECT_EQ(pf.pmu.args.size(), 8u) << pf.pmu.where();
}

TEST(HexagonPinned, AChangedFormatFailsNamingTheLine) {
    // The op line as a future backend might write it: a field added before the timings.
    std::string src = pinned_source();
    const std::string from = "%s|usec %u cycles", to = "%s|pkts %u|usec %u cycles";
    const size_t at = src.find(from);
    ASSERT_NE(at, std::string::npos);
    src.replace(at, from.size(), to);
    const size_t args = src.find("fmt.kparams, op_usec");
    ASSERT_NE(args, std::string::npos);
    src.insert(args + std::string("fmt.kparams, ").size(), "op_pkts, ");
    const PinnedFormats pf = pinned_formats(src);
    try {
        print(pf.op, {{"sess_name.c_str()", std::string("HTP0")}});
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(kSourceFile + ":"), std::string::npos) << e.what();
    }
    // And with every known argument given, the new one is what stops it.
    std::map<std::string, Value> all;
    for (const auto& a : pinned_formats().op.args)
        all[a] = a.find("usec") != std::string::npos || a.find("cycles") != std::string::npos
                     ? Value(1LL)
                 : a == "mhz" ? Value(1.0)
                              : Value(std::string("x"));
    EXPECT_NO_THROW(print(pinned_formats().op, all));
    try {
        print(pf.op, all);
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("'op_pkts'"), std::string::npos) << e.what();
    }
}

class HexagonPinnedLog : public ::testing::TestWithParam<int> {};

TEST_P(HexagonPinnedLog, MatchesTheKeptFixture) {
    const std::string text = pinned_log(GetParam(), nullptr);
    const std::string path =
        fmt::format("{}/tests/fixtures/hexagon/pinned_profile{}.log", SB_SOURCE_DIR, GetParam());
    if (const char* w = std::getenv("SB_WRITE_FIXTURES"); w && std::string(w) == "1") {
        std::ofstream(path) << text;
    }
    std::ifstream f(path);
    std::stringstream kept;
    kept << f.rdbuf();
    EXPECT_EQ(kept.str(), text) << path
                                << " differs from what the pinned source prints now; rerun "
                                   "with SB_WRITE_FIXTURES=1 and check the importer";
}

TEST_P(HexagonPinnedLog, EveryLineParsesIntoPrefillAndDecode) {
    Expected want;
    std::istringstream in(pinned_log(GetParam(), &want));
    HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    EXPECT_EQ(imp.formats.at("usec (pipe)"), want.count["prefill"] + want.count["decode"]);
    ASSERT_EQ(imp.batches.size(), 3u);
    EXPECT_EQ(imp.batches[0].n_ops, want.count["prefill"]);
    if (GetParam() == 3) {
        ASSERT_TRUE(imp.batches[0].evt_cnt.has_value());
        EXPECT_EQ(imp.batches[0].evt_cnt->size(), 11u);
        EXPECT_EQ((*imp.batches[0].evt_cnt)[2], 2);
    }

    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.method, "tokens");
    ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("prefill"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);

    // Per op: the newer fields are kept.
    const OpRecord& q = imp.records[2];
    EXPECT_EQ(q.op, "MUL_MAT");
    EXPECT_EQ(q.out.name, "Qcur-0");
    EXPECT_EQ(q.out.ne, (std::vector<int64_t>{256, 7}));
    EXPECT_EQ(q.srcs[0].type, "q4_0");
    EXPECT_EQ(q.kernel, "hvx-tiled vtcm 262144");
    EXPECT_EQ(*q.cycles, *q.op_ns / 1000 * 1100);
    EXPECT_DOUBLE_EQ(*q.mhz, 1100.0);
    if (GetParam() == 2) {
        ASSERT_TRUE(q.pmu.has_value());
        EXPECT_EQ(*q.pmu, (std::vector<int64_t>{120, 240, 360, 480, 600, 720, 840, 960}));
    } else {
        EXPECT_FALSE(q.pmu.has_value());
    }
    // The 4-d dims of FLASH_ATTN_EXT's output.
    EXPECT_EQ(imp.records[6].out.ne, (std::vector<int64_t>{64, 4, 7, 1}));

    // The stages' totals are the log's, exactly.
    ImportOptions o;
    for (const auto& stage : sp.order) {
        StageProfile s;
        s.stage = stage;
        for (size_t i = 0; i < imp.records.size(); ++i)
            if (sp.stage[i] == stage)
                s.ops.push_back(imp.records[i]);
        finalize_stage(s);
        EXPECT_EQ(static_cast<int>(s.ops.size()), want.count[stage]) << stage;
        EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, want.op_usec[stage] * 1000.0) << stage;
        for (const auto& [op, usec] : want.by_op[stage]) {
            const OpAggregate* a = find(s.by_op, op);
            ASSERT_TRUE(a) << stage << " " << op;
            EXPECT_DOUBLE_EQ(*a->op_ns, usec * 1000.0) << stage << " " << op;
        }
    }
}

TEST(HexagonPinned, ImportCommandSplitsTheKeptFixture) {
    // What `stagebench import hexagon-profile tests/fixtures/hexagon/pinned_profile2.log` does.
    Expected want;
    pinned_log(2, &want);
    ImportOptions o;
    o.log_path = std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/pinned_profile2.log";
    ResultDocument doc;
    std::ostringstream err;
    EXPECT_EQ(run_import_hexagon(o, doc, err), 0);
    EXPECT_EQ(err.str(), "");
    ASSERT_TRUE(doc.ops.has_value());
    EXPECT_EQ(doc.ops->import_info["stage_split"], "tokens");
    ASSERT_EQ(doc.ops->stages.size(), 2u);
    for (const auto& s : doc.ops->stages) {
        SCOPED_TRACE(s.stage);
        EXPECT_EQ(static_cast<int>(s.ops.size()), want.count[s.stage]);
        EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, want.op_usec[s.stage] * 1000.0);
        EXPECT_EQ(s.n_graphs, s.stage == "prefill" ? 1 : 2);
        EXPECT_EQ(s.n_tokens, s.stage == "prefill" ? 7 : 1);
    }
    EXPECT_EQ(doc.ops->stages[1].ops.back().graph, 1);  // the second decode graph

    o.one_stage = true;
    ResultDocument one;
    run_import_hexagon(o, one, err);
    ASSERT_EQ(one.ops->stages.size(), 1u);
    EXPECT_EQ(one.ops->stages[0].stage, "log");
    EXPECT_DOUBLE_EQ(*one.ops->stages[0].rec.sum_op_ns,
                     (want.op_usec["prefill"] + want.op_usec["decode"]) * 1000.0);

    o.one_stage = false;
    o.stage_of = {"no-equals-sign"};
    ResultDocument bad;
    try {
        run_import_hexagon(o, bad, err);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input);
        EXPECT_NE(std::string(e.what()).find("expected TEXT=STAGE"), std::string::npos);
    }
}

INSTANTIATE_TEST_SUITE_P(Profiles, HexagonPinnedLog, ::testing::Values(1, 2, 3),
                         [](const auto& info) { return fmt::format("profile{}", info.param); });

}  // namespace
}  // namespace sb
