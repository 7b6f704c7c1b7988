#include "profile/ggml_replayer.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace sb {

namespace {

using tp_new_t = ggml_threadpool* (*)(ggml_threadpool_params*);
using tp_free_t = void (*)(ggml_threadpool*);
using set_threads_t = void (*)(ggml_backend_t, int);
using set_tp_t = void (*)(ggml_backend_t, ggml_threadpool*);

// One dispatch with no work on a backend: the least call of a one-element ADD (a 32x32
// mat-mul on backends without ADD, e.g. BLAS) less its op time. The least, as the op time is
// taken from minima too: on a loaded machine the median call of a two-thread pool waits for
// a preempted thread (48 ms measured here under a load of 14 on 2 cores), which no dispatch
// inside the real graph pays as such.
std::optional<double> measure_dispatch(ggml_backend_t be, ReplayConfig cfg, ReplayPool* pool) {
    NodeDesc add;
    add.op = GGML_OP_ADD;
    add.op_desc = "ADD";
    add.dst = contiguous_desc("dispatch_probe", GGML_TYPE_F32, {1, 1, 1, 1});
    add.srcs = {contiguous_desc("a", GGML_TYPE_F32, {1, 1, 1, 1}),
                contiguous_desc("b", GGML_TYPE_F32, {1, 1, 1, 1})};
    NodeDesc mm;
    mm.op = GGML_OP_MUL_MAT;
    mm.op_desc = "MUL_MAT";
    mm.dst = contiguous_desc("dispatch_probe", GGML_TYPE_F32, {32, 32, 1, 1});
    mm.srcs = {contiguous_desc("a", GGML_TYPE_F32, {32, 32, 1, 1}),
               contiguous_desc("b", GGML_TYPE_F32, {32, 32, 1, 1})};
    cfg.dispatch_ns.reset();  // what is being measured
    for (const NodeDesc* nd : {&add, &mm}) {
        ReplayResult r = replay_op(*nd, be, false, cfg, pool);
        // Alone only (a GPU): the no-work op's whole round trip is the dispatch.
        if (cfg.alone_only && nd == &add && r.isolated_min_ns)
            return *r.isolated_min_ns;
        if (!cfg.alone_only && r.isolated_min_ns && r.op_ns)
            return std::max(0.0, *r.isolated_min_ns - *r.op_ns);
    }
    return std::nullopt;
}

// Activation conversion inside a mat-mul: the op with F32 activations (converted by the
// kernel) against the same op with activations already in the kernel's type. Both replayed
// with fresh buffers, so repacked CPU weights are timed on the plain kernel.
std::optional<double> measure_conversion(const NodeDesc& nd, ggml_backend_t be,
                                         const ReplayConfig& cfg, ReplayPool* pool) {
    if (nd.op != GGML_OP_MUL_MAT && nd.op != GGML_OP_MUL_MAT_ID)
        return std::nullopt;
    if (nd.srcs.size() < 2 || !nd.srcs[0] || !nd.srcs[1])
        return std::nullopt;
    const TensorDesc& w = *nd.srcs[0];
    const TensorDesc& x = *nd.srcs[1];
    if (x.type != GGML_TYPE_F32 || !x.contiguous)
        return std::nullopt;
    const auto vt = activation_type_for(w.type);
    if (!vt || *vt == GGML_TYPE_F32 || x.ne[0] % ggml_blck_size(*vt) != 0)
        return std::nullopt;
    NodeDesc pre = nd;
    pre.srcs[1] = contiguous_desc(x.name, *vt, x.ne);
    ReplayResult a = replay_op(nd, be, false, cfg, pool);
    ReplayResult b = replay_op(pre, be, false, cfg, pool);
    if (!a.op_ns || !b.op_ns)
        return std::nullopt;
    return std::max(0.0, *a.op_ns - *b.op_ns);
}

class GgmlOpReplayer final : public OpReplayer {
  public:
    explicit GgmlOpReplayer(std::shared_ptr<NodeStore> store) : store_(std::move(store)) {}
    ~GgmlOpReplayer() override {
        pool_.reset();  // its buffers before the backends they came from
        for (auto& [name, b] : backends_)
            ggml_backend_free(b);
        if (tp_ && tp_free_)
            tp_free_(tp_);
    }
    GgmlOpReplayer(const GgmlOpReplayer&) = delete;
    GgmlOpReplayer& operator=(const GgmlOpReplayer&) = delete;

    void open(const ReplaySetup& setup) override;
    bool can_replay_on(const std::string& device) const override {
        return backends_.count(device) > 0;
    }
    bool fixed_dispatch(const std::string& device) const override {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(device.c_str());
        if (!dev)
            return false;
        const auto type = ggml_backend_dev_type(dev);
        return type == GGML_BACKEND_DEVICE_TYPE_CPU || type == GGML_BACKEND_DEVICE_TYPE_ACCEL;
    }
    bool in_situ_only(const std::string& device) const override { return local_gpu(device); }
    OpTime replay(const CapturedNode& n, const std::string& device, bool keep_buffers) override;
    std::vector<std::string> unusable_inputs(const CapturedNode& n,
                                             const std::string& device) const override;
    std::optional<double> dispatch_ns(const std::string& device) override;
    std::optional<double> conversion_ns(const CapturedNode& n, const std::string& device,
                                        bool* plain_buffers) override;

  private:
    const NodeDesc* desc(const CapturedNode& n) const {
        return n.id < store_->nodes.size() ? &store_->nodes[n.id] : nullptr;
    }

    std::shared_ptr<NodeStore> store_;
    ReplayConfig cfg_;
    std::unique_ptr<ReplayPool> pool_ = std::make_unique<ReplayPool>();
    ggml_threadpool* tp_ = nullptr;
    tp_free_t tp_free_ = nullptr;
    std::map<std::string, ggml_backend_t> backends_;  // device name -> backend
    std::map<std::string, OpTime> cache_;             // device|keep|signature -> time
    std::map<std::string, std::optional<double>> dispatch_, conversion_;

    // A GPU of this machine (Vulkan0, CUDA0): GPU-like, and not a server behind ggml-rpc
    // (whose devices say GPU too).
    static bool local_gpu(const std::string& device) {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(device.c_str());
        if (!dev)
            return false;
        const auto type = ggml_backend_dev_type(dev);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
        return (type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) &&
               !(reg && std::strncmp(ggml_backend_reg_name(reg), "RPC", 3) == 0);
    }
};

void GgmlOpReplayer::open(const ReplaySetup& setup) {
    cfg_.copies = std::max(1, setup.copies);
    cfg_.input_budget_bytes = static_cast<size_t>(setup.cold_weight_bytes);
    cfg_.min_spent_ns = setup.min_spent_ns;
    pool_->set_huge_pages(setup.huge_pages);
    // One CPU thread pool for the replays, made once llama.cpp's is gone.
    if (ggml_backend_reg_t cpu_reg = ggml_backend_reg_by_name("CPU"); cpu_reg && !tp_) {
        auto tp_new = reinterpret_cast<tp_new_t>(
            ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_new"));
        tp_free_ = reinterpret_cast<tp_free_t>(
            ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_free"));
        if (tp_new) {
            ggml_threadpool_params tpp = ggml_threadpool_params_default(setup.threads);
            tp_ = tp_new(&tpp);
            if (!tp_)
                throw runtime_error("cannot create a CPU thread pool of " +
                                    std::to_string(setup.threads) + " threads");
        }
    }
    for (const auto& name : setup.devices) {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
        if (!dev || backends_.count(name))
            continue;
        ggml_backend_t be = ggml_backend_dev_init(dev, nullptr);
        if (!be)
            continue;
        if (ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev)) {
            if (auto set_n = reinterpret_cast<set_threads_t>(
                    ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads")))
                set_n(be, setup.threads);
            if (tp_ && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU)
                if (auto set_tp = reinterpret_cast<set_tp_t>(
                        ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool")))
                    set_tp(be, tp_);
        }
        backends_[name] = be;
    }
}

OpTime GgmlOpReplayer::replay(const CapturedNode& n, const std::string& device, bool keep_buffers) {
    // Replays of real nodes on ggml-vulkan corrupted the heap on Mesa's lavapipe (flash
    // attention on views of the KV cache among them; not isolated), and a GPU's op time in situ
    // needs none: a GPU's nodes are not replayed (in_situ_only).
    if (local_gpu(device))
        return {std::nullopt, std::nullopt,
                "not replayed on a GPU (" + device +
                    "): its op times are traced calls less a no-work round trip"};
    auto be = backends_.find(device);
    if (be == backends_.end())
        return {std::nullopt, std::nullopt, "no backend to replay on for " + device};
    const NodeDesc* nd = desc(n);
    if (!nd)
        return {std::nullopt, std::nullopt, "no captured description of the node"};
    const std::string key = device + (keep_buffers ? "|own|" : "|fresh|") + n.signature;
    if (auto it = cache_.find(key); it != cache_.end())
        return it->second;
    ReplayConfig cfg = cfg_;
    cfg.dispatch_ns = dispatch_ns(device);
    const ReplayResult r = replay_op(*nd, be->second, keep_buffers, cfg, pool_.get());
    return cache_.emplace(key, OpTime{r.op_ns, r.isolated_ns, r.method}).first->second;
}

std::vector<std::string> GgmlOpReplayer::unusable_inputs(const CapturedNode& n,
                                                         const std::string& device) const {
    std::vector<std::string> why;
    const NodeDesc* nd = desc(n);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(device.c_str());
    if (!nd || !dev)
        return why;
    // Inputs in buffers the device cannot read keep an op away from it even when it supports
    // the op (e.g. repacked CPU weights and BLAS).
    for (const auto& src : nd->srcs)
        if (src && src->buft && !src->sched_copy &&
            !ggml_backend_dev_supports_buft(dev, src->buft)) {
            std::string w = std::string("inputs in ") + ggml_backend_buft_name(src->buft) +
                            " buffers, which " + device + " cannot use";
            if (std::find(why.begin(), why.end(), w) == why.end())
                why.push_back(w);
        }
    return why;
}

std::optional<double> GgmlOpReplayer::dispatch_ns(const std::string& device) {
    if (auto it = dispatch_.find(device); it != dispatch_.end())
        return it->second;
    auto be = backends_.find(device);
    if (be == backends_.end())
        return std::nullopt;
    // On a GPU the no-work op's round trip, timed alone (ReplayConfig::alone_only).
    ReplayConfig cfg = cfg_;
    cfg.alone_only = local_gpu(device);
    return dispatch_[device] = measure_dispatch(be->second, cfg, pool_.get());
}

std::optional<double> GgmlOpReplayer::conversion_ns(const CapturedNode& n,
                                                    const std::string& device,
                                                    bool* plain_buffers) {
    auto be = backends_.find(device);
    const NodeDesc* nd = desc(n);
    if (be == backends_.end() || !nd)
        return std::nullopt;
    if (plain_buffers)
        *plain_buffers = !nd->srcs.empty() && nd->srcs[0] && nd->srcs[0]->buft &&
                         nd->srcs[0]->buft != ggml_backend_get_default_buffer_type(be->second);
    // The conversion timed here is the CPU's (activations to its vec_dot type,
    // activation_type_for); a GPU's kernels convert in their own ways and may refuse such inputs
    // (ggml-vulkan asserts).
    if (local_gpu(device))
        return std::nullopt;
    const std::string key = device + "|" + n.signature;
    if (auto it = conversion_.find(key); it != conversion_.end())
        return it->second;
    return conversion_[key] = measure_conversion(*nd, be->second, cfg_, pool_.get());
}

}  // namespace

std::unique_ptr<OpReplayer> make_ggml_replayer(std::shared_ptr<NodeStore> store) {
    return std::make_unique<GgmlOpReplayer>(std::move(store));
}

}  // namespace sb
