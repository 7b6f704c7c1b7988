#!/usr/bin/env bash
# Parity with the peer: stagebench `run` against llama.cpp's own llama-bench (built from the
# same tree), same synthetic model, threads and sizes, interleaved round by round so that
# machine noise hits both alike. Prints each side's median tokens/s, the ratio, and each
# side's median CV. Targets: ratio within ±3 %, stagebench's CV no larger than llama-bench's.
#
#   ROUNDS=5 THREADS=2 PRESET=llama-3.2-1b LAYERS=4 P=512 N=128 REPS=5 bash bench/parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}; THREADS=${THREADS:-2}; PRESET=${PRESET:-llama-3.2-1b}; LAYERS=${LAYERS:-4}
P=${P:-512}; N=${N:-128}; REPS=${REPS:-5}; QUANT=${QUANT:-q4_0}
SB=build/bin/stagebench; LB=build/peers/llama-bench
# llama-bench (with -dev none) always adds the accelerator modules it finds, here BLAS, to its
# scheduler; stagebench's device for the same setup is BLAS (CPU + BLAS). CPU alone would be
# another configuration, not the peer's.
SB_DEVICE=${SB_DEVICE:-BLAS}
[ -x "$SB" ] && [ -x "$LB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model="$work/model.gguf"
"$SB" synth --preset "$PRESET" --layers "$LAYERS" --quant "$QUANT" -o "$model" >&2

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  # Alternate who goes first so that neither always runs on a warmer machine.
  if [ $((r % 2)) -eq 1 ]; then order="sb lb"; else order="lb sb"; fi
  for who in $order; do
    if [ "$who" = sb ]; then
      "$SB" run -m "$model" -p "$P" -n "$N" -t "$THREADS" -r "$REPS" --device "$SB_DEVICE" \
        --membw off -o json -q > "$work/sb.$r.json"
    else
      "$LB" -m "$model" -p "$P" -n 0 -t "$THREADS" -r "$REPS" -dev none -o json \
        > "$work/lb_pp.$r.json" 2>/dev/null
      "$LB" -m "$model" -p 0 -n "$N" -d "$P" -t "$THREADS" -r "$REPS" -dev none -o json \
        > "$work/lb_tg.$r.json" 2>/dev/null
    fi
  done
done

python3 - "$work" "$ROUNDS" "$P" "$N" <<'PY'
import json, statistics as st, sys
work, rounds, p, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = {"prefill": {"sb": [], "lb": [], "sb_cv": [], "lb_cv": []},
        "decode": {"sb": [], "lb": [], "sb_cv": [], "lb_cv": []}}
for r in range(1, rounds + 1):
    t = json.load(open(f"{work}/sb.{r}.json"))["tests"][0]
    for stage in ("prefill", "decode"):
        thr = t[stage]["throughput"]
        rows[stage]["sb"].append(thr["mean"]); rows[stage]["sb_cv"].append(thr["cv"])
    for stage, f in (("prefill", "lb_pp"), ("decode", "lb_tg")):
        b = json.load(open(f"{work}/{f}.{r}.json"))[0]
        rows[stage]["lb"].append(b["avg_ts"]); rows[stage]["lb_cv"].append(b["stddev_ts"] / b["avg_ts"])
ok = True
print(f"| stage | stagebench t/s | llama-bench t/s | ratio | stagebench CV | llama-bench CV | verdict |")
print(f"| --- | ---: | ---: | ---: | ---: | ---: | --- |")
for stage, d in rows.items():
    a, b = st.median(d["sb"]), st.median(d["lb"])
    ca, cb = st.median(d["sb_cv"]), st.median(d["lb_cv"])
    ratio = a / b
    good = abs(ratio - 1) <= 0.03 and ca <= cb * 1.10 + 1e-3
    ok &= good
    print(f"| {stage} ({'pp'+p if stage=='prefill' else 'tg'+n+' @ d'+p}) | {a:.2f} | {b:.2f} | {ratio:.3f} | {ca*100:.2f} % | {cb*100:.2f} % | {'ok' if good else 'OUT OF TARGET'} |")
print(f"\n{rounds} interleaved rounds; medians over rounds of each run's mean; CV within a run.")
sys.exit(0 if ok else 1)
PY
