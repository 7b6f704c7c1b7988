#pragma once
// The devices one test runs on, as the command line and the result document spell them: device
// names joined with '+' ("CPU", "BLAS+RPC0"). The text is kept as written (names are split on
// '+' only), so str() gives back exactly what parse() read: "" stays "" (llama.cpp's default,
// which split_device_set() in src/engine reads as CPU), and the hybrid's "CPU>BLAS" (prefill on
// CPU, decode on BLAS) is one name. Which names are real devices is the engine's to check.
#include <string>
#include <string_view>
#include <vector>

namespace sb {

class DeviceSet {
  public:
    DeviceSet() = default;  // no names: str() is ""
    // Implicit on purpose: a device set is its spelling, as a std::string is its characters.
    DeviceSet(std::string_view spec) : names_(parse(spec).names_) {}           // NOLINT
    DeviceSet(const std::string& spec) : DeviceSet(std::string_view(spec)) {}  // NOLINT
    DeviceSet(const char* spec) : DeviceSet(std::string_view(spec)) {}         // NOLINT

    // "A+B" -> {"A", "B"}; empty names between separators are kept ("A++B" -> {"A", "", "B"}).
    static DeviceSet parse(std::string_view spec);

    const std::vector<std::string>& names() const { return names_; }
    bool empty() const { return names_.empty(); }
    std::string str() const;  // the names joined with '+'
    bool contains(std::string_view name) const;

    bool operator==(const DeviceSet&) const = default;

  private:
    std::vector<std::string> names_;
};

}  // namespace sb
