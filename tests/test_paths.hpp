#pragma once
// Where a test finds the repository, the build and the peers: every test source includes this
// first (-include, sb_add_test in the top CMakeLists.txt). The paths live in one generated
// source of each build (tests/test_paths.cpp.in), not in the test objects' command lines, so a
// test object compiles the same in every clone and worktree and ccache serves it there too.
// Each returns an absolute path without a trailing slash, valid for the whole process.

namespace sb::test_paths {
const char* source_dir();         // the repository root
const char* binary_dir();         // the CMake build directory (bin/stagebench, peers/)
const char* llama_source_dir();   // the llama.cpp source tree the build links
const char* llama_build_dir();    // ... and its build directory
const char* report_assets_dir();  // the HTML report's npm packages (scripts/report-assets.sh)
}  // namespace sb::test_paths

#define SB_SOURCE_DIR (::sb::test_paths::source_dir())
#define SB_BINARY_DIR (::sb::test_paths::binary_dir())
#define SB_LLAMA_SOURCE_DIR (::sb::test_paths::llama_source_dir())
#define SB_LLAMA_BUILD_DIR (::sb::test_paths::llama_build_dir())
#define SB_REPORT_ASSETS_DIR (::sb::test_paths::report_assets_dir())
