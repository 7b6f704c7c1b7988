#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/compare_steps.hpp"
#include "core/json_util.hpp"

namespace sb {

using nlohmann::json;

namespace {

std::optional<std::string> str_field(const json& j, const char* key) {
    const json& v = json_field(j, key);
    return v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

const std::vector<CompareKeyField> kCompareKeyFields = {
    {"model", "m"},          {"n_prompt", "p"},  {"n_gen", "n"},     {"n_depth", "d"},
    {"n_batch", "b"},        {"n_ubatch", "ub"}, {"type_k", "ctk"},  {"type_v", "ctv"},
    {"flash_attn", "fa"},    {"engine", ""},     {"devices", "dev"}, {"n_threads", "t"},
    {"n_gpu_layers", "ngl"}, {"model_path", ""}};

std::string compare_key_text(const json& v) {
    return v.is_string() ? v.get<std::string>() : dump_json(v);
}

json CompareMatcher::model(const json& config) const {
    const auto path = str_field(config, "model_path");
    if (!path)
        return nullptr;
    const std::string file = std::filesystem::path(*path).filename().string();
    for (const auto& n : {*path, file})
        if (auto it = alias->find(n); it != alias->end())
            return it->second;
    return file;
}

json CompareMatcher::value(const json& config, const std::string& name) const {
    return name == "model" ? model(config) : json_field(config, name.c_str());
}

std::string CompareMatcher::base_key(const json& config) const {
    std::string k;
    for (const auto& f : match)
        k += (k.empty() ? "" : ",") + f + "=" + compare_key_text(value(config, f));
    return k;
}

std::vector<std::string> compare_split_fields(const CompareMatcher& m,
                                              const std::vector<CompareInput>& inputs) {
    std::vector<std::string> split;
    for (const auto& kf : kCompareKeyFields) {
        const std::string f = kf.name;
        // The model's file name stands for its path when both vary.
        if (contains(m.match, f) || (f == "model_path" && contains(split, "model")))
            continue;
        bool varies = false;
        for (const auto& in : inputs) {
            std::map<std::string, std::set<std::string>> values;
            for (const auto& t : json_field(in.doc, "tests")) {
                const json& c = json_field(t, "config");
                values[m.base_key(c)].insert(compare_key_text(m.value(c, f)));
            }
            for (const auto& [k, v] : values)
                varies = varies || v.size() > 1;
        }
        if (varies)
            split.push_back(f);
    }
    return split;
}

std::vector<std::vector<CompareEntry>> compare_entries(const std::vector<CompareInput>& inputs,
                                                       const CompareMatcher& m,
                                                       const std::vector<std::string>& split) {
    std::vector<std::vector<CompareEntry>> entries(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        std::map<std::string, int> count;
        for (const auto& t : json_field(inputs[i].doc, "tests")) {
            const json& c = json_field(t, "config");
            std::string key = m.base_key(c);
            std::string name = str_field(c, "test").value_or("?");
            // The swept fields join the key, and the name too, so that a reader can tell the
            // rows of one workload apart: "pp32+tg8 [devices=CPU>RPC0]".
            std::string swept;
            for (const auto& f : split) {
                std::string v = compare_key_text(m.value(c, f));
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
