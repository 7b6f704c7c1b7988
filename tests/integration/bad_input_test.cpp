// Bad input as a new user would give it: one clear line on stderr, exit code 2, no crash,
// no hang, nothing on stdout.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_harness.hpp"
#include "engine/process.hpp"

using namespace sbtest;

namespace {

void expect_one_line_error(const Proc& p, const std::string& needle) {
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    EXPECT_EQ(p.err.rfind("stagebench: error: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find(needle), std::string::npos) << p.err;
    EXPECT_TRUE(p.out.empty()) << p.out;
}

std::vector<std::string> run_args(const std::string& model) {
    return {"run", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--membw", "off", "-q"};
}

}  // namespace

TEST(BadInput, MissingModelFile) {
    expect_one_line_error(sbtest::run_sb(run_args("/nonexistent/model.gguf")),
                          "/nonexistent/model.gguf");
}

TEST(BadInput, TruncatedModelFile) {
    TempDir t;
    const std::string cut = t.file("cut.gguf");
    {
        std::ifstream in(tiny_model(), std::ios::binary);
        std::vector<char> buf(std::filesystem::file_size(tiny_model()) / 2);
        in.read(buf.data(), buf.size());
        std::ofstream(cut, std::ios::binary).write(buf.data(), buf.size());
    }
    expect_one_line_error(sbtest::run_sb(run_args(cut)), cut);
}

TEST(BadInput, CorruptModelFile) {
    TempDir t;
    const std::string bad = t.file("garbage.gguf");
    std::ofstream(bad) << "this is not a model, just some text that is long enough to read\n";
    expect_one_line_error(sbtest::run_sb(run_args(bad)), bad);
}

TEST(BadInput, UnknownDevice) {
    auto args = run_args(tiny_model());
    args.insert(args.end(), {"--device", "NOPE0"});
    expect_one_line_error(sbtest::run_sb(args), "unknown device 'NOPE0'");
}

// A GPU device of a backend whose module this build lacks: the error says so and how to get it
// (make cuda for CUDA, the user's own llama.cpp for the others), in every command that takes a
// device. A name that only looks like one (CUDAx) gets no such hint.
TEST(BadInput, AGpuDeviceWithoutItsModuleSaysHowToGetIt) {
    const std::string lib = std::string(SB_LLAMA_BUILD_DIR) + "/bin";
    auto args = run_args(tiny_model());
    args.insert(args.end(), {"--device", "SYCL0"});
    expect_one_line_error(sbtest::run_sb(args), "unknown device 'SYCL0' (available: CPU");
    expect_one_line_error(sbtest::run_sb(args),
                          "; this build's llama.cpp has no SYCL module (no libggml-sycl.so in " +
                              lib +
                              "): build your own llama.cpp with it and point stagebench's "
                              "build at it (docs/install.md, \"Your own llama.cpp\")");
    expect_one_line_error(
        sbtest::run_sb({"ops", "-m", tiny_model(), "--device", "MTL0"}),
        "this build's llama.cpp has no Metal module (no libggml-metal.so in " + lib + ")");
    expect_one_line_error(sbtest::run_sb({"rpc-server", "--device", "HTP0"}),
                          "rpc-server: unknown device 'HTP0'");
    expect_one_line_error(sbtest::run_sb({"rpc-server", "--device", "HTP0"}),
                          "this build's llama.cpp has no Hexagon module");
    // CUDA: make cuda, unless this build has the module (then it says why it offers no device).
    Proc cuda = sbtest::run_sb(
        {"hybrid", "-m", tiny_model(), "--prefill-device", "CUDA0", "--decode-device", "CPU"});
    if (std::filesystem::exists(lib + "/libggml-cuda.so"))
        expect_one_line_error(cuda, "the cuda module: ");
    else
        expect_one_line_error(cuda,
                              "this build's llama.cpp has no CUDA module (no "
                              "libggml-cuda.so in " +
                                  lib + "): `make cuda` builds it where nvcc exists");
    auto looks_like = run_args(tiny_model());
    looks_like.insert(looks_like.end(), {"--device", "CUDAx"});
    Proc p = sbtest::run_sb(looks_like);
    expect_one_line_error(p, "unknown device 'CUDAx'");
    EXPECT_EQ(p.err.find("has no CUDA module"), std::string::npos) << p.err;
}

TEST(BadInput, NegativePromptTokensAndATestOfNoTokens) {
    auto args = run_args(tiny_model());
    args.insert(args.end(), {"-p", "-1"});
    expect_one_line_error(sbtest::run_sb(args), "-p");
    // -p 0 alone is decode alone (llama-bench's tg); with -n 0 nothing is left to measure.
    expect_one_line_error(sbtest::run_sb({"run", "-m", tiny_model(), "-p", "0", "-n", "0", "-r",
                                          "1", "--membw", "off", "-q"}),
                          "-p 0 with -n 0 measures nothing");
}

TEST(BadInput, UnknownFlag) {
    auto args = run_args(tiny_model());
    args.push_back("--frobnicate");
    expect_one_line_error(sbtest::run_sb(args), "--frobnicate");
}

TEST(BadInput, NotANumber) {
    expect_one_line_error(sbtest::run_sb({"run", "-m", tiny_model(), "-p", "lots"}), "lots");
}

TEST(BadInput, UnreachableRpcServer) {
    const int port = ::sb::free_loopback_port();  // nothing listens there
    const std::string ep = "127.0.0.1:" + std::to_string(port);
    auto args = run_args(tiny_model());
    args.insert(args.end(), {"--rpc", ep});
    expect_one_line_error(sbtest::run_sb(args, 60), ep);
}

TEST(BadInput, UnknownSynthPreset) {
    TempDir t;
    expect_one_line_error(sbtest::run_sb({"synth", "--preset", "gpt-17", "-o", t.file("x.gguf")}),
                          "gpt-17");
}

TEST(BadInput, AdviseOnWrongShapedDocuments) {
    TempDir t;
    // A result document with these members.
    auto result = [](const std::string& members) {
        return R"({"schema": "stagebench.result", )" + members;
    };
    const std::vector<std::pair<std::string, std::string>> docs = {
        {R"([1, 2])", ""},
        {result(R"("command": 5})"), "command"},
        {result(R"("command": "run", "tests": [{"status": "ok", "config": "CPU"}]})"),
         "tests[0].config"},
        {result(R"("command": "run", "tests": [{"status": "ok", "config": {"n_gen": "16"}}]})"),
         "tests[0].config.n_gen"},
        {result(R"("command": "sustained", "tests": [], "sustained": {"phases": [null]}})"),
         "sustained.phases[0]"},
        {result(
             R"("command": "sustained", "sustained": {"phases": [{"name": "rounds", "across": []}]}})"),
         "sustained.phases[0].across"},
        {result(R"("command": "ops", "ops": {"stages": [{"stage": "decode", "ops": [7]}]}})"),
         "ops.stages[0].ops[0]"},
    };
    for (std::size_t i = 0; i < docs.size(); ++i) {
        const std::string f = t.file("bad" + std::to_string(i) + ".json");
        std::ofstream(f) << docs[i].first;
        SCOPED_TRACE(docs[i].first);
        // The one reading path, the typed document's from_json, names the file and the field.
        const Proc p = sbtest::run_sb({"advise", f});
        expect_one_line_error(p, f);
        EXPECT_NE(p.err.find(docs[i].second), std::string::npos) << p.err;
    }
}

TEST(BadInput, OpsTakesOneDeviceSetInTheCommonGrammar) {
    // A comma lists several device sets (run --device CPU,BLAS); ops profiles one, joined by +.
    const Proc p = sbtest::run_sb({"ops", "-m", tiny_model(), "--device", "CPU,BLAS", "-q"});
    expect_one_line_error(p, "unknown device 'CPU,BLAS'");
    EXPECT_NE(p.err.find("join its devices with +"), std::string::npos) << p.err;
}
