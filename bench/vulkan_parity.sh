#!/usr/bin/env bash
# Parity on a GPU through Vulkan: stagebench `run` against llama-bench from the same llama.cpp
# tree, both on Vulkan0 with every layer offloaded, interleaved round by round (bench/parity.sh
# does the measuring and the verdict). Targets, per stage (prefill = pp P, decode = tg N at
# depth P): the paired ratio's 95 % interval (per round, stagebench's robust tokens/s over the
# llama-bench run's beside it; their geometric mean, Student's t on the logs) inside 1 ± 5 %,
# and stagebench's spread not significantly larger than llama-bench's (parity.sh's spread
# test: each repetition's tokens/s over its run's mean, pooled over the rounds, stagebench's
# variance over llama-bench's, p >= 0.05 by a seeded one-sided permutation test). Exit 0 when
# both stages are met, 1 when one missed, 3 when none missed and one is unresolved (its
# interval straddles a bound: more rounds, or a quieter machine; the script says how many).
# Without a Vulkan GPU, on Mesa's lavapipe (a Vulkan device on the CPU, which ggml uses only
# when GGML_VK_VISIBLE_DEVICES names it): GGML_VK_VISIBLE_DEVICES=0 bash bench/vulkan_parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# stagebench's side gets Vulkan0 plus the accelerators llama.cpp gives the peer (parity.sh).
export LB_DEVICE=${LB_DEVICE:-Vulkan0} NGL=${NGL:-99}
export TOLERANCE=${TOLERANCE:-0.05}
# lavapipe is slow: a smaller default workload than the CPU parity's, the same shape; 6 rounds
# at least, for an interval (Student's t at 5 degrees of freedom: 2.57).
export P=${P:-128} N=${N:-32} REPS=${REPS:-3} ROUNDS=${ROUNDS:-6}
bash bench/parity.sh || exit $?
