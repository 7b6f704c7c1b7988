#include "profile/op_record.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace sb {

bool is_no_compute_op(const std::string& op) {
    return op == "NONE" || op == "VIEW" || op == "RESHAPE" || op == "PERMUTE" || op == "TRANSPOSE";
}

namespace {

std::optional<int> digits_at(const std::string& s, size_t pos, size_t end) {
    if (pos >= end || pos >= s.size())
        return std::nullopt;
    int v = 0;
    size_t i = pos;
    for (; i < end && i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
        if (v > 100000)
            return std::nullopt;
        v = v * 10 + (s[i] - '0');
    }
    if (i == pos)
        return std::nullopt;
    return v;
}

}  // namespace

std::optional<int> parse_layer(const std::string& full) {
    std::string name = full;
    // Scheduler copies: "<backend>#<name>#<copy>".
    if (auto a = name.find('#'); a != std::string::npos) {
        auto b = name.rfind('#');
        name = b > a ? name.substr(a + 1, b - a - 1) : name.substr(a + 1);
    }
    // "blk.N." anywhere (weights).
    if (auto p = name.find("blk."); p != std::string::npos) {
        size_t q = p + 4;
        size_t e = q;
        while (e < name.size() && std::isdigit(static_cast<unsigned char>(name[e])))
            ++e;
        if (e > q && e < name.size() && name[e] == '.')
            return digits_at(name, q, e);
    }
    // The base name, before suffixes like " (view)" or " (reshaped)".
    std::string base = name.substr(0, name.find(' '));
    // "ffn_up-3": llama.cpp's cb(cur, "ffn_up", il) naming.
    if (auto d = base.rfind('-'); d != std::string::npos && d + 1 < base.size()) {
        bool all = std::all_of(base.begin() + d + 1, base.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        if (all)
            return digits_at(base, d + 1, base.size());
    }
    // "cache_k_l3": the KV cache of layer 3.
    if (auto l = base.rfind("_l"); l != std::string::npos && l + 2 < base.size()) {
        bool all = std::all_of(base.begin() + l + 2, base.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        if (all)
            return digits_at(base, l + 2, base.size());
    }
    return std::nullopt;
}

std::vector<OpAggregate> aggregate(const std::vector<OpRecord>& records, GroupBy by,
                                   std::optional<double> share_denominator_ns) {
    struct Acc {
        OpAggregate a;
        double op = 0, call = 0, ratio_call = 0, ratio_op = 0;
        bool has_op = false, has_call = false;
    };
    std::map<std::string, Acc> groups;
    std::vector<std::string> order;
    double all_call = 0;
    bool any_call = false;
    for (const auto& r : records) {
        std::string key;
        std::optional<int> layer;
        switch (by) {
            case GroupBy::op:
                key = r.op;
                break;
            case GroupBy::backend:
                key = r.backend.empty() ? "unknown" : r.backend;
                break;
            case GroupBy::layer:
                layer = r.layer;
                key = r.layer ? std::to_string(*r.layer) : "none";
                break;
        }
        auto [it, inserted] = groups.try_emplace(key);
        if (inserted)
            order.push_back(key);
        Acc& g = it->second;
        g.a.key = key;
        g.a.layer = layer;
        g.a.count++;
        if (r.no_compute)
            g.a.n_no_compute++;
        if (r.op_ns) {
            g.op += *r.op_ns;
            g.has_op = true;
        }
        if (r.call_ns) {
            g.call += *r.call_ns;
            g.has_call = true;
            all_call += *r.call_ns;
            any_call = true;
        }
        if (r.op_ns && r.call_ns && *r.op_ns > 0) {
            g.ratio_op += *r.op_ns;
            g.ratio_call += *r.call_ns;
        }
    }
    std::vector<OpAggregate> out;
    for (const auto& key : order) {
        Acc& g = groups[key];
        if (g.has_op)
            g.a.op_ns = g.op;
        if (g.has_call)
            g.a.call_ns = g.call;
        if (g.has_op && share_denominator_ns && *share_denominator_ns > 0)
            g.a.share = g.op / *share_denominator_ns;
        if (g.has_call && any_call && all_call > 0)
            g.a.call_share = g.call / all_call;
        if (g.ratio_op > 0)
            g.a.call_op_ratio = g.ratio_call / g.ratio_op;
        out.push_back(g.a);
    }
    if (by == GroupBy::layer) {
        std::stable_sort(out.begin(), out.end(), [](const OpAggregate& a, const OpAggregate& b) {
            if (a.layer.has_value() != b.layer.has_value())
                return a.layer.has_value();
            return a.layer.value_or(0) < b.layer.value_or(0);
        });
    } else {
        auto weight = [](const OpAggregate& a) {
            return a.call_ns ? *a.call_ns : a.op_ns.value_or(0);
        };
        std::stable_sort(out.begin(), out.end(), [&](const OpAggregate& a, const OpAggregate& b) {
            return weight(a) > weight(b);
        });
    }
    return out;
}

std::vector<size_t> top_records(const std::vector<OpRecord>& records, size_t n) {
    std::vector<size_t> idx(records.size());
    for (size_t i = 0; i < idx.size(); ++i)
        idx[i] = i;
    auto weight = [&](size_t i) {
        const auto& r = records[i];
        return r.call_ns ? *r.call_ns : r.op_ns.value_or(0);
    };
    std::stable_sort(idx.begin(), idx.end(),
                     [&](size_t a, size_t b) { return weight(a) > weight(b); });
    if (idx.size() > n)
        idx.resize(n);
    return idx;
}

std::optional<double> sum_op_ns(const std::vector<OpRecord>& records) {
    std::optional<double> s;
    for (const auto& r : records)
        if (r.op_ns)
            s = s.value_or(0) + *r.op_ns;
    return s;
}

std::optional<double> sum_call_ns(const std::vector<OpRecord>& records, bool compute_only) {
    std::optional<double> s;
    for (const auto& r : records)
        if (r.call_ns && !(compute_only && r.no_compute))
            s = s.value_or(0) + *r.call_ns;
    return s;
}

std::string shape_text(const std::vector<int64_t>& ne) {
    size_t n = ne.size();
    while (n > 1 && ne[n - 1] == 1)
        --n;
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        if (i)
            s += 'x';
        s += std::to_string(ne[i]);
    }
    return s.empty() ? "-" : s;
}

}  // namespace sb
