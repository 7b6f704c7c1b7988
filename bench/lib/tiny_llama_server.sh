# Sourced by the serve benches: the tiny synthetic model and a llama-server on it, on a free
# 127.0.0.1 port, with the slots the bench asks for (stopped and cleaned up on exit).
#
#   start_tiny_llama_server SLOTS   sets work (a temporary directory), port and spid (the
#                                   server's pid); exits 2 when it cannot start.
. bench/lib/deadline.sh
SB=${STAGEBENCH:-build/bin/stagebench}
SERVER=${LLAMA_SERVER:-build/peers/llama-server}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
[ -x "$SERVER" ] || { echo "no llama-server at $SERVER (make build puts it in build/peers)" >&2; exit 2; }
work=$(mktemp -d)
spid=""
cleanup() { stop_bg "$spid"; rm -rf "$work"; }
trap cleanup EXIT

start_tiny_llama_server() {
  dl "$SB" synth --preset tiny -o "$work/tiny.gguf" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 2; }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$SERVER" -m "$work/tiny.gguf" --host 127.0.0.1 --port "$port" -c 4096 -np "$1" --no-webui \
    >"$work/server.log" 2>&1 &
  spid=$!
  for _ in $(seq 1 600); do
    curl -fs --max-time 2 "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$spid" 2>/dev/null || { tail -3 "$work/server.log"; exit 2; }
    sleep 0.1
  done
  echo "llama-server did not become healthy within 60 s" >&2
  exit 2
}
