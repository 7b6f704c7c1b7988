#pragma once
// For unit tests of the CLI: one in-process run of run_cli with captured streams.
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace sb::cli {

struct Outcome {
    int code = -1;
    std::string out, err;
};

// Runs `stagebench args...` through run_cli; returns its exit code and what it printed.
inline Outcome run_captured(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"stagebench"};
    for (const auto& a : args)
        argv.push_back(a.c_str());
    std::ostringstream out, err;
    Context ctx{out, err, 0, {}, {}};
    Outcome o;
    o.code = run_cli(static_cast<int>(argv.size()), argv.data(), ctx);
    o.out = out.str();
    o.err = err.str();
    return o;
}

}  // namespace sb::cli
