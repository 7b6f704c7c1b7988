#include "core/membw.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace sb {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMiB = std::size_t{1024} * 1024;
constexpr std::size_t kAlign = 4096;
constexpr std::size_t kChunkAlign = 64 / sizeof(double);  // chunks start on cache lines
// With this scalar, one round of the four kernels maps a to (2s + s^2) a = a, so values stay
// near 1 for any number of repetitions and the result check needs no overflow guard.
const double kScalar = std::sqrt(2.0) - 1.0;

struct FreeDeleter {
    void operator()(double* p) const { std::free(p); }
};
using Array = std::unique_ptr<double[], FreeDeleter>;

// Uninitialised on purpose: the worker that owns a chunk touches it first, so its pages land
// on that worker's NUMA node.
Array allocate(std::size_t n) {
    const std::size_t bytes = (n * sizeof(double) + kAlign - 1) / kAlign * kAlign;
    auto* p = static_cast<double*>(std::aligned_alloc(kAlign, bytes));
    if (p == nullptr) {
        throw runtime_error("membw: cannot allocate " + std::to_string(bytes) + " bytes");
    }
    return Array(p);
}

// Tells the compiler that memory behind p is read and written here, so stores to the arrays
// cannot be dropped or merged across kernels.
inline void clobber(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
    asm volatile("" : : "r"(p) : "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
    (void)p;
#endif
}

enum Kernel { kCopy, kScale, kAdd, kTriad, kKernels };
constexpr double kArraysTouched[kKernels] = {2, 2, 3, 3};

void run_kernel(Kernel k, double* __restrict a, double* __restrict b, double* __restrict c,
                std::size_t lo, std::size_t hi) {
    const double s = kScalar;
    switch (k) {
        case kCopy:
            for (std::size_t j = lo; j < hi; ++j)
                c[j] = a[j];
            break;
        case kScale:
            for (std::size_t j = lo; j < hi; ++j)
                b[j] = s * c[j];
            break;
        case kAdd:
            for (std::size_t j = lo; j < hi; ++j)
                c[j] = a[j] + b[j];
            break;
        case kTriad:
            for (std::size_t j = lo; j < hi; ++j)
                a[j] = b[j] + s * c[j];
            break;
        default:
            break;
    }
    clobber(a);
    clobber(b);
    clobber(c);
}

bool close_to(double got, double want) {
    return std::abs(got - want) <= 1e-9 * std::max(std::abs(want), 1.0);
}

// STREAM's check: replay the kernels on one scalar element and compare a sample of entries.
void check_results(const double* a, const double* b, const double* c, std::size_t n, int reps) {
    double aj = 1, bj = 2, cj = 0;
    for (int r = 0; r < reps; ++r) {
        cj = aj;
        bj = kScalar * cj;
        cj = aj + bj;
        aj = bj + kScalar * cj;
    }
    const auto check = [&](std::size_t j) {
        if (!close_to(a[j], aj) || !close_to(b[j], bj) || !close_to(c[j], cj)) {
            throw runtime_error("membw: kernel results are wrong at element " + std::to_string(j));
        }
    };
    const std::size_t step = std::max<std::size_t>(1, n / 4096);
    for (std::size_t j = 0; j < n; j += step) {
        check(j);
    }
    check(n - 1);
}

std::optional<std::string> read_cache_attr(const fs::path& p) {
    std::ifstream in(p);
    std::string v;
    if (!in || !std::getline(in, v)) {
        return std::nullopt;
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\t')) {
        v.pop_back();
    }
    return v.empty() ? std::nullopt : std::optional<std::string>(v);
}

// sysfs cache sizes: "48K", "12288K", "32M", or plain bytes.
std::optional<std::size_t> parse_size(std::string_view s) {
    std::size_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data()) {
        return std::nullopt;
    }
    const std::string_view unit = s.substr(static_cast<std::size_t>(p - s.data()));
    if (unit.empty())
        return v;
    if (unit == "K")
        return v * 1024;
    if (unit == "M")
        return v * kMiB;
    if (unit == "G")
        return v * kMiB * 1024;
    return std::nullopt;
}

}  // namespace

MembwResult measure_membw(std::size_t array_bytes_each, int threads, int reps,
                          const std::function<bool()>& stop) {
    if (threads < 1) {
        throw usage_error("membw: threads must be >= 1, got " + std::to_string(threads));
    }
    if (reps < 1) {
        throw usage_error("membw: reps must be >= 1, got " + std::to_string(reps));
    }
    const std::size_t n = array_bytes_each / sizeof(double);
    if (n < static_cast<std::size_t>(threads)) {
        throw usage_error("membw: arrays of " + std::to_string(array_bytes_each) +
                          " bytes are too small for " + std::to_string(threads) + " threads");
    }
    if (array_bytes_each > std::numeric_limits<std::size_t>::max() / 4) {
        throw usage_error("membw: array size too large");
    }
    Array a = allocate(n), b = allocate(n), c = allocate(n);

    const auto nthreads = static_cast<std::size_t>(threads);
    std::size_t chunk = (n + nthreads - 1) / nthreads;
    chunk = (chunk + kChunkAlign - 1) / kChunkAlign * kChunkAlign;

    // Timestamps are taken by the barrier's completion step, which runs once all workers have
    // arrived and before any is released: kernel i of the run spans stamps[i]..stamps[i + 1].
    const std::size_t phases = static_cast<std::size_t>(reps) * kKernels;
    std::vector<int64_t> stamps(phases + 1, 0);
    std::size_t next_stamp = 0;
    // Ctrl-C: the completion step asks once per phase (after the first, the initialisation),
    // and every worker sees the answer when released, so all leave the barrier together.
    bool stopped = false;
    auto on_phase = [&]() noexcept {
        if (next_stamp < stamps.size()) {
            stamps[next_stamp++] = now_ns();
        }
        if (stop && next_stamp > 1 && !stopped) {
            try {
                stopped = stop();
            } catch (...) {
                stopped = true;
            }
        }
    };
    std::barrier sync(static_cast<std::ptrdiff_t>(nthreads), on_phase);
    std::latch start(1);
    std::atomic<bool> cancelled{false};

    auto worker = [&, pa = a.get(), pb = b.get(), pc = c.get()](std::size_t t) {
        start.wait();
        if (cancelled.load()) {
            return;
        }
        const std::size_t lo = std::min(n, t * chunk);
        const std::size_t hi = std::min(n, lo + chunk);
        for (std::size_t j = lo; j < hi; ++j) {
            pa[j] = 1.0;
            pb[j] = 2.0;
            pc[j] = 0.0;
        }
        sync.arrive_and_wait();
        for (int r = 0; r < reps; ++r) {
            for (int k = 0; k < kKernels; ++k) {
                run_kernel(static_cast<Kernel>(k), pa, pb, pc, lo, hi);
                sync.arrive_and_wait();
                if (stopped) {
                    return;
                }
            }
        }
    };

    std::vector<std::thread> pool;
    pool.reserve(nthreads);
    try {
        for (std::size_t t = 0; t < nthreads; ++t) {
            pool.emplace_back(worker, t);
        }
    } catch (const std::system_error& e) {
        // Workers wait at the latch, before the barrier, so they can all be let go.
        cancelled = true;
        start.count_down();
        for (auto& th : pool) {
            th.join();
        }
        throw runtime_error("membw: cannot start " + std::to_string(threads) +
                            " threads: " + e.what());
    }
    start.count_down();
    for (auto& th : pool) {
        th.join();
    }
    if (stopped) {
        throw runtime_error("membw: interrupted (Ctrl-C)");
    }
    check_results(a.get(), b.get(), c.get(), n, reps);

    MembwResult res;
    res.array_bytes = n * sizeof(double);
    res.threads = threads;
    const double array_bytes = static_cast<double>(res.array_bytes);
    double best[kKernels] = {0, 0, 0, 0};
    std::vector<double> triad;
    // STREAM drops the first repetition: it pays for page faults and cold TLBs.
    for (int r = reps > 1 ? 1 : 0; r < reps; ++r) {
        for (int k = 0; k < kKernels; ++k) {
            const std::size_t i =
                static_cast<std::size_t>(r) * kKernels + static_cast<std::size_t>(k);
            const int64_t dt_ns = std::max<int64_t>(1, stamps[i + 1] - stamps[i]);
            // bytes per nanosecond is GB/s.
            const double gbps = kArraysTouched[k] * array_bytes / static_cast<double>(dt_ns);
            best[k] = std::max(best[k], gbps);
            if (k == kTriad) {
                triad.push_back(gbps);
            }
        }
    }
    res.copy_gbps = best[kCopy];
    res.scale_gbps = best[kScale];
    res.add_gbps = best[kAdd];
    res.triad_gbps = best[kTriad];
    res.triad_samples_gbps = summarize(triad);
    return res;
}

std::optional<std::size_t> last_level_cache_bytes(const std::string& root) {
    const fs::path cpu_dir = fs::path(root.empty() ? "/" : root) / "sys/devices/system/cpu";
    // level -> (shared_cpu_list or a per-CPU key) -> size
    std::map<int, std::map<std::string, std::size_t>> caches;
    std::error_code ec;
    fs::directory_iterator cpus(cpu_dir, ec), end;
    for (; !ec && cpus != end; cpus.increment(ec)) {
        const std::string name = cpus->path().filename().string();
        if (name.size() < 4 || name.rfind("cpu", 0) != 0 ||
            name.find_first_not_of("0123456789", 3) != std::string::npos) {
            continue;
        }
        std::error_code ec2;
        fs::directory_iterator idx(cpus->path() / "cache", ec2);
        for (; !ec2 && idx != end; idx.increment(ec2)) {
            if (idx->path().filename().string().rfind("index", 0) != 0) {
                continue;
            }
            const fs::path d = idx->path();
            if (read_cache_attr(d / "type").value_or("") == "Instruction") {
                continue;
            }
            const auto level = read_cache_attr(d / "level");
            const auto size = parse_size(read_cache_attr(d / "size").value_or(""));
            int lvl = 0;
            if (!level || !size ||
                std::from_chars(level->data(), level->data() + level->size(), lvl).ec !=
                    std::errc()) {
                continue;
            }
            const std::string key =
                read_cache_attr(d / "shared_cpu_list").value_or(name + "/" + d.filename().string());
            caches[lvl][key] = *size;
        }
    }
    if (caches.empty()) {
        return std::nullopt;
    }
    std::size_t total = 0;
    for (const auto& [key, size] : caches.rbegin()->second) {
        total += size;
    }
    return total;
}

std::size_t default_membw_array_bytes(const std::string& root) {
    constexpr std::size_t kFloor = 64 * kMiB;
    const auto llc = last_level_cache_bytes(root);
    return llc ? std::max(4 * *llc, kFloor) : kFloor;
}

}  // namespace sb
