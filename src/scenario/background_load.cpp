#include "scenario/background_load.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace sb {

BackgroundSpec parse_background(const std::string& text) {
    BackgroundSpec spec;
    spec.text = text;
    auto bad = [&](const std::string& why) {
        return usage_error("--background '" + text + "': " + why +
                           " (expected e.g. cpu:2@50%,mem:1)");
    };
    auto to_int = [&](const std::string& s) {
        const auto v = parse_decimal_int(s);  // decimal only: not " 2" or 0x2
        if (!v)
            throw bad("'" + s + "' is not a count");
        if (*v < 1 || *v > 256)
            throw bad("'" + s + "' is not a count 1..256");
        return static_cast<int>(*v);
    };
    for (const std::string& item : split_list(text)) {
        if (item.rfind("cpu:", 0) == 0) {
            std::string rest = item.substr(4);
            const auto at = rest.find('@');
            spec.cpu_threads = to_int(rest.substr(0, at));
            if (at != std::string::npos) {
                std::string pct = rest.substr(at + 1);
                if (!pct.empty() && pct.back() == '%')
                    pct.pop_back();
                const auto p = parse_decimal(pct);
                if (!p)
                    throw bad("duty '" + rest.substr(at + 1) + "' is not a percentage");
                if (*p <= 0 || *p > 100)
                    throw bad("duty must be in (0, 100] %");
                spec.cpu_duty = *p / 100.0;
            }
        } else if (item.rfind("mem:", 0) == 0) {
            spec.mem_threads = to_int(item.substr(4));
        } else {
            throw bad("unknown load '" + item + "'");
        }
    }
    if (spec.cpu_threads == 0 && spec.mem_threads == 0)
        throw bad("no load given");
    return spec;
}

BackgroundLoad::BackgroundLoad(BackgroundSpec spec, Clock clock, Pause pause)
    : spec_(std::move(spec)), clock_(std::move(clock)), pause_(std::move(pause)) {}

BackgroundLoad::~BackgroundLoad() {
    stop();
}

void BackgroundLoad::start() {
    if (!threads_.empty())
        return;
    stop_ = false;
    constexpr int64_t period_ns = 10'000'000;
    const auto busy_ns = static_cast<int64_t>(static_cast<double>(period_ns) * spec_.cpu_duty);
    for (int i = 0; i < spec_.cpu_threads; ++i)
        threads_.emplace_back([this, busy_ns] {
            volatile uint64_t sink = 0;
            while (!stop_.load(std::memory_order_relaxed)) {
                const int64_t t0 = clock_();
                while (clock_() - t0 < busy_ns) {
                    // stop() is honoured within the busy part too (a clock that stands still);
                    // a period it cuts short is not counted.
                    if (stop_.load(std::memory_order_relaxed))
                        return;
                    sink = sink * 6364136223846793005ULL + 1;
                }
                ++cpu_periods_;
                if (busy_ns < period_ns)
                    pause_(t0 + period_ns - clock_());
            }
        });
    for (int i = 0; i < spec_.mem_threads; ++i)
        threads_.emplace_back([this] {
            // Two buffers well beyond any cache, copied back and forth in 1 MiB steps so that
            // stop() is honoured quickly.
            constexpr size_t kBytes = 64u << 20, kStep = 1u << 20;
            std::vector<char> a(kBytes, 1), b(kBytes, 2);
            for (bool forward = true; !stop_.load(std::memory_order_relaxed); forward = !forward)
                for (size_t off = 0; off < kBytes && !stop_.load(std::memory_order_relaxed);
                     off += kStep) {
                    char* dst = (forward ? b.data() : a.data()) + off;
                    const char* src = (forward ? a.data() : b.data()) + off;
                    std::memcpy(dst, src, kStep);
                    mem_bytes_ += kStep;
                }
        });
}

void BackgroundLoad::stop() {
    stop_ = true;
    for (auto& t : threads_)
        t.join();
    threads_.clear();
}

}  // namespace sb
