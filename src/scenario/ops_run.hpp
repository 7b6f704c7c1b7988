#pragma once
// `stagebench ops` and `stagebench decompose`: the op profile's pipeline, capture -> replay ->
// profile -> document, and the run around it.
//
// The pipeline (profile_ops) lives here, above profile/, because its uninstrumented and traced
// stages are measured through the one repetition loop (scenario/repetition.hpp): the engine
// is loaded once by the tracer (one context, the tracer's hook idle when not tracing) and
// warmed up untraced (one decode step: every weight read once by every thread; a 32-token
// prefill when a device besides the CPU is profiled: its prefill kernels run once), then
//  1. the traced and the uninstrumented repetitions, interleaved (A B B A ..., traced first):
//     a traced one is a prefill and one-token decode steps alternating traced and untraced,
//     OpsOptions::decode_tokens of each (the first repetition one more, its capturing step),
//     each step a sample of the decode stage (the untraced ones its uninstrumented samples,
//     step by step between the traced ones); an uninstrumented one is a prefill. A traced
//     decode step dispatches every k-th node alone, in turn (OpsOptions::isolation_stride,
//     profile/op_trace.hpp Isolation). The tracer is on during each stage of a
//     traced repetition (the loop's stage markers, outside its timed regions), so a traced
//     stage is timed exactly as an uninstrumented one. The first traced repetition also
//     captures the graphs (node descriptions are made between the calls' timestamps, and
//     described after the stage; each node's output memory is first touched before its call):
//     its prefill is a traced sample too, less the tracer's own work between the calls
//     (Reconciliation::tracer_ns); its first decode step is not a sample.
//  2. the engine's context freed, the stages built (profile/trace_stage.hpp), op times taken
//     in situ or by replay (profile/op_times.hpp), fallback and its penalty
//     (profile/fallback.hpp), reconciliation (profile/ops_profile.hpp finalize_stage) and,
//     for decompose, the decomposition.
// The engine, tracer and replayer are injected (profile/op_trace.hpp), so the pipeline runs on
// a scripted engine in tests; run_ops uses llama.cpp's (profile/tracer.hpp).
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "profile/op_trace.hpp"
#include "profile/tracer.hpp"
#include "scenario/default_engines.hpp"
#include "scenario/run_context.hpp"

namespace sb {

// What the pipeline profiles with; none owned, all outliving the call. The tracer hooks the
// engine (OpTracer::load loads it); the replayer replays what the tracer captured.
struct OpsRig {
    Engine& engine;
    OpTracer& tracer;
    OpReplayer& replayer;
};

// The device-timer pass: the profile's workload once more, in a process of its own whose
// Vulkan backend logs each op's device time (GGML_VK_PERF_LOGGER is read once, when the backend
// initialises, and adds a submit and a wait per graph: never in the timed process). Its
// stderr is read by profile/vk_perf_log.hpp.
struct DeviceTimerRequest {
    OpsOptions ops;        // the profile's options (model, device set, context, prompt, seed)
    int threads = 1;       // the profile's CPU threads
    int prefill_reps = 1;  // prefills to time (each a sample); decode: ops.decode_tokens steps
    double timeout_s = 0;  // its deadline
};
struct DeviceTimerRun {
    std::string output;       // the pass's stderr
    std::string error;        // why it gave nothing usable ("" when it exited 0)
    int64_t duration_ns = 0;  // its wall time
};
using DeviceTimerLauncher = std::function<DeviceTimerRun(const DeviceTimerRequest&)>;

struct OpsHooks {
    ProgressFn progress;                // lines for humans (stderr); null: none
    Clock clock;                        // the engine's clock; null: sb::now_ns
    std::function<bool()> interrupted;  // polled between repetitions and replays; null:
                                        // interrupt_requested() (core/interrupt.hpp)
    // Runs the device-timer pass when a profiled backend has its own op timer (a Vulkan
    // device); null: none is run, and a GPU's op times are traced calls less a round trip.
    DeviceTimerLauncher device_timer;
    // Which devices the pass times (null: ggml-vulkan's, profile/vk_perf_log.hpp
    // is_vk_perf_device); the pass runs when exactly one device that ran ops is one.
    std::function<bool(const std::string&)> timed_device;
};

// The profile of o on the rig. Throws sb::Error(usage) for options that select nothing
// (no stage, -p < 1 with prefill, negative depth or replay count, repetitions < 1), and what
// the engine's load throws (input: unusable model or device); a failure while measuring is
// thrown with its kind (the profile is one measurement). An interrupt ends the measuring
// early: the stages hold what was traced, with a note, and ops not yet timed say so.
OpsProfile profile_ops(const OpsRig& rig, const OpsOptions& o, const OpsHooks& hooks = {});

// profile_ops on the rig the engine factory makes (EngineFactory::op_rig(o.huge_pages):
// llama.cpp in-process for users), held for the call. Throws what the factory throws too.
OpsProfile profile_ops(EngineFactory& engines, const OpsOptions& o, const OpsHooks& hooks = {});

// The body of the device-timer pass (`stagebench ops --device-timer-pass N`, started by the
// launcher): loads o's workload as profile_ops does, warms up as it does, then times nothing
// itself: N prefills at the depth, then o.decode_tokens decode steps, each bracketed by
// profile/vk_perf_log.hpp markers written to markers, which must be the stream the backend's
// logger writes to (std::cerr), flushed at each. Throws what the engine throws.
// The rig comes from engines.
void device_timer_pass(const OpsOptions& o, int prefill_reps, std::ostream& markers,
                       EngineFactory& engines = default_engine_factory());

struct OpsCommandOptions {
    OpsOptions ops;
    std::vector<std::string> rpc_servers;    // host:port
    OutputFormat format = OutputFormat::md;  // md | csv | json (stdout)
    std::optional<std::string> out_path;     // the result document (JSON)
    bool progress = true;                    // progress lines on the error stream
    bool brief = false;                // md: only reconciliation, decomposition and by-op tables
    DeviceTimerLauncher device_timer;  // OpsHooks::device_timer (the CLI's child process)
};

// `stagebench ops` / `decompose` as a run: the run context's setup (the model described, RPC
// servers added, device names checked, warnings, the document saved), then profile_ops on the
// rig of the run's engine factory (env.engines: llama.cpp for users), on the run's clock, and
// the profile in the document (doc.ops). Prints nothing but progress on err:
// the caller shows the document (report/ops_report.hpp print_ops_document, which checks
// the format).
// env.doc: from new_document("ops" or "decompose", argv). Returns the document and its
// outcome (interrupted when Ctrl-C cut the profile short: the partial profile is kept) and the
// error that stopped it after it began (an --out that could not be written); throws sb::Error
// for bad input found before anything was measured (an unknown model, device or server among
// them). A stop inside llama.cpp mid-profile records nothing (the profile is one measurement)
// and says which device set went away.
RunResult run_ops(const OpsCommandOptions& o, RunEnv env);

}  // namespace sb
