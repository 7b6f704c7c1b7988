#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/compare_steps.hpp"

namespace sb {

namespace {

bool listed_in(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// A field's value as run's command line gives it ("-ngl 99", "--device CPU", "-m x.gguf"), or
// "field=value" for a field with no flag of its own.
std::string flag_text(const std::string& field, const CompareValue& v) {
    static const std::map<std::string, std::string> kFlags = {
        {"model", "-m"},         {"n_prompt", "-p"},  {"n_gen", "-n"},
        {"n_depth", "-d"},       {"n_batch", "-b"},   {"n_ubatch", "-ub"},
        {"type_k", "-ctk"},      {"type_v", "-ctv"},  {"flash_attn", "-fa"},
        {"devices", "--device"}, {"n_threads", "-t"}, {"n_gpu_layers", "-ngl"}};
    std::string text = compare_value_text(v);
    if (field == "model_path")
        text = text.substr(text.find_last_of('/') + 1);
    const auto it = kFlags.find(field);
    return it == kFlags.end() ? field + "=" + text : it->second + " " + text;
}

std::string labels_of(const std::vector<CompareDoc>& docs, const std::vector<std::size_t>& idx) {
    std::string out;
    for (std::size_t i : idx)
        out += (out.empty() ? "" : ", ") + docs[i].info.label;
    return out;
}

}  // namespace

std::string compare_unmatched_reason(const std::vector<CompareDoc>& docs,
                                     const std::vector<std::vector<CompareEntry>>& entries,
                                     std::size_t i, const CompareEntry& e,
                                     const std::vector<std::size_t>& others,
                                     const CompareMatcher& m,
                                     const std::vector<std::string>& split) {
    // "only in B" when no other input has it; "not in A" when only some were asked.
    const bool all_others = others.size() + 1 == docs.size();
    const std::string where =
        all_others ? "only in " + docs[i].info.label : "not in " + labels_of(docs, others);
    std::vector<std::string> fields = m.match;
    fields.insert(fields.end(), split.begin(), split.end());
    for (const auto& f : fields) {
        const std::string mine = compare_value_text(m.value(*e.test, f));
        std::vector<std::string> theirs;
        for (std::size_t o : others)
            for (const auto& t : docs[o].tests) {
                const std::string v = compare_value_text(m.value(t, f));
                if (!listed_in(theirs, v))
                    theirs.push_back(v);
            }
        if (listed_in(theirs, mine))
            continue;
        std::string have;
        for (std::size_t k = 0; k < theirs.size() && k < 4; ++k)
            have += (k ? ", " : "") + (k ? theirs[k] : flag_text(f, theirs[k]));
        if (theirs.size() > 4)
            have += ", ...";
        return flag_text(f, m.value(*e.test, f)) + " " + where + " (" + labels_of(docs, others) +
               ": " + have + ")";
    }
    // Every value is somewhere: the k-th of identical configurations, or the combination.
    if (const auto hash = e.key.rfind(",#"); hash != std::string::npos) {
        const std::string base = e.key.substr(0, hash);
        std::size_t most = 0;
        for (std::size_t o : others) {
            std::size_t n = 0;
            for (const auto& x : entries[o])
                n += x.key == base || x.key.rfind(base + ",#", 0) == 0 ? 1 : 0;
            most = std::max(most, n);
        }
        return "#" + e.key.substr(hash + 2) +
               " of an identical configuration: " + labels_of(docs, others) + " " +
               (others.size() > 1 ? "have" : "has") + " " + std::to_string(most);
    }
    // The workload is there: the swept fields' values are not together; else the workload's.
    bool workload_there = false;
    for (std::size_t o : others)
        for (const auto& t : docs[o].tests)
            workload_there = workload_there || m.base_key(t) == m.base_key(*e.test);
    std::string values;
    for (const auto& f : workload_there && !split.empty() ? split : m.match)
        values += (values.empty() ? "" : ", ") + flag_text(f, m.value(*e.test, f));
    return "this combination (" + values + ") " + where;
}

CompareValue CompareMatcher::model(const CompareTest& t) const {
    const auto it = t.config.find("model_path");
    if (it == t.config.end() || !std::holds_alternative<std::string>(it->second))
        return {};
    const std::string& path = std::get<std::string>(it->second);
    const std::string file = std::filesystem::path(path).filename().string();
    for (const auto& n : {path, file})
        if (auto it = alias->find(n); it != alias->end())
            return it->second;
    return file;
}

CompareValue CompareMatcher::value(const CompareTest& t, const std::string& name) const {
    if (name == "model")
        return model(t);
    const auto it = t.config.find(name);
    return it == t.config.end() ? CompareValue() : it->second;
}

std::string CompareMatcher::base_key(const CompareTest& t) const {
    std::string k;
    for (const auto& f : match)
        k += (k.empty() ? "" : ",") + f + "=" + compare_value_text(value(t, f));
    return k;
}

std::vector<std::string> compare_split_fields(const CompareMatcher& m,
                                              const std::vector<CompareDoc>& docs) {
    std::vector<std::string> split;
    for (const auto& kf : kCompareKeyFields) {
        const std::string f = kf.name;
        // The model's file name stands for its path when both vary.
        if (listed_in(m.match, f) || (f == "model_path" && listed_in(split, "model")))
            continue;
        bool varies = false;
        for (const auto& d : docs) {
            std::map<std::string, std::set<std::string>> values;
            for (const auto& t : d.tests)
                values[m.base_key(t)].insert(compare_value_text(m.value(t, f)));
            for (const auto& [k, v] : values)
                varies = varies || v.size() > 1;
        }
        if (varies)
            split.push_back(f);
    }
    return split;
}

std::vector<std::vector<CompareEntry>> compare_entries(const std::vector<CompareDoc>& docs,
                                                       const CompareMatcher& m,
                                                       const std::vector<std::string>& split) {
    std::vector<std::vector<CompareEntry>> entries(docs.size());
    for (std::size_t i = 0; i < docs.size(); ++i) {
        std::map<std::string, int> count;
        for (const auto& t : docs[i].tests) {
            std::string key = m.base_key(t);
            std::string name = t.name;
            // The swept fields join the key, and the name too, so that a reader can tell the
            // rows of one workload apart: "pp32+tg8 [devices=CPU>RPC0]".
            std::string swept;
            for (const auto& f : split) {
                std::string v = compare_value_text(m.value(t, f));
                key += "," + f + "=" + v;
                if (f == "model_path")
                    v = v.substr(v.find_last_of('/') + 1);
                swept += (swept.empty() ? "" : ", ") + f + "=" + v;
            }
            if (!swept.empty())
                name += " [" + swept + "]";
            // Identical configurations in one document are matched in order of appearance.
            if (const int k = ++count[key]; k > 1) {
                key += ",#" + std::to_string(k);
                name += " #" + std::to_string(k);
            }
            entries[i].push_back({&t, key, name});
        }
    }
    return entries;
}

}  // namespace sb
