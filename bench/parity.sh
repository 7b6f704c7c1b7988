#!/usr/bin/env bash
# Parity with the peer: stagebench `run` against llama.cpp's own llama-bench (built from the
# same tree), same synthetic model, threads and sizes, interleaved round by round so that
# machine noise hits both alike. Prints per side the median over rounds of each run's mean
# tokens/s and of its stall-robust figure, the stalls counted, the ratios, the ratio of the
# best rounds, and each side's median CV. Robust figure, the same statistic on both sides:
# tokens / the median repetition (stagebench's duration_ns, llama-bench's samples_ns).
# stagebench's own decode figure (`robust`: 1e9 / the median inter-token latency) is printed
# beside it, not compared: where token latencies are skewed (lavapipe: the driver's threads
# and ggml's share the cores) the median token is faster than the median repetition's mean
# token, and the two statistics part (see bench/README.md). Stalls:
# the same rule (modified z-score > 3.5, one-sided) on stagebench's prefill repetitions and
# decode tokens, and on llama-bench's repetitions. Targets: robust ratio within ±TOLERANCE (3 %),
# stagebench's CV no larger than llama-bench's; exit 1 when a stage is off target.
#
#   ROUNDS=5 THREADS=2 PRESET=llama-3.2-1b LAYERS=4 P=512 N=128 REPS=5 bash bench/parity.sh
# On a GPU both sides name it and offload every layer (bench/vulkan_parity.sh, gpu_check.sh):
#   SB_DEVICE=Vulkan0 LB_DEVICE=Vulkan0 NGL=99 TOLERANCE=0.05 bash bench/parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}; THREADS=${THREADS:-2}; PRESET=${PRESET:-llama-3.2-1b}; LAYERS=${LAYERS:-4}
P=${P:-512}; N=${N:-128}; REPS=${REPS:-5}; QUANT=${QUANT:-q4_0}
SB=${SB:-build/bin/stagebench}; LB=${LB:-build/peers/llama-bench}
# llama-bench (with -dev none) always adds the accelerator modules it finds, here BLAS, to its
# scheduler; stagebench's device for the same setup is BLAS (CPU + BLAS). CPU alone would be
# another configuration, not the peer's.
SB_DEVICE=${SB_DEVICE:-BLAS}
LB_DEVICE=${LB_DEVICE:-none}; NGL=${NGL:-99}; TOLERANCE=${TOLERANCE:-0.03}
[ -x "$SB" ] && [ -x "$LB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# MODEL: a GGUF to use instead of synthesizing one (LAYERS empty: the preset's full depth).
model=${MODEL:-"$work/model.gguf"}
[ -n "${MODEL:-}" ] || "$SB" synth --preset "$PRESET" ${LAYERS:+--layers "$LAYERS"} --quant "$QUANT" -o "$model" >&2

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  # Alternate who goes first so that neither always runs on a warmer machine.
  if [ $((r % 2)) -eq 1 ]; then order="sb lb"; else order="lb sb"; fi
  for who in $order; do
    if [ "$who" = sb ]; then
      "$SB" run -m "$model" -p "$P" -n "$N" -t "$THREADS" -r "$REPS" --device "$SB_DEVICE" \
        -ngl "$NGL" --membw off -o json -q > "$work/sb.$r.json"
    else
      "$LB" -m "$model" -p "$P" -n 0 -t "$THREADS" -r "$REPS" -dev "$LB_DEVICE" -ngl "$NGL" \
        -o json > "$work/lb_pp.$r.json" 2>/dev/null
      "$LB" -m "$model" -p 0 -n "$N" -d "$P" -t "$THREADS" -r "$REPS" -dev "$LB_DEVICE" \
        -ngl "$NGL" -o json > "$work/lb_tg.$r.json" 2>/dev/null
    fi
  done
done

python3 - "$work" "$ROUNDS" "$P" "$N" "$TOLERANCE" <<'PY'
import json, statistics as st, sys
work, rounds, p, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tol = float(sys.argv[5])

def stalls(xs, k=3.5):
    """Count of samples whose one-sided modified z-score exceeds k (stagebench's rule)."""
    if not xs:
        return 0
    med = st.median(xs)
    mad = st.median([abs(x - med) for x in xs])
    scale = mad / 0.6745 if mad > 0 else 1.253314 * sum(abs(x - med) for x in xs) / len(xs)
    return 0 if scale <= 0 else sum(1 for x in xs if (x - med) / scale > k)

keys = ("sb", "lb", "sb_rob", "lb_rob", "sb_itl", "sb_cv", "lb_cv", "sb_stalls", "lb_stalls")
rows = {stage: {k: [] for k in keys} for stage in ("prefill", "decode")}
for r in range(1, rounds + 1):
    t = json.load(open(f"{work}/sb.{r}.json"))["tests"][0]
    for stage in ("prefill", "decode"):
        s, d = t[stage], rows[stage]
        d["sb"].append(s["throughput"]["mean"]); d["sb_cv"].append(s["throughput"]["cv"])
        d["sb_rob"].append((p if stage == "prefill" else n) * 1e9 / st.median(s["duration_ns"]))
        d["sb_itl"].append(s["robust"]["tokens_per_s"])
        d["sb_stalls"].append(s["stalls"]["tokens" if stage == "decode" else "repetitions"]["count"])
    for stage, f, tokens in (("prefill", "lb_pp", p), ("decode", "lb_tg", n)):
        b, d = json.load(open(f"{work}/{f}.{r}.json"))[0], rows[stage]
        d["lb"].append(b["avg_ts"]); d["lb_cv"].append(b["stddev_ts"] / b["avg_ts"])
        d["lb_rob"].append(tokens * 1e9 / st.median(b["samples_ns"]))
        d["lb_stalls"].append(stalls(b["samples_ns"]))
ok = True
print("| stage | stagebench t/s | llama-bench t/s | ratio | stagebench robust t/s | "
      "llama-bench robust t/s | robust ratio | best-round ratio | stagebench's own robust t/s | "
      "stagebench stalls | llama-bench stalls | stagebench CV | llama-bench CV | verdict |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for stage, d in rows.items():
    a, b = st.median(d["sb"]), st.median(d["lb"])
    ra, rb = st.median(d["sb_rob"]), st.median(d["lb_rob"])
    best = max(d["sb"]) / max(d["lb"])
    ca, cb = st.median(d["sb_cv"]), st.median(d["lb_cv"])
    ratio, rratio = a / b, ra / rb
    good = abs(rratio - 1) <= tol and ca <= cb * 1.10 + 1e-3
    ok &= good
    name = f"pp{p}" if stage == "prefill" else f"tg{n} @ d{p}"
    unit = "tokens" if stage == "decode" else "reps"
    print(f"| {stage} ({name}) | {a:.2f} | {b:.2f} | {ratio:.3f} | {ra:.2f} | {rb:.2f} | "
          f"{rratio:.3f} | {best:.3f} | {st.median(d['sb_itl']):.2f} | {sum(d['sb_stalls'])} {unit} | {sum(d['lb_stalls'])} reps | "
          f"{ca*100:.2f} % | {cb*100:.2f} % | {'ok' if good else 'OUT OF TARGET'} |")
print(f"\n{rounds} interleaved rounds; medians over rounds of each run's mean and robust figure "
      "(tokens / median repetition, both sides); stagebench's own robust figure: decode from the "
      "median token (1e9 / median ITL), prefill as the robust column; "
      "best-round ratio = best stagebench run / best llama-bench run (means); CV within a run; "
      "stalls summed over rounds.")
sys.exit(0 if ok else 1)
PY
