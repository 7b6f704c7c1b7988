#pragma once
// Errors the library reports. The library never exits: it throws sb::Error, and main() maps
// the kind to an exit code (usage and bad input: 2; runtime failures: 1).
#include <stdexcept>
#include <string>

#include "core/utf8.hpp"

namespace sb {

enum class ErrorKind {
    usage,    // wrong flag or value: the user must change the command line
    input,    // a file, model, device or server given by the user is unusable
    runtime,  // something failed while measuring
};

class Error : public std::runtime_error {
  public:
    // The message is made valid UTF-8: it often quotes text from outside (a file, a server's
    // answer) and may end up in a result document.
    Error(ErrorKind kind, const std::string& message)
        : std::runtime_error(valid_utf8(message)), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

  private:
    ErrorKind kind_;
};

inline Error usage_error(const std::string& m) {
    return Error(ErrorKind::usage, m);
}
inline Error input_error(const std::string& m) {
    return Error(ErrorKind::input, m);
}
inline Error runtime_error(const std::string& m) {
    return Error(ErrorKind::runtime, m);
}

}  // namespace sb
