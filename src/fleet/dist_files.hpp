#pragma once
// The files `make dist` and `make agents` leave in a dist folder, as `fleet run` deploys them
// and `bundle` packs them, and the content hashes both identify files by.
//
//   stagebench-<version>-linux-<arch>.tar.gz   a dist of one architecture (scripts/dist.sh)
//   stagebench-agent-<level>                  the static phone agent of one ARM level
#include <filesystem>
#include <optional>
#include <string>

#include "core/arm_level.hpp"

namespace sb {

// The SHA-256 of the file's bytes as 64 lowercase hex digits, read in 1 MiB blocks (a model
// of many GB is never held in memory). Throws sb::Error(input) when it cannot be read.
std::string sha256_file(const std::string& path);
// The SHA-256 of text's bytes, as sha256_file.
std::string sha256_text(const std::string& text);

// The newest stagebench-*-linux-<arch>.tar.gz in dist_dir (no agent); nullopt when none (or
// the folder cannot be read).
std::optional<std::filesystem::path> dist_tarball_for(const std::string& dist_dir,
                                                      const std::string& arch);

// dist_dir/stagebench-agent-<level> when it is a regular file; else nullopt.
std::optional<std::filesystem::path> dist_agent(const std::string& dist_dir, ArmLevel level);

// The folder a dist tarball unpacks into: its file name less ".tar.gz".
std::string dist_tarball_stem(const std::filesystem::path& tarball);

}  // namespace sb
