#include "core/doc/json_in.hpp"

#include <algorithm>
#include <exception>
#include <limits>

namespace sb {

using nlohmann::json;

namespace {

const json& null_json() {
    static const json n;
    return n;
}

// "~" and "/" inside a pointer's reference token (RFC 6901).
void append_pointer_token(std::string& out, std::string_view key) {
    out += '/';
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
}

}  // namespace

std::string json_type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
            return "an integer";
        case json::value_t::number_float:
            return "a number with a fraction";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        default:
            return "a binary value";
    }
}

JsonIn::JsonIn(const json& root, const std::string& source, UnknownMembers* unknown)
    : j_(&root), source_(&source), unknown_(unknown) {}

void JsonIn::build_path(std::string& out, bool pointer) const {
    if (!parent_)
        return;
    parent_->build_path(out, pointer);
    if (pointer) {
        append_pointer_token(out, is_element_ ? std::string_view(std::to_string(index_)) : key_);
    } else if (is_element_) {
        out += '[';
        out += std::to_string(index_);
        out += ']';
    } else {
        if (!out.empty())
            out += '.';
        out += key_;
    }
}

std::string JsonIn::path() const {
    std::string p;
    build_path(p, false);
    return p;
}

std::string JsonIn::pointer() const {
    std::string p;
    build_path(p, true);
    return p;
}

JsonIn JsonIn::member(std::string_view key, const json& value) const {
    return JsonIn(&value, this, key, 0, false);
}

JsonIn JsonIn::element(std::size_t index) const {
    const json* e = j_->is_array() && index < j_->size() ? &(*j_)[index] : &null_json();
    return JsonIn(e, this, {}, index, true);
}

void JsonIn::keep_unknown(std::string_view key, const json& value) const {
    if (!unknown_)
        return;
    std::string p = pointer();
    append_pointer_token(p, key);
    (*unknown_)[p] = value;
}

void JsonIn::forget_unknown() const {
    if (!unknown_)
        return;
    const std::string prefix = pointer() + "/";
    for (auto it = unknown_->lower_bound(prefix);
         it != unknown_->end() && it->first.compare(0, prefix.size(), prefix) == 0;)
        it = unknown_->erase(it);
}

void JsonIn::fail_type(std::string_view expected) const {
    const std::string p = path();
    throw input_error(*source_ + ": " + (p.empty() ? "the document" : p) + ": expected " +
                      std::string(expected) + ", found " + json_type_name(*j_));
}

void JsonIn::fail(std::string_view why) const {
    const std::string p = path();
    throw input_error(*source_ + ": " + (p.empty() ? "the document" : p) + ": " + std::string(why));
}

ObjectIn::ObjectIn(const JsonIn& in) : in_(in) {
    if (!in_.raw().is_object())
        in_.fail_type("an object");
}

ObjectIn::~ObjectIn() {
    // A read that failed leaves the document unread: nothing to keep.
    if (std::uncaught_exceptions() > 0)
        return;
    for (const auto& [key, value] : in_.raw().items())
        if (std::find(named_.begin(), named_.end(), key) == named_.end())
            in_.keep_unknown(key, value);
}

JsonIn ObjectIn::at(const char* key) {
    named_.push_back(key);
    const auto it = in_.raw().find(key);
    return in_.member(key, it == in_.raw().end() ? null_json() : *it);
}

namespace {

void require_non_negative(const JsonIn& in, std::initializer_list<std::string_view> except) {
    const json& j = in.raw();
    if (j.is_number()) {
        const bool negative = j.is_number_float()      ? j.get<double>() < 0
                              : j.is_number_unsigned() ? false
                                                       : j.get<int64_t>() < 0;
        if (negative)
            in.fail("expected at least 0, found " + j.dump());
    } else if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i)
            require_non_negative(in.element(i), except);
    } else if (j.is_object()) {
        for (const auto& [key, value] : j.get_ref<const json::object_t&>())
            if (std::find(except.begin(), except.end(), key) == except.end())
                require_non_negative(in.member(key, value), except);
    }
}

}  // namespace

ObjectIn& ObjectIn::non_negative(std::initializer_list<const char*> keys,
                                 std::initializer_list<std::string_view> except) {
    for (const char* key : keys) {
        const auto it = in_.raw().find(key);
        if (it != in_.raw().end())
            require_non_negative(in_.member(key, *it), except);
    }
    return *this;
}

bool ObjectIn::has(const char* key) const {
    return in_.raw().contains(key);
}

void read(const JsonIn& in, bool& v) {
    if (!in.raw().is_boolean())
        in.fail_type("a boolean");
    v = in.raw().get<bool>();
}

namespace {

// An integer of the JSON value as int64, or the failure: not an integer, or above int64's max.
int64_t signed_integer(const JsonIn& in) {
    const json& j = in.raw();
    if (!j.is_number_integer())
        in.fail_type("an integer");
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        in.fail("the integer " + j.dump() + " is out of range");
    return j.get<int64_t>();
}

}  // namespace

void read(const JsonIn& in, int& v) {
    const int64_t x = signed_integer(in);
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        in.fail("the integer " + in.raw().dump() + " is out of range");
    v = static_cast<int>(x);
}

void read(const JsonIn& in, int64_t& v) {
    v = signed_integer(in);
}

void read(const JsonIn& in, uint64_t& v) {
    const json& j = in.raw();
    if (!j.is_number_integer())
        in.fail_type("an integer");
    if (!j.is_number_unsigned() && j.get<int64_t>() < 0)
        in.fail("expected an integer of at least 0, found " + j.dump());
    v = j.get<uint64_t>();
}

void read(const JsonIn& in, double& v) {
    if (!in.raw().is_number())
        in.fail_type("a number");
    v = in.raw().get<double>();
}

void read(const JsonIn& in, std::string& v) {
    if (!in.raw().is_string())
        in.fail_type("a string");
    v = in.raw().get<std::string>();
}

void read(const JsonIn& in, json& v) {
    v = in.raw();
}

void read(const JsonIn& in, DeviceSet& v) {
    std::string s;
    read(in, s);
    v = DeviceSet::parse(s);
}

void read_object_or_null(const JsonIn& in, json& v) {
    if (!in.is_null() && !in.raw().is_object())
        in.fail_type("an object");
    v = in.raw();
}

}  // namespace sb
