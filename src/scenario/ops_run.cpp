#include "scenario/ops_run.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/last_word.hpp"
#include "core/membw.hpp"
#include "core/strings.hpp"
#include "core/sysinfo.hpp"
#include "engine/backends.hpp"
#include "engine/workload.hpp"
#include "profile/fallback.hpp"
#include "profile/op_times.hpp"
#include "profile/ops_profile.hpp"
#include "profile/trace_stage.hpp"
#include "profile/vk_perf_log.hpp"
#include "scenario/repetition.hpp"
#include "scenario/run_context.hpp"

namespace sb {

namespace {

// When the last-level cache is unknown (no sysfs cache description, as in some VMs), the
// cold-weight budget assumes one this large.
constexpr uint64_t kAssumedLlcBytes = 64ull << 20;
// `decompose` takes differences of replays (conversion: an op against itself with converted
// activations; compute less conversion): each replay graph is timed for at least this long, so
// that a minimum raised by other load does not become a part of the stage.
constexpr int64_t kDecomposeReplayNs = 5'000'000;

// One stage's measurements: the capturing run, the timed traced runs, the uninstrumented
// samples (one per repetition for prefill, one per decode step for decode).
struct StageData {
    bool captured = false;
    TracedRun capture;
    std::vector<TracedRun> traced;
    std::vector<int64_t> plain_ns, plain_start_ns;
};

struct Measured {
    StageData prefill, decode;
    int traced_reps = 0, plain_reps = 0;  // repetitions run (OpsOptions: 0 is automatic)
};

void check_options(const OpsOptions& o) {
    if (!o.prefill && !o.decode)
        throw usage_error("nothing to profile: no stage selected");
    if (o.n_prompt <= 0 && o.prefill)
        throw usage_error("-p must be at least 1 for prefill");
    if (o.n_depth < 0)
        throw usage_error("-d must not be negative");
    if (o.replay_copies < 0)
        throw usage_error("--replay must be 0 (no op times) or more");
    if (o.traced_reps < 0 || o.plain_reps < 0)
        throw usage_error("repetitions must be 0 (automatic) or more");
    if (o.decode && o.decode_tokens < 1)
        throw usage_error("--decode-tokens must be at least 1");
    if (o.isolation_stride < 0)
        throw usage_error("--isolate-every must be 0 (automatic) or more");
}

// The engine's load: the options' placement and context settings, a context for the depth,
// the prompt and the decode steps (rounded up to 256 so that every step's graph has the same
// shape).
LoadSpec load_spec_of(const OpsOptions& o, int threads) {
    const int n_ctx =
        o.n_depth + std::max(0, o.n_prompt) + 2 * std::max(1, o.decode_tokens) + 1 + 16;
    LoadSpec ls = load_spec(o.workload, (n_ctx + 255) / 256 * 256);
    ls.n_threads = threads;
    return ls;
}

// The workload as the repetition loop runs it: a prefill of the prompt at the depth, then
// n_gen decode steps; a decode-only profile starts its steps at depth + prompt.
TestConfig workload_of(const OpsOptions& o, int threads, int n_gen, int reps) {
    TestConfig c;
    static_cast<Workload&>(c) = o.workload;
    c.n_threads = threads;
    c.n_prompt = o.prefill ? o.n_prompt : 0;
    c.n_depth = o.prefill ? o.n_depth : o.n_depth + std::max(0, o.n_prompt);
    c.n_gen = o.decode ? n_gen : 0;
    c.reps = reps;
    c.max_reps = reps;
    c.warmup = false;  // warm_up() and the capturing repetition warm up
    c.seed = o.seed;
    return c;
}

// A repetition loop's failure is the profile's: thrown with its kind.
void throw_if_failed(const RepetitionRunner& r) {
    if (r.result().status == Status::failed)
        throw Error(r.error_kind().value_or(ErrorKind::runtime),
                    r.result().error.value_or("the profiled workload failed"));
}

// Stage markers that trace each stage of a runner's repetitions (traced: each stage's first
// repetition captures too: all graphs of prefill, the first step of decode), or none. The
// decode steps that do not capture alternate traced and untraced (the uninstrumented samples
// of decode), the traced ones dispatching every decode_stride-th node alone, in turn across
// the repetitions (profile/op_trace.hpp Isolation).
// A stage that throws leaves the tracer on: close() ends it and drops the run.
class StageTracing {
  public:
    StageTracing(OpTracer& tracer, bool traced, int decode_stride = 1)
        : tracer_(tracer), traced_(traced), decode_stride_(decode_stride) {}
    SweepHooks hooks() {
        SweepHooks h;
        h.stage_marker = [this](const std::string& stage, bool begin, std::optional<int64_t>) {
            if (!traced_ || (stage != "prefill" && stage != "decode"))
                return;
            const bool pre = stage == "prefill";
            if (begin) {
                capturing_ = (pre ? prefill : decode).empty();
                Isolation iso;
                if (!pre)
                    iso = {decode_stride_, decode_timed_, true};
                tracer_.begin(!capturing_ ? TraceMode::time
                              : pre       ? TraceMode::capture
                                          : TraceMode::capture_first,
                              iso);
                open_ = true;
            } else if (open_) {
                open_ = false;
                TracedRun run = tracer_.end();
                if (!pre) {
                    std::set<int> traced;  // graphs with calls: the untraced ones have none
                    for (const auto& c : run.calls)
                        traced.insert(c.graph);
                    decode_timed_ += static_cast<int>(traced.size()) - (capturing_ ? 1 : 0);
                }
                (pre ? prefill : decode).push_back(std::move(run));
            }
        };
        return h;
    }
    void close() {
        if (open_)
            tracer_.end();
        open_ = false;
    }
    std::vector<TracedRun> prefill, decode;  // one per repetition that traced the stage

  private:
    OpTracer& tracer_;
    bool traced_;
    int decode_stride_;
    int decode_timed_ = 0;  // decode steps traced so far, the capturing one not counted
    bool capturing_ = false;
    bool open_ = false;
};

// Each decode step's start: the repetition's start, then the steps' latencies in turn.
std::vector<int64_t> step_starts(const DecodeResult& d) {
    std::vector<int64_t> out;
    size_t at = 0;
    for (size_t rep = 0; rep < d.start_ns.size() && rep < d.token_latency_counts.size(); ++rep) {
        int64_t t = d.start_ns[rep];
        for (int64_t i = 0; i < d.token_latency_counts[rep] && at < d.token_latency_ns.size();
             ++i) {
            out.push_back(t);
            t += d.token_latency_ns[at++];
        }
    }
    return out;
}

// The traced repetitions' runs with their times: a prefill run per repetition (the first one
// is the capture as well); a decode run per repetition cut into one run per step (the first
// repetition's first step is the capture, not a sample), the untraced steps between the traced
// ones being the uninstrumented samples of decode.
void add_traced(Measured& m, const TestResult& t, const StageTracing& tr) {
    if (t.prefill)
        for (size_t i = 0; i < tr.prefill.size() && i < t.prefill->duration_ns.size(); ++i) {
            TracedRun r = tr.prefill[i];
            r.wall_ns = t.prefill->duration_ns[i];
            r.start_ns = t.prefill->start_ns[i];
            if (i == 0) {
                m.prefill.captured = !r.nodes.empty();
                m.prefill.capture = r;
            }
            m.prefill.traced.push_back(std::move(r));
        }
    if (t.decode) {
        const std::vector<int64_t> starts = step_starts(*t.decode);
        size_t at = 0;
        for (size_t rep = 0; rep < tr.decode.size() && rep < t.decode->token_latency_counts.size();
             ++rep) {
            const auto n = static_cast<size_t>(t.decode->token_latency_counts[rep]);
            if (at + n > starts.size())
                break;
            const auto lat = t.decode->token_latency_ns.begin() + static_cast<long>(at);
            const auto st = starts.begin() + static_cast<long>(at);
            std::vector<TracedRun> steps = split_steps(
                tr.decode[rep], {lat, lat + static_cast<long>(n)}, {st, st + static_cast<long>(n)});
            for (size_t k = 0; k < steps.size(); ++k) {
                if (rep == 0 && k == 0) {
                    m.decode.captured = !steps[k].nodes.empty();
                    m.decode.capture = std::move(steps[k]);
                } else if (steps[k].calls.empty()) {
                    m.decode.plain_ns.push_back(steps[k].wall_ns);
                    m.decode.plain_start_ns.push_back(steps[k].start_ns);
                } else {
                    m.decode.traced.push_back(std::move(steps[k]));
                }
            }
            at += n;
        }
    }
}

// The uninstrumented repetitions' prefills (decode's uninstrumented samples are the untraced
// steps of the traced repetitions).
void add_plain(Measured& m, const TestResult& p) {
    if (p.prefill) {
        m.prefill.plain_ns = p.prefill->duration_ns;
        m.prefill.plain_start_ns = p.prefill->start_ns;
    }
}

// Prompt tokens of the warm-up prefill: enough for an accelerator to take the mat-muls
// (ggml-blas takes batches of 32 and more).
constexpr int kWarmUpPrompt = 32;

// Before any stage is measured, the tracer idle: one decode step, so that each CPU thread has
// read every weight once and the thread pool has run, which the first run of each graph
// otherwise pays inside its calls (the 1B preset, -p 512, 2 threads: the capturing prefill's
// mat-mul calls summed 120-380 ms more than the next traced prefill's without it, within
// noise of it with it). With a device besides the CPU and a prefill to profile, a short
// prefill instead, which also runs the device's prefill kernels once (their thread pools and
// conversion buffers: the BLAS preset's capturing prefill, -p 128, took 820-918 ms against
// 518-540 ms for the later ones without it). The first repetition clears the KV cache.
void warm_up(Engine& engine, const OpsOptions& o, const std::vector<std::string>& requested) {
    engine.reset();
    const bool accelerator = std::any_of(requested.begin(), requested.end(),
                                         [](const std::string& d) { return d != "CPU"; });
    if (o.prefill && accelerator) {
        const std::vector<int32_t> t = sequence_tokens(
            std::min(kWarmUpPrompt, o.n_prompt), engine.n_vocab(), o.seed, engine.bos_token());
        engine.prefill(t);
    } else {
        engine.decode_step(engine.bos_token().value_or(0));
    }
}

// Every how many nodes a traced decode step dispatches one alone (OpsOptions::isolation_stride;
// 0: at most every 8th, each node alone in at least two steps).
int decode_isolation_stride(const OpsOptions& o) {
    if (o.isolation_stride > 0)
        return o.isolation_stride;
    return std::clamp(std::max(1, o.traced_reps) * o.decode_tokens / 2, 1, 8);
}

// Automatic repetition counts (OpsOptions::traced_reps / plain_reps 0): one of each, or, when
// the first round's prefills are short, as many as add up to kAutoPrefillNs per kind, at most
// kAutoMaxReps: the op times and the stage they reconcile with are then medians, not one
// sample each.
constexpr int64_t kAutoPrefillNs = 1'500'000'000;
constexpr int kAutoMaxReps = 3;

int auto_reps(int64_t longest_prefill_ns) {
    if (longest_prefill_ns <= 0)
        return 1;
    const int64_t n = (kAutoPrefillNs + longest_prefill_ns - 1) / longest_prefill_ns;
    return static_cast<int>(std::clamp<int64_t>(n, 1, kAutoMaxReps));
}

// Steps 1 and 2 of the pipeline (ops_run.hpp): the traced and the uninstrumented repetitions,
// interleaved, through the repetition loop; the first traced one captures the graphs.
Measured measure_stages(const OpsRig& rig, const OpsOptions& o, int threads, const OpsHooks& h,
                        const ProgressFn& say) {
    RepetitionOptions ro;
    ro.load = false;  // the tracer loaded the engine, with its hook
    ro.roofline = false;
    ro.clock = h.clock;
    ro.interrupted = h.interrupted;
    const bool auto_t = o.traced_reps == 0, auto_p = o.plain_reps == 0;
    int want_t = auto_t ? 1 : o.traced_reps, want_p = auto_p ? 1 : o.plain_reps;
    auto count = [](bool automatic, int n) {
        return automatic ? std::string("1 to ") + std::to_string(kAutoMaxReps) : std::to_string(n);
    };
    say(fmt::format(
        "tracing node by node: {} traced repetition(s), their decode steps "
        "alternating traced and untraced{}; the first one captures the graphs",
        count(auto_t, want_t),
        o.prefill
            ? fmt::format(", interleaved with {} uninstrumented prefill(s)", count(auto_p, want_p))
            : std::string()));
    StageTracing none(rig.tracer, false), timed(rig.tracer, true, decode_isolation_stride(o));
    // A traced repetition's decode steps: the capturing one (the first repetition's), then
    // traced and untraced in turn, decode_tokens of each.
    RepetitionRunner traced(
        rig.engine,
        workload_of(o, threads, 2 * o.decode_tokens + 1, auto_t ? kAutoMaxReps : want_t),
        timed.hooks(), ro);
    // Prefill's uninstrumented samples: repetitions of their own, without decode steps.
    std::optional<RepetitionRunner> plain;
    if (o.prefill)
        plain.emplace(rig.engine, workload_of(o, threads, 0, auto_p ? kAutoMaxReps : want_p),
                      none.hooks(), ro);
    Measured m;
    auto remaining = [&](const RepetitionRunner* r) {
        if (!r || !r->has_repeats_remaining())
            return false;
        return r == &traced ? m.traced_reps < want_t : m.plain_reps < want_p;
    };
    for (int round = 0; remaining(plain ? &*plain : nullptr) || remaining(&traced); ++round) {
        // A B B A: neither kind always runs first, so drift in the machine's load falls on
        // both; the capturing (traced) repetition comes first and warms up the rest.
        RepetitionRunner* order[2] = {&traced, plain ? &*plain : nullptr};
        if (round % 2 == 1)
            std::swap(order[0], order[1]);
        for (RepetitionRunner* r : order)
            if (remaining(r)) {
                r->do_one_repetition();
                timed.close();
                ++(r == &traced ? m.traced_reps : m.plain_reps);
            }
        if (round == 0 && o.prefill && (auto_t || auto_p)) {
            int64_t longest = 0;
            for (const RepetitionRunner* r : order)
                if (r && r->result().prefill && !r->result().prefill->duration_ns.empty())
                    longest = std::max(longest, r->result().prefill->duration_ns.front());
            const int n = auto_reps(longest);
            want_t = auto_t ? n : want_t;
            want_p = auto_p ? n : want_p;
        }
    }
    throw_if_failed(traced);
    if (plain) {
        throw_if_failed(*plain);
        add_plain(m, plain->results());
    }
    add_traced(m, traced.results(), timed);
    return m;
}

// How the call and op times were taken, with the repetitions that ran.
std::string method_of(const OpsOptions& o, int traced_reps, int plain_reps) {
    return "Call time: each node dispatched alone by the ggml scheduler (eval callback) and waited "
           "for (dispatch + transport + sync + compute), median of " +
           std::to_string(traced_reps) + " traced repetition(s) (of each decode step in them)" +
           (o.prefill ? ", interleaved with " + std::to_string(plain_reps) +
                            " uninstrumented prefill(s) on the same context"
                      : std::string()) +
           (o.decode ? "; decode's uninstrumented samples are the untraced steps alternating "
                       "with the traced ones"
                     : std::string()) +
           (decode_isolation_stride(o) > 1 && o.decode
                ? "; a traced decode step dispatches every " + ordinal(decode_isolation_stride(o)) +
                      " node alone, in turn, the others together between them (--isolate-every)"
                : std::string()) +
           ". " +
           (o.replay_copies > 0
                ? "Op time: on backends in host memory, an op whose calls are at least 20 no-work "
                  "dispatches is its traced call less that dispatch (in situ); any other op is "
                  "replayed once per signature (shapes, types, parameters, backend), alone and up "
                  "to " +
                      std::to_string(o.replay_copies) +
                      "+ times back to back in one graph, the slope between the two removing the "
                      "dispatch; on a GPU of this machine every op is its traced call less the "
                      "device's no-work round trip, never replayed (each op's method is in the "
                      "document's op_method). "
                : std::string("Op time: not measured (--replay 0). ")) +
           "Backend per node: the scheduler's assignment (GGML_SCHED_DEBUG dump). "
           "Views/reshapes/permutes do not compute: op time 0.";
}

// The profile's header fields (the method comes after the measurement: method_of).
OpsProfile profile_header(const OpsOptions& o, int threads) {
    OpsProfile p;
    p.source = "trace";
    p.model_path = o.workload.model_path;
    p.devices = o.workload.devices.empty() ? "CPU" : o.workload.devices.str();
    for (const auto& d : o.workload.devices.names())
        if (d != "CPU" && !d.empty())
            p.requested.push_back(d);
    if (p.requested.empty())
        p.requested.push_back("CPU");
    p.n_threads = threads;
    p.n_prompt = o.n_prompt;
    p.n_depth = o.n_depth;
    p.replay_copies = o.replay_copies;
    return p;
}

// The cold-weight budget: none when the model's weights fit in the last-level cache (the
// real graph reads them hot too), else twice the cache (a cycle of copies that large evicts
// each before it comes back), at most the weights themselves.
uint64_t cold_weight_budget(std::optional<uint64_t> weights, std::optional<uint64_t> llc) {
    const uint64_t cache = llc.value_or(kAssumedLlcBytes);
    if (weights && *weights <= cache)
        return 0;
    return weights ? std::min(*weights, 2 * cache) : 2 * cache;
}

// The accelerator path's decomposition (`decompose`): dispatch per backend used, the
// conversion of the requested devices' mat-muls.
void add_decomposition(StageProfile& st, const std::vector<CapturedNode>& nodes,
                       const OpsProfile& p, OpReplayer& rep,
                       const std::function<bool()>& interrupted) {
    const std::set<std::string> requested(p.requested.begin(), p.requested.end());
    std::map<std::string, double> dispatch;
    for (const auto& r : st.ops)
        if (!dispatch.count(r.backend))
            if (auto d = rep.dispatch_ns(r.backend))
                dispatch[r.backend] = *d;
    std::vector<std::optional<double>> conv(st.ops.size());
    bool plain_kernel = false;
    for (size_t i = 0; i < st.ops.size() && i < nodes.size(); ++i) {
        const OpRecord& r = st.ops[i];
        if (!requested.count(r.backend) || r.no_compute || interrupted())
            continue;
        bool plain = false;
        conv[i] = rep.conversion_ns(nodes[i], r.backend, &plain);
        plain_kernel |= conv[i].has_value() && plain;
    }
    st.decomposition = decompose_stage(st, p.requested, dispatch, conv);
    if (plain_kernel)
        st.notes.push_back(
            "conversion was measured with the weights in a plain buffer; the real run keeps "
            "them repacked, whose kernels convert activations their own way");
}

// The device-timer pass's result for the stages (vk_perf_log.hpp), when one ran.
struct DeviceTimes {
    bool ran = false;    // a pass ran to the end and its output was read
    std::string device;  // the device it timed ("Vulkan0")
    VkPerfLog log;
};

// The one device among the profile's backends whose ops ggml-vulkan's logger times; nullopt,
// with why, when there is none or more than one (their blocks cannot be told apart).
std::optional<std::string> device_timer_device(const OpsProfile& p, const OpsHooks& h,
                                               std::string& why) {
    std::vector<std::string> vk;
    for (const auto& b : p.backends)
        if (h.timed_device ? h.timed_device(b) : is_vk_perf_device(b))
            vk.push_back(b);
    if (vk.size() > 1)
        why = fmt::format(
            "{} Vulkan devices ran ops; the logger's blocks do not say which device "
            "printed them",
            vk.size());
    return vk.size() == 1 ? std::optional<std::string>(vk.front()) : std::nullopt;
}

// The device-timer pass (after the timed repetitions, the traced context freed), recorded in
// p.device_timer. Its deadline: two minutes beyond three times what loading and measuring
// took here (the pass loads, warms up and runs fewer stages, untraced).
DeviceTimes run_device_timer(OpsProfile& p, const OpsOptions& o, int threads, const Measured& m,
                             const OpsHooks& h, const ProgressFn& say, int64_t measured_ns) {
    DeviceTimes out;
    std::string why;
    const auto device = device_timer_device(p, h, why);
    if (!h.device_timer || (!device && why.empty()))
        return out;
    DeviceTimerRecord rec;
    rec.device = device.value_or("Vulkan");
    rec.source = "Vulkan timestamp queries (ggml-vulkan's GGML_VK_PERF_LOGGER, fusion off)";
    if (!device) {
        rec.error = why;
        p.device_timer = rec;
        return out;
    }
    say("timing each op on " + *device + " with its own timer (a pass of its own)");
    DeviceTimerRequest req{o, threads, std::max(1, m.traced_reps),
                           120.0 + 3.0 * static_cast<double>(measured_ns) / 1e9};
    const DeviceTimerRun r = h.device_timer(req);
    rec.duration_ns = r.duration_ns;
    if (!r.error.empty()) {
        rec.error = r.error;
        p.device_timer = rec;
        return out;
    }
    out.log = parse_vk_perf_log(r.output);
    rec.n_blocks = out.log.n_blocks;
    rec.n_sections = static_cast<int>(out.log.sections.size());
    rec.n_rejected = static_cast<int>(out.log.rejected.size());
    for (size_t i = 0; i < out.log.rejected.size() && i < kMaxDeviceTimerRejected; ++i)
        rec.rejected.push_back(out.log.rejected[i]);
    if (out.log.sections.empty())
        rec.error = out.log.n_blocks == 0
                        ? "the pass printed no timings: is this llama.cpp's Vulkan backend the one "
                          "that reads GGML_VK_PERF_LOGGER?"
                        : "the pass printed timings outside every stage it marked";
    out.ran = rec.error.empty();
    out.device = *device;
    p.device_timer = rec;
    return out;
}

// Step 3 for one stage: its records and splits, op times, fallback, reconciliation and, for
// decompose, the decomposition.
StageProfile profile_stage(const std::string& name, const StageData& d, int n_tokens, int kv_depth,
                           const OpsRig& rig, const OpsOptions& o, const OpsProfile& p,
                           const DeviceTimes& device, const std::function<bool()>& interrupted,
                           const ProgressFn& say, size_t& replays) {
    BuiltStage b = build_stage(name, d.capture, d.traced, rig.tracer.coverage_devices());
    StageProfile& st = b.stage;
    st.isolation_stride = b.strided ? decode_isolation_stride(o) : 1;  // only decode strides
    st.n_tokens = n_tokens;
    st.kv_depth = kv_depth;
    st.rec.plain_ns = d.plain_ns;
    st.rec.plain_start_ns = d.plain_start_ns;
    const bool replays_on = o.replay_copies > 0;
    if (replays_on) {
        OpTimeOptions to;
        to.interrupted = interrupted;
        DeviceTimeMatch dm;
        if (device.ran) {
            std::vector<VkPerfSection> samples;
            for (const auto& s : device.log.sections)
                if (s.stage == name)
                    samples.push_back(s);
            dm = match_vk_perf(st, device.device, samples);
            to.device_times = &dm.ops;
            st.notes.insert(st.notes.end(), dm.notes.begin(), dm.notes.end());
            if (dm.n_unmatched > 0)
                st.notes.push_back(fmt::format(
                    "{} op(s) on {} have no time from the device's own timer (op_method says "
                    "why): their op time is the traced call less the no-work round trip",
                    dm.n_unmatched, device.device));
        }
        to.on_replay = [&](size_t) {
            if (++replays % 10 == 1)
                say(fmt::format("replaying distinct ops ({} so far)", replays));
        };
        assign_op_times(b, rig.replayer, to);
    } else {
        for (auto& r : st.ops)
            r.op_method = r.no_compute ? "no compute (view of memory): zero op time"
                                       : "op replay skipped (--replay 0)";
        for (auto& r : st.ops)
            if (r.no_compute)
                r.op_ns = 0.0;
    }
    std::string target;
    for (const auto& dev : p.requested)
        if (replays_on && rig.replayer.can_replay_on(dev)) {
            target = dev;
            break;
        }
    st.fallback =
        fallback_rows(st, b.nodes, p.requested, replays_on ? &rig.replayer : nullptr, target);
    if (std::any_of(st.ops.begin(), st.ops.end(),
                    [](const OpRecord& r) { return r.backend.rfind("RPC", 0) == 0; }))
        st.notes.push_back(
            "RPC: a node dispatched alone is sent with its source chain within the split "
            "(ggml-rpc serialises sources recursively), so call times grow along a split; "
            "isolated_call_ns in the records is the op alone with fresh inputs");
    finalize_stage(st, o.top_n);
    if (o.decompose && replays_on)
        add_decomposition(st, b.nodes, p, rig.replayer, interrupted);
    return st;
}

}  // namespace

OpsProfile profile_ops(const OpsRig& rig, const OpsOptions& o, const OpsHooks& hooks) {
    check_options(o);
    OpsHooks h = hooks;
    if (!h.clock)
        h.clock = now_ns;
    if (!h.interrupted)
        h.interrupted = [] { return interrupt_requested(); };
    const ProgressFn say = [&](const std::string& m) {
        if (h.progress)
            h.progress(m);
    };
    const int threads = threads_or_default(o.workload.n_threads);
    const int64_t t0 = h.clock();
    OpsProfile p = profile_header(o, threads);

    say("loading " + o.workload.model_path);
    rig.tracer.load(load_spec_of(o, threads));
    p.backends = rig.engine.active_backends();
    if (const auto a = rig.engine.huge_pages())
        p.huge_pages = HugePagesRecord{a->policy, a->advised_bytes,
                                       static_cast<int>(a->ranges.size()), a->error};
    const int64_t t_loaded = h.clock();
    say("warming up");
    warm_up(rig.engine, o, p.requested);
    const Measured m = measure_stages(rig, o, threads, h, say);
    p.method = method_of(o, m.traced_reps, m.plain_reps);
    const int64_t t_measured = h.clock();

    // The traced context is done: replays run alone.
    const std::optional<uint64_t> weights = rig.engine.weight_bytes();
    rig.tracer.release();
    p.llc_bytes = last_level_cache_bytes();
    p.cold_weight_bytes = cold_weight_budget(weights, p.llc_bytes);
    if (o.replay_copies > 0)
        rig.replayer.open({p.backends, threads, o.replay_copies, *p.cold_weight_bytes,
                           o.decompose ? kDecomposeReplayNs : 0, o.huge_pages});

    DeviceTimes device;
    if (o.replay_copies > 0 && !h.interrupted())
        device = run_device_timer(p, o, threads, m, h, say, t_measured - t0);
    if (device.ran)
        p.method += " On " + device.device +
                    " an op's time is the device's own: the timestamp queries ggml-vulkan writes "
                    "around each op with GGML_VK_PERF_LOGGER, in a pass of its own (a child "
                    "process, after the timed repetitions, fusion off), matched to the profile's "
                    "ops by the logger's name (op, type, shape) per stage; where no name and "
                    "count match, the traced call less the no-work round trip.";

    size_t replays = 0;
    if (o.prefill && m.prefill.captured)
        p.stages.push_back(profile_stage("prefill", m.prefill, std::max(0, o.n_prompt), o.n_depth,
                                         rig, o, p, device, h.interrupted, say, replays));
    if (o.decode && m.decode.captured)
        p.stages.push_back(profile_stage("decode", m.decode, 1, o.n_depth + std::max(0, o.n_prompt),
                                         rig, o, p, device, h.interrupted, say, replays));
    if (h.interrupted())
        for (auto& st : p.stages)
            st.notes.push_back("interrupted: results are partial");
    const int64_t t_done = h.clock();
    p.duration_ns = t_done - t0;
    p.phase_ns = {{"load", t_loaded - t0},
                  {"stages", t_measured - t_loaded},
                  {"profile", t_done - t_measured}};
    return p;
}

OpsProfile profile_ops(EngineFactory& engines, const OpsOptions& o, const OpsHooks& hooks) {
    check_options(o);  // before the rig: bad options load nothing
    const OpRig rig = engines.op_rig(o.huge_pages);
    return profile_ops({*rig.engine, *rig.tracer, *rig.replayer}, o, hooks);
}

void device_timer_pass(const OpsOptions& o, int prefill_reps, std::ostream& markers,
                       EngineFactory& engines) {
    check_options(o);
    const OpRig rig = engines.op_rig(o.huge_pages);
    Engine& e = *rig.engine;
    const int threads = threads_or_default(o.workload.n_threads);
    // The tracer loads the engine as profile_ops does (one context, its hook idle: each split
    // is one graph, as in the uninstrumented stages), so the graphs are the profile's.
    rig.tracer->load(load_spec_of(o, threads));
    std::vector<std::string> requested;
    for (const auto& d : o.workload.devices.names())
        requested.push_back(d);
    warm_up(e, o, requested);
    // Nothing is timed here (the device's timer is): the stages run without the repetition
    // loop, each bracketed so that the logger's blocks can be told apart.
    auto mark = [&](const char* stage, int i, bool begin) {
        markers << vk_perf_marker(stage, i, begin) << std::endl;
    };
    const std::optional<int32_t> bos = e.bos_token();
    for (int r = 0; o.prefill && r < prefill_reps && !interrupt_requested(); ++r) {
        e.reset();
        if (o.n_depth > 0)
            e.fill_to_depth(o.n_depth, o.seed + static_cast<uint64_t>(r));
        const std::vector<int32_t> t =
            sequence_tokens(o.n_prompt, e.n_vocab(), o.seed + static_cast<uint64_t>(r), bos);
        mark("prefill", r, true);
        e.prefill(t);
        mark("prefill", r, false);
    }
    if (!o.decode)
        return;
    if (!o.prefill) {  // decode-only profiles decode at depth + prompt
        e.reset();
        if (o.n_depth + o.n_prompt > 0)
            e.fill_to_depth(o.n_depth + std::max(0, o.n_prompt), o.seed);
    }
    const int32_t token = bos.value_or(0);
    for (int k = 0; k < o.decode_tokens && !interrupt_requested(); ++k) {
        mark("decode", k, true);
        e.decode_step(token);
        mark("decode", k, false);
    }
}

RunResult run_ops(const OpsCommandOptions& o, RunEnv env) {
    const std::string device_set = o.ops.workload.devices.str();
    RunSetup setup;
    setup.take(env);
    setup.models = {o.ops.workload.model_path};
    setup.rpc_servers = o.rpc_servers;
    setup.device_sets = {device_set};
    setup.out_path = o.out_path;
    setup.progress = o.progress;
    RunContext run(env.doc, setup, env.err, env.listener);
    ResultDocument& doc = env.doc;  // the context's, until finish() hands it back
    run.open(threads_or_default(o.ops.workload.n_threads));

    ProgressFn progress = [&run](const std::string& m) { run.progress().note(m); };
    // llama.cpp may stop the process mid-profile (an RPC server that dies): the profile is one
    // measurement, so nothing is recorded, but the line says which server went away.
    LastWordScope last_word([&](const std::string& message) -> std::optional<std::string> {
        return "the ops profile on " + device_set +
               " failed: " + describe_llama_stop(message, device_set, "") +
               "; nothing of it was recorded";
    });
    OpsHooks hooks;
    hooks.progress = progress;
    hooks.clock = run.clock();
    hooks.device_timer = o.device_timer;
    OpsProfile p = profile_ops(run.engines(), o.ops, hooks);
    for (auto& w : profile_warnings(p))
        doc.warnings.push_back(w);
    // Ctrl-C stops the profile at the next repetition or op: what was traced is kept, marked
    // partial, and the run is not "everything asked for was done" (exit 1, README).
    const bool interrupted = interrupt_requested();
    if (interrupted)
        doc.warnings.push_back(
            {"interrupted",
             "interrupted (Ctrl-C) before the profile was complete: its stages and ops are "
             "partial (fewer repetitions, ops not replayed)",
             "run it again to the end for a complete profile"});
    doc.ops = std::move(p);
    // Interrupted: the outcome says so (exit 1) and the line says where the partial profile is.
    return run.finish();
}

}  // namespace sb
