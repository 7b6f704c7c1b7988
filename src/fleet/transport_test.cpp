#include "fleet/transport.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/subprocess.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

struct Dirs {
    fs::path base;
    Dirs() {
        base = fs::temp_directory_path() / ("sb-untar-" + std::to_string(::getpid()));
        fs::remove_all(base);
        fs::create_directories(base / "from");
        fs::create_directories(base / "to");
    }
    ~Dirs() {
        std::error_code ec;
        fs::remove_all(base, ec);
    }
    std::string from() const { return (base / "from").string(); }
    std::string to() const { return (base / "to").string(); }
    std::string tar() const { return (base / "files.tar").string(); }
    // The system's tar, as a device's `cd DIR && tar -cf - NAMES` writes it.
    // format: GNU tar's --format (gnu, its default; ustar, as busybox and toybox write; pax).
    void pack(const std::vector<std::string>& names, const std::string& format = "gnu") const {
        std::vector<std::string> argv = {"tar", "--format=" + format, "-cf", tar(), "-C", from()};
        argv.insert(argv.end(), names.begin(), names.end());
        ASSERT_TRUE(run_process(argv).ok());
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(base / "from" / name, std::ios::binary) << text;
    }
    std::string read(const std::string& name) const {
        std::ifstream f(base / "to" / name, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
};

TEST(UntarFiles, WritesTheNamedFilesWithTheirBytes) {
    Dirs d;
    const std::string big(70000, 'x');  // more than one read and not a multiple of 512
    d.write("result.json", "{\"a\": 1}\n");
    d.write("stderr.log", big);
    d.write("empty.log", "");
    d.pack({"result.json", "stderr.log", "empty.log"});
    EXPECT_EQ(untar_files(d.tar(), {"result.json", "stderr.log", "empty.log"}, d.to()), "");
    EXPECT_EQ(d.read("result.json"), "{\"a\": 1}\n");
    EXPECT_EQ(d.read("stderr.log"), big);
    EXPECT_TRUE(fs::is_regular_file(fs::path(d.to()) / "empty.log"));
    // Written as ./NAME too.
    d.pack({"./result.json"});
    EXPECT_EQ(untar_files(d.tar(), {"result.json"}, d.to()), "");
    // POSIX ustar and pax (its attribute headers skipped).
    for (const char* format : {"ustar", "pax"}) {
        fs::remove(fs::path(d.to()) / "stderr.log");
        d.pack({"stderr.log", "result.json"}, format);
        EXPECT_EQ(untar_files(d.tar(), {"result.json", "stderr.log"}, d.to()), "") << format;
        EXPECT_EQ(d.read("stderr.log"), big) << format;
    }
}

TEST(UntarFiles, RefusesWhatWasNotAskedForLinksAndMissingFiles) {
    Dirs d;
    d.write("result.json", "{}");
    d.write("other.txt", "x");
    fs::create_symlink("/etc/passwd", fs::path(d.from()) / "link.json");
    d.pack({"result.json", "other.txt"});
    EXPECT_EQ(untar_files(d.tar(), {"result.json"}, d.to()),
              "'other.txt' in it is not one of the files asked for");
    EXPECT_FALSE(fs::exists(fs::path(d.to()) / "other.txt"));
    d.pack({"link.json"});
    EXPECT_EQ(untar_files(d.tar(), {"link.json"}, d.to()),
              "'link.json' in it is not one of the files asked for");
    EXPECT_FALSE(fs::exists(fs::symlink_status(fs::path(d.to()) / "link.json")));
    d.pack({"result.json"});
    EXPECT_EQ(untar_files(d.tar(), {"result.json", "trace.json"}, d.to()),
              "trace.json is not in it");
    // Cut short: a damaged stream is said, never read past.
    d.write("stderr.log", std::string(5000, 'y'));
    d.pack({"stderr.log"});
    fs::resize_file(d.tar(), 2048);
    EXPECT_EQ(untar_files(d.tar(), {"stderr.log"}, d.to()), "it ends inside stderr.log");
    EXPECT_EQ(untar_files(d.tar() + ".none", {"x"}, d.to()), "cannot read " + d.tar() + ".none");
}

}  // namespace
}  // namespace sb
