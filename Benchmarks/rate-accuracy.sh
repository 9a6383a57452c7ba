#!/usr/bin/env bash
# Rate accuracy (issue 36): `orchestra run` with a host's `rate:` against the demo server's
# /limited route, which records when each request arrived; the achieved rate at the server
# (requests after the first ÷ seconds from the first to the last) is divided by the configured
# one. Also the most requests any one second held (at most rate + burst). Figures in
# BENCHMARKS.md#rate-limits.
#
#   Benchmarks/rate-accuracy.sh                      # RATE=50 SECONDS_=60 RUNS=3
#   RATE=200 SECONDS_=30 Benchmarks/rate-accuracy.sh
#   BIN=/tmp/orchestra Benchmarks/rate-accuracy.sh   # a binary built already
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-50}
SECONDS_=${SECONDS_:-60}
RUNS=${RUNS:-3}
if [ -z "${BIN:-}" ]; then
    timeout 1800 swift build -c release --product orchestra
    BIN=$PWD/.build/release/orchestra
fi
work=$(mktemp -d /tmp/rate-accuracy.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" demo --serve --port "$port" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/list/1" && break; sleep 0.1; done
count=$((RATE * SECONDS_ + 1))
for run in $(seq "$RUNS"); do
    cat > "$work/rate.yaml" <<YAML
limit: 64
hosts: { "127.0.0.1:$port": { rate: $RATE/s } }
steps:
  - { id: list, url: "http://127.0.0.1:$port/list/$count", captures: { items: \$.items } }
  - { id: hit, for_each: "{{list.items}}", url: "http://127.0.0.1:$port/limited/run$run?limit=1000000&n={{item}}" }
YAML
    "$BIN" run "$work/rate.yaml" --no-color > "$work/run.log" || { cat "$work/run.log"; exit 1; }
    curl -s "http://127.0.0.1:$port/limited/run$run/stats" | python3 -c "
import json, sys
s = json.load(sys.stdin)
achieved = (s['total'] - 1) / s['span']
print(f'run $run: {s[\"total\"]} requests in {s[\"span\"]:.3f} s: {achieved:.3f}/s for $RATE/s = {achieved / $RATE:.4f}; at most {s[\"max_in_any_second\"]} in any second')
"
done
