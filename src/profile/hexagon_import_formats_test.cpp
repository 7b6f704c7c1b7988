// Hexagon profile logs in every upstream format since the backend appeared, printed through each
// format's own format string, with the line prefixes users' logs carry.
//
// Each older format string is held here as found in ggml/src/ggml-hexagon/ggml-hexagon.cpp of
// that period (with the llama.cpp PR and the date it appeared; see hexagon_import.hpp), with its
// argument list. The fixtures under tests/fixtures/hexagon/formats/ are those strings printed
// with known values (one prefill graph of 7 tokens and two decode graphs of the scripted model
// in hexagon_import_printf.hpp); each test checks that the kept file equals the print
// (SB_WRITE_FIXTURES=1 rewrites them), then imports it and checks every record and the stage
// totals exactly. The pinned tree's own format (PR 26049) is hexagon_pinned_test.cpp's.
//
// Prefixes: llama.cpp's own, through the pinned tree's common/log.cpp calls (read at test time:
// "%s%d.%02d.%03d.%03d%s " then "%sI %s" / "%sD %s", with the colour escapes of common/log.h);
// logcat's threadtime ("%s.%03ld %5d %5d %c %-8s: ") and brief ("%c/%-8s(%5d): ") line formats,
// as AOSP liblog's logprint (android_log_formatLogLine) writes them.
#include "profile/hexagon_import.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "profile/hexagon_import_printf.hpp"
#include "profile/ops_profile.hpp"

namespace sb {
namespace {

using hexlog::CallSite;
using hexlog::held_call;
using hexlog::Op;
using hexlog::print;
using hexlog::Value;
using hexlog::Values;

// ---- The format strings, as found ------------------------------------------------------------

// PR 16547 (2025-10-22, the backend added): HEX_PROFILE(...), "if (opt_profile)
// GGML_LOG_INFO(__VA_ARGS__)", one call per op kind (ggml_hexagon_mul_mat, _binary, _add_id:
// two sources; _unary: one, or two; _rope: two or three; _mul_mat_id: its own wording).
const std::string k16547 = "PR 16547 (2025-10-22) ggml-hexagon.cpp HEX_PROFILE";

std::vector<std::string> tensor_args(const std::string& t) {
    return {t + "->name", "(uint32_t) " + t + "->ne[0]", "(uint32_t) " + t + "->ne[1]",
            "(uint32_t) " + t + "->ne[2]", "(uint32_t) " + t + "->ne[3]"};
}

std::vector<std::string> first_args(const std::string& op_expr,
                                    const std::vector<std::string>& tensors) {
    std::vector<std::string> a = {"sess->name.c_str()"};
    if (!op_expr.empty())
        a.push_back(op_expr);
    for (const auto& t : tensors)
        for (auto& x : tensor_args(t))
            a.push_back(x);
    for (const char* x :
         {"sess->prof_usecs", "sess->prof_cycles", "sess->prof_pkts",
          "(float) sess->prof_cycles / sess->prof_pkts", "(unsigned long long) t2 - t1"})
        a.push_back(x);
    return a;
}

const CallSite kFirstBinary = held_call(
    k16547 + " (mul_mat, binary, add_id, unary and rope with two sources)",
    "ggml-hex: %s %s %s %u:%u:%u:%u x %s %u:%u:%u:%u -> %s %u:%u:%u:%u : op-usec %u op-cycles %u "
    "op-pkts %u (%f) call-usec %llu\n",
    first_args("ggml_op_name(op->op)", {"src0", "src1", "dst"}));
const CallSite kFirstUnary = held_call(
    k16547 + " (unary, one source)",
    "ggml-hex: %s %s %s %u:%u:%u:%u -> %s %u:%u:%u:%u : op-usec %u op-cycles %u op-pkts %u (%f) "
    "call-usec %llu\n",
    first_args("ggml_op_name(op->op)", {"src0", "dst"}));
const CallSite kFirstRope3 = held_call(
    k16547 + " (rope, three sources)",
    "ggml-hex: %s %s %s %u:%u:%u:%u x %s %u:%u:%u:%u x %s %u:%u:%u:%u -> %s %u:%u:%u:%u : op-usec "
    "%u op-cycles %u op-pkts %u (%f) call-usec %llu\n",
    first_args("ggml_op_name(op->op)", {"src0", "src1", "src2", "dst"}));
const CallSite kFirstMatmulId = held_call(
    k16547 + " (mul_mat_id)",
    "ggml-hex: %s matmul-id %s %u:%u:%u:%u x %s %u:%u:%u:%u (%s %u:%u:%u:%u) -> %s %u:%u:%u:%u : "
    "op-usec %u op-cycles %u op-pkts %u (%f) call-usec %llu\n",
    first_args("", {"src0", "src1", "src2", "dst"}));

// PR 17500 (2025-12-23; the NPU study's b7588 is of this period): ggml_hexagon_dump_op_prof,
// GGML_LOG_DEBUG, the fields of op_desc.
const CallSite k17500 = held_call(
    "PR 17500 (2025-12-23) ggml-hexagon.cpp ggml_hexagon_dump_op_prof",
    "ggml-hex: %s profile-op %s: %s : %s : %s : %s : %s : op-usec %u op-cycles %u op-pkts %u (%f) "
    "call-usec %llu\n",
    {"sess_name.c_str()", "ggml_op_name(op->op)", "desc.names", "desc.dims", "desc.types",
     "desc.strides", "desc.buffs", "op_usec", "op_cycles", "op_pkts", "(float) op_cycles / op_pkts",
     "(unsigned long long) call_usec"});

// PR 22269 (2026-04-23): the asynchronous profiler; its PMU text at GGML_HEXAGON_PROFILE=2; a
// profile-batch line after each batch's op lines.
const CallSite k22269 =
    held_call("PR 22269 (2026-04-23) ggml-hexagon.cpp ggml_hexagon_dump_op_prof",
              "ggml-hex: %s profile-op %s: %s : %s : %s : %s : usec %u cycles %u%s\n",
              {"sess_name.c_str()", "ggml_op_desc(op)", "desc.names", "desc.dims", "desc.types",
               "desc.strides", "op_usec", "op_cycles", "pmu_str"});
const CallSite kPmu =
    held_call("PR 22269 (2026-04-23) ggml-hexagon.cpp pmu_str", " pmu [%u,%u,%u,%u,%u,%u,%u,%u]",
              {"pmu[0]", "pmu[1]", "pmu[2]", "pmu[3]", "pmu[4]", "pmu[5]", "pmu[6]", "pmu[7]"});
const CallSite k22269Batch =
    held_call("PR 22269 (2026-04-23) ggml-hexagon.cpp ggml_hexagon_opqueue (profile-batch)",
              "ggml-hex: %s profile-batch n-ops %u batch-dur-usec %lld htp-ops-usec %u\n",
              {"shm_buf->sess->c_name()", "rsp.n_ops", "(long long) batch_usec", "htp_usec"});

// PR 24592 (2026-06-18): "start N mhz F" on the op line, per-batch trace event counts at
// PROFILE=3. Not found verbatim: the op line is PR 22269's with the " start %u mhz %.1f" of the
// later pipe line (same arguments, same order), which the upstream post-processing script of
// that period parses ("usec N cycles N start N mhz F" after " : "-separated fields). The
// profile-batch line with its "%s" event suffix is as found in the PR 24954 period.
const CallSite k24592 = held_call(
    "PR 24592 (2026-06-18) ggml-hexagon.cpp ggml_hexagon_dump_op_prof (reconstructed)",
    "ggml-hex: %s profile-op %s: %s : %s : %s : %s : usec %u cycles %u start %u mhz %.1f%s\n",
    {"sess_name.c_str()", "ggml_op_desc(op)", "desc.names", "desc.dims", "desc.types",
     "desc.strides", "op_usec", "op_cycles", "pd.cycles_start", "mhz", "pmu_str"});
const CallSite kBatchEvt = held_call(
    "PR 24592 to 24954 (2026-06) ggml-hexagon.cpp ggml_hexagon_opqueue (profile-batch)",
    "ggml-hex: %s profile-batch n-ops %u batch-dur-usec %lld htp-ops-usec %u%s\n",
    {"shm_buf->sess->c_name()", "rsp.n_ops", "(long long) batch_usec", "htp_usec", "evt_str"});
const CallSite kEvt =
    held_call("PR 24592 to 24954 (2026-06) ggml-hexagon.cpp evt_str",
              " evt [%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u]",
              {"rsp.n_traces[0]", "rsp.n_traces[1]", "rsp.n_traces[2]", "rsp.n_traces[3]",
               "rsp.n_traces[4]", "rsp.n_traces[5]", "rsp.n_traces[6]", "rsp.n_traces[7]",
               "rsp.n_traces[8]", "rsp.n_traces[9]", "rsp.n_traces[10]"});

// PR 24954 (2026-06-24): '|'-separated fields with the kernel parameters; trace-op lines at
// PROFILE=3 after each op.
const CallSite k24954 = held_call(
    "PR 24954 (2026-06-24) ggml-hexagon.cpp ggml_hexagon_dump_op_prof",
    "ggml-hex: %s profile-op %s|%s|%s|%s|%s|%s|usec %u cycles %u start %u mhz %.1f%s\n",
    {"sess_name.c_str()", "node.op_name().c_str()", "fmt.names", "fmt.dims", "fmt.types",
     "fmt.strides", "fmt.kparams", "op_usec", "op_cycles", "pd.cycles_start", "mhz", "pmu_str"});
const CallSite kTraceOp =
    held_call("PR 24954 (2026-06-24) ggml-hexagon.cpp ggml_hexagon_opqueue (trace-op)",
              "ggml-hex: %s trace-op %s: thread %u event %s info %u %s %u\n",
              {"shm_buf->sess->c_name()", "ops[i].op_name().c_str()", "t", "htp_event_name(e.id)",
               "info", "is_stop ? \"stop\" : \"start\"", "e.cycles"});

// logcat (AOSP liblog logprint, android_log_formatLogLine).
const CallSite kThreadtime = held_call(
    "AOSP liblog logprint FORMAT_THREADTIME", "%s.%03ld %5d %5d %c %-8s: ",
    {"timeBuf", "entry->tv_nsec / 1000000", "entry->pid", "entry->tid", "priChar", "entry->tag"});
const CallSite kBrief = held_call("AOSP liblog logprint FORMAT_BRIEF",
                                  "%c/%-8s(%5d): ", {"priChar", "entry->tag", "entry->pid"});

// llama.cpp's own prefixes, from the pinned tree.
struct LlamaPrefix {
    CallSite time, info, debug;
};
LlamaPrefix llama_prefix() {
    const std::string file = "common/log.cpp";
    const std::string src = hexlog::read_text(std::string(SB_LLAMA_SOURCE_DIR) + "/" + file);
    return {hexlog::find_call(src, file, "fprintf", "%s%d.%02d.%03d.%03d%s ", 1),
            hexlog::find_call(src, file, "fprintf", "%sI %s", 1),
            hexlog::find_call(src, file, "fprintf", "%sD %s", 1)};
}

// ---- Printing a log -------------------------------------------------------------------------

enum class Prefix { none, llama_info_colour, llama_debug, logcat_threadtime, logcat_brief };

struct Expected {
    std::map<std::string, double> op_usec, call_usec;  // per stage
    std::map<std::string, int> count;
    std::map<std::string, int> graphs;
};

// Every line of one log, with the prefix its format is shown with.
class LogWriter {
  public:
    explicit LogWriter(Prefix prefix) : prefix_(prefix) {
        if (prefix == Prefix::llama_info_colour || prefix == Prefix::llama_debug)
            llama_ = llama_prefix();
    }
    void message(const std::string& msg) {
        elapsed_us_ += 1237;  // the next message's time
        std::string pre;
        switch (prefix_) {
            case Prefix::none:
                break;
            case Prefix::llama_info_colour:
            case Prefix::llama_debug: {
                const bool colour = prefix_ == Prefix::llama_info_colour;
                const long long t = elapsed_us_;
                const std::string blue = colour ? "\033[34m" : "", def = colour ? "\033[0m" : "",
                                  green = colour ? "\033[32m" : "",
                                  yellow = colour ? "\033[33m" : "";
                pre = print(llama_.time, {{"g_col[COMMON_LOG_COL_BLUE]", blue},
                                          {"(int) (timestamp / 1000000 / 60)", t / 1000000 / 60},
                                          {"(int) (timestamp / 1000000 % 60)", t / 1000000 % 60},
                                          {"(int) (timestamp / 1000 % 1000)", t / 1000 % 1000},
                                          {"(int) (timestamp % 1000)", t % 1000},
                                          {"g_col[COMMON_LOG_COL_DEFAULT]", def}});
                pre += colour ? print(llama_.info, {{"g_col[COMMON_LOG_COL_GREEN]", green},
                                                    {"g_col[COMMON_LOG_COL_DEFAULT]", def}})
                              : print(llama_.debug, {{"g_col[COMMON_LOG_COL_YELLOW]", yellow},
                                                     {"\"\"", std::string()}});
                break;
            }
            case Prefix::logcat_threadtime:
            case Prefix::logcat_brief: {
                // One logcat line per message line; the message without its newline.
                const long long ms = elapsed_us_ / 1000;
                if (prefix_ == Prefix::logcat_threadtime)
                    pre = print(kThreadtime,
                                {{"timeBuf", fmt::format("06-18 12:34:{:02d}", 5 + ms / 1000 % 50)},
                                 {"entry->tv_nsec / 1000000", ms % 1000},
                                 {"entry->pid", 8123LL},
                                 {"entry->tid", 8150LL},
                                 {"priChar", static_cast<long long>('D')},
                                 {"entry->tag", std::string("llama")}});
                else
                    pre = print(kBrief, {{"priChar", static_cast<long long>('D')},
                                         {"entry->tag", std::string("llama")},
                                         {"entry->pid", 8123LL}});
                break;
            }
        }
        text_ += pre + msg;
    }
    void raw(const std::string& line) { text_ += line; }  // another program's output
    const std::string& text() const { return text_; }

  private:
    Prefix prefix_;
    LlamaPrefix llama_;
    long long elapsed_us_ = 1576635 - 1237;
    std::string text_;
};

// The ops a log of each period shows: the backend of PR 16547 and PR 17500 had no
// FLASH_ATTN_EXT (it ran on the CPU) and named SILU by its ggml op, UNARY; the later ones print
// ggml_op_desc, SILU.
std::vector<Op> period_ops(const std::vector<Op>& ops, bool early) {
    std::vector<Op> out;
    for (Op o : ops) {
        if (early && o.op == "FLASH_ATTN_EXT")
            continue;
        if (early && o.op == "SILU")
            o.op = "UNARY";
        out.push_back(o);
    }
    return out;
}

std::vector<std::string> split_list(const Op& o, const std::function<std::string(size_t)>& f) {
    std::vector<std::string> v;
    for (size_t i = 0; i < o.names.size(); ++i)
        v.push_back(f(i));
    return v;
}

// (float) cycles / pkts as a phone computes it: with no packets, ARM's default NaN (printed
// "nan") or infinity, whatever the sign of the NaN this machine would make.
double ratio(long long cycles, long long pkts) {
    if (pkts == 0)
        return cycles == 0 ? static_cast<double>(NAN) : static_cast<double>(INFINITY);
    return static_cast<double>(static_cast<float>(cycles) / static_cast<float>(pkts));
}

// The first format's line for one op (the call its kind makes).
std::string first_line(const Op& o, long long op_usec, long long cycles, long long pkts,
                       long long call_usec) {
    const CallSite& c = o.names.size() == 2   ? kFirstUnary
                        : o.names.size() == 3 ? kFirstBinary
                                              : kFirstRope3;
    Values v = {{"sess->name.c_str()", std::string("HTP0")},
                {"ggml_op_name(op->op)", o.op},
                {"sess->prof_usecs", op_usec},
                {"sess->prof_cycles", cycles},
                {"sess->prof_pkts", pkts},
                {"(float) sess->prof_cycles / sess->prof_pkts", ratio(cycles, pkts)},
                {"(unsigned long long) t2 - t1", call_usec}};
    const std::vector<std::string> role = {"src0", "src1", "src2"};
    for (size_t i = 0; i < o.names.size(); ++i) {
        const std::string t = i + 1 == o.names.size() ? "dst" : role[i];
        std::vector<long long> ne = o.ne[i];
        ne.resize(4, 1);
        v[t + "->name"] = o.names[i];
        for (int d = 0; d < 4; ++d)
            v[fmt::format("(uint32_t) {}->ne[{}]", t, d)] = ne[static_cast<size_t>(d)];
    }
    return print(c, v);
}

struct Period {
    std::string name;    // the fixture's file name without ".log"
    std::string format;  // the importer's name for it
    Prefix prefix;
    bool has_call = false;
};

// One prefill graph (7 tokens) and two decode graphs in `period`'s format.
std::string period_log(const Period& p, Expected* want) {
    LogWriter w(p.prefix);
    w.raw("llama_context: n_ctx = 512\n");
    long long clock = 4000000;
    int graph_no = 0;
    for (auto [stage, tokens, kv] :
         {std::tuple{"prefill", 7LL, 7LL}, std::tuple{"decode", 1LL, 8LL},
          std::tuple{"decode", 1LL, 9LL}}) {
        const bool early = p.name == "pr16547_first" || p.name == "pr17500_profile_op";
        const auto ops = period_ops(hexlog::graph_ops(tokens, kv, graph_no), early);
        long long htp_usec = 0;
        for (size_t k = 0; k < ops.size(); ++k) {
            const Op& o = ops[k];
            const long long cycles = o.usec * 1100, pkts = cycles / 2;
            const long long call = o.usec + 30 + graph_no;  // the host's call: op + dispatch
            std::vector<std::string> dims, strides;
            for (size_t i = 0; i < o.ne.size(); ++i) {
                dims.push_back(hexlog::dims_text(o.ne[i]));
                strides.push_back(hexlog::strides_text(o.ne[i], o.types[i]));
            }
            Values pmu;
            for (int i = 0; i < 8; ++i)
                pmu[fmt::format("pmu[{}]", i)] = Value(o.usec * (i + 1));
            if (p.name == "pr16547_first") {
                w.message(first_line(o, o.usec, cycles, pkts, call));
            } else if (p.name == "pr17500_profile_op") {
                std::vector<std::string> buffs = split_list(o, [&](size_t i) {
                    return o.names[i].rfind("blk.", 0) == 0 || o.names[i] == "output.weight"
                               ? std::string("HTP0-REPACK")
                               : std::string("HTP0");
                });
                w.message(print(k17500, {{"sess_name.c_str()", std::string("HTP0")},
                                         {"ggml_op_name(op->op)", o.op},
                                         {"desc.names", hexlog::joined(o.names)},
                                         {"desc.dims", hexlog::joined(dims)},
                                         {"desc.types", hexlog::joined(o.types)},
                                         {"desc.strides", hexlog::joined(strides)},
                                         {"desc.buffs", hexlog::joined(buffs)},
                                         {"op_usec", o.usec},
                                         {"op_cycles", cycles},
                                         {"op_pkts", pkts},
                                         {"(float) op_cycles / op_pkts", ratio(cycles, pkts)},
                                         {"(unsigned long long) call_usec", call}}));
            } else if (p.name == "pr22269_async") {
                w.message(print(k22269, {{"sess_name.c_str()", std::string("HTP0")},
                                         {"ggml_op_desc(op)", o.op},
                                         {"desc.names", hexlog::joined(o.names)},
                                         {"desc.dims", hexlog::joined(dims)},
                                         {"desc.types", hexlog::joined(o.types)},
                                         {"desc.strides", hexlog::joined(strides)},
                                         {"op_usec", o.usec},
                                         {"op_cycles", cycles},
                                         {"pmu_str", print(kPmu, pmu)}}));
            } else if (p.name == "pr24592_start_mhz") {
                w.message(print(k24592, {{"sess_name.c_str()", std::string("HTP0")},
                                         {"ggml_op_desc(op)", o.op},
                                         {"desc.names", hexlog::joined(o.names)},
                                         {"desc.dims", hexlog::joined(dims)},
                                         {"desc.types", hexlog::joined(o.types)},
                                         {"desc.strides", hexlog::joined(strides)},
                                         {"op_usec", o.usec},
                                         {"op_cycles", cycles},
                                         {"pd.cycles_start", clock},
                                         {"mhz", 1100.0},
                                         {"pmu_str", print(kPmu, pmu)}}));
            } else {  // pr24954_pipe, at PROFILE=3: trace-op lines after each op
                w.message(print(k24954, {{"sess_name.c_str()", std::string("HTP0")},
                                         {"node.op_name().c_str()", o.op},
                                         {"fmt.names", hexlog::joined(o.names)},
                                         {"fmt.dims", hexlog::joined(dims)},
                                         {"fmt.types", hexlog::joined(o.types)},
                                         {"fmt.strides", hexlog::joined(strides)},
                                         {"fmt.kparams", o.kparams},
                                         {"op_usec", o.usec},
                                         {"op_cycles", cycles},
                                         {"pd.cycles_start", clock},
                                         {"mhz", 1100.0},
                                         {"pmu_str", std::string()}}));
                for (const char* state : {"start", "stop"})
                    w.message(
                        print(kTraceOp,
                              {{"shm_buf->sess->c_name()", std::string("HTP0")},
                               {"ops[i].op_name().c_str()", o.op},
                               {"t", 0LL},
                               {"htp_event_name(e.id)", std::string("HVX_COMP")},
                               {"info", 3LL},
                               {"is_stop ? \"stop\" : \"start\"", std::string(state)},
                               {"e.cycles", clock + (std::string(state) == "stop" ? cycles : 0)}}));
            }
            clock += cycles;
            htp_usec += o.usec;
            if (want) {
                want->op_usec[stage] += static_cast<double>(o.usec);
                if (p.has_call)
                    want->call_usec[stage] += static_cast<double>(call);
                want->count[stage]++;
            }
        }
        if (want)
            want->graphs[stage]++;
        // The batch line after the graph's ops (one batch per graph here).
        const Values batch = {{"shm_buf->sess->c_name()", std::string("HTP0")},
                              {"rsp.n_ops", static_cast<long long>(ops.size())},
                              {"(long long) batch_usec", htp_usec + 40},
                              {"htp_usec", htp_usec}};
        if (p.name == "pr22269_async") {
            w.message(print(k22269Batch, batch));
        } else if (p.name == "pr24592_start_mhz" || p.name == "pr24954_pipe") {
            Values b = batch;
            if (p.name == "pr24954_pipe") {
                Values ev;
                for (int i = 0; i < 11; ++i)
                    ev[fmt::format("rsp.n_traces[{}]", i)] =
                        Value(i == 0 ? static_cast<long long>(2 * ops.size()) : 0LL);
                b["evt_str"] = print(kEvt, ev);
            } else {
                b["evt_str"] = std::string();
            }
            w.message(print(kBatchEvt, b));
        }
        ++graph_no;
    }
    w.raw("llama_perf_context_print:        load time =     812.04 ms\n");
    return w.text();
}

const std::vector<Period>& periods() {
    static const std::vector<Period> p = {
        {"pr16547_first", "first (PR 16547)", Prefix::llama_info_colour, true},
        {"pr17500_profile_op", "op-usec (PR 17500)", Prefix::logcat_threadtime, true},
        {"pr22269_async", "usec (PR 22269)", Prefix::logcat_brief, false},
        {"pr24592_start_mhz", "usec start mhz (PR 24592)", Prefix::llama_debug, false},
        {"pr24954_pipe", "pipe (PR 24954)", Prefix::none, false}};
    return p;
}

std::string hexagon_fixture_path(const std::string& name) {
    return std::string(SB_SOURCE_DIR) + "/tests/fixtures/hexagon/" + name + ".log";
}

// The kept fixture equals `text` (rewritten with SB_WRITE_FIXTURES=1).
void expect_fixture(const std::string& name, const std::string& text) {
    const std::string path = hexagon_fixture_path(name);
    if (const char* w = std::getenv("SB_WRITE_FIXTURES"); w && std::string(w) == "1")
        std::ofstream(path, std::ios::binary) << text;
    std::ifstream f(path, std::ios::binary);
    std::stringstream kept;
    kept << f.rdbuf();
    EXPECT_EQ(kept.str(), text) << path
                                << " differs from what the format strings print now; "
                                   "rerun with SB_WRITE_FIXTURES=1 and check the importer";
}

class HexagonFormat : public ::testing::TestWithParam<Period> {};

TEST_P(HexagonFormat, FixtureIsThePrint) {
    expect_fixture("formats/" + GetParam().name, period_log(GetParam(), nullptr));
}

TEST_P(HexagonFormat, ImportsIntoPrefillAndDecodeExactly) {
    const Period& p = GetParam();
    Expected want;
    std::istringstream in(period_log(p, &want));
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    EXPECT_EQ(imp.n_refused, 0) << (imp.refused.empty() ? "" : imp.refused[0].reason);
    ASSERT_EQ(imp.formats.size(), 1u);
    EXPECT_EQ(imp.formats.begin()->first, p.format);
    EXPECT_EQ(static_cast<int>(imp.records.size()), want.count["prefill"] + want.count["decode"]);
    EXPECT_EQ(imp.n_ignored, 2);  // the two lines of other output
    const bool batches = p.name != "pr16547_first" && p.name != "pr17500_profile_op";
    EXPECT_EQ(imp.batches.size(), batches ? 3u : 0u);
    if (batches) {
        EXPECT_EQ(imp.batches[0].kind, "profile-batch");
        EXPECT_EQ(imp.batches[0].n_ops, want.count["prefill"]);
        EXPECT_DOUBLE_EQ(imp.batches[0].usec, want.op_usec["prefill"] + 40);
        EXPECT_EQ(imp.batches[0].htp_ops_usec, static_cast<int64_t>(want.op_usec["prefill"]));
    }
    EXPECT_EQ(imp.n_trace, p.name == "pr24954_pipe" ? 2 * static_cast<int>(imp.records.size()) : 0);

    // Every record: names, dims and types as printed; the first format has no types.
    const OpRecord& q = imp.records[2];
    EXPECT_EQ(q.op, "MUL_MAT");
    EXPECT_EQ(q.backend, "HTP0");
    EXPECT_EQ(q.out.name, "Qcur-0");
    EXPECT_EQ(q.layer, 0);
    ASSERT_EQ(q.srcs.size(), 2u);
    EXPECT_EQ(q.srcs[0].name, "blk.0.attn_q.weight");
    EXPECT_EQ(q.srcs[1].name, "attn_norm-0");
    EXPECT_EQ(matmul_tokens(q), 7);
    EXPECT_EQ(q.out.type, p.name == "pr16547_first" ? "" : "f32");
    EXPECT_EQ(*q.cycles, 120 * 1100);
    EXPECT_DOUBLE_EQ(*q.op_ns, 120e3);
    if (p.has_call) {
        ASSERT_TRUE(q.call_ns.has_value());
        EXPECT_DOUBLE_EQ(*q.call_ns, 150e3);
        EXPECT_EQ(*q.pkts, 120 * 550);
    } else {
        EXPECT_FALSE(q.call_ns.has_value());
    }
    if (p.name == "pr22269_async" || p.name == "pr24592_start_mhz") {
        ASSERT_TRUE(q.pmu.has_value());
        EXPECT_EQ((*q.pmu)[7], 120 * 8);
    }
    if (p.name == "pr24592_start_mhz" || p.name == "pr24954_pipe") {
        EXPECT_DOUBLE_EQ(*q.mhz, 1100.0);
        EXPECT_TRUE(q.start_cycles.has_value());
    }
    if (p.name == "pr24954_pipe") {
        EXPECT_EQ(q.kernel, "hvx-tiled vtcm 262144");
    }
    // A name with a space survives every format: ROPE's output "Qcur-0 (rope)".
    const OpRecord& rope = imp.records[5];
    EXPECT_EQ(rope.op, "ROPE");
    EXPECT_EQ(rope.out.name, "Qcur-0 (rope)");
    EXPECT_EQ(rope.layer, 0);
    EXPECT_EQ(rope.out.ne, (std::vector<int64_t>{64, 4, 7, 1}));

    // The stages and their totals are the log's, exactly.
    const StageSplit sp = split_stages(imp);
    EXPECT_EQ(sp.method, "tokens");
    ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
    EXPECT_EQ(sp.n_graphs.at("prefill"), 1);
    EXPECT_EQ(sp.n_graphs.at("decode"), 2);
    for (const auto& stage : sp.order) {
        StageProfile s;
        s.stage = stage;
        for (size_t i = 0; i < imp.records.size(); ++i)
            if (sp.stage[i] == stage)
                s.ops.push_back(imp.records[i]);
        finalize_stage(s);
        SCOPED_TRACE(stage);
        EXPECT_EQ(static_cast<int>(s.ops.size()), want.count[stage]);
        EXPECT_DOUBLE_EQ(*s.rec.sum_op_ns, want.op_usec[stage] * 1000.0);
        if (p.has_call) {
            ASSERT_TRUE(s.rec.sum_call_ns.has_value());
            EXPECT_DOUBLE_EQ(*s.rec.sum_call_ns, want.call_usec[stage] * 1000.0);
        } else {
            EXPECT_FALSE(s.rec.sum_call_ns.has_value());
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Periods, HexagonFormat, ::testing::ValuesIn(periods()),
                         [](const auto& info) { return info.param.name; });

// ---- Pipeline-mode logs (import hexagon-profile --mode) --------------------------------------

// One log per GGML_HEXAGON_OPMASK mode of the first format's backend (0x1 queue only: the NPU
// work stubbed, op-usec 0; 0x3 + the dynamic quantizer of the mat-muls' activations; 0x7 full),
// each with a prefill graph (7 tokens) and a decode graph, run with GGML_HEXAGON_OPSYNC=1 so the
// host's call waits for the op: call-usec = dispatch + op-usec. With `markers`, the model's
// mat-muls are not on the NPU (a weight type its kernels lack, e.g. Q4_K), so no line carries a
// token count, and the user's script echoed "=== prefill" / "=== decode" before each phase.
const std::vector<std::string> kModes = {"queue", "quant", "full"};

std::string mode_log(const std::string& mode, bool markers, Expected* want) {
    LogWriter w(Prefix::none);
    w.raw("ggml-hex: allocating new session: HTP0\n");
    int graph_no = 0;
    for (auto [stage, tokens, kv] :
         {std::tuple{"prefill", 7LL, 7LL}, std::tuple{"decode", 1LL, 8LL}}) {
        if (markers)
            w.raw(std::string("=== ") + stage + "\n");
        for (const Op& o : period_ops(hexlog::graph_ops(tokens, kv, graph_no), true)) {
            const bool mm = o.op == "MUL_MAT";
            if (markers && mm)
                continue;
            const long long quant = mm ? 2 * tokens : 0;
            const long long usec = mode == "queue" ? 0 : mode == "quant" ? quant : o.usec;
            const long long dispatch = 20 + graph_no + static_cast<long long>(o.names.size());
            const long long cycles = usec * 1100, pkts = cycles / 2;
            w.message(first_line(o, usec, cycles, pkts, dispatch + usec));
            if (want) {
                want->op_usec[stage] += static_cast<double>(usec);
                want->call_usec[stage] += static_cast<double>(dispatch + usec);
                want->count[stage]++;
            }
        }
        if (want)
            want->graphs[stage]++;
        ++graph_no;
    }
    return w.text();
}

TEST(HexagonFormats, ModeLogsAreThePrintAndSplitIntoTheirStages) {
    for (bool markers : {false, true}) {
        for (const auto& mode : kModes) {
            const std::string name =
                std::string(markers ? "modes_markers/" : "modes_pr16547/") + mode;
            SCOPED_TRACE(name);
            Expected want;
            const std::string text = mode_log(mode, markers, &want);
            expect_fixture(name, text);
            HexagonParseOptions o;
            if (markers)
                o.stage_marks = {{"=== prefill", "prefill"}, {"=== decode", "decode"}};
            std::istringstream in(text);
            const HexagonImport imp = parse_hexagon_profile(in, o);
            EXPECT_EQ(imp.n_unparsed, 0);
            EXPECT_EQ(imp.n_refused, 0) << (imp.refused.empty() ? "" : imp.refused[0].reason);
            const StageSplit sp = split_stages(imp);
            EXPECT_EQ(sp.method, markers ? "markers" : "tokens");
            ASSERT_EQ(sp.order, (std::vector<std::string>{"prefill", "decode"}));
            for (const auto& stage : sp.order) {
                double op = 0, call = 0;
                int n = 0;
                for (size_t i = 0; i < imp.records.size(); ++i)
                    if (sp.stage[i] == stage) {
                        op += *imp.records[i].op_ns;
                        call += *imp.records[i].call_ns;
                        ++n;
                    }
                EXPECT_EQ(n, want.count[stage]) << stage;
                EXPECT_DOUBLE_EQ(op, want.op_usec[stage] * 1000) << stage;
                EXPECT_DOUBLE_EQ(call, want.call_usec[stage] * 1000) << stage;
            }
            // Without the markers, a log without mat-muls is one stage.
            if (markers) {
                std::istringstream again(text);
                EXPECT_EQ(split_stages(parse_hexagon_profile(again)).order,
                          (std::vector<std::string>{"log"}));
            }
        }
    }
}

TEST(HexagonFormats, FirstFormatMatmulIdAndRopeWithThreeSources) {
    // MUL_MAT_ID's own wording: the expert ids in parentheses, names with spaces.
    Values v = {{"sess->name.c_str()", std::string("HTP0")},
                {"sess->prof_usecs", 80LL},
                {"sess->prof_cycles", 88000LL},
                {"sess->prof_pkts", 0LL},
                {"(float) sess->prof_cycles / sess->prof_pkts", static_cast<double>(INFINITY)},
                {"(unsigned long long) t2 - t1", 95LL}};
    auto tensor = [&](const std::string& t, const std::string& name, std::vector<long long> ne) {
        v[t + "->name"] = name;
        for (int d = 0; d < 4; ++d)
            v[fmt::format("(uint32_t) {}->ne[{}]", t, d)] = ne[static_cast<size_t>(d)];
    };
    tensor("src0", "blk.3.ffn_up_exps.weight", {2048, 768, 32, 1});
    tensor("src1", "ffn_moe_in-3 (view)", {2048, 1, 5, 1});
    tensor("src2", "ffn_moe_topk-3", {4, 5, 1, 1});
    tensor("dst", "ffn_moe_up-3", {768, 4, 5, 1});
    std::string log = print(kFirstMatmulId, v);
    EXPECT_NE(log.find("(inf) call-usec 95"), std::string::npos) << log;
    v["ggml_op_name(op->op)"] = std::string("ROPE");
    v["(float) sess->prof_cycles / sess->prof_pkts"] = static_cast<double>(NAN);
    tensor("src0", "Qcur-3 (reshaped)", {64, 4, 5, 1});
    tensor("src1", "inp_pos", {5, 1, 1, 1});
    tensor("src2", "rope_freqs.weight", {32, 1, 1, 1});
    tensor("dst", "Qcur-3", {64, 4, 5, 1});
    log += print(kFirstRope3, v);
    std::istringstream in(log);
    const HexagonImport imp = parse_hexagon_profile(in);
    ASSERT_EQ(imp.records.size(), 2u) << (imp.unparsed.empty() ? "" : imp.unparsed[0].reason);
    const OpRecord& mm = imp.records[0];
    EXPECT_EQ(mm.op, "MUL_MAT_ID");
    ASSERT_EQ(mm.srcs.size(), 3u);
    EXPECT_EQ(mm.srcs[1].name, "ffn_moe_in-3 (view)");
    EXPECT_EQ(mm.srcs[2].name, "ffn_moe_topk-3");
    EXPECT_EQ(mm.srcs[2].ne, (std::vector<int64_t>{4, 5, 1, 1}));
    EXPECT_EQ(mm.out.name, "ffn_moe_up-3");
    EXPECT_EQ(matmul_tokens(mm), 5);  // MUL_MAT_ID's tokens are ne[2]
    EXPECT_DOUBLE_EQ(*mm.call_ns, 95e3);
    EXPECT_EQ(*mm.pkts, 0);
    const OpRecord& rope = imp.records[1];
    EXPECT_EQ(rope.op, "ROPE");
    ASSERT_EQ(rope.srcs.size(), 3u);
    EXPECT_EQ(rope.srcs[0].name, "Qcur-3 (reshaped)");
    EXPECT_EQ(rope.srcs[2].name, "rope_freqs.weight");
    EXPECT_EQ(rope.layer, 3);
}

TEST(HexagonFormats, LlamaColourResetAtTheStartOfTheNextLineIsRemoved) {
    // common/log.cpp writes the colour reset after a DEBUG message, whose text ends in '\n': the
    // reset opens the next line.
    const std::string line1 =
        "\033[34m0.01.576.635\033[0m \033[33mD ggml-hex: HTP0 profile-op ADD|a x b -> c|4:1 x 4:1 "
        "-> 4:1|f32 x f32 -> f32|4:16 x 4:16 -> 4:16|----|usec 3 cycles 3300 start 9 mhz "
        "1100.0\n";
    const std::string line2 =
        "\033[0m\033[34m0.01.576.700\033[0m \033[33mD ggml-hex: HTP0 profile-op MUL_MAT+ADD|w x "
        "c x d -> e-1|4:4 x 4:3 x 4:3 -> 4:3|q4_0 x f32 x f32 -> f32|1:1 x 4:16 x 4:16 -> "
        "4:16|hvx-tiled vtcm 0|usec 5 cycles 5500 start 3309 mhz 1100.0\n\033[0m";
    std::istringstream in(line1 + line2);
    const HexagonImport imp = parse_hexagon_profile(in);
    EXPECT_EQ(imp.n_unparsed, 0);
    ASSERT_EQ(imp.records.size(), 2u);
    EXPECT_EQ(imp.records[0].out.name, "c");
    EXPECT_EQ(imp.records[1].op, "MUL_MAT+ADD");  // a fused op (PR 26049)
    EXPECT_EQ(matmul_tokens(imp.records[1]), 3);
    EXPECT_EQ(imp.records[1].layer, 1);
    EXPECT_EQ(strip_log_escapes("\033[0m\033[1;31mx\033[m\r"), "x");
    EXPECT_EQ(strip_log_escapes("half \033["), "half ");
}

}  // namespace
}  // namespace sb
