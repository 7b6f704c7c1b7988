#!/usr/bin/env bash
# The GPU check: what `make dist` built here (with `make cuda` first: the CUDA module inside),
# taken to a machine with an NVIDIA GPU and run there, every level of stagebench on the GPU
# against the CPU beside it. At most about 8 minutes on one GPU and 16 cores; every step has
# its own deadline and a step that fails is recorded and the next one runs.
#
#   bash bench/gpu_check.sh [DIST.tar.gz] [OUTDIR]
#
# DIST: the tarball of `make dist` (default: the newest dist/stagebench-*-linux-$(arch).tar.gz;
# or .tar.xz, repacked to fit a GPU session's 64 MiB carry: docs/gpu.md;
# without one, this tree's build/). OUTDIR (default $OUT, else gpu-check/) receives everything:
#   devices.md          stagebench devices (GPU name, driver, memory)
#   run-1b.json/.md     run, CPU against the GPU, pp512 and tg128, a 1B-class synthetic model
#   run-8b.json/.md     the same on an 8B-class one
#   parity.md           stagebench against llama-bench of the same tree on the GPU (±5 %)
#   ops.json/.md        op time against call time per op type and shape on the GPU
#   hybrid.json/.md     prefill on the CPU, decode on the GPU, each alone beside
#   fidelity.json/.md   the GPU's logits against the CPU's (KL, top-1)
#   sustained.json/.md  20 rounds, 1 s apart, with NVML's watts, temperatures and clocks
#   nvidia-smi.txt      the GPU as its driver reports it, before and after
#   steps.tsv           each step: name, exit code, seconds
#   summary.md          all of the above's tables in one page
# Exit 0 when every step exited 0, else 1 (the outputs are kept either way).
#
# Environment: GPU (the ggml device, default CUDA0; Vulkan0 runs the same steps through the
# Vulkan module), PRESETS (default "llama-3.2-1b llama-3.1-8b"), QUANT (q4_0), LAYERS (scale
# the models down, default: their full depth), ROUNDS (sustained rounds, 20), STEP_TIMEOUT
# (seconds per step, 240).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-}
out=${2:-${OUT:-gpu-check}}
GPU=${GPU:-CUDA0}
PRESETS=${PRESETS:-"llama-3.2-1b llama-3.1-8b"}
QUANT=${QUANT:-q4_0}
LAYERS=${LAYERS:-}
ROUNDS=${ROUNDS:-20}
STEP_TIMEOUT=${STEP_TIMEOUT:-240}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "$dist" ]; then
  dist=$(ls -t "$here"/dist/stagebench-*-linux-"$(dpkg --print-architecture 2>/dev/null || echo amd64)".tar.[gx]z 2>/dev/null | head -n 1)
fi
if [ -n "$dist" ]; then
  tar -xf "$dist" -C "$work" || { echo "gpu_check: cannot unpack $dist" >&2; exit 2; }
  root=$(ls -d "$work"/stagebench-*/)
  SB="$root/bin/stagebench"
  LB="$root/peers/llama-bench"
else
  SB="$here/build/bin/stagebench"
  LB="$here/build/peers/llama-bench"
fi
[ -x "$SB" ] || { echo "gpu_check: no stagebench at $SB (make dist, or make build)" >&2; exit 2; }
# A system whose C++ runtime is older than the build machine's cannot start the tarball's
# binaries: its lib/compat/ copy then goes first (lib/compat/README), for every step.
if [ -n "${root:-}" ] && ! timeout --kill-after=5 60 "$SB" --version >/dev/null 2>"$work/start.err" \
  && grep -q -E "version .(GLIBCXX|CXXABI|GCC)_[0-9.]+. not found" "$work/start.err"; then
  export LD_LIBRARY_PATH="${root}lib/compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu_check: this system's C++ runtime is older than the tarball's; using its lib/compat/" >&2
fi

printf 'step\texit\tseconds\n' > "$out/steps.tsv"
failed=0
# step NAME CMD...: runs CMD with the step deadline, stdout to NAME.md, stderr to NAME.log.
step() {
  local name=$1; shift
  local t0=$SECONDS rc
  echo "gpu_check: $name" >&2
  timeout --kill-after=10 "$STEP_TIMEOUT" "$@" > "$out/$name.md" 2> "$out/$name.log"
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$out/steps.tsv"
  [ "$rc" = 0 ] || { failed=1; echo "gpu_check: $name exited $rc (see $out/$name.log)" >&2; }
  return 0
}

command -v nvidia-smi >/dev/null && nvidia-smi > "$out/nvidia-smi.txt" 2>&1
step devices "$SB" devices

# The models: synthetic, with each preset's real shapes (synth's presets are the published
# configs); written here, on the machine, not carried.
models=()
for p in $PRESETS; do
  m="$work/$p-$QUANT.gguf"
  step "synth-$p" "$SB" synth --preset "$p" --quant "$QUANT" ${LAYERS:+--layers "$LAYERS"} -o "$m"
  models+=("$m")
done
small=${models[0]}
short() { case "$1" in *1b*) echo 1b ;; *8b*) echo 8b ;; *) basename "$1" .gguf ;; esac; }

for m in "${models[@]}"; do
  s=$(short "$m")
  step "run-$s" "$SB" run -m "$m" -p 512 -n 128 -r 3 --device "CPU,$GPU" --out "$out/run-$s.json"
done
step parity env SB="$SB" LB="$LB" MODEL="$small" LB_DEVICE="$GPU" NGL=99 \
  TOLERANCE=0.05 ROUNDS=6 REPS=3 P=512 N=128 bash "$here/bench/parity.sh"
step ops "$SB" ops -m "$small" -p 512 --device "$GPU" --out "$out/ops.json"
step hybrid "$SB" hybrid -m "$small" --prefill-device CPU --decode-device "$GPU" -p 512 -n 128 \
  -r 3 --out "$out/hybrid.json"
step fidelity "$SB" fidelity -m "$small" --device "CPU,$GPU" --reference CPU --out "$out/fidelity.json"
step sustained "$SB" sustained -m "$small" --device "$GPU" --rounds "$ROUNDS" --cooldown 1s \
  --prompt-tokens 258 --max-tokens 256 --telemetry on --out "$out/sustained.json"
command -v nvidia-smi >/dev/null && nvidia-smi >> "$out/nvidia-smi.txt" 2>&1

{
  echo "# GPU check: $GPU"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $("$SB" --version 2>/dev/null | head -n 1)"
  echo
  echo '```'; cat "$out/steps.tsv"; echo '```'
  for f in devices run-1b run-8b parity ops hybrid fidelity sustained; do
    [ -s "$out/$f.md" ] || continue
    echo; echo "## $f"; echo; cat "$out/$f.md"
  done
} > "$out/summary.md"
echo "gpu_check: outputs in $out" >&2
exit "$failed"
