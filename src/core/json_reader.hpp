#pragma once
// Reading a document from disk whose shape is not guaranteed: every value is reached through a
// JsonAt, which knows the file it came from and the path that led to it, so that a value of the
// wrong type is one line naming both ("r.json: .tests[0].config.devices is a number, expected a
// string") instead of a nlohmann type error.
//
// Absent is not wrong: a member that is missing or null reads as absent (missing is not zero,
// and null is how the result documents write an absent value). Present with another type than
// the reader expects is an sb::Error(input).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sb {

class JsonAt {
  public:
    // The root of a document; source names it in errors (a file path, "db:3"). The JsonAt keeps
    // references to root and source: both must outlive it and every JsonAt derived from it.
    JsonAt(const nlohmann::json& root, const std::string& source);

    const nlohmann::json& raw() const { return *j_; }
    // The path from the root, jq style: "." for the root, ".tests[0].config".
    std::string path() const { return path_.empty() ? "." : path_; }
    const std::string& source() const { return *source_; }

    bool absent() const { return j_->is_null(); }
    bool is_object() const { return j_->is_object(); }
    bool is_array() const { return j_->is_array(); }
    bool has(const char* key) const;  // an object with key, its value not null

    // The member key: absent when this is absent or has no such member. Throws when this is
    // present and not an object.
    JsonAt operator[](const char* key) const;
    // The elements of an array; none when absent. Throws when present and not an array.
    std::vector<JsonAt> elements() const;
    // The elements of an array of objects: as elements(), and throws for an element that is not
    // an object (null included: an array holds no absent entries).
    std::vector<JsonAt> objects() const;

    // Typed values: nullopt when absent; throw when present with another type. integer()
    // accepts a number with an integral value in the range of int.
    std::optional<std::string> string() const;
    std::optional<double> number() const;
    std::optional<int> integer() const;
    std::optional<bool> boolean() const;
    std::string string_or(const std::string& d) const { return string().value_or(d); }
    double number_or(double d) const { return number().value_or(d); }
    int integer_or(int d) const { return integer().value_or(d); }
    bool boolean_or(bool d) const { return boolean().value_or(d); }
    // An object or absent: throws for any other type.
    JsonAt object() const;
    // The numbers of an array; absent: none. Throws for a non-array or an element that is not
    // a number (null elements are skipped: a sample that was not measured).
    std::vector<double> numbers() const;

    // sb::Error(input): "SOURCE: PATH is TYPE, expected WHAT".
    [[noreturn]] void fail(const std::string& expected) const;

  private:
    JsonAt(const nlohmann::json* j, const std::string* source, std::string path)
        : j_(j), source_(source), path_(std::move(path)) {}
    const nlohmann::json* j_;
    const std::string* source_;
    std::string path_;
};

// "an object", "a number", "null", ...: the type of j in words for error messages.
std::string json_type_words(const nlohmann::json& j);

}  // namespace sb
