#!/usr/bin/env bash
# Parity on a GPU through Vulkan: stagebench `run` against llama-bench from the same llama.cpp
# tree, both on Vulkan0 with every layer offloaded, interleaved round by round (bench/parity.sh
# does the measuring and the verdict). Target, per stage (prefill = pp P, decode = tg N at
# depth P): the robust tokens/s (tokens / the median repetition of a run, median over rounds)
# within ±5 % of llama-bench's, and stagebench's CV no larger than llama-bench's (a tenth and
# 0.1 point of slack). The CV is one statistic on both sides, computed by parity.sh from the raw
# repetitions: a run's sample standard deviation (n - 1) of its REPS per-repetition tokens/s
# over their mean (llama-bench's stddev_ts / avg_ts, stagebench's throughput.cv), the median
# over rounds; not per token and not stall-robust on either side. Exit 1 when a stage misses.
# Without a Vulkan GPU, on Mesa's lavapipe (a Vulkan device on the CPU, which ggml uses only
# when GGML_VK_VISIBLE_DEVICES names it): GGML_VK_VISIBLE_DEVICES=0 bash bench/vulkan_parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export SB_DEVICE=${SB_DEVICE:-Vulkan0} LB_DEVICE=${LB_DEVICE:-Vulkan0} NGL=${NGL:-99}
export TOLERANCE=${TOLERANCE:-0.05}
# lavapipe is slow: a smaller default workload than the CPU parity's, the same shape.
export P=${P:-128} N=${N:-32} REPS=${REPS:-3} ROUNDS=${ROUNDS:-3}
bash bench/parity.sh || exit $?
