#pragma once
// `stagebench explain`: where a served token's time goes, from the op to the request. One
// workload (a prompt of n_prompt tokens, n_gen generated tokens) is measured at every level of
// core/doc/explain_section.hpp (ops, graph, generation, server, served) and, at the graph
// level, once more per setting the bench and the server disagree on (scenario/
// explain_settings.hpp) with that setting as the server has it, and once with all of them.
// Every measure runs once per round; rounds run the measures forward and backward in turn
// (A B C, C B A, ...: InterleavedRounds, scenario/repetition.hpp, the rounds loop of
// `decompose --mode` too), so a slow drift of the machine adds to every measure alike and
// differences pair by round (analysis/explain.hpp). Each run of a level is one test of the
// one repetition loop (RepetitionRunner, scenario/repetition.hpp) on the run's clock: the graph
// level's stages on the in-process engine; levels 3 to 5 as whole requests (RequestRound: a
// generation from a text, a streamed request, each client of level 5 its own), warmed up by the
// runner on a level's first run (levels 3 and 4; level 3 again after the engine reloads).
//
// The server is a llama-server started on 127.0.0.1 as `run --engine http` starts one
// (scenario/llama_server.hpp: one slot, its other settings llama-server's defaults) with
// --server-args added, or the server at --url. Levels 3 to 5 take the same kind of input: a
// text of English words sized (with the model's own tokenizer and chat template) to n_prompt
// tokens, a new text for every run and client so no prompt cache helps; level 3 applies the
// template and tokenizes inside its timing, levels 4 and 5 send the templated text to
// /v1/completions (streamed, the server's default sampling, EOS ignored), which the server
// tokenizes.
//
// Bad input is one line, sb::Error(usage or input), before anything is measured: the model
// cannot be used, the server is dead or does not start, it serves another model, or the
// workload does not fit its context. A run that fails keeps its error and the others go on;
// a server that is not llama-server is measured at levels 4 and 5 with a finding that its
// settings could not be read.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/doc/explain_section.hpp"
#include "core/result.hpp"
#include "core/workload.hpp"
#include "scenario/run_context.hpp"

namespace sb {

struct ExplainOptions {
    // The bench's workload (the in-process engine of levels 1 to 3): the model (also the
    // server's), its device set (as `run --device`), its threads (0: default_thread_count())
    // and the rest at Workload's defaults.
    Workload workload;
    int n_prompt = 512;
    int n_gen = 128;                 // >= 2: decode is the time per token after the first
    int rounds = 5;                  // >= 1
    std::vector<int> concurrency;    // level 5: clients per measure (each >= 1)
    std::optional<std::string> url;  // a running server; none: llama-server is started
    std::string server_args;         // added to the llama-server started (or: how --url's was)
    int replay_copies = 16;          // ops level: copies per replayed op (profile/tracer.hpp)
    bool ops = true;                 // measure the ops level
    uint64_t seed = 1;
    double timeout_s = 120;  // HTTP: connecting and each silence of a stream
    std::optional<std::string> out_path;
    bool progress = true;  // progress lines on the error stream
};

// One run of measure m in round `round` (0-based): the run's times, or its error. May throw
// sb::Error for a failure of the run (recorded as its error).
using ExplainMeasurer = std::function<ExplainRun(const ExplainMeasure& m, int round)>;

// The rounds over s.measures in s.order (ids; every measure once per round, forward in even
// rounds and backward in odd ones), s.rounds of them: each run is stamped with its round and
// sequence, a thrown sb::Error or std::exception becomes its error, the section is summarised
// (analysis/explain.hpp) and save() called after every run. Ctrl-C (core/interrupt.hpp) stops
// before the next run and sets s.interrupted. Returns 0 when every run succeeded, else 1.
int run_explain_rounds(ExplainSection& s, const ExplainMeasurer& measure,
                       const std::function<void()>& save, std::ostream& err, bool progress);

// The whole command: setup and bad-input checks, the server, the settings, the rounds, the
// document (doc.explain, doc.engines["http"], models, warnings) written to --out after every
// run. env.doc: from new_document("explain", argv). Returns the document with its outcome
// (failed when a run failed or Ctrl-C stopped the rounds) and the error that stopped it after
// it began (an --out that could not be written); throws sb::Error for bad input found before
// anything was measured.
RunResult run_explain(const ExplainOptions& o, RunEnv env);

}  // namespace sb
