#pragma once
// Reading a server's claims out of one streamed message: a count or a duration is read only
// when it is one (a whole number from 0 to 2^53; 0 to a day), else it is named in
// ChunkInfo::rejected (at most 8) with the field and the value as sent, and read as absent.
// For the wire APIs (engine/wire_*.cpp) and the server kinds' timings (engine/server_kind.cpp).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/wire_api.hpp"

namespace sb {

// The value as it is quoted in a note: a string in quotes, anything else as JSON; at most 40
// bytes of valid UTF-8.
std::string claim_text(const nlohmann::json& v);
// Notes v of field as rejected for why ("not a token count").
void reject(ChunkInfo& ci, const std::string& field, const nlohmann::json& v, const char* why);
// j[key] as a token count: a whole number from 0 to 2^53. Absent when the field is (or j is
// no object); rejected (as where + key) when it is no count.
std::optional<int64_t> count_field(const nlohmann::json& j, const char* key,
                                   const std::string& where, ChunkInfo& ci);
// j[key] when it is a number, else absent.
std::optional<double> num_field(const nlohmann::json& j, const char* key);
// j[key] is a non-empty string.
bool nonempty_string(const nlohmann::json& j, const char* key);
// v x scale as ns when it is a duration (0 to a day); rejected as field otherwise.
std::optional<int64_t> duration_ns(std::optional<double> v, double scale, const std::string& field,
                                   ChunkInfo& ci);
// j[key] x scale as ns; a field of another type than a number is rejected.
std::optional<int64_t> duration_field(const nlohmann::json& j, const char* key, double scale,
                                      const std::string& where, ChunkInfo& ci);

}  // namespace sb
