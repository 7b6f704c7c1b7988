#!/usr/bin/env bash
# Tracer overhead: the decode step of `stagebench ops`, uninstrumented (as `stagebench run`
# times it) against instrumented (node by node through the eval callback, every node waited
# for), side by side in the same process and round. Prints each round's medians and the
# overhead ratio (traced / plain), then the median over rounds.
#
# Target: traced decode <= 1.10x the uninstrumented decode (median over rounds) on a local
# device. Prints the measured ratio and exits 1 when it misses (non-zero as well when it
# cannot run). On an RPC device every traced node waits for a round trip, so there the figure
# is reported only.
#
#   ROUNDS=5 THREADS=1 PRESET=tiny LAYERS= P=128 DEVICE=CPU REPS=5 bash bench/tracer_overhead.sh
#   DEVICE=RPC0 RPC=127.0.0.1:50052 bash bench/tracer_overhead.sh   # an RPC server you started
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
ROUNDS=${ROUNDS:-5}; THREADS=${THREADS:-1}; PRESET=${PRESET:-tiny}; LAYERS=${LAYERS:-}
. bench/lib/rounds.sh
need_rounds 3 "the target is a median over rounds"
P=${P:-128}; DEVICE=${DEVICE:-CPU}; REPS=${REPS:-5}; QUANT=${QUANT:-q4_0}; RPC=${RPC:-}
SB=build/bin/stagebench
[ -x "$SB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model="$work/model.gguf"
synth=("$SB" synth --preset "$PRESET" --quant "$QUANT" -o "$model")
[ -n "$LAYERS" ] && synth+=(--layers "$LAYERS")
dl "${synth[@]}" >&2
rpc=(); [ -n "$RPC" ] && rpc=(--rpc "$RPC")

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  # --replay 0: no op replay, only the two decode timings matter here.
  dl "$SB" ops -m "$model" -p "$P" --stage decode -t "$THREADS" --device "$DEVICE" "${rpc[@]}" \
    --replay 0 --reps "$REPS" --plain-reps "$REPS" -o json -q > "$work/ops.$r.json"
done

python3 - "$work" "$ROUNDS" "$DEVICE" "$P" <<'PY'
import json, statistics as st, sys
work, rounds, device, p = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
plain, traced, nodes = [], [], 0
print("| round | decode uninstrumented ms | decode traced ms | overhead (traced / plain) |")
print("| ---: | ---: | ---: | ---: |")
for r in range(1, rounds + 1):
    s = [x for x in json.load(open(f"{work}/ops.{r}.json"))["ops"]["stages"] if x["stage"] == "decode"][0]
    rec = s["reconciliation"]
    a, b = rec["plain_median_ns"] / 1e6, rec["traced_median_ns"] / 1e6
    plain.append(a); traced.append(b); nodes = len(s["ops"])
    print(f"| {r} | {a:.3f} | {b:.3f} | {b / a:.2f}x |")
a, b = st.median(plain), st.median(traced)
print(f"\nmedian over {rounds} rounds on {device}, decode at KV depth {p}, {nodes} nodes per token: "
      f"uninstrumented {a:.3f} ms, traced {b:.3f} ms, overhead {b / a:.2f}x "
      f"(+{(b - a) / nodes * 1e3:.2f} µs per node)")
ratio = b / a
if device.startswith("RPC"):
    print(f"target not applied on {device} (every traced node waits for a round trip)")
    sys.exit(0)
ok = ratio <= 1.10
print(f"target (traced <= 1.10x uninstrumented): {'met' if ok else 'MISSED'} ({ratio:.3f}x)")
sys.exit(0 if ok else 1)
PY
