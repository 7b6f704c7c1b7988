#!/usr/bin/env bash
# The scheduling tax of light ops over RPC: the study's pattern that
# Ops.RpcDecodeSplitsCopiesAndTimesEveryOpOnRpc0 no longer asserts (a ratio of two timings from
# one run failed CI once: ADD's call/op 6.6 against MUL_MAT's 10.4). Runs `ops` of the tiny
# synthetic model on RPC0 (a `stagebench rpc-server` on 127.0.0.1, one thread each) ROUNDS
# times and prints, for decode, each op type's call time over its op time: light ops
# (RMS_NORM, ADD, MUL, ROPE) pay the round trip, mat-muls amortise it.
#
# Target, on the medians over the rounds: every light op's call/op ratio above MUL_MAT's, and
# the light ops' summed call time over their summed op time above twice MUL_MAT's ratio.
# Exits 1 when it misses (2 when it cannot run).
#
#   ROUNDS=5 THREADS=1 bash bench/rpc_op_tax.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
ROUNDS=${ROUNDS:-5}; THREADS=${THREADS:-1}
. bench/lib/rounds.sh
need_rounds 3 "the targets are medians over rounds"
. bench/lib/tiny_rpc_server.sh
start_tiny_rpc_server "$THREADS"

for r in $(seq "$ROUNDS"); do
  dl "$SB" ops -m "$model" -p 32 -t "$THREADS" --rpc "127.0.0.1:$port" --device RPC0 \
    --replay 8 --reps 2 --plain-reps 3 -o json -q > "$work/ops-$r.json" || exit 2
done
python3 - "$work"/ops-*.json <<'EOF'
import json, statistics, sys
LIGHT = ["RMS_NORM", "ADD", "MUL", "ROPE"]
rounds = []
for path in sys.argv[1:]:
    doc = json.load(open(path))
    dec = next(s for s in doc["ops"]["stages"] if s["stage"] == "decode")
    rows = {a["op"]: a for a in dec["by_op"] if isinstance(a.get("call_op_ratio"), (int, float))}
    if "MUL_MAT" not in rows:
        sys.exit("no timed MUL_MAT row in decode: " + path)
    light = [rows[o] for o in LIGHT if o in rows]
    if len(light) < 3:
        sys.exit("fewer than 3 light ops timed in decode: " + path)
    r = {o: rows[o]["call_op_ratio"] for o in ["MUL_MAT"] + LIGHT if o in rows}
    r["light"] = sum(a["call_ns"] for a in light) / sum(a["op_ns"] for a in light)
    rounds.append(r)
cols = ["MUL_MAT"] + LIGHT + ["light"]
print("| round | " + " | ".join(c + " call/op" for c in cols) + " |")
print("| ---: |" + " ---: |" * len(cols))
fmt = lambda v: "-" if v is None else f"{v:.2f}"
for i, r in enumerate(rounds, 1):
    print(f"| {i} | " + " | ".join(fmt(r.get(c)) for c in cols) + " |")
med = {c: statistics.median([r[c] for r in rounds if c in r]) for c in cols
       if any(c in r for r in rounds)}
print("| median | " + " | ".join(fmt(med.get(c)) for c in cols) + " |")
miss = [o for o in LIGHT if o in med and med[o] <= med["MUL_MAT"]]
ok_sum = med["light"] > 2 * med["MUL_MAT"]
print(f"light ops summed: {med['light']:.2f} against 2 x MUL_MAT {2 * med['MUL_MAT']:.2f}: "
      f"{'met' if ok_sum else 'MISSED'}; light ops at or below MUL_MAT: {', '.join(miss) or 'none'}")
sys.exit(0 if ok_sum and not miss else 1)
EOF
