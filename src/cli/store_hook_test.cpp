// Where a document goes when the store refuses it: a file of its own beside the store, never
// one that was there (two runs falling back in the same second, even at once, keep both).
#include "cli/store_hook.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

fs::path hook_temp_dir() {
    const fs::path d = fs::path(testing::TempDir()) /
                       ("sb_store_hook." + std::to_string(::getpid())) /
                       testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string read_text(const std::string& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

TEST(StoreHook, FallbackFilesAreNewEveryTime) {
    const fs::path dir = hook_temp_dir();
    const std::string base = fallback_document_base((dir / "r.sqlite").string());
    EXPECT_TRUE(std::regex_match(base, std::regex(".*/r\\.sqlite\\.[0-9]{8}T[0-9]{6}Z"))) << base;
    std::ofstream(base + ".json") << "earlier";
    EXPECT_EQ(write_fallback_document(base, "one"), base + "-2.json");
    EXPECT_EQ(write_fallback_document(base, "two"), base + "-3.json");
    EXPECT_EQ(read_text(base + ".json"), "earlier");
    EXPECT_EQ(read_text(base + "-2.json"), "one");
    EXPECT_EQ(read_text(base + "-3.json"), "two");
}

TEST(StoreHook, FallbacksAtTheSameMomentKeepEveryDocument) {
    const fs::path dir = hook_temp_dir();
    const std::string base = (dir / "r.sqlite.20260101T000000Z").string();
    std::vector<std::string> paths(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back(
            [&, i] { paths[i] = write_fallback_document(base, "doc " + std::to_string(i)); });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(std::set<std::string>(paths.begin(), paths.end()).size(), 8u);
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(read_text(paths[i]), "doc " + std::to_string(i));
}

TEST(StoreHook, AFolderThatCannotTakeTheFileIsAnError) {
    try {
        write_fallback_document("/nonexistent/dir/r.sqlite.x", "doc");
        FAIL() << "written";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::runtime);
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/r.sqlite.x.json"),
                  std::string::npos);
    }
}

// A store that refuses the document (SQLite's in-memory name, refused when opened): the
// document is written beside it and the exit code says so.
TEST(StoreHook, ARefusingStoreGetsNothingAndTheDocumentIsKept) {
    const fs::path dir = hook_temp_dir();
    const fs::path before = fs::current_path();
    fs::current_path(dir);
    std::ostringstream out, err;
    Context ctx{out, err, 0, {}, ":memory:"};
    ResultDocument doc;
    doc.command = "run";
    store_document(ctx, doc);
    fs::current_path(before);
    EXPECT_EQ(ctx.exit_code, 1);
    std::smatch m;
    const std::string e = err.str();
    ASSERT_TRUE(std::regex_search(e, m, std::regex("written to (\\S+) instead"))) << e;
    EXPECT_NE(read_text((dir / std::string(m[1])).string()).find("\"command\": \"run\""),
              std::string::npos);
    EXPECT_EQ(e.find("stored as"), std::string::npos) << e;
}

}  // namespace
}  // namespace sb::cli
