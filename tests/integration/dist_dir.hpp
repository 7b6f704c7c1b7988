#pragma once
// This build as `make dist` packs it, for the tests that deploy or bundle it (fleet, bundle).
#include <functional>
#include <string>

namespace sbtest {

// A folder holding this build's dist tarball (scripts/dist.sh on the build's own llama.cpp),
// one per test process (fleet run writes its jobs into DIST/jobs/), the tarball in it linked
// from the build's cache (cached_output "dist"): dist.sh runs once per build of what it packs,
// not once per test. Throws std::runtime_error when dist.sh fails.
const std::string& dist_dir();

// A key of everything dist.sh packs (the stagebench binary, the llama.cpp build, the presets,
// vocabularies and dist.sh itself), by path, size and modification time.
const std::string& dist_key();

// A folder of the build's test cache (BUILD/test-cache/NAME-KEY/), made by make(dir) the first
// time any test process asks for it, under a lock (one maker at a time, also across
// processes), and kept for the tests that follow, which only read it. Making one removes the
// folders of NAME with another key (an older build's). make throws to fail: nothing is cached.
std::string cached_output(const std::string& name, const std::string& key,
                          const std::function<void(const std::string& dir)>& make);

}  // namespace sbtest
