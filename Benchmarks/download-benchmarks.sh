#!/usr/bin/env bash
# Downloads (issue 35): `orchestra run` with `save_to:` against `curl -o` on the same 1 GB file,
# and 8 parallel 60 MB bodies that nothing reads against `curl --parallel -o /dev/null`, served
# by nginx (sendfile) on loopback. Whole-command timings with farm-bench, the two commands in
# turn, medians; figures in BENCHMARKS.md#downloads.
#
#   Benchmarks/download-benchmarks.sh            # RUNS=5
#   RUNS=9 TRANSPORT=urlsession Benchmarks/download-benchmarks.sh
#   BIN=/tmp/orchestra Benchmarks/download-benchmarks.sh   # a binary built already
#
# orchestra also hashes what it saves (SHA-256, in the report); curl does not.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
TRANSPORT=${TRANSPORT:-asynchttpclient}
command -v nginx >/dev/null || { echo "download-benchmarks: needs nginx (apt-get install nginx)" >&2; exit 2; }
command -v farm-bench >/dev/null || { echo "download-benchmarks: needs farm-bench" >&2; exit 2; }
# BIN=/path/to/orchestra measures that binary instead of building one.
if [ -z "${BIN:-}" ]; then
    timeout 1800 swift build -c release --product orchestra
    BIN=$PWD/.build/release/orchestra
fi

work=$(mktemp -d /tmp/download-benchmarks.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The files are written to memory (/dev/shm) when it can take them: on disk, the write-back of
# one run's gigabyte falls on the next run, whichever command it is (spreads of 1.2x to 3x).
out=$work/out
if [ -d /dev/shm ] && [ "$(df --output=avail -B1G /dev/shm | tail -1)" -gt 4 ]; then out=$(mktemp -d /dev/shm/download-benchmarks.XXXXXX); fi
mkdir -p "$work/www" "$out"
chmod 755 "$work" "$work/www"  # nginx's workers run as another user
truncate -s 1G "$work/www/big.bin"
head -c 60000000 /dev/urandom > "$work/www/m60.bin"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $work/t1; proxy_temp_path $work/t2; fastcgi_temp_path $work/t3;
  uwsgi_temp_path $work/t4; scgi_temp_path $work/t5;
  server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
nginx -c "$work/nginx.conf"
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work" "$out"' EXIT

cat > "$work/big.yaml" <<YAML
steps:
  - id: big
    url: "http://127.0.0.1:$port/big.bin"
    save_to: $out/big.bin
    timeout: 5m
YAML
cat > "$work/unread.yaml" <<YAML
limit: 8
steps:
  - id: body
    for_each: "{{list.n}}"
    url: "http://127.0.0.1:$port/m60.bin?i={{item}}"
  - id: list
    url: "http://127.0.0.1:$port/list.json"
    captures: { n: \$.n }
YAML
echo '{"n": [1, 2, 3, 4, 5, 6, 7, 8]}' > "$work/www/list.json"
chmod 644 "$work/www/"*
curl -sf -o /dev/null "http://127.0.0.1:$port/list.json" || { echo "download-benchmarks: nginx does not answer" >&2; exit 1; }
urls=$(for i in 1 2 3 4 5 6 7 8; do printf 'http://127.0.0.1:%s/m60.bin?i=%s ' "$port" "$i"; done)

echo "== 1 GB with save_to (A: orchestra --transport $TRANSPORT) against curl -o (B)"
farm-bench -n "$RUNS" --timeout 900 --vs "curl -s -o $out/curl.bin http://127.0.0.1:$port/big.bin" -- \
    "$BIN" run "$work/big.yaml" --transport "$TRANSPORT"
echo "== 8 x 60 MB, read by nothing, 8 at once (A: orchestra) against curl --parallel -o /dev/null (B)"
# shellcheck disable=SC2086
farm-bench -n "$RUNS" --timeout 600 --vs "sh -c 'curl -s --parallel --parallel-max 8 $(for u in $urls; do printf -- '-o /dev/null %s ' "$u"; done)'" -- \
    "$BIN" run "$work/unread.yaml" --transport "$TRANSPORT"
