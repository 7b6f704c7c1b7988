#!/usr/bin/env bash
# Is `serve`'s client (one thread per in-flight request, each with its own connection) cheap
# next to the server it loads? A llama-server with 16 slots on the tiny model, started here so
# that its CPU time can be read from /proc, is loaded by `serve --concurrency 1,4,16`; per point
# the client's CPU per request (the document's client_cpu_ms_per_request) is set beside the
# server's CPU per request over the same point (its /proc/PID/stat before and after, one point
# per serve run).
#
# Targets, at every concurrency: client CPU per request below 10 % of the server's; and the
# client's CPU per request at concurrency 16 at most twice that at 1 (a thread per request
# would show its cost there). Prints each point; exits 1 when a target is missed (2 when it
# cannot run).
#
#   REQUESTS=32 bash bench/serve_client_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SB=${STAGEBENCH:-build/bin/stagebench}
SERVER=${LLAMA_SERVER:-build/peers/llama-server}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
[ -x "$SERVER" ] || { echo "no llama-server at $SERVER (make build puts it in build/peers)" >&2; exit 2; }
REQUESTS=${REQUESTS:-32}
work=$(mktemp -d)
spid=""
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$SB" synth --preset tiny -o "$work/tiny.gguf" >/dev/null 2>&1
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$SERVER" -m "$work/tiny.gguf" --host 127.0.0.1 --port "$port" -c 4096 -np 16 --no-webui \
  >"$work/server.log" 2>&1 &
spid=$!
for _ in $(seq 1 600); do
  curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$spid" 2>/dev/null || { tail -3 "$work/server.log"; exit 2; }
  sleep 0.1
done
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$spid/stat"; }
echo "serve --url llama-server(-np 16, tiny) --concurrency C --requests $REQUESTS -p 32 -n 16 (load: $(cut -d' ' -f1-3 /proc/loadavg))"
missed=0
declare -A client
for c in 1 4 16; do
  before=$(cpu_s)
  "$SB" serve --url "http://127.0.0.1:$port" --concurrency "$c" --requests "$REQUESTS" \
    -p 32 -n 16 --telemetry off -o json >"$work/c$c.json" 2>"$work/c$c.err" ||
    { tail -3 "$work/c$c.err"; exit 2; }
  after=$(cpu_s)
  read -r cl srv pct < <(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['serve']['points'][0]
srv = (float(sys.argv[3]) - float(sys.argv[2])) * 1e3 / len(p['requests'])
cl = p['client_cpu_ms_per_request']
print('%.3f %.3f %.1f' % (cl, srv, 100 * cl / srv if srv > 0 else float('inf')))" \
    "$work/c$c.json" "$before" "$after")
  client[$c]=$cl
  echo "  concurrency $c: client $cl ms CPU/request, server $srv ms CPU/request: client $pct % of server"
  if ! awk -v p="$pct" 'BEGIN { exit !(p < 10) }'; then
    echo "  target (client < 10 % of server at concurrency $c): MISSED"
    missed=1
  fi
done
growth=$(awk -v a="${client[1]}" -v b="${client[16]}" 'BEGIN { printf "%.2f", (a > 0) ? b / a : 0 }')
if awk -v g="$growth" 'BEGIN { exit !(g <= 2) }'; then
  echo "target (client CPU/request at 16 <= 2x at 1): met (${growth}x)"
else
  echo "target (client CPU/request at 16 <= 2x at 1): MISSED (${growth}x)"
  missed=1
fi
[ "$missed" = 0 ] && echo "targets: met" || { echo "targets: MISSED"; exit 1; }
