#pragma once
// `run --fidelity` (and `hybrid --fidelity`): every test's logits beside its speed. Before the
// first test, each reference the tests need (their model, or --reference-model, on the
// reference devices with f16 KV; one per model, -p, -n, seed and thread count) runs the
// teacher-forced sequence of `fidelity` (scenario/fidelity_capture.hpp) and keeps its logits;
// after a test's timed repetitions, on the engine still loaded with the test, the same
// sequence runs untimed from an empty cache and its prefill and decode positions are compared
// with the reference's. The capture never sits inside a timed stage; it adds one prefill and
// n_gen decode steps per test to the run's wall time.
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/result.hpp"
#include "engine/engine_factory.hpp"
#include "scenario/fidelity_capture.hpp"
#include "scenario/progress.hpp"

namespace sb {

struct RunFidelityOptions {
    bool enabled = false;
    DeviceSet reference_devices = "CPU";         // --reference
    std::optional<std::string> reference_model;  // --reference-model (default: the test's)
    int top_k = 10;                              // --top-k
};

class RunFidelity {
  public:
    explicit RunFidelity(RunFidelityOptions o) : o_(std::move(o)) {}
    bool enabled() const { return o_.enabled; }

    // The references of these tests (in-process tests only), captured now on an in-process
    // engine from engines. Throws sb::Error(usage/input) when a reference cannot run: devices
    // that do not exist, a reference model llama.cpp refuses, a vocabulary that differs from a
    // test model's.
    void prepare(const std::vector<TestConfig>& tests, EngineFactory& engines, Progress& progress);

    // The test's distance from its reference, captured on e (loaded with the test). A capture
    // that fails is recorded in r.fidelity's error; the timing stands.
    void check(Engine& e, TestResult& r) const;

    // The same for a sequence split between two engines (hybrid): prefill on pre, decode on dec
    // after the state transfer.
    void check_transferred(Engine& pre, Engine& dec, TestResult& r) const;

  private:
    using Key = std::tuple<std::string, int, int, uint64_t, int>;  // model, p, n, seed, threads
    Key key_of(const TestConfig& c) const;
    struct Reference {
        std::string label;
        std::vector<int32_t> tokens;
        LogitCapture logits;
    };
    const Reference* reference_of(const TestConfig& c, TestResult& r) const;
    // The test's capture (by capture, given the reference's tokens) against its reference,
    // into r.fidelity; a vocabulary (vocab_of's, read only for a test that ran) other than the
    // reference's or a failed capture is its error.
    void measure(const Engine& vocab_of, TestResult& r,
                 const std::function<LogitCapture(const std::vector<int32_t>&)>& capture) const;
    RunFidelityOptions o_;
    std::map<Key, Reference> refs_;
};

}  // namespace sb
