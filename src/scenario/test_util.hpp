#pragma once
// Test-only helpers of the scenario tests: stage results made of chosen samples (the loop's
// statistics), and a runner's environment of scripted engines (the runners end to end).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "engine/fake_engine.hpp"
#include "model/quantizer.hpp"
#include "model/synth.hpp"
#include "scenario/run_context.hpp"

namespace sb::test {

// Nanoseconds in a microsecond, a millisecond, a second: the units of the scripted clocks.
inline constexpr int64_t kUs = 1'000;
inline constexpr int64_t kMs = 1'000'000;
inline constexpr int64_t kS = 1'000'000'000;

// A fresh directory under the temporary folder, removed with everything in it at the end.
class TempDir {
  public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "sb-scenario-XXXXXX").string();
        path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

// A real GGUF file (the "tiny" preset, one layer, f32): the run context inspects the models it
// is given before anything runs, so a runner under test needs a real file even when its engines
// are scripted. Written once per process.
inline const std::string& tiny_gguf() {
    static TempDir dir;
    static const std::string path = [] {
        SynthOptions o;
        o.preset = "tiny";
        o.quant = "f32";
        o.layers = 1;
        o.out_path = dir.file("tiny.gguf");
        o.generator = "stagebench scenario test";
        return write_synthetic_model(o, BuiltinQuantizer()).path;
    }();
    return path;
}

// A runner's environment of scripted engines: every engine it asks for is a FakeEngine on one
// timeline, whose clock is the run's (and a wait of the run moves it on); progress goes to err.
struct RunRig {
    FakeTimeline tl;
    FakeEngineFactory engines{tl};
    std::ostringstream err;
    RunEnv env(const std::string& command = "test") {
        ResultDocument doc;
        doc.command = command;
        RunEnv e(std::move(doc), err);
        e.engines = &engines;
        e.clock = tl.clock();
        e.pause = tl.pause();
        return e;
    }
};

// A prefill stage of n repetitions of `tokens` tokens taking the given durations.
inline StageResult prefill_of(int tokens, const std::vector<int64_t>& durations_ns) {
    StageResult s;
    s.n_tokens = tokens;
    for (int64_t d : durations_ns) {
        s.duration_ns.push_back(d);
        s.tokens_per_s.push_back(tokens * 1e9 / d);
    }
    return s;
}

// A decode stage of `reps` repetitions of n tokens, each ~1 ms (with a little jitter); the
// token at index stall_at (if any) takes stall_ns instead.
inline DecodeResult decode_of(int reps, int n, std::optional<size_t> stall_at, int64_t stall_ns) {
    DecodeResult d;
    d.n_tokens = n;
    for (int r = 0; r < reps; ++r) {
        int64_t total = 0;
        for (int i = 0; i < n; ++i) {
            const size_t idx = d.token_latency_ns.size();
            const int64_t lat =
                stall_at && idx == *stall_at ? stall_ns : 1'000'000 + (i % 7) * 5'000;
            d.token_latency_ns.push_back(lat);
            total += lat;
        }
        d.duration_ns.push_back(total);
        d.token_latency_counts.push_back(n);
        d.tokens_per_s.push_back(n * 1e9 / total);
    }
    return d;
}

}  // namespace sb::test
