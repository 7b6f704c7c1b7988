#!/usr/bin/env bash
# `serve` against a llama-server with 4 slots that serve starts itself: output tokens/s at 4
# concurrent clients against 1, side by side in the same run, ROUNDS times (median ratio).
# Batching the slots' decode steps should make 4 clients faster than one.
#
# Target: median ratio of output tokens/s, concurrency 4 / concurrency 1, above 1.1. Prints each
# round and the median; exits 1 when it misses (2 when it cannot run).
#
#   ROUNDS=3 REQUESTS=16 bash bench/serve_concurrency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SB=${STAGEBENCH:-build/bin/stagebench}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-16}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$SB" synth --preset tiny -o "$work/tiny.gguf" >/dev/null 2>&1
echo "serve -m tiny --slots 4 --concurrency 1,4 --requests $REQUESTS -p 64 -n 32, $ROUNDS rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
ratios=()
for r in $(seq 1 "$ROUNDS"); do
  "$SB" serve -m "$work/tiny.gguf" --slots 4 --concurrency 1,4 --requests "$REQUESTS" -p 64 -n 32 \
    -o json >"$work/r$r.json" 2>"$work/r$r.err" || { tail -3 "$work/r$r.err"; exit 2; }
  ratio=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
pts = d['serve']['points']
one, four = pts[0]['output_tokens_per_s'], pts[1]['output_tokens_per_s']
print('%.3f %.1f %.1f' % (four / one, one, four))" "$work/r$r.json")
  set -- $ratio
  echo "  round $r: concurrency 1 $2 tok/s, concurrency 4 $3 tok/s, ratio $1"
  ratios+=("$1")
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
if awk -v m="$median" 'BEGIN { exit !(m > 1.1) }'; then
  echo "target (median ratio > 1.1): met ($median)"
else
  echo "target (median ratio > 1.1): MISSED ($median)"
  exit 1
fi
