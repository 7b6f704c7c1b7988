#!/usr/bin/env bash
# `explain` against llama-servers started with one setting known to make them slower than the
# bench, each in its own run on the same machine:
#   prefill: the tiny model, the server told `-ub 32` (the bench's micro-batch is 512);
#   decode:  a 2-layer llama-3.2-1b (its 128k-token output layer makes decode read ~200 MB per
#            token, so compute outweighs HTTP), the server told `-t SERVER_THREADS` against the
#            bench's `-t BENCH_THREADS`.
# Threads and devices are otherwise set alike on both sides (the bench gets the server's device
# set), so the setting that causes the gap is the only one that differs but the context (the
# server's 2048 cells per slot against the bench's few hundred), which explain measures too.
#
# Targets, for the stage each run is about: at least 80 % of the gap (server - graph) attributed
# to the causing setting (its part measured alone at level 2 over the gap, both medians of the
# interleaved rounds), and the attributed parts plus the remainder adding up to the gap within
# the gap's 95 % CI. Prints the waterfall's numbers; exits 1 on a miss, 2 when it cannot run.
#
#   ROUNDS=5 bash bench/explain_attribution.sh
#   BENCH_THREADS=1 SERVER_THREADS=2 bash bench/explain_attribution.sh   # more threads slower?
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
SB=${STAGEBENCH:-build/bin/stagebench}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
. bench/lib/rounds.sh
need_rounds 2 "the second target is the gap's 95 % interval, which one round does not give"
BENCH_THREADS=${BENCH_THREADS:-2}
SERVER_THREADS=${SERVER_THREADS:-1}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
dl "$SB" synth --preset tiny -o "$work/tiny.gguf" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 2; }
dl "$SB" synth --preset llama-3.2-1b --layers 2 -o "$work/l2.gguf" >/dev/null 2>&1 ||
  { echo "synth failed" >&2; exit 2; }
# The server's devices: every one llama.cpp finds (BLAS runs ops in every context).
DEVICE=$(dl "$SB" devices 2>/dev/null | awk -F'|' 'NR > 2 { gsub(/ /, "", $2); if ($2 != "CPU" && $2 !~ /^RPC/ && $2 != "") d = d "+" $2 } END { print "CPU" d }')
echo "explain, $ROUNDS rounds each, bench devices $DEVICE (load: $(cut -d' ' -f1-3 /proc/loadavg))"

run() {  # name, stage, setting, explain args...
  local name=$1 stage=$2 setting=$3; shift 3
  dl "$SB" explain "$@" -r "$ROUNDS" --device "$DEVICE" --no-ops -q -o json >"$work/$name.json" \
    2>"$work/$name.err" || { tail -5 "$work/$name.err" >&2; exit 2; }
  python3 - "$work/$name.json" "$stage" "$setting" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
stage, setting = sys.argv[2], sys.argv[3]
e = doc["explain"]
parts = [p for p in e["parts"] if p["stage"] == stage]
gap = next(p for p in parts if p["kind"] == "gap")
ms = lambda ns: "-" if ns is None else "%.3f ms" % (ns / 1e6)
print("  %s: gap %s [%s, %s] over %d rounds" % (stage, ms(gap["ns"]), ms(gap["ci95_lo_ns"]),
                                               ms(gap["ci95_hi_ns"]), gap["n_rounds"]))
total = 0.0
cause = None
for p in parts:
    if p["kind"] == "gap":
        continue
    total += p["ns"] or 0.0
    share = "-" if p["share"] is None else "%.0f %%" % (100 * p["share"])
    print("    %-12s %-11s %12s [%s, %s]  %s" % (p["kind"], p["name"], ms(p["ns"]),
                                              ms(p["ci95_lo_ns"]), ms(p["ci95_hi_ns"]), share))
    if p["kind"] == "setting" and p["name"] == setting:
        cause = p
for v in e["verdicts"]:
    if v.startswith(stage):
        print("    verdict: " + v)
missed = 0
share = cause["share"] if cause else None
if share is not None and share >= 0.8:
    print("  target (%s: share of the gap attributed to %s >= 80 %%): met (%.0f %%)" % (stage, setting, 100 * share))
else:
    print("  target (%s: share of the gap attributed to %s >= 80 %%): MISSED (%s)" %
          (stage, setting, "no part" if share is None else "%.0f %%" % (100 * share)))
    missed = 1
lo, hi = gap["ci95_lo_ns"], gap["ci95_hi_ns"]
if lo is not None and lo <= total <= hi:
    print("  target (%s: parts + remainder = %s within the gap's CI): met" % (stage, ms(total)))
else:
    print("  target (%s: parts + remainder = %s within the gap's CI): MISSED" % (stage, ms(total)))
    missed = 1
sys.exit(missed)
EOF
}

missed=0
echo "prefill: tiny, -p 256 -n 8, server -ub 32"
run prefill prefill n_ubatch -m "$work/tiny.gguf" -p 256 -n 8 -t 1 \
  --server-args "-ub 32 -t 1" || missed=1
echo "decode: llama-3.2-1b 2 layers, -p 32 -n 16, bench -t $BENCH_THREADS, server -t $SERVER_THREADS"
run decode decode threads -m "$work/l2.gguf" -p 32 -n 16 -t "$BENCH_THREADS" \
  --server-args "-t $SERVER_THREADS -c 2048" || missed=1
exit "$missed"
