#pragma once
// The "explain" section of a result document (`stagebench explain`, scenario/explain.hpp): one
// workload (a prompt of n_prompt tokens, n_gen generated tokens) measured at five levels, from
// the op to the served request, in interleaved rounds, so that the gap between what llama-bench
// says and what a server gives is split into named parts:
//   1 ops         Σ op time of each stage (the profiler's replay, profile/tracer.hpp): compute
//   2 graph       the stage as llama-bench times it (+ dispatch, scheduling, synchronisation);
//                 also once per setting the bench and the server disagree on, with that one
//                 setting as the server has it (and once with all of them), "graph+NAME"
//   3 generation  the loop an application runs in-process: a real text prompt with the chat
//                 template applied and tokenized, the sampler chain, each token detokenized
//   4 server      the same text to llama-server (or any OpenAI-compatible server) with one
//                 client streaming over loopback (+ HTTP, JSON, SSE, the task queue and the
//                 server's own settings)
//   5 served      the same kind of request from N clients at once (one measure per N)
// Stage times per level: prefill is the prefill stage (ops, graph) or the time to the first
// token (generation, server, served); decode is the time per token after the first (ops: Σ op
// time of one decode token; graph: the decode stage / its tokens; the others: TPOT =
// (E2E - TTFT) / (tokens - 1)).
//
// The arithmetic (medians, differences, parts, findings, verdicts) lives in
// analysis/explain.hpp; this header is the data and its JSON. The section is the document's
// top-level member "explain" (ResultDocument::explain).
//
// Times are nanoseconds (double: medians and differences). Missing is not zero: a run that
// failed has no times, and a statistic with too few runs is null.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/doc/json_in.hpp"
#include "core/doc/server_claim.hpp"

namespace sb {

// One request of a served run (level 5), as the client measured it.
struct ExplainClient {
    int client = 0;  // 0-based
    std::optional<double> ttft_ns, tpot_ns;
    std::optional<int64_t> prompt_tokens, output_tokens;
    std::optional<std::string> error;
    // The server's timings of this request as it said them, with every way they disagree
    // with the client's measurement (core/doc/server_claim.hpp); absent when it said none.
    std::optional<ServerClaim> server_claim;
};

// What llama-server said about one request (its `timings`): a claim, kept as sent. Prompt
// and generation times in ns; predicted_ns spans the predicted_n - 1 tokens after the first.
struct ExplainServerTimes {
    std::optional<int64_t> prompt_n, cache_n, predicted_n;
    std::optional<double> prompt_ns, predicted_ns;
};

// One measurement of one measure in one round.
struct ExplainRun {
    int round = 0;     // 0-based
    int sequence = 0;  // 0-based position among every run, in the order they ran
    std::optional<int64_t> start_ns, end_ns;  // its span on the sb::now_ns clock
    std::optional<double> prefill_ns;         // see the top of this file
    std::optional<double> decode_ns;          // per token after the first
    std::optional<int64_t> prompt_tokens;     // the prompt as processed (counted)
    std::optional<int64_t> output_tokens;
    std::optional<ExplainServerTimes> server;  // level 4: the server's own timings, believed
    // Level 4: the same as the server said them, with every way they disagree with the
    // client's measurement (a field that disagrees is absent from `server`); absent when none.
    std::optional<ServerClaim> server_claim;
    std::vector<ExplainClient> clients;  // level 5: every client's request
    std::optional<std::string> error;    // why this run has no times
    std::vector<std::string> notes;
};

// A measure's stage time over its runs: the median with a seeded bootstrap 95 % CI over the
// rounds (core/stats.hpp median_ci; null with fewer than 2 runs).
struct ExplainStat {
    int n = 0;
    std::optional<double> median_ns, ci95_lo_ns, ci95_hi_ns;
};

// A level, or a variant of level 2 with one setting (or all of them) as the server has it.
struct ExplainMeasure {
    std::string id;     // "ops", "graph", "graph+n_ubatch", "graph+all", "generation", "server",
                        // "served@4"
    std::string level;  // ops | graph | generation | server | served
    std::optional<std::string> setting;  // level-2 variants: the setting's name, or "all"
    std::optional<int> concurrency;      // served: the clients
    std::string what;                    // one line: what it times
    nlohmann::json config;  // what it ran with (threads, batches, context, ...): free-form
    std::vector<ExplainRun> runs;
    ExplainStat prefill, decode;
    int n_failed = 0;  // runs with an error
};

// One setting of the two harnesses: the bench's (graph level) and the server's.
struct ExplainSetting {
    std::string name;   // threads threads_batch n_batch n_ubatch n_ctx slots flash_attn type_k
                        // type_v mmap warmup prompt_cache sampling
    std::string label;  // "micro-batch (-ub)"
    std::string bench;  // the bench's value, as text
    std::optional<std::string> server;  // null: could not be read
    // Where the server's value came from: "startup log", "/props", "--server-args" (what the
    // server was told), "llama-server's default" (nothing said otherwise), "" (unknown).
    std::string source;
    bool differs = false;
    std::optional<std::string> measure;  // the level-2 measure that changes it alone
    std::string note;                    // how it is accounted for when not measured alone
};

// A difference of medians with a paired bootstrap 95 % CI over the rounds (analysis/
// explain.hpp): a step between two levels, the gap between the bench and the server, or one
// part of that gap.
struct ExplainPart {
    std::string stage;  // prefill | decode
    // step (level to the next), gap (server - graph), setting, interaction, application,
    // remainder
    std::string kind;
    std::string name;   // "graph-ops", a setting's name, "interaction", "application",
                        // "remainder", "gap"
    std::string label;  // for people: "micro-batch (-ub): 32 on the server against 512"
    std::optional<std::string> from, to;  // the measures it is the difference of (steps, gap,
                                          // settings, application)
    std::optional<double> ns, ci95_lo_ns, ci95_hi_ns;
    std::optional<double> share;  // of the gap (parts only)
    bool no_difference = false;   // the CI contains 0
    int n_rounds = 0;             // rounds where every measure involved has a time
    std::string note;
};

// Something a reader must see: a level above the next one beyond the noise ("order"), parts
// that overshoot the gap, settings that could not be read, a level that failed.
struct ExplainFinding {
    std::string kind;   // order | overshoot | settings | failed | server_timings | prompt
    std::string stage;  // prefill | decode | "" (both)
    std::string message;
};

struct ExplainSection {
    std::string model_path;
    int n_prompt = 0, n_gen = 0;
    int n_threads = 0;  // the bench's, resolved
    int rounds = 0;
    uint64_t seed = 1;
    std::vector<int> concurrency;          // level 5's client counts
    std::optional<std::string> url;        // --url; null: a llama-server explain started
    std::vector<std::string> server_args;  // --server-args, split
    std::string server_kind;               // llama-server | ollama | vllm | ...
    bool settings_read = false;            // the server's settings could be read
    nlohmann::json server;                 // what the server said about itself
    std::string chat_template;             // how level 3 made its prompt
    nlohmann::json sampler;                // level 3's sampler chain
    std::vector<std::string> order;        // measure ids in a forward round's order
    std::vector<ExplainMeasure> measures;  // by level, then variant
    std::vector<ExplainSetting> settings;
    std::vector<ExplainPart> steps;  // per stage: level to level
    std::vector<ExplainPart> parts;  // per stage: the gap first, then its parts
    std::vector<ExplainFinding> findings;
    std::vector<std::string> verdicts;  // one sentence per stage
    std::vector<std::string> notes;
    bool interrupted = false;  // Ctrl-C ended the rounds early
};

nlohmann::json to_json(const ExplainClient&);
nlohmann::json to_json(const ExplainServerTimes&);
nlohmann::json to_json(const ExplainRun&);
nlohmann::json to_json(const ExplainStat&);
nlohmann::json to_json(const ExplainMeasure&);
nlohmann::json to_json(const ExplainSetting&);
nlohmann::json to_json(const ExplainPart&);
nlohmann::json to_json(const ExplainFinding&);
nlohmann::json to_json(const ExplainSection&);

void read(const JsonIn&, ExplainClient&);
void read(const JsonIn&, ExplainServerTimes&);
void read(const JsonIn&, ExplainRun&);
void read(const JsonIn&, ExplainStat&);
void read(const JsonIn&, ExplainMeasure&);
void read(const JsonIn&, ExplainSetting&);
void read(const JsonIn&, ExplainPart&);
void read(const JsonIn&, ExplainFinding&);
void read(const JsonIn&, ExplainSection&);

// The measure with this id, or null.
const ExplainMeasure* find_measure(const ExplainSection& s, const std::string& id);

}  // namespace sb
