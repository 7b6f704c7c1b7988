#!/usr/bin/env bash
# `serve` against a llama-server with 4 slots that serve starts itself: output tokens/s at 4
# concurrent clients against 1, side by side in the same run, ROUNDS times (median ratio).
# Batching the slots' decode steps should make 4 clients faster than one. Then, in the same round,
# an open-loop sweep `--rate LOW,inf` (inf: all requests at once, far above what 4 slots serve):
# past capacity, requests wait for a slot, so their TTFT grows.
#
# Targets: median ratio of output tokens/s, concurrency 4 / concurrency 1, above 1.1; median
# ratio of the TTFT median, rate inf / rate LOW (default 2/s), above 2. Prints each round and
# the medians; exits 1 when one misses (2 when it cannot run).
#
#   ROUNDS=3 REQUESTS=16 bash bench/serve_concurrency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
SB=${STAGEBENCH:-build/bin/stagebench}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}
. bench/lib/rounds.sh
need_rounds 3 "the targets are medians over rounds"
REQUESTS=${REQUESTS:-16}
LOW=${LOW:-2}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
dl "$SB" synth --preset tiny -o "$work/tiny.gguf" >/dev/null 2>&1
echo "serve -m tiny --slots 4 --concurrency 1,4 --requests $REQUESTS -p 64 -n 32, $ROUNDS rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
ratios=()
ttft_ratios=()
for r in $(seq 1 "$ROUNDS"); do
  dl "$SB" serve -m "$work/tiny.gguf" --slots 4 --concurrency 1,4 --requests "$REQUESTS" -p 64 -n 32 \
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
  dl "$SB" serve -m "$work/tiny.gguf" --slots 4 --rate "$LOW,inf" --requests "$REQUESTS" -p 64 -n 32 \
    -o json >"$work/q$r.json" 2>"$work/q$r.err" || { tail -3 "$work/q$r.err"; exit 2; }
  ttft=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
pts = d['serve']['points']
low, inf = pts[0]['ttft']['median_ms'], pts[1]['ttft']['median_ms']
print('%.3f %.1f %.1f' % (inf / low, low, inf))" "$work/q$r.json")
  set -- $ttft
  echo "  round $r: TTFT median at rate $LOW/s $2 ms, at rate inf $3 ms, ratio $1"
  ttft_ratios+=("$1")
done
median_of() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
median=$(median_of "${ratios[@]}")
ttft_median=$(median_of "${ttft_ratios[@]}")
missed=0
if awk -v m="$median" 'BEGIN { exit !(m > 1.1) }'; then
  echo "target (median tokens/s ratio, concurrency 4 / 1, > 1.1): met ($median)"
else
  echo "target (median tokens/s ratio, concurrency 4 / 1, > 1.1): MISSED ($median)"
  missed=1
fi
if awk -v m="$ttft_median" 'BEGIN { exit !(m > 2) }'; then
  echo "target (median TTFT ratio, rate inf / $LOW, > 2): met ($ttft_median)"
else
  echo "target (median TTFT ratio, rate inf / $LOW, > 2): MISSED ($ttft_median)"
  missed=1
fi
exit "$missed"
