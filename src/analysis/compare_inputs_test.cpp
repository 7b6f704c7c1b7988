// The operands of compare and advise, read typed where they are read: a file through the one
// document reader, refused in one line naming the file and the field.
#include "analysis/compare_inputs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CompareInputs : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("sb_compare_inputs_" +
                std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string file(const std::string& name, const std::string& text) {
        const std::string path = (dir_ / name).string();
        std::ofstream(path) << text;
        return path;
    }

    std::string error(const std::vector<std::string>& operands,
                      const std::optional<std::string>& db = std::nullopt,
                      const std::vector<std::string>& labels = {}) {
        try {
            load_compare_inputs(operands, db, labels);
        } catch (const Error& e) {
            kind_ = e.kind();
            return e.what();
        }
        ADD_FAILURE() << "no error";
        return "";
    }

    fs::path dir_;
    ErrorKind kind_ = ErrorKind::runtime;
};

const char* kRun = R"({"schema": "stagebench.result", "command": "run",
    "tests": [{"config": {"n_prompt": 32, "n_gen": 8, "devices": "CPU"}, "status": "ok"}]})";

TEST_F(CompareInputs, FilesAreReadTypedWithTheirLabels) {
    const std::string a = file("a.json", kRun), b = file("b.json", kRun);
    const auto in = load_compare_inputs({a, b}, std::nullopt, {"phone"});
    ASSERT_EQ(in.size(), 2u);
    EXPECT_EQ(in[0].label, "phone");
    EXPECT_EQ(in[1].label, "B");
    EXPECT_EQ(in[1].source, b);
    EXPECT_EQ(in[0].doc.command, "run");
    ASSERT_EQ(in[0].doc.tests.size(), 1u);
    EXPECT_EQ(in[0].doc.tests[0].config.n_prompt, 32);
    EXPECT_EQ(in[0].doc.tests[0].config.devices.str(), "CPU");
}

TEST_F(CompareInputs, ADocumentOfTheWrongShapeIsOneLineNamingTheFileAndTheField) {
    const std::string a = file("a.json", kRun);
    const std::string odd =
        file("odd.json", R"({"schema": "stagebench.result", "tests": [{"config": "pp32+tg8"}]})");
    EXPECT_EQ(error({a, odd}),
              "'" + odd + "': tests[0].config: expected an object, found a string");
    EXPECT_EQ(kind_, ErrorKind::input);
    const std::string other = file("other.json", R"({"x": 1})");
    EXPECT_NE(error({other, a}).find("not a stagebench result document"), std::string::npos);
    EXPECT_EQ(kind_, ErrorKind::input);
    const std::string broken = file("broken.json", "{ not json");
    EXPECT_NE(error({a, broken}).find("is not JSON"), std::string::npos);
    EXPECT_EQ(kind_, ErrorKind::input);
    EXPECT_NE(error({a, (dir_ / "absent.json").string()}).find("absent.json"), std::string::npos);
    EXPECT_EQ(kind_, ErrorKind::input);
}

TEST_F(CompareInputs, UsageErrors) {
    const std::string a = file("a.json", kRun);
    EXPECT_NE(error({a, "db:1"}).find("add --db FILE"), std::string::npos);
    EXPECT_EQ(kind_, ErrorKind::usage);
    EXPECT_NE(error({a}, std::nullopt, {"x", "y"}).find("2 labels for 1 inputs"),
              std::string::npos);
    EXPECT_EQ(kind_, ErrorKind::usage);
}

}  // namespace
}  // namespace sb
