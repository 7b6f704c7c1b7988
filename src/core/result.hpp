#pragma once
// The one typed result document. Every reporter (md, csv, json, jsonl, html, trace), the store
// and the file written with --out read this structure; a field added here reaches every format
// through to_json(), and comes back through from_json() (read(JsonIn, T&), core/doc/json_in.hpp).
// Durations are nanoseconds on the sb::now_ns() clock; rates are per second.
//
// to_json and from_json are inverses: to_json(from_json(to_json(d))) == to_json(d). from_json
// refuses a document of a newer schema_version, reads absent fields as absent (std::nullopt, an
// empty vector, the default), and keeps members it does not know (ResultDocument::extra at the
// top, ResultDocument::unknown below it) for to_json to write back. Telemetry (the run's and each
// test's) is sensor data whose detail may differ between builds: a telemetry section this build
// cannot read reads as absent and is kept as an unknown member, not refused.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/device_set.hpp"
#include "core/doc/explain_section.hpp"
#include "core/doc/fidelity_section.hpp"
#include "core/doc/hybrid_section.hpp"
#include "core/doc/import_section.hpp"
#include "core/doc/json_in.hpp"
#include "core/doc/modes_section.hpp"
#include "core/doc/ops_section.hpp"
#include "core/doc/serve_section.hpp"
#include "core/doc/server_claim.hpp"
#include "core/doc/telemetry_section.hpp"
#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/sustained_result.hpp"
#include "core/warning.hpp"
#include "core/workload.hpp"

namespace sb {

inline constexpr int kResultSchemaVersion = 2;
inline constexpr const char* kResultSchema = "stagebench.result";  // the "schema" member

// One point of the test matrix: a workload (core/workload.hpp: model, devices, batch sizes,
// threads, flash attention, KV types; n_threads as resolved by default_thread_count(), 0 only
// for a --url server) with its lengths and repetitions.
struct TestConfig : Workload {
    int n_prompt = 512;
    int n_gen = 128;
    int n_depth = 0;
    int reps = 5;                     // minimum repetitions
    std::optional<double> target_ci;  // stop once the 95% CI half-width / rate is below this
    // With target_ci the stall-robust rate's CI (StageResult::robust) is what must be within it.
    int max_reps = 5;  // repetitions at most (== reps without --target-ci)
    bool warmup = true;
    uint64_t seed = 1;
    // llama (in-process llama.cpp) or http (a server; model_path is then the GGUF the managed
    // llama-server serves, or the model name sent to a --url server, "" for its default).
    EngineKind engine = EngineKind::llama;

    // A short name like llama-bench's: "pp512", "tg128", "pp512+tg128", with "@d1024".
    std::string test_name() const;
};

// A stage's stall-robust rate: 1e9 / the median of its nanoseconds per token, where those are
// one per repetition for prefill (duration / tokens: n_tokens / median duration) and every
// inter-token latency for decode. Stalls move a mean but not a median. The 95% CI is a seeded
// percentile bootstrap of that median resampling whole repetitions (1000 resamples, seed 42;
// core/stats.hpp median_ci), so a slow repetition widens it; null with fewer than 2
// repetitions. ci95_half_rel = (hi - lo) / 2 / tokens_per_s, what --target-ci is held to.
struct RobustRate {
    std::optional<double> tokens_per_s, ci95_lo, ci95_hi, ci95_half_rel;
};

// One measured stage of one test: raw samples kept next to their summaries.
struct StageResult {
    int n_tokens = 0;                  // tokens per repetition
    std::vector<int64_t> duration_ns;  // one per repetition
    // When each measured stage began (sb::now_ns), parallel to duration_ns: the stage ran over
    // [start_ns[i], start_ns[i] + duration_ns[i]]. For traces (src/trace).
    std::vector<int64_t> start_ns;
    Summary duration;                  // of duration_ns
    std::vector<double> tokens_per_s;  // one per repetition
    Summary throughput;                // of tokens_per_s
    RobustRate robust;                 // stall-robust tokens/s
    Stalls stalls;                     // slow repetitions among duration_ns (detect_stalls)
};

struct DecodeResult : StageResult {
    std::vector<int64_t> token_latency_ns;  // every token of every repetition, in order
    // How many of token_latency_ns each repetition holds, in order (parallel to duration_ns).
    std::vector<int64_t> token_latency_counts;
    Summary itl;             // inter-token latency over token_latency_ns
    Stalls token_stalls;     // stalled tokens among token_latency_ns (detect_stalls)
    int kv_depth_start = 0;  // KV depth of the first decoded token
};

struct Roofline {
    std::optional<double> decode_bytes_per_token;     // weights + mean KV read per token
    std::optional<double> decode_bandwidth_gbps;      // bytes per token x median tokens/s
    std::optional<double> decode_bandwidth_fraction;  // of the measured machine bandwidth
    std::optional<double> prefill_gflops;             // approximate, see prefill_flops()
};

// What the client measured per repetition of a test on an engine behind HTTP (one sb::now_ns
// clock, request start = 0). The stage results of TestResult hold the rest: prefill =
// n_prompt / TTFT, decode = tokens after the first / (E2E - TTFT), ttft_ns, and the
// inter-token gaps as token_latency_ns.
struct ClientTimings {
    std::vector<int64_t> e2e_ns;  // request start -> last token
    Summary e2e;
    std::vector<int64_t> tpot_ns;  // (E2E - TTFT) / (output tokens - 1)
    Summary tpot;
    // request start -> first answer content (after any reasoning); null when none came
    std::vector<std::optional<int64_t>> first_content_ns;
    Summary first_content;
    std::vector<int64_t> prompt_tokens;    // as the server counted them (usage), else asked
    std::vector<int64_t> output_tokens;    // usage.completion_tokens when believable, else
                                           // streamed (engine/http_engine.hpp compute_timing)
    std::vector<int64_t> streamed_tokens;  // counted from the stream itself
    // What the server claimed (usage.completion_tokens), as it said it, beside the counts
    // above; null when it claimed nothing. A claim that was not believed has a note.
    std::vector<std::optional<int64_t>> claimed_output_tokens;
    std::vector<int64_t> chunks;  // streamed messages that carried output
};

// Server-side timings per repetition and how the client's view differs from them (network,
// queueing, tokenisation, HTTP and JSON work).
struct ServerSide {
    std::vector<ServerTimings> reps;
    Summary prefill_tokens_per_s;               // prompt_n / prompt time
    Summary decode_tokens_per_s;                // predicted_n / generation time
    std::vector<int64_t> ttft_minus_prompt_ns;  // client TTFT - server prompt time
    Summary ttft_minus_prompt;
    std::vector<int64_t> e2e_minus_total_ns;  // client E2E - (server prompt + generation)
    Summary e2e_minus_total;
};

// What llama.cpp allocated in one buffer type for a test's model and context, by its own
// accounting (llama_get_memory_breakdown): the weights, the context's state (the KV cache) and
// the scheduler's compute buffers. The buffer type names where they live: a device ("Vulkan0",
// "CUDA0", "CPU"), its pinned host memory ("Vulkan_Host", "CUDA_Host") or a CPU layout
// ("CPU_REPACK").
struct BufferMemory {
    std::string buffer;
    uint64_t model_bytes = 0, context_bytes = 0, compute_bytes = 0;
};

struct TestResult {
    TestConfig config;
    Status status = Status::ok;
    std::optional<std::string> error;
    // With error: what failed ("usage", "input": the user's input, e.g. a model llama.cpp
    // refuses; "runtime": the measurement); null when not known.
    std::optional<ErrorKind> error_kind;
    std::vector<std::string> backends;  // devices that ran ops (host CPU last)
    // Per buffer type, once the model and context were made; empty where the engine does not say
    // (an engine behind HTTP, a llama.cpp without the call).
    std::vector<BufferMemory> memory;
    std::vector<std::string> notes;
    int reps_done = 0;
    std::optional<StopReason> stopped_by;  // nullopt ("" in JSON) until the test ends
    std::optional<StageResult> prefill;
    std::optional<DecodeResult> decode;
    std::vector<int64_t> ttft_ns;  // prefill + first decoded token, per repetition
    Summary ttft;
    Roofline roofline;
    // Per-stage telemetry of every repetition and the medians of its totals; null without
    // telemetry.
    std::optional<TestTelemetry> telemetry;
    int64_t started_ns = 0, finished_ns = 0;
    // Engines behind HTTP only (null in JSON for the in-process engine).
    std::optional<ClientTimings> client;
    std::optional<ServerSide> server;  // when the server reported its own timings
    // `run --fidelity`: the test's distance from the reference; absent from the JSON without.
    std::optional<TestFidelity> fidelity;
    // An imported test (`import llama-bench`): the rows of the file it was made of, as the file
    // said them (core/doc/import_section.hpp); absent from the JSON otherwise.
    std::optional<TestImport> imported;
};

struct ResultDocument {
    std::string command;  // "run", "demo", ...
    std::vector<std::string> argv;
    std::string tool_version;
    std::string build_type;
    nlohmann::json llama;   // tag, commit, backends; free-form, an object or null
    nlohmann::json system;  // SystemInfo (core/sysinfo.hpp); free-form, an object or null
    // The device a `fleet run` ran this on (fleet/identity.hpp): fleet, device, transport, model,
    // soc, kernel, CPU features, ggml CPU variant, the gates seen. Free-form, an object or null
    // (absent from the JSON when null).
    nlohmann::json fleet;
    // ModelInfo JSON per model path (model/inspect.hpp), or {path, name, engine, server, url}
    // for a model behind a server; read typed through model_view().
    std::vector<nlohmann::json> models;
    nlohmann::json membw;                 // null when not measured
    std::string started_at, finished_at;  // UTC, ISO 8601
    std::vector<TestResult> tests;
    Warnings warnings;
    std::optional<TelemetrySection> telemetry;  // null when no telemetry was recorded
    // The sections of the other scenarios; absent from the JSON when nullopt.
    std::optional<SustainedResult> sustained;
    std::optional<HybridSection> hybrid;
    std::optional<OpsSection> ops;
    std::optional<ModesSection> modes;        // decompose --mode, import hexagon-profile --mode
    std::optional<ServeSection> serve;        // `stagebench serve`
    std::optional<FidelitySection> fidelity;  // `stagebench fidelity` (no tests)
    std::optional<ExplainSection> explain;    // `stagebench explain` (no tests)
    // An imported document (`import llama-bench`): the tool and the files it came from; absent
    // from the JSON otherwise (core/doc/import_section.hpp).
    std::optional<ImportSection> imported;
    // The engines of the run by name ("llama", "http"): what they are and how they ran.
    nlohmann::json engines = nlohmann::json::object();
    // Top-level members this build does not know (written back as they came).
    nlohmann::json extra = nlohmann::json::object();
    // Members below the top level this build does not know (or, for telemetry, could not read),
    // by JSON pointer; to_json writes each back where its parent object still exists and lacks it
    // (or has null there).
    UnknownMembers unknown;
};

// A models[] entry, typed: what readers take from it. Absent (or null) fields are nullopt.
struct ModelView {
    std::string path;
    std::optional<std::string> name;  // general.name, or the model name asked of a server
    std::optional<std::string> arch, file_type, dominant_type;
    std::optional<uint64_t> file_bytes, n_params;
    bool synthetic = false;
    std::optional<std::string> synthetic_preset;
    std::optional<std::string> engine, server, url;  // a model behind a server
};
// The entry's fields; an entry from_json did not check (one a program built) may be of any
// shape: fields of another type read as absent. Never throws.
ModelView model_view(const nlohmann::json& entry);
// The view of the first entry of doc.models whose path is path; nullopt when none.
std::optional<ModelView> model_of(const ResultDocument& doc, const std::string& path);

// What readers take from the free-form system (SystemInfo, core/sysinfo.hpp) and llama
// members: the machine and the llama.cpp build that ran the document. Absent, null or empty
// values (and values of another type) are nullopt. Never throws.
struct MachineView {
    std::optional<std::string> hostname, os, cpu_model;
    std::optional<std::string> llama_tag;
    std::optional<std::string> fleet, device;  // the fleet and device name of a fleet run
};
MachineView machine_view(const ResultDocument& doc);

// "usage", "input" or "runtime" (to_string(kind)).
std::string error_kind_name(ErrorKind kind);
// Records e on r as its error: status failed, stopped_by error, error and error_kind set.
void record_failure(TestResult& r, const std::exception& e);
// The same with the error as text: error_kind kind, or left null when the kind is unknown (a
// stop inside llama.cpp, a test failed with another's error).
void record_failure(TestResult& r, const std::string& error, std::optional<ErrorKind> kind);
// Records that r was interrupted: status interrupted, stopped_by interrupt; error (what was
// being measured when the interrupt came, when that failed) set when given.
void record_interrupted(TestResult& r, std::optional<std::string> error = std::nullopt);
// Why r stopped repeating after enough repetitions (its status is unchanged): the fixed count
// ("reps"), the --target-ci goal ("target_ci") or the adaptive limit ("max_reps").
void record_stopped_at_reps(TestResult& r);
void record_stopped_at_target_ci(TestResult& r);
void record_stopped_at_max_reps(TestResult& r);

// How a measuring command went, in the order of gravity: every test ok; a test failed (or
// another part of the run, e.g. a traced pass); the run was interrupted; a test failed on bad
// input (error_kind usage or input: a model llama.cpp refuses, found mid-sweep). Runners return
// it; only main() (the CLI) turns it into an exit code (exit_code_of).
enum class Outcome { ok, failed, interrupted, bad_input };
// The graver of the two.
inline Outcome worse(Outcome a, Outcome b) {
    return a < b ? b : a;
}
// bad_input when a test failed on bad input, else interrupted when interrupted is true or a
// test was interrupted, else failed when a test failed, else ok.
Outcome outcome_of(const std::vector<TestResult>& tests, bool interrupted);
// The exit code of an outcome (README, "Bad input and faults"): 0 ok, 1 failed or interrupted,
// 2 bad input.
int exit_code_of(Outcome o);
// exit_code_of(outcome_of(tests, interrupted)).
int exit_code_for(const std::vector<TestResult>& tests, bool interrupted);
// A test failed on bad input (error_kind usage or input).
bool failed_on_bad_input(const TestResult& t);

// Stalls of ns samples: the rule in words, k, n, count, indices, time_ns, excess_ns, median_ns,
// threshold_ns (null when no sample could be one).
nlohmann::json to_json(const Stalls&);
nlohmann::json to_json(const TestConfig&);
nlohmann::json to_json(const StageResult&);
nlohmann::json to_json(const DecodeResult&);
nlohmann::json to_json(const ClientTimings&);
nlohmann::json to_json(const ServerSide&);
nlohmann::json to_json(const BufferMemory&);
nlohmann::json to_json(const TestResult&);
nlohmann::json to_json(const ResultDocument&);

// The inverses (see the top of this file and core/doc/json_in.hpp for the rules).
void read(const JsonIn&, Stalls&);
void read(const JsonIn&, RobustRate&);
void read(const JsonIn&, Roofline&);
void read(const JsonIn&, TestConfig&);
void read(const JsonIn&, StageResult&);
void read(const JsonIn&, DecodeResult&);
void read(const JsonIn&, ClientTimings&);
void read(const JsonIn&, ServerSide&);
void read(const JsonIn&, BufferMemory&);
void read(const JsonIn&, TestResult&);
// The root of a document: from_json<ResultDocument>(j, "'r.json'"). Also checks "schema" (it
// must be "stagebench.result": "SOURCE is not a stagebench result document ..."),
// "schema_version" (check_version_field(), core/document.hpp: a newer one is refused) and that
// the hybrid section's test indexes are in tests.
void read(const JsonIn&, ResultDocument&);

// Current UTC time as "2026-11-29T09:30:00Z".
std::string utc_timestamp();

// Writes the document to path with write_output_file (core/file_io.hpp): a regular file is
// replaced atomically, so a reader or a crash never sees half a file; a FIFO or a device is
// written in place. A progress save (the document so far, in the middle of a run) of such an
// output only checks the path: it gets the final document, once. Throws sb::Error(input) for a
// path that cannot be an output (a directory), sb::Error(runtime) when writing fails.
enum class DocumentSave { progress, final };
void write_document(const ResultDocument& doc, const std::string& path,
                    DocumentSave save = DocumentSave::final);

}  // namespace sb
