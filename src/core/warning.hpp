#pragma once
// Typed warnings: a measurement condition that may spoil the numbers, with text that tells
// the user what to do about it. Warnings travel in the result document to every reporter.
#include <string>
#include <vector>

namespace sb {

struct Warning {
    std::string code;     // stable identifier, e.g. "governor_not_performance"
    std::string message;  // what is wrong, with the numbers
    std::string hint;     // what to do about it
    bool operator==(const Warning&) const = default;
};

using Warnings = std::vector<Warning>;

}  // namespace sb
