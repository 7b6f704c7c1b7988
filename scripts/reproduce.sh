#!/usr/bin/env bash
# scripts/reproduce.sh OUTDIR
#
# Runs every "here" command of docs/reproduce.md, in the document's order, on this machine's
# analogues of the two studies' devices: the CPU, CPU + BLAS, a loopback `stagebench rpc-server`
# (started as the README starts it), the fixture sensor trees of tests/fixtures/telemetry (copied
# into OUTDIR, since one run plants a clock drop in its copy), the Hexagon logs of
# tests/fixtures/hexagon, and a llama-server that stagebench starts itself (`--engine http`).
#
# Each command's stdout goes to OUTDIR/NN-NAME.txt, whose first line is the command as the
# document prints it ($O is OUTDIR, $PORT the RPC server's port); stderr to NN-NAME.txt.err.
# Documents (--out) land in OUTDIR. The script stops at the first command that fails, naming it,
# and exits 1; bad usage or a missing build exits 2. It takes about 5 minutes on 2 cores.
#
# STAGEBENCH=path overrides build/bin/stagebench. It is not run by `make test` (too slow for
# CI); docs/reproduce.md's blocks are copied from its output.
# The commands below are in single quotes on purpose: printed as they are (with $O, $F, $PORT),
# then expanded by eval.
# shellcheck disable=SC2016
set -u -o pipefail

if [ $# -ne 1 ]; then
    echo "usage: scripts/reproduce.sh OUTDIR" >&2
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SB=${STAGEBENCH:-$ROOT/build/bin/stagebench}
[ -x "$SB" ] || { echo "reproduce.sh: no stagebench at $SB (make build first)" >&2; exit 2; }
mkdir -p "$1" || exit 2
O=$(cd "$1" && pwd)
case $O in *[[:space:]]*)
    echo "reproduce.sh: OUTDIR must not contain white space: $O" >&2
    exit 2
    ;;
esac
cd "$ROOT" || exit 2
F=tests/fixtures

# The document's commands say `stagebench`; this is the build's binary.
stagebench() { "$SB" "$@"; }

rpc_pid=""
planter_pid=""
cleanup() {
    [ -n "$planter_pid" ] && kill "$planter_pid" 2>/dev/null
    [ -n "$rpc_pid" ] && kill "$rpc_pid" 2>/dev/null
    wait 2>/dev/null
}
trap cleanup EXIT

n=0
# step NAME 'COMMAND': runs COMMAND (one line of shell, as the document prints it) with its
# stdout in NN-NAME.txt; the first failure ends the script with the command named.
step() {
    local name=$1 cmd=$2
    n=$((n + 1))
    local file
    file=$(printf '%s/%02d-%s.txt' "$O" "$n" "$name")
    printf '$ %s\n' "$cmd" >"$file"
    echo "reproduce.sh: [$n] $cmd" >&2
    local start=$SECONDS
    eval "$cmd" >>"$file" 2>"$file.err"
    local rc=$?
    if [ $rc -ne 0 ]; then
        echo "reproduce.sh: command $n failed (exit $rc): $cmd" >&2
        tail -n 3 "$file.err" >&2
        exit 1
    fi
    echo "reproduce.sh: [$n] done in $((SECONDS - start)) s" >&2
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$SB" --version
} >"$O/00-provenance.txt"

# Sensor fixture trees, copied: the sustained run below changes its copy while it runs.
rm -rf "$O/sys-snapdragon" "$O/sys-jetson"
cp -r "$F/telemetry/android-snapdragon/sys" "$O/sys-snapdragon"
cp -r "$F/telemetry/jetson-ina3221/sys" "$O/sys-jetson"

# A loopback RPC server, as the README starts one; one thread beside the client's one on 2 cores.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SB" rpc-server -p "$PORT" -t 1 >"$O/rpc-server.log" 2>&1 &
rpc_pid=$!
for _ in $(seq 1 100); do
    "$SB" devices --rpc "127.0.0.1:$PORT" >/dev/null 2>&1 && break
    kill -0 "$rpc_pid" 2>/dev/null || { echo "reproduce.sh: rpc-server did not start" >&2; exit 1; }
    sleep 0.1
done

# ---- models ---------------------------------------------------------------------------------
step synth-tiny 'stagebench synth --preset tiny --seed 7 -o $O/tiny.gguf'
# F16 weights for BLAS: Q4_0 weights are repacked for the CPU, in buffers BLAS cannot read.
step synth-tiny-f16 'stagebench synth --preset tiny --quant f16 --seed 7 -o $O/tiny-f16.gguf'

# ---- NPU study (domain.md section 1) --------------------------------------------------------
# Stage level: prefill and decode per backend.
step run-stages 'stagebench run -m $O/tiny.gguf,$O/tiny-f16.gguf -p 128 -n 32 -t 1 -r 5 --device CPU,BLAS,RPC0 --rpc 127.0.0.1:$PORT --membw off --out $O/run.json'
# Operator level: op time vs call time per op type, the scheduling tax.
step ops-cpu 'stagebench ops -m $O/tiny.gguf -p 32 -t 1 --out $O/ops-cpu.json'
step ops-rpc 'stagebench ops -m $O/tiny.gguf -p 32 -t 1 --rpc 127.0.0.1:$PORT --device RPC0 --out $O/ops-rpc.json'
step compare-ops-rpc 'stagebench compare $O/ops-cpu.json $O/ops-rpc.json --label CPU --label RPC'
# Table III: per-call MUL_MAT per shape, CPU vs CPU + BLAS (BLAS takes prefill's F16 mat-muls).
step ops-cpu-f16 'stagebench ops -m $O/tiny-f16.gguf -p 64 -t 1 --out $O/ops-cpu-f16.json'
step ops-blas 'stagebench ops -m $O/tiny-f16.gguf -p 64 -t 1 --device BLAS --out $O/ops-blas.json'
step compare-ops-blas 'stagebench compare $O/ops-cpu-f16.json $O/ops-blas.json --label CPU --label BLAS --out $O/compare-ops-blas.json'
# The NPU's own per-op times: a log of the NPU study's period (PR 17500 format, fixture).
step import-pr17500 'stagebench import hexagon-profile $F/hexagon/formats/pr17500_profile_op.log --out $O/npu-pr17500.json'
step import-pr16547 'stagebench import hexagon-profile $F/hexagon/formats/pr16547_first.log --out $O/npu-pr16547.json'
# Pipeline decomposition: the probe model on the RPC path, modes on the CPU, OPMASK mode logs.
step decompose-rpc 'stagebench decompose -m $O/tiny.gguf -p 32 -t 1 --rpc 127.0.0.1:$PORT --device RPC0 --out $O/decompose-rpc.json'
step decompose-modes 'stagebench decompose -m $O/tiny.gguf -p 32 -n 8 -t 1 -r 3 --mode plain= --mode unfused=GGML_CPU_DISABLE_FUSION=1,LLAMA_GRAPH_REUSE_DISABLE=1 --out $O/modes-cpu.json'
step import-modes 'stagebench import hexagon-profile --mode queue=$F/hexagon/modes_pr16547/queue.log --mode quant=$F/hexagon/modes_pr16547/quant.log --mode full=$F/hexagon/modes_pr16547/full.log --out $O/modes-npu.json'
step import-modes-markers "stagebench import hexagon-profile --mode queue=\$F/hexagon/modes_markers/queue.log --mode quant=\$F/hexagon/modes_markers/quant.log --mode full=\$F/hexagon/modes_markers/full.log --stage-of '=== prefill=prefill' --stage-of '=== decode=decode'"
# Table V on today's backend: the NPU's split from one GGML_HEXAGON_PROFILE=3 log (fixture).
step import-profile3 'stagebench import hexagon-profile $F/hexagon/pinned_profile3.log --out $O/npu-profile3.json'
# Energy per stage with a phone's sensors (fixture tree: a battery at a constant 1.74 W).
step run-energy 'stagebench run -m $O/tiny.gguf -p 128 -n 32 -t 1 -r 3 --device CPU,RPC0 --rpc 127.0.0.1:$PORT --membw off --sysfs-root $O/sys-snapdragon --telemetry on --idle 0.5 --out $O/run-energy.json'
# Stage-aware advice: prefill on one device, decode on another, and what to choose.
step hybrid 'stagebench hybrid -m $O/tiny.gguf --prefill-device CPU --decode-device RPC0 --rpc 127.0.0.1:$PORT -p 32,128 -n 16 -r 3 -t 1 --out $O/hybrid.json'
step advise 'stagebench advise $O/run.json $O/hybrid.json $O/ops-rpc.json --prompt 1024 --gen 256'

# ---- Sustained-load study (domain.md section 2) ---------------------------------------------
# 20 rounds, 1 s apart, on a phone's sensor tree. After round 8 reaches the document, the copy's
# CPU clocks drop to 960 MHz and its CPU and GPU zones warm by 20 °C: a planted throttle.
(
    for _ in $(seq 1 1200); do
        r=$(jq '.sustained.phases[0].rounds | length' "$O/sustained.json" 2>/dev/null || echo 0)
        if [ "${r:-0}" -ge 8 ]; then
            # Each file replaced whole (a rename), as sysfs never shows a half-written value.
            put() { echo "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }
            for p in "$O"/sys-snapdragon/devices/system/cpu/cpufreq/policy*; do
                put "$p/scaling_cur_freq" 960000
            done
            for f in "$O"/sys-snapdragon/class/thermal/thermal_zone[012]/temp \
                "$O"/sys-snapdragon/class/kgsl/kgsl-3d0/temp; do
                put "$f" $(($(cat "$f") + 20000))
            done
            exit 0
        fi
        sleep 0.05
    done
) &
planter_pid=$!
step sustained 'stagebench sustained -m $O/tiny.gguf --rounds 20 --cooldown 1s --prompt-tokens 128 --max-tokens 32 -t 1 --sysfs-root $O/sys-snapdragon --telemetry on --idle 0.5 --out $O/sustained.json'
wait "$planter_pid" 2>/dev/null
planter_pid=""
# No sensors at all: what the verdict says about a throughput drop without evidence.
step sustained-nosensors 'stagebench sustained -m $O/tiny.gguf --rounds 20 --cooldown 1s --prompt-tokens 128 --max-tokens 32 -t 1 --telemetry off --out $O/sustained-nosensors.json'
# Chunked prefill (the S24 Ultra's 128-token chunks) beside the whole prompt, and background load.
step sustained-whole 'stagebench sustained -m $O/tiny.gguf --rounds 5 --cooldown 1s --prompt-tokens 512 --max-tokens 32 -t 1 --telemetry off --out $O/sustained-whole.json'
step sustained-chunked 'stagebench sustained -m $O/tiny.gguf --rounds 5 --cooldown 1s --prompt-tokens 512 --chunk 128 --max-tokens 32 -t 1 --telemetry off --out $O/sustained-chunked.json'
step sustained-background 'stagebench sustained -m $O/tiny.gguf --rounds 5 --cooldown 1s --prompt-tokens 128 --max-tokens 32 -t 1 --background cpu:1@50% --telemetry off --out $O/sustained-background.json'
# Another engine behind HTTP: a llama-server that stagebench starts on 127.0.0.1 (Jetson rails).
step sustained-http 'stagebench sustained -m $O/tiny.gguf --engine http --rounds 20 --cooldown 1s --prompt-tokens 128 --max-tokens 32 -t 1 --sysfs-root $O/sys-jetson --telemetry on --idle 0.5 --out $O/sustained-http.json'
step compare-sustained 'stagebench compare $O/sustained.json $O/sustained-http.json --label in-process --label llama-server --match m,p,n'

# ---- The figures: one HTML page of the documents above ---------------------------------------
step report 'stagebench report $O/run.json $O/ops-rpc.json $O/compare-ops-blas.json $O/ops-blas.json $O/decompose-rpc.json $O/modes-npu.json $O/run-energy.json $O/hybrid.json $O/sustained.json $O/sustained-http.json -o $O/report.html'

echo "reproduce.sh: $n commands, outputs in $O" >&2
