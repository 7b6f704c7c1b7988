#include "core/json_reader.hpp"

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace sb {

using nlohmann::json;

namespace {

const json& null_json() {
    static const json n;
    return n;
}

}  // namespace

std::string json_type_words(const json& j) {
    switch (j.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::object:
            return "an object";
        case json::value_t::array:
            return "an array";
        case json::value_t::string:
            return "a string";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return "a number";
        default:
            return "a binary value";
    }
}

JsonAt::JsonAt(const json& root, const std::string& source) : j_(&root), source_(&source) {}

void JsonAt::fail(const std::string& expected) const {
    throw input_error(*source_ + ": " + path() + " is " + json_type_words(*j_) + ", expected " +
                      expected);
}

bool JsonAt::has(const char* key) const {
    if (!j_->is_object())
        return false;
    auto it = j_->find(key);
    return it != j_->end() && !it->is_null();
}

JsonAt JsonAt::operator[](const char* key) const {
    std::string p = path_ + "." + key;
    if (j_->is_null())
        return JsonAt(&null_json(), source_, std::move(p));
    if (!j_->is_object())
        fail("an object");
    auto it = j_->find(key);
    return JsonAt(it == j_->end() ? &null_json() : &*it, source_, std::move(p));
}

std::vector<JsonAt> JsonAt::elements() const {
    std::vector<JsonAt> out;
    if (j_->is_null())
        return out;
    if (!j_->is_array())
        fail("an array");
    out.reserve(j_->size());
    for (std::size_t i = 0; i < j_->size(); ++i)
        out.push_back(JsonAt(&(*j_)[i], source_, path_ + "[" + std::to_string(i) + "]"));
    return out;
}

std::vector<JsonAt> JsonAt::objects() const {
    auto out = elements();
    for (const auto& e : out)
        if (!e.is_object())
            e.fail("an object");
    return out;
}

std::optional<std::string> JsonAt::string() const {
    if (j_->is_null())
        return std::nullopt;
    if (!j_->is_string())
        fail("a string");
    return j_->get<std::string>();
}

std::optional<double> JsonAt::number() const {
    if (j_->is_null())
        return std::nullopt;
    if (!j_->is_number())
        fail("a number");
    return j_->get<double>();
}

std::optional<int> JsonAt::integer() const {
    const auto v = number();
    if (!v)
        return std::nullopt;
    if (std::floor(*v) != *v || *v < std::numeric_limits<int>::min() ||
        *v > std::numeric_limits<int>::max())
        fail("an integer");
    return static_cast<int>(*v);
}

std::optional<bool> JsonAt::boolean() const {
    if (j_->is_null())
        return std::nullopt;
    if (!j_->is_boolean())
        fail("true or false");
    return j_->get<bool>();
}

JsonAt JsonAt::object() const {
    if (!j_->is_null() && !j_->is_object())
        fail("an object");
    return *this;
}

std::vector<double> JsonAt::numbers() const {
    std::vector<double> out;
    for (const auto& e : elements())
        if (const auto v = e.number())
            out.push_back(*v);
    return out;
}

}  // namespace sb
