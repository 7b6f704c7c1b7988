#pragma once
// Small helpers shared by the to_json functions of the core types. Missing values become JSON
// null, never zero.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/warning.hpp"

namespace sb {

// The member key of j, or a null value when j is not an object or has no such member: a
// lookup into a document read from disk that never throws.
inline const nlohmann::json& json_field(const nlohmann::json& j, const char* key) {
    static const nlohmann::json null_value;
    if (j.is_object()) {
        auto it = j.find(key);
        if (it != j.end())
            return *it;
    }
    return null_value;
}

// The member key of j when it is a string, else fallback (absent, null or another type): for
// optional text such as a model's general.name, where nlohmann's value() would throw on null.
inline std::string string_field(const nlohmann::json& j, const char* key, std::string fallback) {
    const nlohmann::json& v = json_field(j, key);
    return v.is_string() ? v.get<std::string>() : std::move(fallback);
}

// j as text; never throws: a string that is not valid UTF-8 (which valid_utf8() should have
// caught where it entered) is written with U+FFFD in place of its bad bytes. Every document
// that leaves the program goes through this.
inline std::string dump_json(const nlohmann::json& j, int indent = -1) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The value, or null when absent.
template <class T>
nlohmann::json opt(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// An array of each element's to_json (found by argument-dependent lookup).
template <class T>
nlohmann::json array_of(const std::vector<T>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v)
        a.push_back(to_json(x));
    return a;
}

// An array of optional values: null where absent.
inline nlohmann::json opt_values(const std::vector<std::optional<double>>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v)
        a.push_back(opt(x));
    return a;
}

// {"code", "message", "hint"}.
inline nlohmann::json to_json(const Warning& w) {
    return nlohmann::json{{"code", w.code}, {"message", w.message}, {"hint", w.hint}};
}

// The inverse of to_json (core/doc/json_in.hpp rules).
inline void read(const JsonIn& in, Warning& w) {
    ObjectIn{in}("code", w.code)("message", w.message)("hint", w.hint);
}

// An array of warnings, each as to_json(Warning).
inline nlohmann::json warnings_json(const Warnings& ws) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& w : ws)
        a.push_back(to_json(w));
    return a;
}

// Lets nlohmann convert Warning (and Warnings) implicitly: json j = warnings;
inline void to_json(nlohmann::json& j, const Warning& w) {
    j = to_json(w);
}

}  // namespace sb
