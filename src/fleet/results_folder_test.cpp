#include "fleet/results_folder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "fleet/bundle.hpp"
#include "fleet/dist_files.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

struct Folder {
    fs::path dir;
    Folder() {
        dir = fs::temp_directory_path() /
              ("sb-results-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        fs::create_directories(dir);
    }
    ~Folder() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    static int& counter() {
        static int n = 0;
        return n;
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(dir / name, std::ios::binary) << text;
    }
    // A manifest listing result.json ("{}") with the given hash and size.
    void manifest(const std::string& files, const std::string& outcome = "measured") const {
        write("manifest.json", R"({"stagebench_results": 1, "host": "pi5", "outcome": ")" +
                                   outcome + R"(", "exit_code": 0, "files": [)" + files + "]}");
    }
};

const std::string kEmptyHash = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::input) << e.what();
        return e.what();
    }
    return "(no error)";
}

TEST(ResultsFolder, ReadsAndVerifiesAManifest) {
    Folder f;
    f.write("result.json", "{}");
    EXPECT_EQ(sha256_file((f.dir / "result.json").string()), kEmptyHash);
    f.manifest(R"({"name": "result.json", "kind": "document", "bytes": 2, "sha256": ")" +
               kEmptyHash + "\"}");
    const ResultsManifest m = read_results_manifest(f.dir.string());
    EXPECT_EQ(m.host, "pi5");
    EXPECT_EQ(m.outcome, "measured");
    ASSERT_EQ(m.files.size(), 1u);
    EXPECT_EQ(m.files[0].kind, "document");
    EXPECT_NO_THROW(verify_results_folder(m));
}

TEST(ResultsFolder, EveryClaimOfTheManifestIsChecked) {
    Folder f;
    f.write("result.json", "{}");
    const std::string ok_hash = "\"" + kEmptyHash + "\"";
    auto entry = [](const std::string& name, const std::string& bytes, const std::string& hash) {
        return R"({"name": ")" + name + R"(", "kind": "document", "bytes": )" + bytes +
               R"(, "sha256": )" + hash + "}";
    };
    auto verify = [&] { verify_results_folder(read_results_manifest(f.dir.string())); };
    f.manifest(entry("result.json", "3", ok_hash));
    EXPECT_EQ(error_of(verify), "result.json has 2 bytes, manifest.json says 3");
    f.manifest(entry("result.json", "2", "\"" + std::string(64, '0') + "\""));
    EXPECT_EQ(error_of(verify), "result.json does not match manifest.json: sha256 " + kEmptyHash +
                                    ", the manifest's " + std::string(64, '0'));
    f.manifest(entry("result.json", "2", "null"));
    EXPECT_NE(error_of(verify).find("result.json has no sha256 in manifest.json"),
              std::string::npos);
    f.manifest(entry("gone.json", "2", ok_hash));
    EXPECT_EQ(error_of(verify), "gone.json is listed in manifest.json but is not there");
    const std::string where = "'" + (f.dir / "manifest.json").string() + "': ";
    f.manifest(entry("../result.json", "2", ok_hash));
    EXPECT_EQ(error_of(verify), where + "a file whose name is not a plain file name of the folder");
    f.manifest(entry("result.json", "-2", ok_hash));
    EXPECT_EQ(error_of(verify), where + "result.json: bytes is not a size");
    f.manifest(entry("result.json", "2", "\"ABC\""));
    EXPECT_EQ(error_of(verify), where + "result.json: sha256 is not 64 lowercase hex digits");
    f.manifest(entry("result.json", "2", ok_hash), "maybe");
    EXPECT_EQ(error_of(verify),
              where + "outcome 'maybe' is none of measured, failed, not_measured");
    f.write("manifest.json", R"({"stagebench_results": 2})");
    EXPECT_EQ(error_of(verify),
              where + "not a stagebench results manifest (stagebench_results: 1)");
    f.write("manifest.json", "not json");
    EXPECT_NE(error_of(verify).find("manifest.json"), std::string::npos);
    fs::remove(f.dir / "manifest.json");
    EXPECT_EQ(error_of(verify), "no manifest.json (not a results folder of a stagebench job)");
    // A symbolic link in place of a listed file is not a file of the folder.
    fs::create_symlink("/etc/hostname", f.dir / "link.json");
    f.manifest(entry("link.json", "2", ok_hash));
    EXPECT_EQ(error_of(verify), "link.json is listed in manifest.json but is not there");
}

TEST(ResultsFolder, FindsTheFoldersBelowARoot) {
    Folder f;
    fs::create_directories(f.dir / "lab" / "pi-a" / "results");
    fs::create_directories(f.dir / "lab" / "pi-b");
    fs::create_directories(f.dir / "lab" / "notes");
    std::ofstream(f.dir / "lab" / "pi-a" / "results" / "manifest.json") << "{}";
    std::ofstream(f.dir / "lab" / "pi-b" / "manifest.json") << "{}";
    EXPECT_EQ(find_results_folders((f.dir / "lab").string()),
              (std::vector<std::string>{(f.dir / "lab" / "pi-a" / "results").string(),
                                        (f.dir / "lab" / "pi-b").string()}));
    EXPECT_EQ(find_results_folders((f.dir / "lab" / "pi-b").string()),
              (std::vector<std::string>{(f.dir / "lab" / "pi-b").string()}));
    EXPECT_EQ(error_of([&] { find_results_folders((f.dir / "none").string()); }),
              "'" + (f.dir / "none").string() + "' is not a folder");
}

TEST(Bundle, TheCommandNamesTheJobsModels) {
    Folder f;
    f.write("a.gguf", "x");
    const std::string a = (f.dir / "a.gguf").string();
    EXPECT_EQ(bundle_command({"run", "-m", a, "-p", "8"}, {a}),
              (std::vector<std::string>{"run", "-m", "models/a.gguf", "-p", "8"}));
    EXPECT_EQ(bundle_command({"hybrid", "--model", "a.gguf,a.gguf"}, {a}),
              (std::vector<std::string>{"hybrid", "--model", "models/a.gguf,models/a.gguf"}));
    try {
        bundle_command({"run", "-m", "b.gguf"}, {a});
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::usage);
        EXPECT_STREQ(e.what(),
                     "bundle: the command's -m 'b.gguf' is not a model of the job; add it with "
                     "bundle -m b.gguf");
    }
}

TEST(Bundle, RunShIsTheJobsCommandWithItsResults) {
    BundleSpec s;
    s.target = "host";
    s.models = {{"models/a.gguf", std::string(64, 'a'), 1}};
    s.command = {"decompose", "-m", "models/a.gguf", "--note", "it's"};
    s.with_out = false;
    s.with_trace = false;
    const std::string sh = bundle_run_script(s);
    EXPECT_EQ(sh.rfind("#!/bin/sh\n", 0), 0u);
    EXPECT_NE(sh.find("check_model models/a.gguf " + std::string(64, 'a') + "\n"),
              std::string::npos);
    EXPECT_NE(sh.find("set -- decompose -m models/a.gguf --note 'it'\\''s' \"$@\"\n"),
              std::string::npos)
        << sh;
    // decompose has no --out nor --trace: its document is stdout.
    EXPECT_NE(sh.find("set -- \"$@\" -o json\n"), std::string::npos);
    EXPECT_EQ(sh.find("--trace"), std::string::npos);
    EXPECT_NE(sh.find(">\"$results/result.json\" 2>\"$results/stderr.log\""), std::string::npos);
    EXPECT_NE(sh.find("stagebench_has_junit() {\n  $STAGEBENCH_PREFIX \"$sb\" decompose --help"),
              std::string::npos);
}

}  // namespace
}  // namespace sb
