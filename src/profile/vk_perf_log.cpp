#include "profile/vk_perf_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/stats.hpp"

namespace sb {

namespace {

constexpr std::string_view kMarker = "stagebench-device-timer: ";

std::string_view trim_blanks(std::string_view s) {
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    return s;
}

// A number as std::ostream prints a double (6 significant digits, "1.23457e+06"); from_chars,
// so no locale applies. Finite only.
std::optional<double> number(std::string_view s) {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<int64_t> integer(std::string_view s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

struct Entry {
    std::string name;
    int64_t count = 0;
    double total_us = 0;
};

// "NAME: COUNT x AVG us = TOTAL us[ (G GFLOPS/s)]", or why not.
std::optional<Entry> read_entry(std::string_view line, std::string& why) {
    std::string_view s = line;
    constexpr std::string_view kFlops = " GFLOPS/s)";
    if (s.size() > kFlops.size() && s.substr(s.size() - kFlops.size()) == kFlops) {
        const size_t open = s.rfind(" (");
        if (open == std::string_view::npos) {
            why = "not an op timing";
            return std::nullopt;
        }
        // The rate divides by the time: "inf" where the time was 0; not used here.
        s = s.substr(0, open);
    }
    constexpr std::string_view kUs = " us";
    const size_t eq = s.rfind(" us = ");
    if (s.size() < kUs.size() || s.substr(s.size() - kUs.size()) != kUs ||
        eq == std::string_view::npos) {
        why = "not an op timing";
        return std::nullopt;
    }
    const std::string_view total_s = s.substr(eq + 6, s.size() - kUs.size() - (eq + 6));
    const std::string_view left = s.substr(0, eq);
    const size_t x = left.rfind(" x ");
    const size_t colon = x == std::string_view::npos ? x : left.rfind(": ", x);
    if (colon == std::string_view::npos || colon == 0) {
        why = "not an op timing";
        return std::nullopt;
    }
    const auto count = integer(left.substr(colon + 2, x - colon - 2));
    const auto avg = number(left.substr(x + 3));
    const auto total = number(total_s);
    if (!count || !avg || !total) {
        why = "a count or time that is not a number";
        return std::nullopt;
    }
    if (*count < 1 || *count > kMaxVkPerfCount) {
        why = fmt::format("a count outside 1..{}", kMaxVkPerfCount);
        return std::nullopt;
    }
    if (*avg < 0 || *total < 0 || *total > kMaxVkPerfUs) {
        why = fmt::format("a time outside 0..{:.0f} us", kMaxVkPerfUs);
        return std::nullopt;
    }
    // The average is floor(total_ns / count) / 1000, each printed to 6 significant digits.
    const double c = static_cast<double>(*count);
    const double tol = 1e-5 * (*total + *avg * c) + 1e-3 * c + 1e-3;
    if (std::abs(*avg * c - *total) > tol) {
        why = "its average times its count is not its total";
        return std::nullopt;
    }
    return Entry{std::string(left.substr(0, colon)), *count, *total};
}

// "begin prefill 0" -> (true, "prefill", 0).
struct PerfMarker {
    bool begin = false;
    std::string stage;
    int index = 0;
};
std::optional<PerfMarker> read_marker(std::string_view rest) {
    PerfMarker m;
    const size_t a = rest.find(' ');
    const size_t b = a == std::string_view::npos ? a : rest.find(' ', a + 1);
    if (b == std::string_view::npos)
        return std::nullopt;
    const std::string_view what = rest.substr(0, a);
    if (what != "begin" && what != "end")
        return std::nullopt;
    m.begin = what == "begin";
    m.stage = std::string(rest.substr(a + 1, b - a - 1));
    const auto i = integer(rest.substr(b + 1));
    if (m.stage.empty() || !i || *i < 0 || *i > 1'000'000)
        return std::nullopt;
    m.index = static_cast<int>(*i);
    return m;
}

std::string dims(const std::vector<int64_t>& ne) {
    std::string s;
    for (size_t i = 0; i < 4; ++i) {
        if (i)
            s += ',';
        s += std::to_string(i < ne.size() ? ne[i] : 1);
    }
    return s;
}

int64_t dim(const TensorInfo& t, size_t i) {
    return i < t.ne.size() ? t.ne[i] : 1;
}

const TensorInfo* src(const OpRecord& r, size_t i) {
    return i < r.srcs.size() && !r.srcs[i].type.empty() ? &r.srcs[i] : nullptr;
}

}  // namespace

std::string vk_perf_marker(const std::string& stage, int index, bool begin) {
    return fmt::format("{}{} {} {}", kMarker, begin ? "begin" : "end", stage, index);
}

bool is_vk_perf_device(const std::string& device) {
    return device.rfind("Vulkan", 0) == 0;
}

VkPerfLog parse_vk_perf_log(std::string_view text) {
    VkPerfLog log;
    std::optional<VkPerfSection> open;  // the marked stage being read
    // The block being read: its first line, its entries.
    bool in_block = false;
    int block_line = 0;
    std::vector<Entry> entries;
    auto reject = [&](int n, const std::string& why, std::string_view line) {
        log.rejected.push_back(fmt::format("line {}: {}: {}", n, why, line));
    };
    auto drop_block = [&](const std::string& why) {
        log.rejected.push_back(fmt::format("line {}: block dropped: {}", block_line, why));
        in_block = false;
        entries.clear();
    };
    int n = 0;
    size_t at = 0;
    while (at <= text.size()) {
        size_t end = text.find('\n', at);
        if (end == std::string_view::npos)
            end = text.size();
        const std::string_view raw = text.substr(at, end - at);
        at = end + 1;
        ++n;
        const std::string_view line = trim_blanks(raw);
        if (line.empty() && at > text.size())
            break;
        if (line.rfind(kMarker, 0) == 0) {
            if (in_block)
                drop_block("a stage marker came before its \"Total time\" line");
            const auto m = read_marker(line.substr(kMarker.size()));
            if (!m) {
                reject(n, "not a stage marker", line);
            } else if (m->begin) {
                if (open)
                    reject(n, "a stage began before the last one ended", line);
                open = VkPerfSection{m->stage, m->index, 0, {}};
            } else if (!open || open->stage != m->stage || open->index != m->index) {
                reject(n, "the end of a stage that had not begun", line);
                open.reset();
            } else {
                log.sections.push_back(std::move(*open));
                open.reset();
            }
            continue;
        }
        if (line == "Vulkan Timings:") {
            if (in_block)
                drop_block("a new block began before its \"Total time\" line");
            in_block = true;
            block_line = n;
            continue;
        }
        if (!in_block)
            continue;  // llama.cpp's own lines, the blocks' dashes
        if (line.rfind("Total time: ", 0) == 0) {
            std::string_view v = line.substr(12);
            const bool unit = v.size() > 4 && v.substr(v.size() - 4) == " us.";
            const auto total = unit ? number(v.substr(0, v.size() - 4)) : std::nullopt;
            if (!total || *total < 0) {
                reject(n, "not a total time", line);
                drop_block("its \"Total time\" line could not be read");
                continue;
            }
            double sum = 0;
            for (const auto& e : entries)
                sum += e.total_us;
            if (entries.empty()) {
                drop_block("no op line could be read");
                continue;
            }
            if (std::abs(sum - *total) > 1e-5 * (sum + *total) * entries.size() + 1e-3) {
                drop_block(fmt::format("its total {} us is not the sum of its lines, {:.6g} us",
                                       v.substr(0, v.size() - 4), sum));
                continue;
            }
            ++log.n_blocks;
            if (open) {
                open->n_blocks++;
                for (const auto& e : entries) {
                    VkPerfTotal& t = open->ops[e.name];
                    t.count += e.count;
                    t.total_us += e.total_us;
                }
            }
            in_block = false;
            entries.clear();
            continue;
        }
        std::string why;
        if (auto e = read_entry(line, why))
            entries.push_back(std::move(*e));
        else
            reject(n, why, line);
    }
    if (in_block)
        drop_block("the output ended before its \"Total time\" line");
    if (open)
        log.rejected.push_back(
            fmt::format("the output ended inside stage {} {}", open->stage, open->index));
    return log;
}

std::optional<std::string> vk_perf_name(const OpRecord& r) {
    if (r.no_compute)
        return std::nullopt;
    const std::string& op = r.op;
    static const std::set<std::string> glu = {
        "REGLU", "GEGLU", "SWIGLU", "SWIGLU_OAI", "GEGLU_ERF", "GEGLU_QUICK", "SWIGLU_CLAMP"};
    if (glu.count(op))
        return "GLU";
    if (op == "MUL_MAT" || op == "MUL_MAT_ID") {
        const TensorInfo* a = src(r, 0);
        const TensorInfo* b = src(r, 1);
        if (!a || !b)
            return op;
        const int64_t m = dim(r.out, 0), n = dim(r.out, 1), k = dim(*b, 0);
        const int64_t batch = dim(r.out, 2) * dim(r.out, 3);
        std::string name = op;
        const TensorInfo* ids = src(r, 2);
        if (op == "MUL_MAT" ? n <= 8 : ids && dim(*ids, 1) == 1)
            name += "_VEC";
        name += fmt::format(" {} m={} n={} k={}", a->type, m, n, k);
        if (op == "MUL_MAT_ID")
            name += fmt::format(" n_expert={}", dim(*a, 2));
        if (batch > 1)
            name += fmt::format(" batch={}", batch);
        return name;
    }
    if (op == "CONV_2D" || op == "CONV_TRANSPOSE_2D") {
        const TensorInfo* knl = src(r, 0);
        const TensorInfo* in = src(r, 1);
        if (!knl || !in)
            return op;
        return fmt::format("{} M=Cout={}, K=Cin*KW*KH={}, N=N*OW*OH={}", op, dim(r.out, 2),
                           dim(*in, 2) * dim(*knl, 0) * dim(*knl, 1),
                           dim(r.out, 3) * dim(r.out, 0) * dim(r.out, 1));
    }
    if (op == "RMS_NORM")
        return "RMS_NORM(" + dims(r.out.ne) + ")";
    if (op == "FLASH_ATTN_EXT") {
        const TensorInfo* q = src(r, 0);
        const TensorInfo* k = src(r, 1);
        const TensorInfo* v = src(r, 2);
        if (!q || !k || !v)
            return op;
        const TensorInfo* m = src(r, 3);
        return fmt::format("FLASH_ATTN_EXT dst({}),  q({}),  k({}),  v({}),  m({})", dims(r.out.ne),
                           dims(q->ne), dims(k->ne), dims(v->ne),
                           m ? dims(m->ne) : std::string("0,0,0,0"));
    }
    if (op == "TOP_K") {
        const TensorInfo* a = src(r, 0);
        return a ? fmt::format("TOP_K K={} ({})", dim(r.out, 0), dims(a->ne)) : op;
    }
    return op;
}

DeviceTimeMatch match_vk_perf(const StageProfile& st, const std::string& backend,
                              const std::vector<VkPerfSection>& sections) {
    DeviceTimeMatch m;
    m.ops.resize(st.ops.size());
    std::map<std::string, int64_t> expected;  // logger name -> the stage's ops of it on backend
    std::vector<std::optional<std::string>> names(st.ops.size());
    for (size_t i = 0; i < st.ops.size(); ++i) {
        const OpRecord& r = st.ops[i];
        if (r.backend != backend || r.no_compute)
            continue;
        names[i] = vk_perf_name(r);
        if (names[i])
            expected[*names[i]]++;
    }
    const std::string stage = st.stage == "decode" ? "decode step" : st.stage;
    std::map<std::string, OpTime> by_name;
    for (const auto& [name, want] : expected) {
        std::vector<double> means;
        std::set<int64_t> seen;  // counts of the samples that differ
        for (const auto& s : sections) {
            const auto it = s.ops.find(name);
            const int64_t got = it == s.ops.end() ? 0 : it->second.count;
            if (got == want)
                means.push_back(it->second.total_us * 1e3 / static_cast<double>(got));
            else
                seen.insert(got);
        }
        OpTime t;
        if (!means.empty()) {
            t.op_ns = median(means);
            t.method = fmt::format(
                "device timer: Vulkan timestamp queries (GGML_VK_PERF_LOGGER, fusion off) in a "
                "pass of its own; {} {} on {} per {}, median of {} {}(s)",
                want == 1 ? std::string("the one") : fmt::format("mean of the {}", want), name,
                backend, stage, means.size(), stage);
        } else {
            std::string counts;
            for (int64_t c : seen)
                counts += (counts.empty() ? "" : ", ") + std::to_string(c);
            t.method = sections.empty()
                           ? "no device time: the device-timer pass timed no " + stage
                           : fmt::format(
                                 "no device time: the device timer counted {} of \"{}\" "
                                 "per {} where the profile has {}",
                                 counts, name, stage, want);
        }
        by_name.emplace(name, std::move(t));
    }
    for (size_t i = 0; i < st.ops.size(); ++i) {
        if (!names[i])
            continue;
        m.ops[i] = by_name.at(*names[i]);
        (m.ops[i]->op_ns ? m.n_matched : m.n_unmatched)++;
    }
    std::set<std::string> extra;
    for (const auto& s : sections)
        for (const auto& [name, t] : s.ops)
            if (!expected.count(name))
                extra.insert(name);
    if (!extra.empty()) {
        std::string list;
        for (const auto& e : extra)
            list += (list.empty() ? "" : "; ") + e;
        m.notes.push_back("the device timer timed ops on " + backend + " that the profile of the " +
                          st.stage + " does not have there (not used): " + list);
    }
    return m;
}

}  // namespace sb
