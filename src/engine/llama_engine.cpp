#include "engine/llama_engine.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/sysinfo.hpp"
#include "core/watchdog.hpp"
#include "engine/backends.hpp"
#include "engine/llama_params.hpp"
#include "engine/out_of_memory.hpp"
#include "engine/tokenizer_check.hpp"
#include "engine/workload.hpp"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"
#ifdef SB_HAVE_LLAMA_MEMORY_BREAKDOWN
#include "sb_llama_ext.h"
#endif

namespace sb {
namespace {

bool same_placement(const LoadSpec& a, const LoadSpec& b) {
    // As the registry reads them: "" is CPU.
    return a.model_path == b.model_path &&
           split_device_set(a.devices.str()) == split_device_set(b.devices.str()) &&
           a.n_gpu_layers == b.n_gpu_layers;
}

// llama.cpp's abort callback: Ctrl-C ends a long graph (a prefill of 100k tokens, a KV fill)
// at its next node, llama_decode returning 2, instead of after the whole stage.
bool abort_on_interrupt(void*) {
    return interrupt_requested();
}

// llama_decode's failure rc during what, as an error: an abort for Ctrl-C says so.
Error decode_failure(int rc, const std::string& what) {
    if (rc == 2 && interrupt_requested())
        return runtime_error("interrupted (Ctrl-C) during " + what);
    return runtime_error("llama_decode failed during " + what + " (code " + std::to_string(rc) +
                         ")");
}

// Why llama.cpp's call failed, from its error lines since the last take: a device that ran out
// of memory is said as such (engine/out_of_memory.hpp), anything else is its first line.
std::string failure_reason(AllocStep step) {
    const std::vector<std::string> errors = take_llama_errors();
    if (auto oom = out_of_memory_reason(errors, step))
        return *oom;
    return errors.empty() ? std::string() : errors.front();
}

bool same_context(const LoadSpec& a, const LoadSpec& b) {
    return a.n_ctx == b.n_ctx && a.n_batch == b.n_batch && a.n_ubatch == b.n_ubatch &&
           a.n_threads == b.n_threads && a.flash_attn == b.flash_attn && a.type_k == b.type_k &&
           a.type_v == b.type_v && a.eval_callback == b.eval_callback &&
           a.eval_user_data == b.eval_user_data;
}

}  // namespace

struct LlamaEngine::Impl {
    LlamaEngineOptions options;
    LoadSpec spec;
    bool have_spec = false;
    llama_model* model = nullptr;
    llama_context* ctx = nullptr;
    ggml_threadpool* threadpool = nullptr;
    DeviceSelection selection;
    std::vector<std::string> notes;
    std::optional<HugePageAdvice> huge_pages;  // the model's load, options.huge_pages
    // The KV state at a given depth, so that decode at depth d starts without re-prefilling.
    int cached_depth = -1;
    std::vector<uint8_t> cached_state;
    std::vector<llama_token> scratch;
    bool have_logits = false;  // a prefill or decode step computed logits since the last reset
    // StageGuard factor of this placement's calls: 1 with RPC devices, 0 (no deadline) without.
    double deadline_factor = 0;

    using tp_new_t = ggml_threadpool* (*)(ggml_threadpool_params*);
    using tp_free_t = void (*)(ggml_threadpool*);
    tp_new_t tp_new = nullptr;
    tp_free_t tp_free = nullptr;

    void free_context() {
        if (ctx)
            llama_free(ctx);
        ctx = nullptr;
        if (threadpool && tp_free)
            tp_free(threadpool);
        threadpool = nullptr;
        have_logits = false;
        cached_depth = -1;
        cached_state.clear();
    }
    bool holding = false;  // selection's accelerator modules are held for this model
    void free_model() {
        free_context();
        if (model)
            llama_model_free(model);
        model = nullptr;
        huge_pages.reset();
        if (holding)
            release_devices(selection);
        holding = false;
    }
};

LlamaEngine::LlamaEngine(LlamaEngineOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = options;
    init_backends();
}

LlamaEngine::~LlamaEngine() {
    impl_->free_model();
}

EngineCaps LlamaEngine::caps() const {
    EngineCaps c{"llama.cpp", /*in_process=*/true, /*kv_depth_cache=*/true,
                 /*thread_control=*/true, /*state_transfer=*/true};
    c.logits = true;
    return c;
}

const llama_model* LlamaEngine::model_handle() const {
    return impl_->model;
}

void LlamaEngine::unload() {
    impl_->free_model();
    impl_->have_spec = false;
}

void LlamaEngine::load(const LoadSpec& spec) {
    Impl& m = *impl_;
    const bool reuse_model = m.have_spec && m.model && same_placement(m.spec, spec);
    const bool reuse_ctx = reuse_model && m.ctx && same_context(m.spec, spec);
    if (reuse_ctx)
        return;
    // Only RPC devices wait without bound (core/watchdog.hpp): they get deadlines; Ctrl-C is
    // watched for every device. Loading sends the weights over the network: 10x the budget.
    m.deadline_factor = rpc_endpoints_of(spec.devices.str()).empty() ? 0 : 1;
    StageGuard guard("loading the model", 10 * m.deadline_factor);
    m.free_context();
    if (!reuse_model) {
        m.free_model();
        m.have_spec = false;
        m.selection = select_devices(split_device_set(spec.devices.str()));
        hold_devices(m.selection);
        m.holding = true;
        m.notes = m.selection.notes;
        std::vector<ggml_backend_dev_t> devs;
        for (const auto& name : m.selection.offload)
            devs.push_back(ggml_backend_dev_by_name(name.c_str()));
        devs.push_back(nullptr);
        llama_model_params mp = llama_model_default_params();
        mp.devices = devs.data();
        mp.n_gpu_layers = m.selection.offload.empty() ? 0 : spec.n_gpu_layers;
        if (!m.options.use_mmap)
            mp.load_mode = LLAMA_LOAD_MODE_NONE;  // read into memory (llama.cpp's --no-mmap)
        // llama.cpp calls its progress callback before reading each tensor, the first time
        // once its buffers are allocated and before any weight touches them.
        HugePageAdvisor advisor;
        if (m.options.huge_pages) {
            advisor.snapshot();
            mp.progress_callback = [](float, void* advisor) {
                static_cast<HugePageAdvisor*>(advisor)->advise_new();
                return true;
            };
            mp.progress_callback_user_data = &advisor;
        }
        take_llama_error();
        m.model = llama_model_load_from_file(spec.model_path.c_str(), mp);
        if (m.options.huge_pages)
            m.huge_pages = advisor.advice();
        if (!m.model) {
            const std::string why = failure_reason(AllocStep::load_model);
            throw input_error(
                "llama.cpp could not load model '" + spec.model_path + "'" +
                (why.empty() ? " (set STAGEBENCH_LLAMA_LOG=1 to see why)" : ": " + why));
        }
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = spec.n_ctx;
    cp.n_batch = spec.n_batch;
    cp.n_ubatch = spec.n_ubatch;
    // Not llama.cpp's context default (4), which oversubscribes machines of fewer cores.
    const int threads = threads_or_default(spec.n_threads);
    // ggml's thread pool holds GGML_MAX_N_THREADS slots; more would write past them.
    if (threads > GGML_MAX_N_THREADS)
        throw usage_error("-t " + std::to_string(threads) + ": ggml runs at most " +
                          std::to_string(GGML_MAX_N_THREADS) + " CPU threads");
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = flash_attn_type(spec.flash_attn);
    cp.type_k = cache_type(spec.type_k);
    cp.type_v = cache_type(spec.type_v);
    cp.no_perf = true;
    cp.cb_eval = spec.eval_callback;
    cp.cb_eval_user_data = spec.eval_user_data;
    take_llama_error();
    m.ctx = llama_init_from_model(m.model, cp);
    if (!m.ctx) {
        const std::string why = failure_reason(AllocStep::create_context);
        throw input_error("llama.cpp could not create a context (n_ctx " +
                          std::to_string(spec.n_ctx) + ", batch " + std::to_string(spec.n_batch) +
                          ", ubatch " + std::to_string(spec.n_ubatch) + ")" +
                          (why.empty() ? "" : ": " + why));
    }
    // A persistent thread pool, as llama-bench attaches: without it the CPU backend would
    // create and join threads around every graph, which is not how a serving engine runs.
    if (ggml_backend_reg_t cpu = ggml_backend_reg_by_name("CPU")) {
        m.tp_new = reinterpret_cast<Impl::tp_new_t>(
            ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new"));
        m.tp_free = reinterpret_cast<Impl::tp_free_t>(
            ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_free"));
    }
    if (m.tp_new) {
        ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        m.threadpool = m.tp_new(&tpp);
        if (!m.threadpool)
            throw runtime_error("cannot create a CPU thread pool of " + std::to_string(threads) +
                                " threads");
        llama_attach_threadpool(m.ctx, m.threadpool, nullptr);
    }
    llama_set_n_threads(m.ctx, threads, threads);
    llama_set_abort_callback(m.ctx, abort_on_interrupt, nullptr);
    m.spec = spec;
    m.have_spec = true;
}

void LlamaEngine::reset() {
    if (!impl_->ctx)
        throw runtime_error("engine has no context (load() first)");
    StageGuard guard("clearing the KV cache", impl_->deadline_factor);
    llama_memory_clear(llama_get_memory(impl_->ctx), false);
    impl_->have_logits = false;
}

void LlamaEngine::fill_to_depth(int n_depth, uint64_t seed) {
    Impl& m = *impl_;
    StageGuard guard("filling the KV cache", m.deadline_factor * std::max(1.0, n_depth / 512.0));
    reset();
    if (n_depth <= 0)
        return;
    if (m.cached_depth == n_depth &&
        llama_state_seq_set_data(m.ctx, m.cached_state.data(), m.cached_state.size(), 0) != 0)
        return;
    prefill(sequence_tokens(n_depth, n_vocab(), seed, bos_token()));
    m.cached_state.resize(llama_state_seq_get_size(m.ctx, 0));
    llama_state_seq_get_data(m.ctx, m.cached_state.data(), m.cached_state.size(), 0);
    m.cached_depth = n_depth;
}

StageTimes LlamaEngine::prefill(std::span<const int32_t> tokens) {
    Impl& m = *impl_;
    if (!m.ctx)
        throw runtime_error("engine has no context (load() first)");
    m.scratch.assign(tokens.begin(), tokens.end());
    const int n = static_cast<int>(m.scratch.size());
    // A budget per 512 prompt tokens: the first prefill has no earlier one to scale from.
    StageGuard guard("prefill", m.deadline_factor * std::max(1.0, n / 512.0));
    const int n_batch = m.spec.n_batch;
    StageTimes t;
    t.start_ns = now_ns();
    for (int done = 0; done < n;) {
        const int k = std::min(n - done, n_batch);
        const int rc = llama_decode(m.ctx, llama_batch_get_one(m.scratch.data() + done, k));
        if (rc == 2 && interrupt_requested())
            throw decode_failure(rc, "prefill");
        if (rc != 0)
            throw runtime_error("llama_decode failed during prefill (code " + std::to_string(rc) +
                                ") at token " + std::to_string(done));
        done += k;
    }
    llama_synchronize(m.ctx);
    t.end_ns = now_ns();
    m.have_logits = n > 0;
    return t;
}

int64_t LlamaEngine::decode_step(int32_t token) {
    Impl& m = *impl_;
    llama_token tok = token;
    StageGuard guard("decode", m.deadline_factor);
    const int rc = llama_decode(m.ctx, llama_batch_get_one(&tok, 1));
    if (rc != 0)
        throw decode_failure(rc, "decode");
    llama_synchronize(m.ctx);
    const int64_t t = now_ns();
    m.have_logits = true;
    return t;
}

std::span<const float> LlamaEngine::last_logits() const {
    const Impl& m = *impl_;
    if (!m.ctx || !m.have_logits)
        throw runtime_error(
            "no logits: nothing was decoded since the context was created or reset");
    const float* logits = llama_get_logits_ith(m.ctx, -1);
    if (!logits)
        throw runtime_error("llama.cpp has no logits for the last decoded token");
    return {logits, static_cast<size_t>(n_vocab())};
}

std::vector<int32_t> LlamaEngine::tokenize(const std::string& text, bool add_special) const {
    if (!impl_->model)
        throw runtime_error("engine has no model (load() first)");
    const llama_vocab* v = llama_model_get_vocab(impl_->model);
    // What llama.cpp's tokenizer asserts on (it would end the process) is bad input.
    if (auto why = tokenizer_fault(impl_->model))
        throw input_error("'" + impl_->spec.model_path + "': " + *why);
    if (add_special && llama_vocab_get_add_eos(v))
        throw input_error("'" + impl_->spec.model_path +
                          "': its vocabulary appends an EOS to every text, which perplexity "
                          "cannot score");
    if (text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2))
        throw input_error("the text is too large to tokenize (" + std::to_string(text.size()) +
                          " bytes)");
    const auto len = static_cast<int32_t>(text.size());
    std::vector<llama_token> out(static_cast<size_t>(len) + 2);
    int32_t n = llama_tokenize(v, text.data(), len, out.data(), static_cast<int32_t>(out.size()),
                               add_special, /*parse_special=*/false);
    if (n < 0) {  // more tokens than bytes + 2: -n is the count needed
        out.resize(static_cast<size_t>(-n));
        n = llama_tokenize(v, text.data(), len, out.data(), static_cast<int32_t>(out.size()),
                           add_special, false);
    }
    if (n < 0)
        throw runtime_error("llama.cpp could not tokenize the text");
    out.resize(static_cast<size_t>(n));
    return {out.begin(), out.end()};
}

void LlamaEngine::evaluate(std::span<const int32_t> tokens, int first_output,
                           std::vector<float>& out) {
    Impl& m = *impl_;
    if (!m.ctx)
        throw runtime_error("engine has no context (load() first)");
    reset();
    const int n = static_cast<int>(tokens.size());
    const int n_batch = m.spec.n_batch;
    const size_t nv = static_cast<size_t>(n_vocab());
    StageGuard guard("evaluating logits", m.deadline_factor * std::max(1.0, n / 512.0));
    llama_batch batch = llama_batch_init(std::min(n, n_batch), 0, 1);
    struct Free {
        llama_batch& b;
        ~Free() { llama_batch_free(b); }
    } free_batch{batch};
    for (int done = 0; done < n;) {
        const int k = std::min(n - done, n_batch);
        batch.n_tokens = k;
        int n_out = 0;
        for (int i = 0; i < k; ++i) {
            const int pos = done + i;
            batch.token[i] = tokens[static_cast<size_t>(pos)];
            batch.pos[i] = pos;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = pos >= first_output ? 1 : 0;
            n_out += batch.logits[i];
        }
        const int rc = llama_decode(m.ctx, batch);
        if (rc == 2 && interrupt_requested())
            throw decode_failure(rc, "the logits' evaluation");
        if (rc != 0)
            throw runtime_error("llama_decode failed while evaluating logits (code " +
                                std::to_string(rc) + ") at token " + std::to_string(done));
        if (n_out > 0) {
            const float* l = llama_get_logits(m.ctx);
            if (!l)
                throw runtime_error("llama.cpp returned no logits");
            out.insert(out.end(), l, l + static_cast<size_t>(n_out) * nv);
        }
        done += k;
    }
    llama_synchronize(m.ctx);
    m.have_logits = n > 0 && first_output < n;
}

int32_t LlamaEngine::n_vocab() const {
    return llama_vocab_n_tokens(llama_model_get_vocab(impl_->model));
}

std::optional<int32_t> LlamaEngine::bos_token() const {
    const llama_vocab* v = llama_model_get_vocab(impl_->model);
    // A vocabulary that adds a BOS it does not have (a T5 one without its id) has none to put
    // first: llama_decode refuses the id -1.
    if (!llama_vocab_get_add_bos(v) || llama_vocab_bos(v) == LLAMA_TOKEN_NULL)
        return std::nullopt;
    return llama_vocab_bos(v);
}

std::vector<std::string> LlamaEngine::active_backends() const {
    return impl_->selection.active;
}

std::vector<BufferMemory> LlamaEngine::memory() const {
    std::vector<BufferMemory> out;
#ifdef SB_HAVE_LLAMA_MEMORY_BREAKDOWN
    if (!impl_->ctx)
        return out;
    // Keyed by buffer type: two types of one name (a backend's and another's) are one entry.
    std::map<std::string, BufferMemory> by_name;
    for (const auto& [buft, mb] : llama_get_memory_breakdown(impl_->ctx)) {
        if (mb.total() == 0)
            continue;
        BufferMemory& m = by_name[ggml_backend_buft_name(buft)];
        m.buffer = ggml_backend_buft_name(buft);
        m.model_bytes += mb.model;
        m.context_bytes += mb.context;
        m.compute_bytes += mb.compute;
    }
    for (auto& [name, m] : by_name)
        out.push_back(std::move(m));
#endif
    return out;
}

std::optional<uint64_t> LlamaEngine::weight_bytes() const {
    if (!impl_->model)
        return std::nullopt;
    return llama_model_size(impl_->model);
}

std::optional<uint64_t> LlamaEngine::n_params() const {
    if (!impl_->model)
        return std::nullopt;
    return llama_model_n_params(impl_->model);
}

namespace {
int head_dim_of(const llama_model* model) {
    const int n_head = llama_model_n_head(model);
    int head_dim = n_head > 0 ? llama_model_n_embd(model) / n_head : 0;
    char arch[64] = {0}, buf[64] = {0};
    if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch) > 0) {
        const std::string key = std::string(arch) + ".attention.key_length";
        if (llama_model_meta_val_str(model, key.c_str(), buf, sizeof buf) > 0)
            head_dim = std::atoi(buf);
    }
    return head_dim;
}
}  // namespace

std::optional<ModelShape> LlamaEngine::shape() const {
    const llama_model* model = impl_->model;
    if (!model)
        return std::nullopt;
    ModelShape s;
    s.n_layer = llama_model_n_layer(model);
    s.n_embd = llama_model_n_embd(model);
    s.n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    s.n_attn = llama_model_n_head(model) * head_dim_of(model);
    return s;
}

std::optional<double> LlamaEngine::kv_bytes_read(int depth) const {
    const llama_model* model = impl_->model;
    if (!model)
        return std::nullopt;
    const int n_layer = llama_model_n_layer(model);
    const int n_head_kv = llama_model_n_head_kv(model);
    const int head_dim = head_dim_of(model);
    const double bytes_k = ggml_type_size(cache_type(impl_->spec.type_k)) /
                           static_cast<double>(ggml_blck_size(cache_type(impl_->spec.type_k)));
    const double bytes_v = ggml_type_size(cache_type(impl_->spec.type_v)) /
                           static_cast<double>(ggml_blck_size(cache_type(impl_->spec.type_v)));
    return static_cast<double>(depth) * n_layer * n_head_kv * head_dim * (bytes_k + bytes_v);
}

size_t LlamaEngine::save_state(std::vector<uint8_t>& buf) {
    Impl& m = *impl_;
    if (!m.ctx)
        throw runtime_error("engine has no context (load() first)");
    StageGuard guard("saving the sequence state", m.deadline_factor);
    // The size is asked every time: it grows with the tokens in the cache.
    const size_t size = llama_state_seq_get_size(m.ctx, 0);
    buf.resize(size);
    const size_t written = llama_state_seq_get_data(m.ctx, buf.data(), buf.size(), 0);
    if (written == 0 || written > size)
        throw runtime_error("llama.cpp could not save the sequence state (" + std::to_string(size) +
                            " bytes expected)");
    buf.resize(written);
    return written;
}

void LlamaEngine::restore_state(std::span<const uint8_t> state) {
    Impl& m = *impl_;
    if (!m.ctx)
        throw runtime_error("engine has no context (load() first)");
    StageGuard guard("restoring the sequence state", m.deadline_factor);
    llama_memory_clear(llama_get_memory(m.ctx), false);
    m.have_logits = false;
    if (llama_state_seq_set_data(m.ctx, state.data(), state.size(), 0) == 0)
        throw runtime_error("llama.cpp refused the sequence state (" +
                            std::to_string(state.size()) +
                            " bytes): the contexts differ in model or KV cache types");
    // Transports may queue the writes (the RPC client does): the state is moved only once the
    // device has it.
    llama_synchronize(m.ctx);
}

std::vector<std::string> LlamaEngine::notes() const {
    return impl_->notes;
}

std::optional<HugePageAdvice> LlamaEngine::huge_pages() const {
    return impl_->huge_pages;
}

void with_llama_vocab(const std::string& model_path,
                      const std::function<void(const llama_model*)>& use) {
    init_backends();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    take_llama_error();
    std::unique_ptr<llama_model, void (*)(llama_model*)> m(
        llama_model_load_from_file(model_path.c_str(), mp), llama_model_free);
    if (!m) {
        const std::string why = take_llama_error();
        throw input_error("llama.cpp could not load model '" + model_path + "'" +
                          (why.empty() ? " (set STAGEBENCH_LLAMA_LOG=1 to see why)" : ": " + why));
    }
    if (use)
        use(m.get());
}

void check_llama_accepts(const std::string& model_path) {
    with_llama_vocab(model_path, {});
}

}  // namespace sb
