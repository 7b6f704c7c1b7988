#include "report/memory_report.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

namespace sb {
namespace {

bool alike(const TestResult& a, const TestResult& b) {
    if (a.config.model_path != b.config.model_path ||
        a.config.test_name() != b.config.test_name() ||
        a.config.devices.str() != b.config.devices.str() ||
        a.config.n_gpu_layers != b.config.n_gpu_layers || a.memory.size() != b.memory.size())
        return false;
    for (std::size_t i = 0; i < a.memory.size(); ++i) {
        const BufferMemory &x = a.memory[i], &y = b.memory[i];
        if (x.buffer != y.buffer || x.model_bytes != y.model_bytes ||
            x.context_bytes != y.context_bytes || x.compute_bytes != y.compute_bytes)
            return false;
    }
    return true;
}

}  // namespace

std::vector<MemoryGroup> memory_groups(const ResultDocument& doc) {
    std::vector<MemoryGroup> groups;
    for (const auto& t : doc.tests) {
        if (t.memory.empty())
            continue;
        auto g = std::find_if(groups.begin(), groups.end(),
                              [&](const MemoryGroup& g) { return alike(*g.test, t); });
        if (g != groups.end())
            ++g->tests;
        else
            groups.push_back({&t, 1});
    }
    return groups;
}

bool write_memory_markdown(const ResultDocument& doc, std::ostream& out,
                           const std::function<std::string(const TestResult&)>& devices) {
    const std::vector<MemoryGroup> groups = memory_groups(doc);
    if (groups.empty())
        return false;
    std::set<int> ngl;
    std::set<std::string> models;
    for (const auto& t : doc.tests) {
        ngl.insert(t.config.n_gpu_layers);
        models.insert(t.config.model_path);
    }
    // Several models: a column of their file names, as the run table has theirs.
    const bool model_column = models.size() > 1;
    auto devices_of = [&](const TestResult& t) {
        if (devices)
            return devices(t);
        return t.config.devices.str() +
               (ngl.size() > 1 ? " (ngl " + std::to_string(t.config.n_gpu_layers) + ")" : "");
    };
    auto mib = [](uint64_t b) { return fmt::format("{:.2f}", static_cast<double>(b) / 1048576); };
    out << (model_column ? "\n| model " : "\n")
        << "| test | devices | buffer | weights MiB | context MiB | compute MiB | total MiB |\n"
        << (model_column ? "| --- " : "") << "| --- | --- | --- | ---: | ---: | ---: | ---: |\n";
    for (const auto& [t, tests] : groups) {
        const std::string name =
            t->config.test_name() +
            (tests > 1 ? " (" + std::to_string(tests) + " tests alike)" : std::string());
        const std::string model =
            model_column
                ? "| " + std::filesystem::path(t->config.model_path).filename().string() + " "
                : std::string();
        for (const auto& m : t->memory)
            out << model << "| " << name << " | " << devices_of(*t) << " | " << m.buffer << " | "
                << mib(m.model_bytes) << " | " << mib(m.context_bytes) << " | "
                << mib(m.compute_bytes) << " | "
                << mib(m.model_bytes + m.context_bytes + m.compute_bytes) << " |\n";
    }
    out << "\nmemory: what llama.cpp allocated per buffer type once the model and context were "
           "made (its own accounting): the weights, the context (the KV cache) and the compute "
           "buffers; CPU_Mapped is the model file's range mapped into memory (it may span "
           "weights another buffer type holds too, such as CPU_REPACK's, the weights laid out "
           "again for the CPU's kernels), *_Host pinned host memory of a GPU backend";
    if (std::any_of(groups.begin(), groups.end(), [](const MemoryGroup& g) { return g.tests > 1; }))
        out << "; tests of one configuration with the same memory share their rows";
    out << "\n";
    return true;
}

}  // namespace sb
