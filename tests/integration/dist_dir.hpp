#pragma once
// This build as `make dist` packs it, for the tests that deploy or bundle it (fleet, bundle).
#include <string>

namespace sbtest {

// A folder holding this build's dist tarball (scripts/dist.sh on the build's own llama.cpp),
// made once per test binary; throws std::runtime_error when dist.sh fails.
const std::string& dist_dir();

}  // namespace sbtest
