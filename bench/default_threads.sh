#!/usr/bin/env bash
# The default thread count against an explicit one: `stagebench run` without -t, with
# -t $THREADS (default: the physical cores as lscpu counts them) and with llama.cpp's context
# default -t 4 (for context), interleaved round by round. Prints each arm's median over rounds
# of the robust decode and prefill tokens/s and the threads its document recorded. Targets:
# the default records THREADS and decodes within ±10 % of -t THREADS; exit 1 otherwise.
# Meant for machines whose cores are all alike (no E-cores or LITTLE cores, which the default
# leaves out and lscpu counts).
#
#   ROUNDS=3 PRESET=tiny P=64 N=128 REPS=3 bash bench/default_threads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
ROUNDS=${ROUNDS:-3}; PRESET=${PRESET:-tiny}; LAYERS=${LAYERS:-0}; P=${P:-64}; N=${N:-128}
REPS=${REPS:-3}; QUANT=${QUANT:-q4_0}
. bench/lib/rounds.sh
need_rounds 3 "the targets are medians over rounds"
THREADS=${THREADS:-$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)}
SB=build/bin/stagebench
[ -x "$SB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model="$work/model.gguf"
layers=(); [ "$LAYERS" -gt 0 ] && layers=(--layers "$LAYERS")
dl "$SB" synth --preset "$PRESET" "${layers[@]}" --quant "$QUANT" -o "$model" >&2

arms=("default" "t$THREADS" "t4")
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  # Rotate who goes first so that none always runs on a warmer machine.
  for i in 0 1 2; do
    arm=${arms[$(( (i + r) % 3 ))]}
    case "$arm" in
      default) targs=() ;;
      t4) targs=(-t 4) ;;
      *) targs=(-t "$THREADS") ;;
    esac
    dl "$SB" run -m "$model" -p "$P" -n "$N" -r "$REPS" "${targs[@]}" --membw off -o json -q \
      > "$work/$arm.$r.json"
  done
done

python3 - "$work" "$ROUNDS" "$THREADS" <<'PY'
import json, statistics as st, sys
work, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
arms = ["default", f"t{threads}", "t4"]
res = {}
for a in arms:
    docs = [json.load(open(f"{work}/{a}.{r}.json"))["tests"][0] for r in range(1, rounds + 1)]
    res[a] = {
        "threads": sorted({d["config"]["n_threads"] for d in docs}),
        "decode": st.median(d["decode"]["robust"]["tokens_per_s"] for d in docs),
        "prefill": st.median(d["prefill"]["robust"]["tokens_per_s"] for d in docs),
    }
print("| arm | threads recorded | robust decode t/s | robust prefill t/s | decode vs -t %d |" % threads)
print("| --- | ---: | ---: | ---: | ---: |")
ref = res[f"t{threads}"]["decode"]
for a in arms:
    r = res[a]
    label = "no -t" if a == "default" else "-t " + a[1:]
    print(f"| {label} | {','.join(map(str, r['threads']))} | {r['decode']:.1f} | "
          f"{r['prefill']:.1f} | {r['decode'] / ref:.3f} |")
d = res["default"]
ok = d["threads"] == [threads] and abs(d["decode"] / ref - 1) <= 0.10
print(f"\n{rounds} interleaved rounds; medians over rounds of the robust figures. Target: no -t "
      f"records {threads} threads and decodes within ±10 % of -t {threads}: "
      f"{'ok' if ok else 'OUT OF TARGET'}")
sys.exit(0 if ok else 1)
PY
