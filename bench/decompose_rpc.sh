#!/usr/bin/env bash
# Decomposition over a loopback RPC server: the timing claims that
# Decompose.RpcStagesSplitIntoComputeConversionCommunicationCopiesHost no longer makes (its
# parts are measured apart, and on a loaded machine a no-work round trip can come out no larger
# than the op it is taken from, so communication can be 0 there: the test asserts what holds by
# construction). Runs `decompose` of the tiny synthetic model on RPC0 (a `stagebench
# rpc-server` on 127.0.0.1, one thread each) ROUNDS times and prints each stage's parts.
#
# Target: on an idle machine every round has accelerator compute, communication and copies
# above 0 in both stages, and a dispatch (no-work round trip) above 0. Exits 1 when a round
# misses (non-zero as well when it cannot run).
#
#   ROUNDS=3 THREADS=1 bash bench/decompose_rpc.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
ROUNDS=${ROUNDS:-3}; THREADS=${THREADS:-1}
. bench/lib/tiny_rpc_server.sh
start_tiny_rpc_server "$THREADS"

missed=0
echo "| round | stage | accelerator compute ms | communication ms | copies ms | dispatch µs | target |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | --- |"
for r in $(seq "$ROUNDS"); do
  dl "$SB" decompose -m "$model" -p 32 -t "$THREADS" --rpc "127.0.0.1:$port" --device RPC0 \
    --replay 8 --reps 2 --plain-reps 3 -o json -q > "$work/d.json"
  rows=$(python3 - "$work/d.json" "$r" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = 0
for s in doc["ops"]["stages"]:
    d = s["decomposition"]
    parts = {p["name"]: p.get("ns") for p in d["parts"]}
    disp = d["dispatch_ns"].get("RPC0")
    vals = [parts.get("accelerator_compute"), parts.get("communication"), parts.get("copies"), disp]
    ok = all(v is not None and v > 0 for v in vals)
    bad |= not ok
    f = lambda v, k: "-" if v is None else f"{v / k:.3f}"
    print(f"| {sys.argv[2]} | {s['stage']} | {f(vals[0], 1e6)} | {f(vals[1], 1e6)} | "
          f"{f(vals[2], 1e6)} | {f(vals[3], 1e3)} | {'met' if ok else 'MISSED'} (> 0) |")
sys.exit(1 if bad else 0)
EOF
) || missed=1
  echo "$rows"
done
exit "$missed"
