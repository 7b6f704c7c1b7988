#pragma once
// A unit test's own folder under the temporary directory, made unique by mkdtemp and removed
// with everything in it when the test ends.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace sbtest {

struct TempDir {
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sb_test_XXXXXX").string();
        if (::mkdtemp(tmpl.data()))
            path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path.empty())
            std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
    std::filesystem::path path;
};

}  // namespace sbtest
