#include <fmt/format.h>

#include "cli/commands.hpp"
#include "engine/backends.hpp"
#include "telemetry/discover.hpp"

namespace sb::cli {
namespace {

std::string mib(uint64_t bytes) {
    return fmt::format("{:.0f} MiB", bytes / 1048576.0);
}

// "| a | b |" with '|' in a cell escaped, as every Markdown table of stagebench writes it.
std::string cell(std::string text) {
    std::string out;
    for (char c : text)
        out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

}  // namespace

void add_devices_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand("devices", "List the backends and devices stagebench can use");
    auto rpc = std::make_shared<std::vector<std::string>>();
    cmd->add_option("--rpc", *rpc, "RPC servers host:port to add (comma list)")->delimiter(',');
    cmd->callback([&ctx, rpc] {
        for (const auto& ep : *rpc)
            add_rpc_server(ep);
        auto devices = list_devices();
        // ggml-cuda names no driver: NVIDIA's is NVML's (the GPUs in NVML's order, which is
        // CUDA's unless CUDA_VISIBLE_DEVICES reorders them: the driver is the same for all).
        bool cuda = false;
        for (const auto& d : devices)
            cuda |= d.name.rfind("CUDA", 0) == 0;
        if (cuda) {
            Discovery nvml;
            discover_nvml(DiscoverOptions{}.nvml_library, nvml);
            std::optional<std::string> driver;
            for (const auto& src : nvml.sources)
                if (auto p = src->properties(); p.count("driver"))
                    driver = "NVIDIA " + p["driver"];
            for (auto& d : devices)
                if (d.name.rfind("CUDA", 0) == 0 && !d.driver)
                    d.driver = driver;
        }
        ctx.out << "| device | type | backend | description | driver | memory free / total |\n"
                << "| --- | --- | --- | --- | --- | ---: |\n";
        bool any_details = false;
        for (const auto& d : devices) {
            std::string mem = "-";
            if (d.memory_total_bytes)
                mem = mib(d.memory_free_bytes.value_or(0)) + " / " + mib(*d.memory_total_bytes);
            ctx.out << "| " << d.name << " | " << d.type << " | " << cell(d.backend) << " | "
                    << cell(d.description) << " | " << cell(d.driver.value_or("-")) << " | " << mem
                    << " |\n";
            any_details |= d.details || d.device_id;
        }
        // What a GPU backend said of its devices as it started (features, compute capability).
        if (any_details) {
            ctx.out << "\n";
            for (const auto& d : devices) {
                if (!d.details && !d.device_id)
                    continue;
                ctx.out << d.name << ":";
                if (d.device_id)
                    ctx.out << " PCI " << *d.device_id << (d.details ? ";" : "");
                if (d.details)
                    ctx.out << " " << *d.details;
                ctx.out << "\n";
            }
        }
        // The backend modules beside libllama.so, and why one shows no device.
        const auto modules = list_modules();
        if (!modules.empty()) {
            ctx.out << "\nmodules in " << llama_library_dir() << ":";
            for (const auto& m : modules)
                ctx.out << " " << m.name;
            ctx.out << "\n";
            for (const auto& m : modules)
                if (m.note)
                    ctx.out << "  " << m.name << ": " << *m.note << "\n";
        }
        // An NVIDIA GPU the build cannot drive with CUDA: NVML sees it, and there is no CUDA
        // module (built by `make cuda`, apart from the rest).
        const BuildInfo b = build_info();
        bool cuda_module = false;
        for (const auto& m : modules)
            cuda_module |= m.name == "cuda";
        if (!cuda && !cuda_module && b.dynamic_backends) {
            Discovery nvml;
            discover_nvml(DiscoverOptions{}.nvml_library, nvml);
            std::string gpus, driver;
            for (const auto& src : nvml.sources) {
                auto p = src->properties();
                if (p.count("model"))
                    gpus += (gpus.empty() ? "" : ", ") + p["model"];
                if (p.count("driver"))
                    driver = p["driver"];
            }
            if (!gpus.empty())
                ctx.out << "\nNVIDIA GPU(s) that NVML sees" << (driver.empty() ? "" : " (driver ")
                        << driver << (driver.empty() ? "" : ")") << ": " << gpus
                        << "; this build's llama.cpp has no CUDA module: `make cuda` builds it "
                           "where nvcc exists (docs/gpu.md)\n";
        }
        // Which kernels the CPU device runs: the variant ggml chose for the features it saw.
        if (b.cpu_variant)
            ctx.out << "\nCPU variant: " << *b.cpu_variant << "\n";
        if (b.cpu_features) {
            ctx.out << (b.cpu_variant ? "" : "\n") << "CPU features:";
            for (const auto& f : *b.cpu_features)
                ctx.out << " " << f;
            ctx.out << "\n";
        }
    });
}

}  // namespace sb::cli
