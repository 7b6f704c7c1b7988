// compare of `ops` documents (ops, decompose, import hexagon-profile): node by node, per stage,
// matched by signature, then rolled up per op type.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>

#include "analysis/compare.hpp"
#include "analysis/compare_steps.hpp"
#include "core/error.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"
#include "core/stats_bootstrap.hpp"

namespace sb {

namespace {

struct OpsMetric {
    const char* metric;
    const char* better;
    const char* worse;
};

// Per signature: op time and call time in µs; call/op the dispatch tax (call time over op time
// per record).
const std::vector<OpsMetric> kShapeMetrics = {{"op_us", "faster", "slower"},
                                              {"call_us", "faster", "slower"},
                                              {"call_per_op", "lower", "higher"}};
// Per op type, over its matched signatures: summed op time, summed call time, and summed call
// over summed op time.
const std::vector<OpsMetric> kTotalMetrics = {{"op_total_us", "faster", "slower"},
                                              {"call_total_us", "faster", "slower"},
                                              {"call_per_op_total", "lower", "higher"}};

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "blk.3.ffn_down.weight" -> "ffn_down", "output.weight" -> "output"; "" for anything else.
std::string weight_role(const std::string& name) {
    static const std::string suffix = ".weight";
    if (name.size() <= suffix.size() || !name.ends_with(suffix))
        return "";
    std::string stem = name.substr(0, name.size() - suffix.size());
    if (stem.starts_with("blk.")) {
        const auto dot = stem.find('.', 4);
        if (dot == std::string::npos || !all_digits(stem.substr(4, dot - 4)))
            return "";
        stem = stem.substr(dot + 1);
    }
    return stem.find(' ') == std::string::npos ? stem : "";
}

// "Qcur-3" -> "Qcur", "kq-0 (reshaped)" -> "kq"; "" for ggml's default names.
std::string node_role(std::string name) {
    if (const auto paren = name.find(" ("); paren != std::string::npos)
        name.resize(paren);
    if (const auto dash = name.rfind('-');
        dash != std::string::npos && all_digits(name.substr(dash + 1)))
        name.resize(dash);
    for (const char* generic : {"node_", "leaf_"})
        if (name.starts_with(generic) && all_digits(name.substr(std::string(generic).size())))
            return "";
    return name;
}

// "q4_0 64×64": ggml order, trailing 1s left out (at least one dimension).
std::string tensor_text(const TensorInfo& t) {
    std::size_t n = t.ne.size();
    while (n > 1 && t.ne[n - 1] == 1)
        --n;
    std::string dims;
    for (std::size_t i = 0; i < n; ++i)
        dims += (i ? "×" : "") + std::to_string(t.ne[i]);
    if (dims.empty())
        dims = "?";
    return t.type.empty() ? dims : t.type + " " + dims;
}

// One side's records of one stage, grouped by signature in order of first appearance.
struct SignatureGroup {
    CompareOpSignature sig;
    std::vector<const OpRecord*> records;
    double op_ns = 0;     // summed, for the order of rows
    bool summed = false;  // the records are a fused op's parts summed (FusedSide)
};

std::string key_of(const CompareOpSignature& s) {
    return s.op + "\x1f" + s.role + "\x1f" + s.shape;
}

// "MUL_MAT+ADD" -> {"MUL_MAT", "ADD"}: the ops a backend fused into one node (the Hexagon
// backend's htp_opnode names, "RMS_NORM+MUL" too); empty for an op of its own.
std::vector<std::string> fused_parts(const std::string& op) {
    if (op.find('+') == std::string::npos)
        return {};
    std::vector<std::string> parts;
    std::size_t from = 0;
    for (std::size_t at; (at = op.find('+', from)) != std::string::npos; from = at + 1)
        parts.push_back(op.substr(from, at - from));
    parts.push_back(op.substr(from));
    for (const auto& x : parts)
        if (x.empty())
            return {};
    return parts;
}

// "MUL_MAT_NX" -> "MUL_MAT", "MUL_MAT_ID_NX" -> "MUL_MAT_ID": the mat-muls a backend ran as one
// node because they share their activations (the Hexagon backend's try_fuse_mul_mat_nx,
// GGML_HEXAGON_FUSE_MUL_MAT_NX); "" for any other op.
std::string nx_base(const std::string& op) {
    if (op == "MUL_MAT_NX")
        return "MUL_MAT";
    if (op == "MUL_MAT_ID_NX")
        return "MUL_MAT_ID";
    return "";
}

// A node that is several ggml ops: "MUL_MAT+ADD" or "MUL_MAT_NX".
bool is_fused(const std::string& op) {
    return !fused_parts(op).empty() || !nx_base(op).empty();
}

// The fused signatures some side ran as one node: by their whole key, and by op and shape
// for those without a role (a log without names).
struct FusedWanted {
    std::set<std::string> keys, op_shapes;
    std::set<std::string> ops;  // their op names
    bool wants(const CompareOpSignature& s) const {
        return keys.count(key_of(s)) || op_shapes.count(s.op + "\x1f" + s.shape);
    }
};

// One side's computing records of a stage, with the ops another side ran fused replaced by
// their parts summed: for "MUL_MAT+ADD", a MUL_MAT and the ADD that consumes its output (by the
// output's name, else its shape, among the next few computing nodes of its graph) become one
// record of that op, whose inputs are the first part's and then each later part's other
// inputs, its output the last part's, its times their sums (null where a part has none), as
// the backend prints the fused node. Only where the sum's signature is one another side ran
// fused; other parts stay as they were.
struct FusedSide {
    std::vector<std::unique_ptr<OpRecord>> fused;  // the summed records (stable addresses)
    std::vector<const OpRecord*> records;
    std::set<const OpRecord*> summed;
};

std::optional<double> sum_of(const std::vector<const OpRecord*>& parts,
                             std::optional<double> OpRecord::*field) {
    double t = 0;
    for (const OpRecord* r : parts) {
        if (!(r->*field))
            return std::nullopt;
        t += *(r->*field);
    }
    return t;
}

// Index in v of the input that is `of`'s output: by name, else (no names) by shape and type.
std::optional<std::size_t> input_from(const std::vector<TensorInfo>& v, const TensorInfo& of) {
    for (std::size_t i = 0; i < v.size(); ++i)
        if (!of.name.empty() && v[i].name == of.name)
            return i;
    if (!of.name.empty())
        return std::nullopt;
    for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i].ne == of.ne && v[i].type == of.type)
            return i;
    return std::nullopt;
}

// Whether two tensors are the same one: by name where both have one, else by shape and type.
bool same_tensor(const TensorInfo& a, const TensorInfo& b) {
    if (!a.name.empty() && !b.name.empty())
        return a.name == b.name;
    return a.ne == b.ne && a.type == b.type;
}

// For "MUL_MAT_NX" (or "MUL_MAT_ID_NX"): a mat-mul and the later ones of its graph that share
// its activations (every input after the weight: src1, and MUL_MAT_ID's ids), among the next
// 16 nodes as the backend stacks them (ggml_hexagon_graph_optimize_reorder's N_FORWARD), become
// one record as the backend prints the node: the weights in order, then the shared inputs; the
// last mat-mul's output; the times summed. The longest such run whose signature another side
// ran as one node is taken, down to two mat-muls.
void sum_nx(const std::vector<OpRecord>& ops, const std::string& name, const FusedWanted& want,
            std::vector<bool>& used, std::map<std::size_t, const OpRecord*>& head, FusedSide& out) {
    const std::string base = nx_base(name);
    constexpr std::size_t kForward = 16;
    for (std::size_t a = 0; a < ops.size(); ++a) {
        const OpRecord& first = ops[a];
        if (used[a] || first.no_compute || first.op != base || first.srcs.size() < 2)
            continue;
        std::vector<std::size_t> run{a};
        for (std::size_t m = a + 1; m < ops.size() && m < a + kForward; ++m) {
            const OpRecord& c = ops[m];
            if (used[m] || c.no_compute || c.op != base || c.graph != first.graph ||
                c.srcs.size() != first.srcs.size())
                continue;
            bool shares = true;
            for (std::size_t k = 1; k < c.srcs.size() && shares; ++k)
                shares = same_tensor(c.srcs[k], first.srcs[k]);
            if (shares)
                run.push_back(m);
        }
        for (std::size_t n = run.size(); n >= 2; --n) {
            OpRecord sum = first;
            sum.op = name;
            sum.srcs.clear();
            std::vector<const OpRecord*> parts;
            for (std::size_t k = 0; k < n; ++k) {
                parts.push_back(&ops[run[k]]);
                sum.srcs.push_back(ops[run[k]].srcs[0]);
            }
            sum.srcs.insert(sum.srcs.end(), first.srcs.begin() + 1, first.srcs.end());
            sum.out = parts.back()->out;
            sum.op_ns = sum_of(parts, &OpRecord::op_ns);
            sum.call_ns = sum_of(parts, &OpRecord::call_ns);
            sum.isolated_call_ns = sum_of(parts, &OpRecord::isolated_call_ns);
            if (!want.wants(compare_op_signature(sum)))
                continue;
            for (std::size_t k = 0; k < n; ++k)
                used[run[k]] = true;
            out.fused.push_back(std::make_unique<OpRecord>(std::move(sum)));
            head[a] = out.fused.back().get();
            break;
        }
    }
}

FusedSide side_records(const StageProfile* s, const FusedWanted& want) {
    FusedSide out;
    if (!s)
        return out;
    const auto& ops = s->ops;
    std::vector<std::size_t> computing;
    for (std::size_t i = 0; i < ops.size(); ++i)
        if (!ops[i].no_compute)
            computing.push_back(i);
    std::vector<bool> used(ops.size(), false);
    std::map<std::size_t, const OpRecord*> head;  // a chain's first part -> its sum
    constexpr std::size_t kWindow = 4;            // computing nodes searched for a consumer
    for (const std::string& name : want.ops) {
        if (!nx_base(name).empty()) {
            sum_nx(ops, name, want, used, head, out);
            continue;
        }
        const auto parts = fused_parts(name);
        for (std::size_t k = 0; k < computing.size(); ++k) {
            const std::size_t a = computing[k];
            if (used[a] || ops[a].op != parts[0])
                continue;
            std::vector<const OpRecord*> chain{&ops[a]};
            std::vector<std::size_t> at{a};
            OpRecord sum = ops[a];
            std::size_t pos = k;
            for (std::size_t p = 1; p < parts.size(); ++p) {
                std::optional<std::size_t> found;
                for (std::size_t m = pos + 1; m < computing.size() && m <= pos + kWindow; ++m) {
                    const OpRecord& c = ops[computing[m]];
                    if (used[computing[m]] || c.graph != ops[a].graph || c.op != parts[p])
                        continue;
                    if (input_from(c.srcs, chain.back()->out)) {
                        found = m;
                        break;
                    }
                }
                if (!found)
                    break;
                const OpRecord& c = ops[computing[*found]];
                std::vector<TensorInfo> rest = c.srcs;
                rest.erase(rest.begin() +
                           static_cast<std::ptrdiff_t>(*input_from(c.srcs, chain.back()->out)));
                sum.srcs.insert(sum.srcs.end(), rest.begin(), rest.end());
                sum.out = c.out;
                chain.push_back(&c);
                at.push_back(computing[*found]);
                pos = *found;
            }
            if (chain.size() != parts.size())
                continue;
            sum.op = name;
            sum.op_ns = sum_of(chain, &OpRecord::op_ns);
            sum.call_ns = sum_of(chain, &OpRecord::call_ns);
            sum.isolated_call_ns = sum_of(chain, &OpRecord::isolated_call_ns);
            if (!want.wants(compare_op_signature(sum)))
                continue;
            for (std::size_t i : at)
                used[i] = true;
            out.fused.push_back(std::make_unique<OpRecord>(std::move(sum)));
            head[a] = out.fused.back().get();
        }
    }
    for (std::size_t i : computing) {
        if (auto h = head.find(i); h != head.end()) {
            out.records.push_back(h->second);
            out.summed.insert(h->second);
        } else if (!used[i]) {
            out.records.push_back(&ops[i]);
        }
    }
    return out;
}

std::vector<SignatureGroup> groups_of(const FusedSide& side) {
    std::vector<SignatureGroup> out;
    std::map<std::string, std::size_t> index;
    for (const OpRecord* r : side.records) {
        const CompareOpSignature sig = compare_op_signature(*r);
        auto [it, fresh] = index.try_emplace(key_of(sig), out.size());
        if (fresh)
            out.push_back({sig, {}, 0, side.summed.count(r) > 0});
        SignatureGroup& g = out[it->second];
        g.records.push_back(r);
        g.op_ns += r->op_ns.value_or(0);
    }
    return out;
}

// What a fused op's row compares: "B: MUL_MAT + ADD summed" for the sides whose values are the
// parts summed; "one node on every side" when every side ran it fused.
std::string fused_text(const std::string& op, const std::vector<std::string>& labels,
                       const std::vector<bool>& summed) {
    std::string who;
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (summed[i])
            who += (who.empty() ? "" : ", ") + labels[i];
    if (who.empty())
        return "one node on every side";
    if (const std::string base = nx_base(op); !base.empty())
        return who + ": the " + base + "s sharing its input summed";
    std::string parts;
    for (const auto& x : fused_parts(op))
        parts += (parts.empty() ? "" : " + ") + x;
    return who + ": " + parts + " summed";
}

const StageProfile* stage_of(const OpsProfile& p, const std::string& name) {
    for (const auto& s : p.stages)
        if (s.stage == name)
            return &s;
    return nullptr;
}

// The op types of a stage, those of the largest time first (by_op's order), else by name;
// then the fused ops the baseline's parts were summed into.
std::vector<std::string> op_types(const StageProfile& s, const std::vector<SignatureGroup>& g) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& a : s.by_op)
        if (seen.insert(a.key).second)
            out.push_back(a.key);
    for (const auto& r : s.ops)
        if (!r.no_compute && seen.insert(r.op).second)
            out.push_back(r.op);
    for (const auto& x : g)
        if (seen.insert(x.sig.op).second)
            out.push_back(x.sig.op);
    return out;
}

// The signature of side's groups that base meets: the equal one, else (one side without a
// role) the only group of the same op and shape. nullopt when none.
std::optional<std::size_t> match_group(const SignatureGroup& base,
                                       const std::vector<SignatureGroup>& side) {
    for (std::size_t i = 0; i < side.size(); ++i)
        if (side[i].sig == base.sig)
            return i;
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < side.size(); ++i) {
        const auto& s = side[i].sig;
        if (s.op != base.sig.op || s.shape != base.sig.shape ||
            (!s.role.empty() && !base.sig.role.empty()))
            continue;
        if (found)
            return std::nullopt;  // ambiguous
        found = i;
    }
    return found;
}

// A record's value of a per-signature metric; nullopt when it lacks it.
std::optional<double> value_of(const OpRecord& r, const std::string& metric) {
    if (metric == "op_us" && r.op_ns)
        return *r.op_ns / 1e3;
    if (metric == "call_us" && r.call_ns)
        return *r.call_ns / 1e3;
    if (metric == "call_per_op" && r.call_ns && r.op_ns && *r.op_ns > 0)
        return *r.call_ns / *r.op_ns;
    return std::nullopt;
}

// Whether g's op times are replayed (op_times.cpp): one measurement of its shape copied to every
// node, so its records do not vary and give no interval of their own.
bool replayed(const SignatureGroup* g) {
    bool any = false;
    if (g)
        for (const OpRecord* r : g->records) {
            if (!r->op_ns)
                continue;
            if (!r->isolated_call_ns)
                return false;
            any = true;
        }
    return any;
}

std::vector<double> samples_of(const SignatureGroup* g, const std::string& metric) {
    std::vector<double> v;
    if (g)
        for (const OpRecord* r : g->records)
            if (auto x = value_of(*r, metric))
                v.push_back(*x);
    // Copies of one replayed op time are one sample, not n that agree perfectly: a bootstrap
    // over them gives an interval of zero width, and a 0.3 % difference would be "slower".
    if (metric == "op_us" && !v.empty() && replayed(g))
        return {*median(v)};
    return v;
}

// A side's strata of a total metric over its matched groups: op or call time (µs) per record,
// or call over op time (records with both and an op time above 0).
// scale multiplies every time (1 / the side's decode graphs: per decode step).
Strata strata_of(const std::vector<const SignatureGroup*>& groups, const std::string& metric,
                 double scale = 1) {
    Strata s;
    const bool ratio = metric == "call_per_op_total";
    for (const SignatureGroup* g : groups) {
        std::vector<double> num, den;
        for (const OpRecord* r : g->records) {
            if (ratio) {
                if (r->call_ns && r->op_ns && *r->op_ns > 0) {
                    num.push_back(*r->call_ns / 1e3 * scale);
                    den.push_back(*r->op_ns / 1e3 * scale);
                }
            } else if (auto x = value_of(*r, metric == "op_total_us" ? "op_us" : "call_us")) {
                num.push_back(*x * scale);
            }
        }
        if (num.empty())
            continue;
        s.num.push_back(std::move(num));
        if (ratio)
            s.den.push_back(std::move(den));
    }
    return s;
}

// Whether any stratum holds two different values: without, the stratified bootstrap resamples
// one fixed total and its "interval" is a point (a single record per signature, or replayed
// copies), which would call a 0.3 % difference slower.
bool varies(const Strata& s) {
    for (const auto* side : {&s.num, &s.den})
        for (const auto& v : *side)
            if (v.size() > 1 &&
                std::any_of(v.begin(), v.end(), [&](double x) { return x != v[0]; }))
                return true;
    return false;
}

std::size_t count_of(const Strata& s) {
    std::size_t n = 0;
    for (const auto& v : s.num)
        n += v.size();
    return n;
}

// A row of totals over the matched signatures partner[k] (partner[k][s]: side s's group of the
// baseline's k-th signature, null where it has none): each side's total over its matched
// groups, and each other side's ratio of totals over the signatures both it and the baseline
// have, with the stratified bootstrap CI.
CompareRow total_row(const std::string& stage, const OpsMetric& m,
                     const std::vector<std::string>& labels,
                     const std::vector<std::vector<const SignatureGroup*>>& partner,
                     const std::vector<double>& scale, const CompareOptions& opts) {
    CompareRow row;
    row.stage = stage;
    row.metric = m.metric;
    row.higher_is_better = false;
    auto groups = [&](std::size_t side, std::optional<std::size_t> with) {
        std::vector<const SignatureGroup*> v;
        for (const auto& p : partner)
            if (p[side] && (!with || p[*with]))
                v.push_back(p[side]);
        return v;
    };
    for (std::size_t s = 0; s < labels.size(); ++s) {
        const Strata st = strata_of(groups(s, std::nullopt), m.metric, scale[s]);
        CompareSide side;
        side.label = labels[s];
        side.n = count_of(st);
        side.total = strata_total(st);
        row.sides.push_back(side);
    }
    for (std::size_t s = 1; s < labels.size(); ++s) {
        CompareRatio q;
        q.label = labels[s] + "/" + labels[0];
        const Strata a = strata_of(groups(s, 0), m.metric, scale[s]);
        const Strata b = strata_of(groups(0, s), m.metric, scale[0]);
        const std::optional<double> ta = strata_total(a), tb = strata_total(b);
        if (!ta || !tb || *ta <= 0 || *tb <= 0) {
            q.verdict = "no data";
        } else if (!varies(a) && !varies(b)) {
            q.median = *ta / *tb;
            q.verdict = "no CI: no records that vary";
        } else {
            const RatioCi ci = ratio_of_totals(a, b, opts.resamples, opts.seed);
            q.median = ci.ratio;
            q.ci_low = ci.lo;
            q.ci_high = ci.hi;
            q.verdict = ci.no_difference ? "no difference" : ci.lo > 1 ? m.worse : m.better;
        }
        row.ratios.push_back(q);
    }
    return row;
}

std::string us_text(double ns) {
    return fmt::format("{:.1f} µs", ns / 1e3);
}

// "decode MUL_MAT attn_q: ... (3 nodes, 12.0 µs op)": an unmatched signature.
std::string unmatched_text(const std::string& stage, const SignatureGroup& g) {
    const std::size_t n = g.records.size();
    return fmt::format("{} {} ({} node{}{}, {} op)", stage, compare_signature_text(g.sig), n,
                       n == 1 ? "" : "s", g.summed ? " as their parts summed" : "",
                       us_text(g.op_ns));
}

// A stage's fallback rows (ops that ran off the requested device) priced against a side that
// ran on the device they fell back to alone (its `requested` that device only: the CPU-only
// run), one row "fallback_us" per row: the fallback side's total is what its nodes took there
// (op time, else call time) plus their share of the splits' copies and synchronisations; the
// other's, the same op type's op time in its run, per node times the fallback's node count;
// both scaled as the stage's Σ rows (scale). Where no side ran there alone, a note says the
// row is priced by its splits only.
template <class Finish>
void add_fallback_rows(const std::string& stage, const std::vector<std::string>& labels,
                       const std::vector<const OpsProfile*>& profiles,
                       const std::vector<const StageProfile*>& stages,
                       const std::vector<double>& scale, CompareResult& r, Finish&& finish) {
    const std::size_t n_sides = labels.size();
    for (std::size_t i = 0; i < n_sides; ++i) {
        if (!stages[i])
            continue;
        for (const FallbackRow& f : stages[i]->fallback) {
            const std::string what =
                fmt::format("{}'s {} {} on {} (asked {})", labels[i], stage, f.op, f.backend,
                            f.requested.empty() ? std::string("-") : f.requested);
            std::optional<std::size_t> alone;
            for (std::size_t j = 0; j < n_sides && !alone; ++j)
                if (j != i && stages[j] && profiles[j]->requested.size() == 1 &&
                    profiles[j]->requested[0] == f.backend)
                    alone = j;
            if (!alone) {
                r.notes.push_back(fmt::format(
                    "{}: priced by its splits only; no input ran on {} alone (give one: `ops` "
                    "with --device {}) to price it against",
                    what, f.backend, f.backend));
                continue;
            }
            // The run alone's op time of the fallback's nodes: per node, the mean of its
            // records of the node's signature (else of its op and shape); where a node's shape
            // is not in that run, the op type's mean per node for every node.
            double alone_ns = 0;
            int n = 0;
            std::map<std::string, std::pair<double, int>> by_key, by_shape;
            for (const auto& rec : stages[*alone]->ops)
                if (!rec.no_compute && rec.op == f.op && rec.op_ns) {
                    alone_ns += *rec.op_ns;
                    ++n;
                    const CompareOpSignature sig = compare_op_signature(rec);
                    for (auto* m : {&by_key, &by_shape}) {
                        auto& [t, c] =
                            (*m)[m == &by_key ? key_of(sig) : sig.op + "\x1f" + sig.shape];
                        t += *rec.op_ns;
                        ++c;
                    }
                }
            double by_node = 0;
            int n_nodes = 0, n_met = 0;
            for (const auto& rec : stages[i]->ops) {
                if (rec.no_compute || rec.op != f.op || rec.backend != f.backend)
                    continue;
                ++n_nodes;
                const CompareOpSignature sig = compare_op_signature(rec);
                const std::pair<double, int>* m = nullptr;
                if (auto it = by_key.find(key_of(sig)); it != by_key.end())
                    m = &it->second;
                else if (auto it2 = by_shape.find(sig.op + "\x1f" + sig.shape);
                         it2 != by_shape.end())
                    m = &it2->second;
                if (m) {
                    by_node += m->first / m->second;
                    ++n_met;
                }
            }
            const bool same_shapes = n_nodes > 0 && n_met == n_nodes;
            const std::optional<double> there = f.op_ns ? f.op_ns : f.call_ns;
            if (!there || n == 0 || f.count <= 0) {
                r.notes.push_back(fmt::format("{}: not priced against {}: {}", what, labels[*alone],
                                              !there ? "its nodes have no time there"
                                                     : "that run has no such op with an "
                                                       "op time"));
                continue;
            }
            CompareRow row;
            row.stage = stage;
            row.metric = "fallback_us";
            row.higher_is_better = false;
            row.test = fmt::format("{} on {} (asked {})", f.op, f.backend,
                                   f.requested.empty() ? std::string("-") : f.requested);
            row.key = stage + "/fallback/" + f.op + "/" + f.backend;
            for (std::size_t s = 0; s < n_sides; ++s) {
                CompareSide side;
                side.label = labels[s];
                if (s == i) {
                    side.n = static_cast<std::size_t>(f.count);
                    side.total = (*there + f.split_ns.value_or(0)) / 1e3 * scale[s];
                } else if (s == *alone) {
                    side.n = static_cast<std::size_t>(same_shapes ? n_nodes : n);
                    side.total = (same_shapes ? by_node : alone_ns / n * f.count) / 1e3 * scale[s];
                }
                row.sides.push_back(side);
            }
            for (std::size_t s = 1; s < n_sides; ++s) {
                CompareRatio q;
                q.label = labels[s] + "/" + labels[0];
                const auto& a = row.sides[s].total;
                const auto& b = row.sides[0].total;
                if (a && b && *b > 0) {
                    q.median = *a / *b;
                    q.verdict = "no CI: totals of one stage";
                } else {
                    q.verdict = "no data";
                }
                row.ratios.push_back(q);
            }
            r.notes.push_back(fmt::format(
                "{}: fallback_us is {}'s {} nodes there ({} {:.1f} µs) plus their share of the "
                "splits' copies ({:.1f} µs), against {}'s {} in its run on {} alone ({}): the "
                "fallback's cost against running there alone",
                what, labels[i], f.count, f.op_ns ? "op time" : "call time", *there / 1e3,
                f.split_ns.value_or(0) / 1e3, labels[*alone], f.op, f.backend,
                same_shapes
                    ? fmt::format("the same {} node shape(s): {:.1f} µs", n_nodes, by_node / 1e3)
                    : fmt::format("{} node(s), {:.1f} µs, per node times {}: {} of the "
                                  "fallback's node shapes not in that run",
                                  n, alone_ns / 1e3, f.count, n_nodes - n_met)));
            finish(row, f.op);
        }
    }
}

}  // namespace

CompareOpSignature compare_op_signature(const OpRecord& r) {
    CompareOpSignature s;
    s.op = r.op;
    for (const auto& src : r.srcs)
        if (s.role = weight_role(src.name); !s.role.empty())
            break;
    if (s.role.empty())
        s.role = node_role(r.out.name);
    for (const auto& src : r.srcs)
        s.shape += (s.shape.empty() ? "" : ", ") + tensor_text(src);
    s.shape += (s.shape.empty() ? "→ " : " → ") + tensor_text(r.out);
    return s;
}

std::string compare_signature_text(const CompareOpSignature& s) {
    return s.op + (s.role.empty() ? "" : " " + s.role) + ": " + s.shape;
}

bool is_ops_document(const ResultDocument& doc) {
    return doc.ops && doc.tests.empty();
}

CompareResult compare_ops_documents(const std::vector<CompareInput>& inputs,
                                    const CompareOptions& opts) {
    CompareResult r = begin_compare(inputs, opts, {"stage", "op", "signature"});
    std::vector<const OpsProfile*> profiles;
    std::vector<std::string> labels;
    for (const auto& in : inputs) {
        const std::string who = in.label + " (" + in.source + ")";
        if (!is_ops_document(in.doc))
            throw input_error(who +
                              ": not an ops document, and the baseline is one; compare reads "
                              "ops documents (ops, decompose, import hexagon-profile) against "
                              "each other, and run documents against each other");
        profiles.push_back(&*in.doc.ops);
        labels.push_back(in.label);
        r.inputs.push_back(compare_input_info(in));
    }
    const std::size_t n_sides = profiles.size();

    std::vector<CompareValue> devices, sources;
    for (const auto* p : profiles) {
        devices.push_back(p->devices);
        sources.push_back(p->source);
    }
    for (const auto& base_stage : profiles[0]->stages) {
        const std::string& stage = base_stage.stage;
        std::vector<const StageProfile*> stages;
        for (const auto* p : profiles)
            stages.push_back(stage_of(*p, stage));
        // Decode's tokens per step (an imported log's 8 decode graphs are 8 tokens, one a
        // step, as an ops document's one step is one); other stages' tokens as they are.
        std::vector<CompareValue> tokens;
        for (const auto* s : stages)
            tokens.push_back(!s ? CompareValue()
                             : stage == "decode" && s->n_graphs > 1
                                 ? CompareValue(int64_t{s->n_tokens / s->n_graphs})
                                 : CompareValue(int64_t{s->n_tokens}));
        for (std::size_t i = 1; i < n_sides; ++i)
            if (!stages[i])
                r.notes.push_back(labels[i] + " has no stage " + stage);
        // Decode totals per decode step: an imported log holds every decode graph it saw (one
        // per token), an ops document one step; each side's totals over its own graphs.
        std::vector<double> per_step(n_sides, 1.0);
        if (stage == "decode")
            for (std::size_t i = 0; i < n_sides; ++i)
                if (stages[i] && stages[i]->n_graphs > 1) {
                    per_step[i] = 1.0 / stages[i]->n_graphs;
                    r.notes.push_back(fmt::format(
                        "{}'s decode holds {} graphs: its Σ rows are per decode step (its totals "
                        "divided by {})",
                        labels[i], stages[i]->n_graphs, stages[i]->n_graphs));
                }
        // Other stages (prefill) whose token counts differ: every side's totals per token (an
        // imported log's two prompts against one traced prompt; 4 micro-batches against 2).
        if (stage != "decode" && stage != "log") {
            bool differ = false;
            std::string counts;
            for (std::size_t i = 0; i < n_sides; ++i) {
                if (!stages[i])
                    continue;
                counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", labels[i],
                                      stages[i]->n_tokens);
                differ = differ || stages[i]->n_tokens != stages[0]->n_tokens;
            }
            const bool all_positive = std::all_of(stages.begin(), stages.end(),
                                                  [](auto* s) { return !s || s->n_tokens > 0; });
            if (differ && all_positive) {
                for (std::size_t i = 0; i < n_sides; ++i)
                    if (stages[i])
                        per_step[i] = 1.0 / stages[i]->n_tokens;
                r.notes.push_back(fmt::format(
                    "{} holds different token counts on the sides ({}): its Σ rows are per "
                    "token (each side's totals divided by its tokens)",
                    stage, counts));
            } else if (differ) {
                r.notes.push_back(fmt::format(
                    "{} holds different token counts on the sides ({}), one of them unknown: "
                    "its Σ rows are per stage, not comparable",
                    stage, counts));
            }
        }
        // Ops a side ran fused (one node, "MUL_MAT+ADD") meet the other sides' parts summed.
        std::vector<FusedWanted> wanted(n_sides);
        for (std::size_t i = 0; i < n_sides; ++i) {
            if (!stages[i])
                continue;
            for (const auto& rec : stages[i]->ops) {
                if (rec.no_compute || !is_fused(rec.op))
                    continue;
                const CompareOpSignature sig = compare_op_signature(rec);
                for (std::size_t j = 0; j < n_sides; ++j) {
                    if (j == i)
                        continue;
                    wanted[j].ops.insert(sig.op);
                    if (sig.role.empty())
                        wanted[j].op_shapes.insert(sig.op + "\x1f" + sig.shape);
                    else
                        wanted[j].keys.insert(key_of(sig));
                }
            }
        }
        std::vector<FusedSide> sides;
        std::vector<std::vector<SignatureGroup>> groups;
        for (std::size_t i = 0; i < n_sides; ++i)
            sides.push_back(side_records(stages[i], wanted[i]));
        for (const auto& sd : sides)
            groups.push_back(groups_of(sd));
        // The other sides' groups some baseline group met, per side.
        std::vector<std::set<std::size_t>> met(n_sides);
        auto finish = [&](CompareRow& row, const std::string& op) {
            row.op = op;
            add_if_differing(devices, row.differs, "devices");
            add_if_differing(sources, row.differs, "source");
            add_if_differing(tokens, row.differs, "n_tokens");
            for (auto& n : compare_cv_notes(row, opts))
                r.notes.push_back(std::move(n));
            r.rows.push_back(std::move(row));
        };
        for (const auto& op : op_types(base_stage, groups[0])) {
            // The baseline's groups of this op, largest op time first, and their counterparts.
            std::vector<std::size_t> order;
            for (std::size_t g = 0; g < groups[0].size(); ++g)
                if (groups[0][g].sig.op == op)
                    order.push_back(g);
            std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
                return groups[0][x].op_ns > groups[0][y].op_ns;
            });
            if (order.empty())
                continue;
            // partner[k][i]: side i's group of the baseline's k-th matched signature, or null.
            std::vector<std::vector<const SignatureGroup*>> partner;
            for (std::size_t g : order) {
                const SignatureGroup& base = groups[0][g];
                std::vector<const SignatureGroup*> p{&base};
                bool any = false;
                for (std::size_t i = 1; i < n_sides; ++i) {
                    const auto at = match_group(base, groups[i]);
                    p.push_back(at ? &groups[i][*at] : nullptr);
                    if (at) {
                        met[i].insert(*at);
                        any = true;
                    }
                }
                if (any)
                    partner.push_back(std::move(p));
                else
                    r.unmatched.push_back({labels[0], unmatched_text(stage, base), {}});
            }
            if (partner.empty())
                continue;
            // The op type rolled up over its matched signatures.
            std::vector<const SignatureGroup*> base_groups;
            for (const auto& p : partner)
                base_groups.push_back(p[0]);
            for (const auto& m : kTotalMetrics) {
                if (count_of(strata_of(base_groups, m.metric)) == 0)
                    continue;  // the baseline has no such time (no call times in a log)
                CompareRow row = total_row(stage, m, labels, partner, per_step, opts);
                row.test = op;
                row.key = stage + "/" + op;
                if (is_fused(op)) {
                    std::vector<bool> summed(n_sides, false);
                    for (const auto& p : partner)
                        for (std::size_t i = 0; i < n_sides; ++i)
                            summed[i] = summed[i] || (p[i] && p[i]->summed);
                    row.fused = fused_text(op, labels, summed);
                }
                finish(row, op);
            }
            // Then each signature.
            for (const auto& p : partner) {
                const SignatureGroup& base = *p[0];
                const std::string text = compare_signature_text(base.sig);
                for (const auto& m : kShapeMetrics) {
                    std::vector<std::vector<double>> samples;
                    for (const auto* g : p)
                        samples.push_back(samples_of(g, m.metric));
                    if (samples[0].empty())
                        continue;
                    const CompareStage st{stage.c_str(), m.metric, false, m.better, m.worse};
                    CompareRow row = compare_row(st, labels, samples, opts);
                    for (std::size_t i = 1; i < p.size(); ++i) {
                        CompareRatio& q = row.ratios[i - 1];
                        if (!q.median)
                            continue;
                        const bool one_record = q.verdict == "too few samples";
                        if (std::string_view(m.metric) == "op_us" &&
                            (replayed(p[0]) || replayed(p[i])))
                            q.verdict = "no CI: a replayed op time is one measurement";
                        else if (!one_record && !varies(Strata{{samples[0]}, {}}) &&
                                 !varies(Strata{{samples[i]}, {}}))
                            q.verdict = "no CI: no records that vary";
                        else
                            continue;
                        q.ci_low.reset();
                        q.ci_high.reset();
                    }
                    row.test = text;
                    row.key = stage + "/" + text;
                    row.signature = base.sig;
                    if (is_fused(op)) {
                        std::vector<bool> summed;
                        for (const auto* g : p)
                            summed.push_back(g && g->summed);
                        row.fused = fused_text(op, labels, summed);
                    }
                    finish(row, op);
                }
            }
        }
        add_fallback_rows(stage, labels, profiles, stages, per_step, r, finish);
        // Signatures a side ran that no baseline signature met, op types included.
        for (std::size_t i = 1; i < n_sides; ++i)
            for (std::size_t g = 0; g < groups[i].size(); ++g)
                if (!met[i].count(g))
                    r.unmatched.push_back({labels[i], unmatched_text(stage, groups[i][g]), {}});
    }
    for (std::size_t i = 1; i < n_sides; ++i)
        for (const auto& s : profiles[i]->stages)
            if (!stage_of(*profiles[0], s.stage))
                r.unmatched.push_back({labels[i], s.stage + " (stage)", {}});
    r.notes.push_back(
        "ops documents: per stage, op records (one per node; views excluded) are matched by "
        "signature (op, the tensor's role where its or its weight's name gives it, input and "
        "output types and shapes). Per signature, each side's samples are its records: op_us "
        "the op time, call_us the call time (µs), call_per_op their ratio per record (the "
        "dispatch tax); the ratio is of medians with a bootstrap 95% CI over the records (a "
        "replayed op time is one measurement copied to each node of its shape: one sample, no "
        "CI). Per "
        "op type, over the matched signatures: op_total_us and call_total_us the summed times "
        "per stage, call_per_op_total summed call over summed op time; the ratio is of totals "
        "with a bootstrap 95% CI resampling records within each signature. An op a side ran fused "
        "(one node, \"MUL_MAT+ADD\") meets the other sides' parts summed (a MUL_MAT and the ADD "
        "of its output, as one record with the inputs and output the fused node prints), and a "
        "MUL_MAT_NX node the other sides' mat-muls sharing its input summed (its weights, then "
        "the shared input, the last mat-mul's output); such rows say which sides' values are "
        "sums (fused)");
    return r;
}

}  // namespace sb
