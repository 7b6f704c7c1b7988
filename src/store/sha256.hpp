#pragma once
// SHA-256 (FIPS 180-4): what identifies a document in a results store (its content hash), so
// that `db copy` and `db import` never store one document twice. Written here rather than
// taken from OpenSSL so that every build that has a store (also one without the fleet's
// OpenSSL) hashes alike.
#include <string>
#include <string_view>

namespace sb {

// The digest of data as 64 lowercase hex digits. Never throws (but std::bad_alloc).
std::string sha256_hex(std::string_view data);

}  // namespace sb
