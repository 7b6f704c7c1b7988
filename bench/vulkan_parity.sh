#!/usr/bin/env bash
# Parity on a GPU through Vulkan: stagebench `run` against llama-bench from the same llama.cpp
# tree, both on Vulkan0 with every layer offloaded, interleaved round by round (bench/parity.sh
# does the measuring and the verdict). Target, per stage (prefill = pp P, decode = tg N at
# depth P): the robust tokens/s (tokens / the median repetition of a run, median over rounds)
# within ±5 % of llama-bench's, and stagebench's spread not significantly larger than
# llama-bench's (parity.sh's spread test: each repetition's tokens/s over its run's mean, pooled
# over the rounds, stagebench's variance over llama-bench's, p >= 0.05 by a seeded one-sided
# permutation test; not per token and not stall-robust on either side). The per-run CVs
# (sample SD (n - 1) / mean of REPS per-repetition tokens/s, llama-bench's stddev_ts / avg_ts,
# stagebench's throughput.cv) are printed beside it. Exit 1 when a stage misses.
# Without a Vulkan GPU, on Mesa's lavapipe (a Vulkan device on the CPU, which ggml uses only
# when GGML_VK_VISIBLE_DEVICES names it): GGML_VK_VISIBLE_DEVICES=0 bash bench/vulkan_parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export SB_DEVICE=${SB_DEVICE:-Vulkan0} LB_DEVICE=${LB_DEVICE:-Vulkan0} NGL=${NGL:-99}
export TOLERANCE=${TOLERANCE:-0.05}
# lavapipe is slow: a smaller default workload than the CPU parity's, the same shape.
export P=${P:-128} N=${N:-32} REPS=${REPS:-3} ROUNDS=${ROUNDS:-3}
bash bench/parity.sh || exit $?
