#include "report/memory_report.hpp"

#include <sstream>

#include <gtest/gtest.h>

#include "core/sustained_result.hpp"
#include "report/reporter.hpp"

namespace sb {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TestResult test_of(int n_prompt, const std::string& devices, int ngl,
                   std::vector<BufferMemory> memory) {
    TestResult t;
    t.config.n_prompt = n_prompt;
    t.config.n_gen = 16;
    t.config.devices = DeviceSet(devices);
    t.config.n_gpu_layers = ngl;
    t.memory = std::move(memory);
    return t;
}

std::string markdown(const ResultDocument& doc) {
    std::ostringstream out;
    write_memory_markdown(doc, out);
    return out.str();
}

// Sustained's rounds: one configuration, the same memory each round, is one set of rows that
// counts its tests; a round whose memory differs keeps its own rows; a test without memory has
// none.
TEST(MemoryMarkdown, TestsOfOneConfigurationWithTheSameMemoryShareTheirRows) {
    const std::vector<BufferMemory> gpu = {{"CPU_Mapped", kMiB / 2, 0, 0},
                                           {"Vulkan0", 2 * kMiB, kMiB / 2, kMiB}};
    ResultDocument doc;
    for (int round = 0; round < 3; ++round)
        doc.tests.push_back(test_of(32, "Vulkan0", 99, gpu));
    std::vector<BufferMemory> more = gpu;
    more[1].compute_bytes = 2 * kMiB;
    doc.tests.push_back(test_of(32, "Vulkan0", 99, more));
    doc.tests.push_back(test_of(32, "Vulkan0", 99, {}));
    EXPECT_EQ(
        markdown(doc),
        "\n| test | devices | buffer | weights MiB | context MiB | compute MiB | total MiB |\n"
        "| --- | --- | --- | ---: | ---: | ---: | ---: |\n"
        "| pp32+tg16 (3 tests alike) | Vulkan0 | CPU_Mapped | 0.50 | 0.00 | 0.00 | 0.50 |\n"
        "| pp32+tg16 (3 tests alike) | Vulkan0 | Vulkan0 | 2.00 | 0.50 | 1.00 | 3.50 |\n"
        "| pp32+tg16 | Vulkan0 | CPU_Mapped | 0.50 | 0.00 | 0.00 | 0.50 |\n"
        "| pp32+tg16 | Vulkan0 | Vulkan0 | 2.00 | 0.50 | 2.00 | 4.50 |\n"
        "\nmemory: what llama.cpp allocated per buffer type once the model and context were "
        "made (its own accounting): the weights, the context (the KV cache) and the compute "
        "buffers; CPU_Mapped is the model file's range mapped into memory (it may span "
        "weights another buffer type holds too, such as CPU_REPACK's, the weights laid out "
        "again for the CPU's kernels), *_Host pinned host memory of a GPU backend; tests "
        "of one configuration with the same memory share their rows\n");
    const auto groups = memory_groups(doc);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].tests, 3);
    EXPECT_EQ(groups[0].test, &doc.tests[0]);
    EXPECT_EQ(groups[1].test, &doc.tests[3]);
}

// Tests that differ in -ngl are told apart in the devices cell; a document without memory
// writes nothing.
TEST(MemoryMarkdown, AnOffloadSweepNamesNglAndNoMemoryIsNoTable) {
    ResultDocument doc;
    doc.tests.push_back(test_of(64, "Vulkan0", 0, {{"Vulkan0", 0, 0, 2 * kMiB}}));
    doc.tests.push_back(test_of(64, "Vulkan0", 99, {{"Vulkan0", 2 * kMiB, kMiB, kMiB}}));
    const std::string md = markdown(doc);
    EXPECT_NE(md.find("| pp64+tg16 | Vulkan0 (ngl 0) | Vulkan0 | 0.00 | 0.00 | 2.00 | 2.00 |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| pp64+tg16 | Vulkan0 (ngl 99) | Vulkan0 | 2.00 | 1.00 | 1.00 | 4.00 |"),
              std::string::npos)
        << md;
    EXPECT_EQ(md.find("alike"), std::string::npos) << md;
    for (auto& t : doc.tests)
        t.memory.clear();
    EXPECT_EQ(markdown(doc), "");
}

// Two models of one test: a model column tells their rows apart, and the same memory of two
// models is still two groups.
TEST(MemoryMarkdown, SeveralModelsGetAModelColumn) {
    ResultDocument doc;
    doc.tests.push_back(test_of(32, "CPU", 99, {{"CPU", kMiB, 0, 0}}));
    doc.tests.push_back(test_of(32, "CPU", 99, {{"CPU", kMiB, 0, 0}}));
    doc.tests[0].config.model_path = "/models/a.gguf";
    doc.tests[1].config.model_path = "/models/b.gguf";
    const std::string md = markdown(doc);
    EXPECT_NE(md.find("| model | test | devices | buffer |"), std::string::npos) << md;
    EXPECT_NE(md.find("| --- | --- | --- | --- | ---: |"), std::string::npos) << md;
    EXPECT_NE(md.find("| a.gguf | pp32+tg16 | CPU | CPU | 1.00 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| b.gguf | pp32+tg16 | CPU | CPU | 1.00 |"), std::string::npos) << md;
    EXPECT_EQ(memory_groups(doc).size(), 2u);
}

// A sustained document's Markdown: the rounds, then the memory, then the warnings last.
TEST(MemoryMarkdown, SustainedPrintsItsMemoryBeforeItsWarnings) {
    ResultDocument doc;
    doc.sustained.emplace();
    doc.sustained->phases.emplace_back().name = "rounds";
    for (int round = 0; round < 2; ++round)
        doc.tests.push_back(test_of(32, "CPU", 99, {{"CPU", 0, kMiB / 2, kMiB}}));
    doc.warnings.push_back({"some_warning", "a warning", "its hint"});
    std::ostringstream out;
    print_document(OutputFormat::md, doc, out);
    const std::string md = out.str();
    const size_t rounds = md.find("## rounds");
    const size_t memory = md.find("| pp32+tg16 (2 tests alike) | CPU | CPU |");
    const size_t warning = md.find("warning: a warning (its hint)");
    ASSERT_NE(rounds, std::string::npos) << md;
    ASSERT_NE(memory, std::string::npos) << md;
    ASSERT_NE(warning, std::string::npos) << md;
    EXPECT_LT(rounds, memory);
    EXPECT_LT(memory, warning);
}

}  // namespace
}  // namespace sb
