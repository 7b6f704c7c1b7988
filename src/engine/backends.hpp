#pragma once
// The ggml backend registry as stagebench uses it: which backends and devices exist, how to
// add RPC servers, and how to make exactly a test's devices available.
//
// llama.cpp builds with loadable backends (GGML_BACKEND_DL) let stagebench run CPU alone and
// CPU + accelerator (BLAS) in one process: accelerator modules are loaded only for the tests
// that name them. With statically linked backends every accelerator is always active and
// `select_devices` reports that as a note.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

struct DeviceInfo {
    std::string name;         // ggml device name: "CPU", "BLAS", "RPC0", "CUDA0"
    std::string description;  // e.g. CPU model, RPC endpoint
    std::string type;         // cpu | gpu | igpu | accel | meta
    std::string backend;      // registry name: "CPU", "BLAS", "RPC[127.0.0.1:50052]"
    std::optional<uint64_t> memory_total_bytes, memory_free_bytes;
    std::optional<std::string> device_id;  // PCI bus id ("0000:c1:00.0") where ggml knows it
    // What the backend said of the device when it started (gpu_device_line): the Vulkan
    // driver's name ("llvmpipe", "NVIDIA", "radv"); the rest of its line as details ("uma: 1 |
    // fp16: 1 | ..." for Vulkan, "compute capability 9.0, VMM: yes" for CUDA).
    std::optional<std::string> driver, details;
};

// A line a GPU backend logs of each device as it starts, read: ggml-vulkan's "ggml_vulkan: 0 =
// llvmpipe (LLVM 15.0.6, 256 bits) (llvmpipe) | uma: 1 | fp16: 1 | ..." (device index, driver
// name, the rest) and ggml-cuda's "  Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0,
// VMM: yes, VRAM: 81079 MiB" (no driver; the rest after the name). nullopt for any other line.
struct GpuDeviceLine {
    std::string device;  // the ggml device name it describes: "Vulkan0", "CUDA0"
    std::optional<std::string> driver;
    std::string details;
};
std::optional<GpuDeviceLine> gpu_device_line(std::string_view text);

// A backend module file found beside libllama.so ("vulkan" -> libggml-vulkan.so) and what
// loading it gave: its devices, or why it could not be loaded or shows none.
struct ModuleInfo {
    std::string name, path;
    bool loaded = false;
    std::vector<std::string> devices;
    std::optional<std::string> note;  // e.g. the loader's error, or why a GPU module has none
};
// Loads every module (as list_devices does) and describes each; empty for a llama.cpp build
// with statically linked backends.
std::vector<ModuleInfo> list_modules();
// "; the vulkan module: no Vulkan GPU found; ..." for each module that offers no device, what
// an "unknown device" error adds (empty when every module offers some).
std::string modules_without_devices();
// For a GPU or NPU device name of a backend ggml knows (CUDA0, Vulkan0, MTL0, SYCL0, ROCm0,
// GPUOpenCL, HTP0, ...) whose module this build's llama.cpp lacks: "; this build's llama.cpp
// has no CUDA module (...): `make cuda` builds it ...", which that error puts first; empty for any
// other name, where the module is there, or with statically linked backends.
std::string missing_module_hint(const std::string& device);

struct BuildInfo {
    std::string llama_tag, llama_commit, llama_lib_dir;
    bool dynamic_backends = false;                // backends are loadable modules
    std::vector<std::string> backends_available;  // modules found (dynamic) or linked (static)
    // The CPU variant module loaded as "cpu" ("armv8.2_1", "haswell") where llama.cpp was built
    // with GGML_CPU_ALL_VARIANTS; nullopt for a single CPU backend.
    std::optional<std::string> cpu_variant;
    // The CPU features that decide which variant runs, as the kernel reports them to this
    // process (aarch64: the hwcaps, in this order: dotprod fp16 sve sve2 i8mm sme); nullopt on
    // other architectures, where they are not read.
    std::optional<std::vector<std::string>> cpu_features;
    std::string system_info;  // llama_print_system_info()
};

// llama.cpp stops the process (ggml_abort) on some failures it cannot report, e.g. an RPC
// server that dies mid-run. The handler receives ggml's one-line message first; it must not
// return normally to llama.cpp's caller (main() installs one that prints the line and exits).
// Pass nullptr to restore ggml's default (message, backtrace, abort).
// The message reaches the handler as one line (llama_text_line).
using FatalHandler = void (*)(const char* message);
void set_fatal_handler(FatalHandler handler);

// Text from llama.cpp (its log, ggml's abort messages, which often end in "\n" or hold
// several lines) as it enters an error line: every line trimmed, blank ones dropped, the rest
// joined with one space. The one place where llama.cpp's text becomes stagebench's.
std::string llama_text_line(std::string_view text);

// Initialises llama.cpp once (idempotent, thread-compatible not thread-safe) and loads the
// CPU backend. Silences llama.cpp's logging unless STAGEBENCH_LLAMA_LOG=1.
void init_backends();

BuildInfo build_info();

// llama.cpp's first error log line since the last call, without the function names in front
// (e.g. "unknown model architecture: 'x'"): the reason behind a call that failed, since its log
// is silenced (unless STAGEBENCH_LLAMA_LOG=1). "" when none. Clears it. Thread-safe.
std::string take_llama_error();
// Every error line of llama.cpp's log since the last call (at most 16, the first first), each
// as llama_reason gives it: what an out-of-memory reason reads (engine/out_of_memory.hpp).
// take_llama_error() is the first of them. Clears them. Thread-safe.
std::vector<std::string> take_llama_errors();
// A line of llama.cpp's log as a reason: llama_text_line, then the function names in front
// taken off ("llama_model_load: error loading model: unknown model architecture: 'x'" ->
// "unknown model architecture: 'x'"), valid UTF-8. Also for a peer's log (llama-server).
std::string llama_reason(std::string text);
// Hands one of llama.cpp's log messages (a ggml_log_level, the text) to take_llama_error()'s
// record: for a component that installs its own log callback (the op profiler).
void record_llama_log(int level, const char* text);

// Where the llama.cpp libraries and the ggml backend modules are: STAGEBENCH_BACKEND_DIR when
// set, else the directory of the libllama.so this process was loaded with ("" if unknown).
std::string llama_library_dir();

// Loads every backend module available (for listing), then returns all devices.
std::vector<DeviceInfo> list_devices();

// Connects to an RPC server "host:port" and registers its devices (named RPC<n>). Before
// llama.cpp's client touches it (which stops the process on a refused connection or a
// malformed reply, and waits forever for a silent server), the server is probed: a TCP connect
// and the RPC protocol's hello and device count, each wait bounded by timeout_ms. Throws
// sb::Error(input) with one line naming the endpoint when it is no IPv4 host:port (llama.cpp's
// client speaks IPv4 only: an IPv6 address, bare or in brackets, is refused), the server is
// unreachable, answers
// nothing in time, closes the connection, sends something that is not the protocol, speaks
// another protocol version, or offers no device. llama.cpp's own registration that follows (a
// few round trips) must end within rpc_setup_budget_s() (kRpcSetupBudgetS unless
// STAGEBENCH_RPC_SETUP_S says otherwise), else the stage watchdog ends the process as bad input
// (core/watchdog.hpp, SetupBudget): a server that passed the probe and then stopped answering.
inline constexpr double kRpcSetupBudgetS = 15;
std::vector<DeviceInfo> add_rpc_server(const std::string& endpoint, int timeout_ms = 3000);

// The budget of an RPC server's registration, in seconds: env, the value of the environment
// variable STAGEBENCH_RPC_SETUP_S (null or empty: kRpcSetupBudgetS), a decimal number of
// seconds more than 0 and at most 86400. Throws sb::Error(input), one line, for anything else.
double rpc_setup_budget_s(const char* env);

// The RPC servers ("host:port") behind a device set ("CPU+RPC0"), in order, each once; empty
// when it names no device of a server added with add_rpc_server.
std::vector<std::string> rpc_endpoints_of(const std::string& device_set);

// One line for a test that llama.cpp stopped (see set_fatal_handler) while it ran on
// device_set, doing activity ("prefill", "" when unknown): for a test on RPC devices it names
// each server and whether it went away or still answers the RPC hello (each wait at most
// 2 s), then llama.cpp's message without its source location. A crash (core/crash.hpp's
// marker in front) is "crashed during prefill: segmentation fault (SIGSEGV) in ...". Touches
// no llama.cpp state, so it is safe while llama.cpp is stopping.
std::string describe_llama_stop(const std::string& llama_message, const std::string& device_set,
                                const std::string& activity);

struct DeviceSelection {
    std::vector<std::string> offload;  // devices that receive layers (GPU-like), in order
    std::vector<std::string> active;   // every device that will run ops, host CPU last
    std::vector<std::string> notes;    // e.g. accelerators that could not be disabled
};

// Makes the registry match `devices` (see LoadSpec::devices): loads the named accelerator
// modules and unloads the others (dynamic builds), except modules held by a live model (see
// hold_devices): those stay, and a note says that this selection uses them too. Throws
// sb::Error(input) naming the available devices when one is unknown.
DeviceSelection select_devices(const std::vector<std::string>& devices);

// A model placed with sel is alive: its accelerator modules must not be unloaded under it
// (their code runs its ops). Every hold_devices is paired with a release_devices.
void hold_devices(const DeviceSelection& sel);
void release_devices(const DeviceSelection& sel);

// The accelerator devices ("BLAS") among devices: llama.cpp gives every context all the
// accelerators loaded when it is created, so two models alive at once need the one that names
// none created first.
std::vector<std::string> named_accelerators(const std::vector<std::string>& devices);

}  // namespace sb

namespace sb {
// The devices of one test's device set, "BLAS+RPC0" -> {"BLAS", "RPC0"}; an empty spec is
// {"CPU"}. Empty names between separators are kept, so check_device_names rejects them.
std::vector<std::string> split_device_set(const std::string& spec);

// Throws sb::Error(input) naming the available devices when any name is unknown ("CPU" is
// always known). Loads every backend module to know their devices.
void check_device_names(const std::vector<std::string>& names);
}  // namespace sb
