#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/compare_steps.hpp"

namespace sb {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

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
        if (contains(m.match, f) || (f == "model_path" && contains(split, "model")))
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
