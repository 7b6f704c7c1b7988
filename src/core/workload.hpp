#pragma once
// A workload's placement and execution settings: the model, the devices, the layers offloaded,
// the batch sizes, the threads, flash attention and the KV cache types. One type for every
// option struct that names how a test runs: a test's config (TestConfig, core/result.hpp) and
// an engine's load parameters (LoadSpec, engine/engine.hpp) are a Workload and more, the
// scenarios' options hold one, and one function makes the engine's load parameters from it
// (load_spec_for, engine/workload.hpp). In JSON its fields are written flat, where they were.
#include <string>

#include "core/device_set.hpp"
#include "core/enums.hpp"

namespace sb {

struct Workload {
    std::string model_path;
    // e.g. "CPU", "BLAS", "RPC0+CPU": the host CPU is always present; accelerator devices
    // (BLAS) are enabled only when named; GPU-like devices (GPU, RPC) receive the offloaded
    // layers. A hybrid's test writes its placement "A>B" (scenario/hybrid.hpp), a server "HTTP".
    DeviceSet devices = "CPU";
    int n_gpu_layers = 99;  // layers offloaded to the GPU-like devices (when any)
    int n_batch = 2048;     // logical batch: prefill is submitted in chunks of this many tokens
    int n_ubatch = 512;     // physical batch
    int n_threads = 0;      // 0 = default_thread_count() (a test's config holds it resolved)
    FlashAttn flash_attn = FlashAttn::automatic;
    KvType type_k = KvType::f16;
    KvType type_v = KvType::f16;

    bool operator==(const Workload&) const = default;
};

// Where the two stages of a hybrid run: prefill on one device set, decode on another after the
// sequence state moved. A test of the hybrid names it "A>B" (str()).
struct Placement {
    DeviceSet prefill, decode;
    std::string str() const { return prefill.str() + ">" + decode.str(); }
    // Both sets' names joined with '+' (the devices the test touches, e.g. to name the RPC
    // servers behind them).
    DeviceSet all() const { return DeviceSet(prefill.str() + "+" + decode.str()); }
    bool operator==(const Placement&) const = default;
};

}  // namespace sb
