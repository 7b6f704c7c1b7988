#pragma once
// The teacher-forced capture every fidelity check shares (`fidelity`, `run --fidelity`, `hybrid
// --fidelity`): a fixed token sequence (the prompt, then n_gen tokens fed one at a time, the
// same for every variant, so no sampled token can make two runs diverge) run on an engine with
// its logits kept at the prompt's last position and after every decode token, outside any
// timed stage; and the distances of two captures, position by position.
#include <cstdint>
#include <span>
#include <vector>

#include "core/doc/fidelity_section.hpp"
#include "engine/engine.hpp"

namespace sb {

struct LogitCapture {
    int32_t n_vocab = 0;
    // Positions in order: with prompt logits every prompt position, else only the last; then
    // one after each forced token. For a text: the scored positions of every window.
    int prompt_positions = 1;
    std::vector<float> logits;
    std::span<const float> at(int pos) const {
        return {logits.data() + static_cast<size_t>(pos) * static_cast<size_t>(n_vocab),
                static_cast<size_t>(n_vocab)};
    }
    int positions() const {
        return n_vocab > 0 ? static_cast<int>(logits.size() / static_cast<size_t>(n_vocab)) : 0;
    }
};

// The sequence tokens[0, n_prompt + n_gen) on e (an engine with caps().logits) from an empty
// cache: the prompt prefilled (with prompt_logits: evaluated with logits for every position),
// then each forced token decoded. Throws what the engine throws (sb::Error(input) for an engine
// without logits).
LogitCapture capture_sequence(Engine& e, const std::vector<int32_t>& tokens, int n_prompt,
                              int n_gen, bool prompt_logits);

// The same sequence split between two engines, as `hybrid` runs it: the prompt prefilled on
// pre, the sequence state moved to dec (save_state / restore_state), the forced tokens decoded
// on dec. The prefill position is pre's logits; the decode positions are dec's after the
// transfer.
LogitCapture capture_transferred(Engine& pre, Engine& dec, const std::vector<int32_t>& tokens,
                                 int n_prompt, int n_gen);

// A stage's distances from the reference, position by position: KL(reference || x), top-1
// agreement, top-k overlap, max and RMS absolute logit error.
class StageStats {
  public:
    explicit StageStats(int k) : k_(k) {}
    void add(std::span<const float> ref, std::span<const float> x);
    StageFidelity finish() const;

  private:
    int k_;
    StageFidelity s_;
    std::vector<double> kls_;
    double sq_ = 0, n_logits_ = 0, agree_ = 0, overlap_ = 0;
};

// The distances of positions [from, to) of x from ref's.
StageFidelity compare_positions(const LogitCapture& ref, const LogitCapture& x, int from, int to,
                                int k);

}  // namespace sb
