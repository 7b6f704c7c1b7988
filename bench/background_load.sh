#!/usr/bin/env bash
# Background load: `stagebench sustained --background cpu:N` runs the rounds twice, alone and
# beside N busy threads. With the inference's threads and the busy ones sharing the same CPUs
# (taskset), decode must come out measurably slower in the loaded phase: the figure says the
# background load really loads the machine, and that the comparison sees it.
#
# Target: the decode slowdown (baseline median tok/s / loaded median tok/s) >= 1.20 with its
# 95% CI above 1, in the median over rounds of runs. Prints each run and exits 1 when it misses
# (non-zero as well when it cannot run).
#
#   RUNS=3 ROUNDS=4 CPUS=2 PRESET=tiny QUANT=f16 bash bench/background_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
RUNS=${RUNS:-3}; ROUNDS=${ROUNDS:-4}; CPUS=${CPUS:-2}; PRESET=${PRESET:-tiny}; QUANT=${QUANT:-f16}
SB=build/bin/stagebench
[ -x "$SB" ] || { echo "build first: make build" >&2; exit 2; }
[ "$(nproc)" -ge "$CPUS" ] || { echo "needs $CPUS CPUs" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model="$work/model.gguf"
dl "$SB" synth --preset "$PRESET" --quant "$QUANT" -o "$model" >&2
cpus=$(seq -s, 0 $((CPUS - 1)))
for r in $(seq 1 "$RUNS"); do
  echo "run $r/$RUNS" >&2
  dl taskset -c "$cpus" "$SB" sustained -m "$model" --rounds "$ROUNDS" --prompt-tokens 64 \
    --max-tokens 32 -t "$CPUS" --background "cpu:$CPUS" --telemetry off -o json -q \
    > "$work/s.$r.json"
done

python3 - "$work" "$RUNS" <<'PY'
import json, statistics as st, sys
work, runs = sys.argv[1], int(sys.argv[2])
ratios, excl = [], []
print("| run | decode slowdown | 95% CI |")
print("| ---: | ---: | --- |")
for r in range(1, runs + 1):
    d = [x for x in json.load(open(f"{work}/s.{r}.json"))["sustained"]["slowdown"]
         if x["stage"] == "decode"][0]
    ratios.append(d["ratio"]); excl.append(d["ci95_lo"] > 1)
    print(f"| {r} | {d['ratio']:.2f}x | {d['ci95_lo']:.2f}-{d['ci95_hi']:.2f} |")
m = st.median(ratios)
ok = m >= 1.20 and sum(excl) * 2 > runs
print(f"median decode slowdown over {runs} runs: {m:.2f}x, CI above 1 in {sum(excl)} of {runs}; "
      f"target (>= 1.20x, CI above 1): {'met' if ok else 'MISSED'}")
sys.exit(0 if ok else 1)
PY
