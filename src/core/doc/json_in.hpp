#pragma once
// The one way a document from outside (a file, a store, stdin) becomes typed: every from_json
// reads through a JsonIn, which knows the source the value came from ("'r.json'", "document #3
// of store 'x.sqlite'") and the path that led to it, so that a value of the wrong shape is one
// sb::Error(input) line naming both:
//   "'r.json': tests[2].config.n_prompt: expected an integer, found a string"
//   "'r.json': tests[0].config.n_prompt: the integer 4294967296 is out of range"
//   "'r.json': tests[0].status: expected ok, failed or interrupted, found \"done\""
// The rules, the same for every field of every document:
//   - absent is not wrong: a member the document lacks leaves the target as it was (older
//     documents lack newer fields; missing is not zero);
//   - null is a value only where the target is std::optional (or free-form JSON);
//   - an integer target takes only a JSON integer within its range (int: 32 bits, int64_t,
//     uint64_t / size_t: 0 to 2^64-1); a double takes any number; an enum takes one of its
//     spellings (core/enums.hpp);
//   - members a reader does not know are kept, by JSON pointer, in the UnknownMembers the root
//     was given, so that to_json can write them back (see ResultDocument::unknown);
//   - ranges too, where a reader names them (ObjectIn::non_negative): a duration, a rate or a
//     count below 0 is refused, "'r.json': tests[0].prefill.duration_ns[1]: expected at least
//     0, found -5".
// Nothing but sb::Error(input) escapes a read.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_set.hpp"
#include "core/enums.hpp"
#include "core/error.hpp"

namespace sb {

// Members no reader knew, by JSON pointer ("/tests/0/prefill/new_field") -> value.
using UnknownMembers = std::map<std::string, nlohmann::json>;

class JsonIn {
  public:
    // The root of a document. root, source and unknown (when given) must outlive this JsonIn
    // and every JsonIn derived from it; unknown null: unknown members are dropped.
    JsonIn(const nlohmann::json& root, const std::string& source,
           UnknownMembers* unknown = nullptr);

    const nlohmann::json& raw() const { return *j_; }
    const std::string& source() const { return *source_; }
    bool is_null() const { return j_->is_null(); }
    // The path from the root as messages write it: "tests[2].config"; "" for the root.
    std::string path() const;
    // The same as a JSON pointer: "/tests/2/config"; "" for the root.
    std::string pointer() const;

    // A child. key must outlive the child (a literal, or a key of the document itself).
    JsonIn member(std::string_view key, const nlohmann::json& value) const;
    JsonIn element(std::size_t index) const;

    // Keeps an unknown member of this object (when the root was given UnknownMembers).
    void keep_unknown(std::string_view key, const nlohmann::json& value) const;
    // Drops the unknown members kept below this value (it is kept whole instead).
    void forget_unknown() const;

    // "SOURCE: PATH: expected WHAT, found TYPE" ("the document" for the root).
    [[noreturn]] void fail_type(std::string_view expected) const;
    // "SOURCE: PATH: WHY".
    [[noreturn]] void fail(std::string_view why) const;

  private:
    JsonIn(const nlohmann::json* j, const JsonIn* parent, std::string_view key, std::size_t index,
           bool is_element)
        : j_(j),
          source_(parent->source_),
          unknown_(parent->unknown_),
          parent_(parent),
          key_(key),
          index_(index),
          is_element_(is_element) {}
    void build_path(std::string& out, bool pointer) const;

    const nlohmann::json* j_;
    const std::string* source_;
    UnknownMembers* unknown_;
    const JsonIn* parent_ = nullptr;
    std::string_view key_;
    std::size_t index_ = 0;
    bool is_element_ = false;
};

// The type of a JSON value in words: "null", "a boolean", "an integer", "a number with a
// fraction", "a string", "an array", "an object".
std::string json_type_name(const nlohmann::json& v);

// An object's members, read by name. Every member the reader names is checked; the others are
// kept as unknown when the object is done (destructor, or unknown()).
class ObjectIn {
  public:
    // Throws (expected an object) unless in holds an object.
    explicit ObjectIn(const JsonIn& in);
    ObjectIn(const ObjectIn&) = delete;
    ObjectIn& operator=(const ObjectIn&) = delete;
    ~ObjectIn();

    // Reads member key into out with read(); an absent member leaves out unchanged.
    template <class T>
    ObjectIn& operator()(const char* key, T& out);
    // A member written from other fields (a derived value such as config.test): checked to be
    // a T, not stored.
    template <class T>
    ObjectIn& check(const char* key);
    // As operator(), except that a value this build cannot read is not an error: for sections
    // whose inner shape is the sensors' and may differ between builds (telemetry). out is then
    // nullopt and the value is kept as an unknown member, written back as it came.
    template <class T>
    ObjectIn& lenient(const char* key, std::optional<T>& out);
    // Each member of keys that is present holds no number below 0: the value itself, or every
    // number inside it (array elements, object members at any depth, except members whose name
    // is in except: a mean's Student-t ci95_lo may be negative). For durations, rates, counts.
    // Throws "SOURCE: PATH: expected at least 0, found -5" naming the first such number.
    ObjectIn& non_negative(std::initializer_list<const char*> keys,
                           std::initializer_list<std::string_view> except = {});
    // Names key (it is not unknown) and gives its value: null when absent.
    JsonIn at(const char* key);
    bool has(const char* key) const;
    const JsonIn& in() const { return in_; }

  private:
    JsonIn in_;
    std::vector<std::string_view> named_;
};

void read(const JsonIn& in, bool& v);
void read(const JsonIn& in, int& v);       // -2^31 .. 2^31-1
void read(const JsonIn& in, int64_t& v);   // -2^63 .. 2^63-1
void read(const JsonIn& in, uint64_t& v);  // 0 .. 2^64-1 (size_t too)
void read(const JsonIn& in, double& v);
void read(const JsonIn& in, std::string& v);
void read(const JsonIn& in, nlohmann::json& v);  // any value, null included
void read(const JsonIn& in, DeviceSet& v);       // a string, DeviceSet::parse
// Free-form JSON that must be an object or null (llama, system, ...).
void read_object_or_null(const JsonIn& in, nlohmann::json& v);

template <SpelledEnum E>
void read(const JsonIn& in, E& v) {
    if (!in.raw().is_string())
        in.fail_type("a string");
    const auto e = parse_enum<E>(in.raw().get_ref<const std::string&>());
    if (!e)
        in.fail("expected one of " + enum_spellings<E>() + ", found " + in.raw().dump());
    v = *e;
}

template <class T>
void read(const JsonIn& in, std::optional<T>& v) {
    if (in.is_null()) {
        v.reset();
        return;
    }
    T x{};
    read(in, x);
    v = std::move(x);
}

template <class T>
void read(const JsonIn& in, std::vector<T>& v) {
    if (!in.raw().is_array())
        in.fail_type("an array");
    v.clear();
    v.reserve(in.raw().size());
    for (std::size_t i = 0; i < in.raw().size(); ++i) {
        T x{};
        read(in.element(i), x);
        v.push_back(std::move(x));
    }
}

template <class T>
void read(const JsonIn& in, std::map<std::string, T>& v) {
    if (!in.raw().is_object())
        in.fail_type("an object");
    v.clear();
    for (const auto& [key, value] : in.raw().items()) {
        T x{};
        read(in.member(key, value), x);
        v.emplace(key, std::move(x));
    }
}

template <class T>
ObjectIn& ObjectIn::operator()(const char* key, T& out) {
    named_.push_back(key);
    const auto it = in_.raw().find(key);
    if (it != in_.raw().end())
        read(in_.member(key, *it), out);
    return *this;
}

template <class T>
ObjectIn& ObjectIn::check(const char* key) {
    T ignored{};
    return (*this)(key, ignored);
}

template <class T>
ObjectIn& ObjectIn::lenient(const char* key, std::optional<T>& out) {
    named_.push_back(key);
    const auto it = in_.raw().find(key);
    if (it == in_.raw().end())
        return *this;
    const JsonIn member = in_.member(key, *it);
    try {
        read(member, out);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::input)
            throw;
        out.reset();
        member.forget_unknown();
        in_.keep_unknown(key, *it);
    }
    return *this;
}

// T from j as read(JsonIn, T&) reads it, source naming j in errors. Throws sb::Error(input).
template <class T>
T from_json(const nlohmann::json& j, const std::string& source = "the value") {
    T out{};
    read(JsonIn(j, source), out);
    return out;
}

}  // namespace sb
