#pragma once
// The engines of `stagebench run` (and of sustained's rounds), by the kind a test config names,
// from the run's engine factory, and the HTTP side: tests on an engine behind a server, measured
// with the stage definitions of engine/http_engine.hpp and mapped onto the one TestResult every
// reporter reads:
//   prefill  n_prompt / TTFT per repetition (TTFT includes the first token and the transport);
//   decode   tokens after the first / (E2E - TTFT), its raw samples the inter-token gaps;
//   ttft_ns  TTFT; client{} E2E, TPOT, first content, token counts; server{} the server's own
//            stage timings with client - server differences.
// The server is either given (--url) or a llama-server that stagebench starts on 127.0.0.1
// for each GGUF (-m FILE, --engine http without --url); `--engine llama,http` runs every test
// on both, the in-process test first, so the two appear side by side.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/engine_factory.hpp"
#include "engine/http_engine.hpp"
#include "scenario/stage_sweep.hpp"

namespace sb {

class RunContext;

struct HttpRunOptions {
    std::vector<EngineKind> engines{EngineKind::llama};  // llama, http, or both
    std::optional<std::string> url;  // --url; none: stagebench starts llama-server
    HttpApi api = HttpApi::openai;
    double timeout_s = 120;  // connect and silent-read timeout
};

// Runs one test on an engine that measures whole requests (a server) through the one
// repetition loop (scenario/repetition.hpp), each repetition one whole request. model is the
// name sent to the server ("" for its default). Never throws for a failure of the test: it is
// recorded (status failed, error one line, its kind unknown; interrupted when the interrupt cut
// it off) with the repetitions before it.
TestResult run_http_test(Engine& engine, const std::string& model, const TestConfig& config,
                         const SweepHooks& hooks, const Clock& clock = now_ns);

// Plans, connects and runs the HTTP tests of one `run` invocation.
class HttpRun {
  public:
    // Checks the combination of options; throws sb::Error(usage) for a bad one (no engine, -d
    // with http, --url with the in-process engine, no model and no URL...).
    HttpRun(const HttpRunOptions& opts, const MatrixSpec& matrix,
            const std::vector<std::string>& rpc_servers);
    ~HttpRun();

    bool uses_llama() const { return llama_; }
    bool uses_http() const { return http_; }
    // -m names GGUF files (the in-process engine, or the llama-server stagebench starts).
    bool needs_gguf() const { return llama_ || !opts_.url; }
    // This test's model names a GGUF file (else a model on the server at --url).
    bool reads_gguf(const TestConfig& c) const {
        return c.engine != EngineKind::http || !opts_.url;
    }

    // Every test of the run in order: an in-process test, then the HTTP test of the same
    // point. Throws sb::Error(usage) as expand_matrix does.
    std::vector<TestConfig> plan(const MatrixSpec& matrix);

    // Takes the run's engine factory, which from here on gives the servers. With --url:
    // reaches the server through it (sb::Error(input) when it cannot), names the default model
    // in tests that have none, lists server models in doc.models. Without: the factory must
    // have a server program (sb::Error(input) when llama-server is not found). Describes the
    // engines in doc.engines and adds a warning when the server is not on this machine.
    void connect(RunContext& run, std::vector<TestConfig>& tests);

    // Runs one HTTP test (starting or switching the llama-server stagebench starts first,
    // through the factory: EngineFactory::start_server). After connect().
    TestResult run(const TestConfig& config, const SweepHooks& hooks, const Clock& clock = now_ns);

    // Measures one test on the engine its config names, from the run's engine factory (after
    // connect()): the stage sweep (run_test, membw the roofline's bandwidth) on the in-process
    // engine, made on the first such test and kept for the run; or run() above. Then `after`
    // (optional) gets the engine the test ran on and its result, untimed (fidelity's check).
    // Never throws for a failure of the test.
    TestResult measure(const TestConfig& config, const SweepHooks& hooks, const Clock& clock,
                       std::optional<double> membw = std::nullopt,
                       const std::function<void(Engine&, TestResult&)>& after = {});

    // Drops the in-process engine and stops a managed llama-server.
    void stop();

  private:
    struct Managed;
    HttpRunOptions opts_;
    bool llama_ = false, http_ = false;
    std::string server_bin_;
    int n_ctx_ = 0;
    EngineFactory* engines_ = nullptr;  // the run's (connect)
    std::unique_ptr<Engine> engine_;    // --url
    std::unique_ptr<Engine> local_;     // the in-process engine (measure)
    std::unique_ptr<Managed> managed_;
};

}  // namespace sb
