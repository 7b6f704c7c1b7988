#!/usr/bin/env bash
# How well `stagebench advise` predicts a hybrid run from its parts: ROUNDS runs of
# `stagebench hybrid` (prefill on CPU, decode on a loopback `stagebench rpc-server`), each
# followed by `advise` on its document, which predicts the hybrid's end-to-end time from each
# device alone plus the measured state transfer. Prints each run's prediction errors and the
# median |error|.
#
# Target: median |error| <= 10 %. Prints the measured figure and exits 1 when it misses
# (non-zero as well when it cannot run). Run it on a quiet machine: a stall of tens of ms is
# longer than this small model's whole run.
#
#   ROUNDS=5 PRESET=llama-3.2-1b LAYERS=1 P=32,96 N=8 REPS=9 THREADS=1 bash bench/hybrid_prediction.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
ROUNDS=${ROUNDS:-5}; PRESET=${PRESET:-llama-3.2-1b}; LAYERS=${LAYERS:-1}; P=${P:-32,96}
. bench/lib/rounds.sh
need_rounds 3 "the target is a median over rounds"
N=${N:-8}; REPS=${REPS:-9}; THREADS=${THREADS:-1}; QUANT=${QUANT:-q4_0}
SB=build/bin/stagebench
[ -x "$SB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SB" rpc-server -p "$port" -t "$THREADS" > "$work/rpc.log" 2>&1 &
rpc_pid=$!
trap 'stop_bg "$rpc_pid"; rm -rf "$work"' EXIT
model="$work/model.gguf"
synth=("$SB" synth --preset "$PRESET" --quant "$QUANT" -o "$model")
[ -n "$LAYERS" ] && synth+=(--layers "$LAYERS")
dl "${synth[@]}" >&2
sleep 1

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  dl "$SB" hybrid -m "$model" --prefill-device CPU --decode-device RPC0 --rpc "127.0.0.1:$port" \
    -p "$P" -n "$N" -r "$REPS" -t "$THREADS" --out "$work/h.$r.json" -q > /dev/null
  dl "$SB" advise "$work/h.$r.json" -o json > "$work/a.$r.json"
done

python3 - "$work" "$ROUNDS" <<'PY'
import json, statistics as st, sys
work, rounds = sys.argv[1], int(sys.argv[2])
errs = []
print("| round | test | predicted ms | measured ms | error |")
print("| ---: | --- | ---: | ---: | ---: |")
for r in range(1, rounds + 1):
    for v in json.load(open(f"{work}/a.{r}.json"))["validation"]:
        errs.append(abs(v["error"]))
        print(f"| {r} | pp{v['n_prompt']}+tg{v['n_gen']} | {v['predicted_ns'] / 1e6:.2f} | "
              f"{v['measured_ns'] / 1e6:.2f} | {v['error'] * 100:+.1f} % |")
if not errs:
    print("no predictions to check (advise validated no hybrid point)")
    sys.exit(1)
within = sum(e <= 0.10 for e in errs)
med = st.median(errs)
ok = med <= 0.10
print(f"\nmedian |error| over {len(errs)} predictions: {med * 100:.1f} % "
      f"(target <= 10 %: {'met' if ok else 'MISSED'}); {within} of {len(errs)} within 10 %")
sys.exit(0 if ok else 1)
PY
