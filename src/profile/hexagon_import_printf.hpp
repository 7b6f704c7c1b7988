#pragma once
// Test-only (included by the *_test.cpp files of this folder, compiled into no library): printing
// Hexagon profile logs through the backend's own format strings, so that the fixtures are what
// the backend would write and a changed format fails a test.
//
// A CallSite is one logging call: its format string and its argument expressions, either read
// from a source file (find_call: the pinned llama.cpp tree, read at test time) or held in a test
// as found in an older upstream version (with where it comes from). print() is printf of the
// format with each argument's value looked up by its expression: a conversion whose argument is
// unknown, or of another kind than the conversion prints, throws std::runtime_error naming the
// call, so a format that gained, lost or retyped an argument cannot print silently.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

namespace sb::hexlog {

struct CallSite {
    std::string origin;  // "ggml/src/ggml-hexagon/ggml-hexagon.cpp:123", or "PR 16547 (...)"
    int line = 0;
    std::string format;
    std::vector<std::string> args;  // argument expressions, white space collapsed
    std::string where() const { return line > 0 ? fmt::format("{}:{}", origin, line) : origin; }
};

inline std::string read_text(const std::string& path) {
    std::ifstream f(path);
    if (!f)
        throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

inline std::string collapse(const std::string& s) {
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

// The call to `func` in `src` (the text of `file`) whose format string contains `needle`. The
// format is the concatenation of the string literals of argument `fmt_arg`.
inline CallSite find_call(const std::string& src, const std::string& file, const std::string& func,
                          const std::string& needle, size_t fmt_arg) {
    const size_t at = src.find(needle);
    if (at == std::string::npos)
        throw std::runtime_error("'" + needle + "' not found in " + file);
    const size_t open = src.rfind(func + "(", at);
    if (open == std::string::npos)
        throw std::runtime_error(func + "( not found before '" + needle + "' in " + file);
    CallSite c;
    c.origin = file;
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

// A call as found in an older upstream version: its format (escapes already resolved) and its
// argument expressions.
inline CallSite held_call(std::string origin, std::string format, std::vector<std::string> args) {
    CallSite c;
    c.origin = std::move(origin);
    c.format = std::move(format);
    for (auto& a : args)
        c.args.push_back(collapse(a));
    return c;
}

using Value = std::variant<std::string, long long, double>;
using Values = std::map<std::string, Value>;

// printf of `c.format`. Conversions: s, c, d, i, u, ld/lld/lu/llu/zu, f (with flags, width and
// precision as written); a string argument for s, an integer for d/i/u/c, a double for f.
inline std::string print(const CallSite& c, const Values& values) {
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
        while (j < f.size() && std::string("-+ #0").find(f[j]) != std::string::npos)
            ++j;
        while (j < f.size() && (std::isdigit(static_cast<unsigned char>(f[j])) || f[j] == '.'))
            ++j;
        const std::string flags_width = f.substr(i, j - i);  // "%-8", "%.1", "%03"
        while (j < f.size() && std::string("lhzj").find(f[j]) != std::string::npos)
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
        char buf[1024];
        const Value& val = v->second;
        if (conv == 's' && std::holds_alternative<std::string>(val))
            std::snprintf(buf, sizeof buf, (flags_width + "s").c_str(),
                          std::get<std::string>(val).c_str());
        else if ((conv == 'd' || conv == 'i' || conv == 'u') &&
                 std::holds_alternative<long long>(val))
            std::snprintf(buf, sizeof buf, (flags_width + "lld").c_str(), std::get<long long>(val));
        else if (conv == 'c' && std::holds_alternative<long long>(val))
            std::snprintf(buf, sizeof buf, (flags_width + "c").c_str(),
                          static_cast<int>(std::get<long long>(val)));
        else if (conv == 'f' && std::holds_alternative<double>(val))
            std::snprintf(buf, sizeof buf, (flags_width + "f").c_str(), std::get<double>(val));
        else
            throw std::runtime_error(c.where() + ": conversion " + spec + " for '" + expr +
                                     "' is not what this test prints");
        out += buf;
    }
    if (next != c.args.size())
        throw std::runtime_error(c.where() + ": fewer conversions than arguments");
    return out;
}

// A scripted two-layer model: the graphs the fixtures print.

// One op of the scripted model, as htp_opformat would describe it.
struct Op {
    std::string op;
    std::vector<std::string> names;  // inputs then the output
    std::vector<std::vector<long long>> ne;
    std::vector<std::string> types;
    std::string kparams = "----";
    long long usec = 0;
};

inline std::string dims_text(const std::vector<long long>& ne) {
    // htp_opformat::format_tensor_dims: two dims when ne[2] == ne[3] == 1, else four.
    std::vector<long long> n = ne;
    n.resize(4, 1);
    if (n[2] == 1 && n[3] == 1)
        return fmt::format("{}:{}", n[0], n[1]);
    return fmt::format("{}:{}:{}:{}", n[0], n[1], n[2], n[3]);
}

inline std::string strides_text(const std::vector<long long>& ne, const std::string& type) {
    const long long es = type == "f16" ? 2 : 4;
    std::vector<long long> n = ne;
    n.resize(4, 1);
    if (n[2] == 1 && n[3] == 1)
        return fmt::format("{}:{}", es, es * n[0]);
    return fmt::format("{}:{}:{}:{}", es, es * n[0], es * n[0] * n[1], es * n[0] * n[1] * n[2]);
}

inline std::string joined(const std::vector<std::string>& v) {
    // "in0 x in1 -> out" (htp_opformat::format_op_names and its siblings)
    std::string s;
    for (size_t i = 0; i + 1 < v.size(); ++i)
        s += (i ? " x " : "") + v[i];
    return v.size() > 1 ? s + " -> " + v.back() : v.back();
}

// A two-layer model's graph for `tokens` tokens (prefill when > 1): its ops with scripted
// times. The output projection has one token in prefill as well (only the last token's logits
// are computed), as in llama.cpp.
inline std::vector<Op> graph_ops(long long tokens, long long kv, int graph_no) {
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

}  // namespace sb::hexlog
