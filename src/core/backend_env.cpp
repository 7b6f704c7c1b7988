#include "core/backend_env.hpp"

#include "core/utf8.hpp"

#include <fstream>
#include <map>
#include <set>

extern char** environ;

namespace sb {

const std::vector<std::string>& backend_env_prefixes() {
    static const std::vector<std::string> p = {"GGML_", "LLAMA_", "ADSP_", "OMP_", "KMP_", "GOMP_"};
    return p;
}

nlohmann::json backend_env_of(const std::vector<std::string>& env) {
    std::set<std::string> named;
    const std::string key = std::string(kRecordEnvVariable) + "=";
    for (const auto& e : env) {
        if (e.rfind(key, 0) != 0)
            continue;
        std::string list = e.substr(key.size()), cur;
        for (char c : list + ",") {
            if (c == ',') {
                if (!cur.empty())
                    named.insert(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
    }
    std::map<std::string, std::string> out;
    for (const auto& e : env) {
        const auto eq = e.find('=');
        if (eq == std::string::npos || eq == 0)
            continue;
        const std::string name = e.substr(0, eq);
        bool keep = named.count(name) > 0;
        for (const auto& p : backend_env_prefixes())
            keep = keep || name.rfind(p, 0) == 0;
        if (keep)
            out[name] = e.substr(eq + 1);
    }
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : out)
        j[valid_utf8(k)] = valid_utf8(v);
    return j;
}

nlohmann::json backend_env() {
    // /proc/self/environ is the environment the process started with: a backend that set a
    // variable of its own since (ggml's OpenMP sets KMP_BLOCKTIME) does not show up in it.
    std::vector<std::string> env;
    std::ifstream f("/proc/self/environ", std::ios::binary);
    std::string entry;
    while (f && std::getline(f, entry, '\0'))
        if (!entry.empty())
            env.push_back(entry);
    if (env.empty())
        for (char** e = environ; e && *e; ++e)
            env.emplace_back(*e);
    return backend_env_of(env);
}

}  // namespace sb
