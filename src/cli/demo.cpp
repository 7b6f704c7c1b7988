#include "cli/demo.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/advise.hpp"
#include "cli/run_options.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/sysinfo.hpp"
#include "core/version.hpp"
#include "engine/backends.hpp"
#include "engine/ggml_quantizer.hpp"
#include "engine/process.hpp"
#include "model/synth.hpp"
#include "report/advise_report.hpp"
#include "report/html_report.hpp"
#include "report/hybrid_report.hpp"
#include "report/reporter.hpp"
#include "scenario/hybrid.hpp"
#include "scenario/run_command.hpp"
#include "trace/chrome_trace.hpp"

namespace sb {

int run_demo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(o.dir, ec);
    if (ec)
        throw input_error("cannot create demo directory '" + o.dir + "': " + ec.message());
    const std::string model = (fs::path(o.dir) / "model.gguf").string();
    // Documents from an earlier demo must not pass for this one's (e.g. hybrid.json with
    // --no-rpc, or result.json when this one stops early).
    fs::remove(fs::path(o.dir) / "hybrid.json", ec);
    fs::remove(fs::path(o.dir) / "result.json", ec);

    SynthOptions so;
    so.preset = o.preset;
    so.layers = o.layers;
    so.quant = o.quant;
    so.out_path = model;
    so.generator = std::string("stagebench ") + tool_version();
    if (o.progress)
        err << "stagebench: writing synthetic " << o.preset << " (" << o.layers << " layers, "
            << o.quant << ") to " << model << "\n";
    GgmlQuantizer quantizer;
    write_synthetic_model(so, quantizer);

    RunOptions ro;
    ro.matrix.models = {model};
    ro.matrix.n_prompt = {o.n_prompt};
    ro.matrix.n_gen = {o.n_gen};
    ro.matrix.n_threads = {o.threads};
    ro.matrix.reps = o.reps;
    ro.out_path = (fs::path(o.dir) / "result.json").string();
    ro.progress = o.progress;
    ro.matrix.devices = {"CPU"};
    // Every backend of the machine: accelerators beside the CPU (BLAS) and GPUs (Vulkan0,
    // CUDA0), the GPUs with every layer offloaded (the -ngl default).
    for (const auto& d : list_devices())
        if (d.type == "accel" || d.type == "gpu" || d.type == "igpu")
            ro.matrix.devices.push_back(DeviceSet(d.name));
    // A GPU module that found no GPU says why (lavapipe hidden unless named), once.
    for (const auto& m : list_modules())
        if (m.devices.empty() && m.note && (m.name == "vulkan" || m.name == "cuda") && o.progress)
            err << "stagebench: note: the " << m.name << " module: " << *m.note << "\n";

    ChildProcess rpc;
    std::string rpc_device;
    if (o.rpc) {
        // The server as the README starts it: `stagebench rpc-server -p PORT`, which offers the
        // CPU (llama.cpp's own rpc-server would offer the BLAS module, which cannot run whole
        // graphs).
        std::error_code self_ec;
        const std::string self = fs::read_symlink("/proc/self/exe", self_ec).string();
        if (self_ec)
            throw runtime_error("cannot find the stagebench binary to start its RPC server: " +
                                self_ec.message());
        const int port = free_loopback_port();
        const std::string log = (fs::path(o.dir) / "rpc-server.log").string();
        // The server's own default is the client's (default_thread_count()); -t keeps them
        // equal when one is asked for.
        std::vector<std::string> argv{self, "rpc-server",
                                      "-p", std::to_string(port),
                                      "-t", std::to_string(threads_or_default(o.threads))};
        rpc = ChildProcess::spawn(argv, log);
        if (!wait_for_port("127.0.0.1", port, 15000, &rpc))
            throw runtime_error("the RPC server did not start, see " + log);
        const std::string ep = "127.0.0.1:" + std::to_string(port);
        for (const auto& d : add_rpc_server(ep)) {
            ro.matrix.devices.push_back(DeviceSet(d.name));
            rpc_device = d.name;
        }
    }

    std::ostringstream table;
    ResultDocument doc;
    int rc = 0;
    {
        cli::ReporterListener rows(OutputFormat::md, table);
        RunEnv env(new_document("demo", o.argv), err);
        env.listener = &rows;
        RunResult r = run_benchmark(ro, std::move(env));
        if (r.error)
            throw *r.error;
        rc = exit_code_of(r.outcome);
        doc = std::move(r.doc);
    }
    std::ofstream summary(fs::path(o.dir) / "summary.md");
    summary << "# stagebench demo\n\nSynthetic " << o.preset << " scaled to " << o.layers
            << " layers (" << o.quant << "), prompt " << o.n_prompt << " tokens, " << o.n_gen
            << " generated, " << o.reps << " repetitions per backend.\n\n"
            << table.str();
    out << table.str();
    std::vector<AdviseInput> advise_in{{ro.out_path.value(), std::move(doc)}};

    // Stage-aware execution: prefill on the CPU, the KV cache moved, decode on the RPC device,
    // next to each alone.
    int hybrid_rc = 0;
    if (!rpc_device.empty()) {
        HybridOptions ho;
        ho.workload.model_path = model;
        ho.placement = Placement{"CPU", rpc_device};
        ho.n_prompt = {o.n_prompt};
        ho.n_gen = {o.n_gen};
        ho.workload.n_threads = o.threads;
        ho.reps = o.reps;
        ho.out_path = (fs::path(o.dir) / "hybrid.json").string();
        ho.progress = o.progress;
        std::ostringstream ht;
        RunResult hr = run_hybrid(ho, RunEnv(new_document("hybrid", o.argv), err));
        if (hr.error)
            throw *hr.error;
        hybrid_rc = exit_code_of(hr.outcome);
        const ResultDocument& hd = hr.doc;
        print_document(OutputFormat::md, hd, ht);
        summary << "\n" << ht.str();
        out << "\n" << ht.str();
        advise_in.push_back({ho.out_path.value(), std::move(hd)});
    }
    std::ostringstream advice;
    write_advice_markdown(advise(advise_in, AdviseOptions{}), advice);
    summary << "\n" << advice.str();
    out << "\n" << advice.str();

    // The same results as a page to look at and as a timeline.
    std::vector<ReportInput> pages;
    for (const auto& in : advise_in)
        pages.push_back(ReportInput::of(in.source, in.doc));
    HtmlOptions ho;
    ho.title = "stagebench demo";
    ho.tool_version = tool_version();
    std::ostringstream page;
    write_html_report(pages, ho, page);
    const std::string html = (fs::path(o.dir) / "report.html").string();
    write_text_file(html, page.str());
    const std::string trace = (fs::path(o.dir) / "trace.json").string();
    write_chrome_trace(advise_in.back().doc, trace);
    if (o.progress)
        err << "stagebench: wrote " << ro.out_path.value() << ", "
            << (rpc_device.empty() ? "" : "hybrid.json, ") << "summary.md, report.html and "
            << "trace.json (the " << (rpc_device.empty() ? "run" : "hybrid run")
            << "'s timeline, for ui.perfetto.dev) in " << o.dir << "\n";
    return rc != 0 ? rc : hybrid_rc;
}

}  // namespace sb
