#include "scenario/fidelity_capture.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "scenario/logits.hpp"

namespace sb {

namespace {

void keep_last(const Engine& e, LogitCapture& c) {
    const auto l = e.last_logits();
    c.logits.insert(c.logits.end(), l.begin(), l.end());
}

std::vector<int32_t> top_k(std::span<const float> v, int k) {
    std::vector<int32_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    const size_t kk = std::min<size_t>(static_cast<size_t>(k), idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(kk), idx.end(),
                      [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
    idx.resize(kk);
    std::sort(idx.begin(), idx.end());
    return idx;
}

}  // namespace

LogitCapture capture_sequence(Engine& e, const std::vector<int32_t>& tokens, int n_prompt,
                              int n_gen, bool prompt_logits) {
    LogitCapture c;
    c.n_vocab = e.n_vocab();
    c.prompt_positions = prompt_logits ? n_prompt : 1;
    c.logits.reserve(static_cast<size_t>(n_gen + c.prompt_positions) *
                     static_cast<size_t>(c.n_vocab));
    const std::span<const int32_t> prompt(tokens.data(), static_cast<size_t>(n_prompt));
    if (prompt_logits) {
        e.evaluate(prompt, 0, c.logits);
    } else {
        e.reset();
        e.prefill(prompt);
        keep_last(e, c);
    }
    for (int i = 0; i < n_gen; ++i) {
        e.decode_step(tokens[static_cast<size_t>(n_prompt + i)]);
        keep_last(e, c);
    }
    return c;
}

LogitCapture capture_transferred(Engine& pre, Engine& dec, const std::vector<int32_t>& tokens,
                                 int n_prompt, int n_gen) {
    LogitCapture c;
    c.n_vocab = pre.n_vocab();
    c.logits.reserve(static_cast<size_t>(n_gen + 1) * static_cast<size_t>(c.n_vocab));
    pre.reset();
    pre.prefill(std::span<const int32_t>(tokens.data(), static_cast<size_t>(n_prompt)));
    keep_last(pre, c);
    std::vector<uint8_t> state;
    pre.save_state(state);
    dec.reset();
    dec.restore_state(state);
    for (int i = 0; i < n_gen; ++i) {
        dec.decode_step(tokens[static_cast<size_t>(n_prompt + i)]);
        keep_last(dec, c);
    }
    return c;
}

void StageStats::add(std::span<const float> ref, std::span<const float> x) {
    const LogitsDiff d = diff_logits(ref, x);
    kls_.push_back(d.kl);
    s_.max_abs = std::max(s_.max_abs, d.max_abs);
    sq_ += d.rms * d.rms * static_cast<double>(ref.size());
    n_logits_ += static_cast<double>(ref.size());
    agree_ += d.top1_agrees();
    const auto a = top_k(ref, k_), b = top_k(x, k_);
    std::vector<int32_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    overlap_ += a.empty() ? 1.0 : static_cast<double>(both.size()) / a.size();
}

StageFidelity StageStats::finish() const {
    StageFidelity s = s_;
    s.positions = static_cast<int>(kls_.size());
    if (s.positions == 0)
        return s;
    s.kl_mean = std::accumulate(kls_.begin(), kls_.end(), 0.0) / s.positions;
    s.kl_max = *std::max_element(kls_.begin(), kls_.end());
    std::vector<double> sorted = kls_;
    std::sort(sorted.begin(), sorted.end());
    // Nearest rank: the smallest value with at least 99 % of positions at or below it.
    const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size())));
    s.kl_p99 = sorted[std::max<size_t>(rank, 1) - 1];
    s.top1_agreement = agree_ / s.positions;
    s.topk_overlap = overlap_ / s.positions;
    s.rms = std::sqrt(sq_ / n_logits_);
    return s;
}

StageFidelity compare_positions(const LogitCapture& ref, const LogitCapture& x, int from, int to,
                                int k) {
    StageStats st(k);
    for (int p = from; p < to; ++p)
        st.add(ref.at(p), x.at(p));
    return st.finish();
}

}  // namespace sb
