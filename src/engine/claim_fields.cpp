#include "engine/claim_fields.hpp"

#include <cmath>

#include "core/json_util.hpp"
#include "core/utf8.hpp"

namespace sb {

using nlohmann::json;

namespace {

// Everything a server says about counts and times is a claim (README "Bad input and
// faults"): read here only when it is a number of the right kind, bounded later by what was
// received (compute_timing, request_measure). A value that is no count or no duration at all
// (negative, fractional, beyond 2^53, absurdly long) is noted in ci.rejected, with the field
// and the value as sent, and read as absent.
constexpr double kMaxClaimValue = 9007199254740992.0;  // 2^53: exact in a JSON double
// No server time is longer than a day (the longest wait stagebench allows anywhere).
constexpr double kMaxClaimNs = 86400e9;

}  // namespace

std::string claim_text(const json& v) {
    return v.is_string() ? "'" + utf8_prefix(valid_utf8(v.get<std::string>()), 40) + "'"
                         : utf8_prefix(dump_json(v), 40);
}

void reject(ChunkInfo& ci, const std::string& field, const json& v, const char* why) {
    if (ci.rejected.size() < 8)
        ci.rejected.push_back(field + " = " + claim_text(v) + " (" + why + ")");
}

// A token count: a whole number from 0 to 2^53. Absent when the field is.
std::optional<int64_t> count_field(const json& j, const char* key, const std::string& where,
                                   ChunkInfo& ci) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    const std::string field = where + key;
    if (!it->is_number()) {
        reject(ci, field, *it, "not a number");
        return std::nullopt;
    }
    const double v = it->get<double>();
    if (!(v >= 0) || v > kMaxClaimValue || v != std::floor(v)) {
        reject(ci, field, *it, "not a token count");
        return std::nullopt;
    }
    return static_cast<int64_t>(v);
}

std::optional<double> num_field(const json& j, const char* key) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || !it->is_number())
        return std::nullopt;
    return it->get<double>();
}

bool nonempty_string(const json& j, const char* key) {
    if (!j.is_object())
        return false;
    auto it = j.find(key);
    return it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

// A duration of v x scale ns: from 0 to a day. field names it in the note of a rejection.
std::optional<int64_t> duration_ns(std::optional<double> v, double scale, const std::string& field,
                                   ChunkInfo& ci) {
    if (!v)
        return std::nullopt;
    const double ns = *v * scale;
    if (!(ns >= 0) || ns > kMaxClaimNs) {
        reject(ci, field, json(*v), "not a duration");
        return std::nullopt;
    }
    return static_cast<int64_t>(std::llround(ns));
}

// A duration field of j in units of scale ns; a field of another type is rejected.
std::optional<int64_t> duration_field(const json& j, const char* key, double scale,
                                      const std::string& where, ChunkInfo& ci) {
    if (!j.is_object())
        return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    if (!it->is_number()) {
        reject(ci, where + key, *it, "not a number");
        return std::nullopt;
    }
    return duration_ns(it->get<double>(), scale, where + key, ci);
}

}  // namespace sb
