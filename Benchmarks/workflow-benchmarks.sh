#!/usr/bin/env bash
# orchestra run against the demo server, timed from outside with farm-bench (whole process:
# wall time, CPU and peak memory; min/median/max over several runs). Figures: BENCHMARKS.md#the-command
# (and #durable-runs-on-sqlite for `state`).
#
#   Benchmarks/workflow-benchmarks.sh            # both benchmarks
#   Benchmarks/workflow-benchmarks.sh memory     # for_each peak RSS, 200,000 vs 20,000 elements
#   Benchmarks/workflow-benchmarks.sh throughput # 10,000 elements, AsyncHTTPClient vs URLSession
#   Benchmarks/workflow-benchmarks.sh validate   # validate 1k/10k/100k-step chains and independent sets
#   Benchmarks/workflow-benchmarks.sh steps      # run 20,000 independent steps vs one for_each of 20,000
#   Benchmarks/workflow-benchmarks.sh data       # --data: 1,000 rows x 3 steps, --parallel 32 vs --parallel 1
#   Benchmarks/workflow-benchmarks.sh hey        # 10,000 GETs, 32 at once: orchestra run vs hey (Debian's `hey`)
#   Benchmarks/workflow-benchmarks.sh floor      # the same GETs by AsyncHTTPClient alone vs hey, and orchestra run vs it
#   Benchmarks/workflow-benchmarks.sh state      # 10,000 GETs / POSTs, 32 at once: with --state vs in memory
#   Benchmarks/workflow-benchmarks.sh paginate   # paginate: streamed into for_each, 1,000,000 vs 100,000 items
set -euo pipefail
cd "$(dirname "$0")/.."
which farm-bench > /dev/null || { echo "needs farm-bench (the machine's benchmark timer)" >&2; exit 1; }

swift build -c release --product orchestra
bin=$PWD/.build/release/orchestra
port=${PORT:-8199}
base=http://127.0.0.1:$port
workflows=$PWD/Benchmarks/Workflows

# Another server on the port (a demo server left running, an older build) would answer in
# this one's place, and every figure would be that server's: refuse to start.
if curl -s -o /dev/null "$base/"; then
    echo "port $port already answers; stop that server or set PORT" >&2
    exit 1
fi
"$bin" demo --serve --port "$port" > /dev/null &
server=$!
trap 'kill $server 2> /dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "$base/status/200" > /dev/null && break; sleep 0.1; done
kill -0 "$server" 2> /dev/null || { echo "the demo server did not start on port $port" >&2; exit 1; }

what=${1:-all}
if [[ $what == all || $what == validate ]]; then
    files=$(mktemp -d)
    for n in 1000 10000 100000; do
        python3 - "$n" "$files" <<'PY'
import sys
n, folder = int(sys.argv[1]), sys.argv[2]
for kind in ("chain", "independent"):
    with open(f"{folder}/{kind}-{n}.yaml", "w") as out:
        out.write("steps:\n")
        for i in range(n):
            needs = f", needs: s{i-1}" if kind == "chain" and i else ""
            out.write(f'  - {{ id: s{i}, url: "http://127.0.0.1:1/items/{i}?page={i % 7}"{needs} }}\n')
PY
        for kind in chain independent; do
            echo "== validate, $n steps, $kind"
            farm-bench -n 5 --timeout 600 -- "$bin" validate "$files/$kind-$n.yaml"
        done
    done
    [[ $what == validate ]] && exit 0
fi
if [[ $what == all || $what == steps ]]; then
    file=$(mktemp --suffix .yaml)
    python3 - "$file" "$base" <<'PY'
import sys
path, base = sys.argv[1], sys.argv[2]
with open(path, "w") as out:
    out.write(f'vars: {{ base: "{base}" }}\nlimit: 64\nsteps:\n')
    for i in range(20000):
        out.write(f'  - {{ id: s{i}, url: "{{{{vars.base}}}}/status/200?i={i}" }}\n')
PY
    echo "== validate the 20,000-step file (the checker's share of the run)"
    farm-bench -n 5 --timeout 600 -- "$bin" validate "$file"
    echo "== run 20,000 independent steps (A) vs one for_each step of 20,000 elements (B), limit 64"
    farm-bench -n 5 --timeout 900 \
        --vs "$bin run $workflows/for-each-limit-64.yaml --var base=$base --var n=20000" \
        -- "$bin" run "$file"
    [[ $what == steps ]] && exit 0
fi
if [[ $what == all || $what == data ]]; then
    rows=$(mktemp --suffix .csv)
    python3 - "$rows" <<'PY'
import sys
with open(sys.argv[1], "w") as out:
    out.write("id,email\n")
    for i in range(1, 1001):
        out.write(f"{i},user{i}@example.com\n")
PY
    echo "== --data: 1,000 rows x 3 steps (3,000 requests, one login), limit 32: --parallel 32 (A) vs --parallel 1 (B)"
    farm-bench -n 5 --timeout 900 \
        --vs "$bin run $workflows/data-3-steps.yaml --var base=$base --data $rows --parallel 1" \
        -- "$bin" run "$workflows/data-3-steps.yaml" --var "base=$base" --data "$rows" --parallel 32
    [[ $what == data ]] && exit 0
fi
if [[ $what == all || $what == memory ]]; then
    for n in 2000 20000; do
        echo "== for_each over $n elements, limit 64"
        farm-bench -n 5 --timeout 600 -- "$bin" run "$workflows/for-each-limit-64.yaml" --var "base=$base" --var "n=$n"
    done
    echo "== for_each over 200,000 elements (A) vs 20,000 (B), limit 64"
    farm-bench -n 3 --timeout 1800 \
        --vs "$bin run $workflows/for-each-limit-64.yaml --var base=$base --var n=20000" \
        -- "$bin" run "$workflows/for-each-limit-64.yaml" --var "base=$base" --var n=200000
fi
if [[ $what == all || $what == paginate ]]; then
    echo "== paginate: 1,000,000 items (A) vs 100,000 (B), 1,000 a page, each streamed into a for_each GET, limit 64"
    farm-bench -n 3 --timeout 3600 \
        --vs "$bin run $workflows/paginate-stream.yaml --var base=$base --var n=100000" \
        -- "$bin" run "$workflows/paginate-stream.yaml" --var "base=$base" --var n=1000000
fi
if [[ $what == all || $what == throughput ]]; then
    echo "== for_each over 10,000 elements, limit 32: AsyncHTTPClient (A) vs URLSession (B)"
    farm-bench -n 5 --timeout 900 \
        --vs "$bin run $workflows/for-each-limit-32.yaml --var base=$base --transport urlsession" \
        -- "$bin" run "$workflows/for-each-limit-32.yaml" --var "base=$base" --transport asynchttpclient
fi

if [[ $what == all || $what == hey ]]; then
    # The same 10,000 small GETs on the same endpoint, at most 32 at once: `hey` (a Go load
    # generator, no reports, no templates) is the yardstick for the command's cost per request.
    which hey > /dev/null || { echo "needs hey (apt-get install hey)" >&2; exit 1; }
    echo "== 10,000 GETs of /status/200, 32 at once: orchestra run for_each (A) vs hey -n 10000 -c 32 (B)"
    farm-bench -n 5 --timeout 900 \
        --vs "hey -n 10000 -c 32 $base/status/200?i=1" \
        -- "$bin" run "$workflows/for-each-limit-32.yaml" --var "base=$base" --transport asynchttpclient
fi

if [[ $what == all || $what == state ]]; then
    # A fresh state file for every timed run (a second run with the same file would send nothing).
    states=$(mktemp -d)
    for kind in "GET:for-each-limit-32" "POST:for-each-post-limit-32"; do
        method=${kind%%:*}
        file=$workflows/${kind#*:}.yaml
        echo "== 10,000 ${method}s, 32 at once: with --state (A) vs in memory (B)"
        farm-bench -n 7 --timeout 900 \
            --vs "$bin run $file --var base=$base --transport asynchttpclient" \
            -- sh -c "rm -f $states/run.state*; exec $bin run $file --var base=$base --transport asynchttpclient --state $states/run.state"
    done
    rm -rf "$states"
fi

if [[ $what == all || $what == floor ]]; then
    # What the HTTP client costs with nothing of Orchestra around it (Benchmarks/Tools/HTTPFloor:
    # AsyncHTTPClient, 32 tasks each sending its share, as hey does): the floor under the
    # command's ratio to hey, and the command's own cost above that floor.
    which hey > /dev/null || { echo "needs hey (apt-get install hey)" >&2; exit 1; }
    swift build -c release --package-path Benchmarks --product HTTPFloor
    floor=$PWD/Benchmarks/.build/release/HTTPFloor
    echo "== 10,000 GETs of /status/200, 32 at once: AsyncHTTPClient alone (A) vs hey -n 10000 -c 32 (B)"
    farm-bench -n 5 --timeout 900 --vs "hey -n 10000 -c 32 $base/status/200?i=1" \
        -- "$floor" "$base/status/200?i=1" 10000 32
    echo "== the same: orchestra run for_each (A) vs AsyncHTTPClient alone (B)"
    farm-bench -n 5 --timeout 900 --vs "$floor $base/status/200?i=1 10000 32" \
        -- "$bin" run "$workflows/for-each-limit-32.yaml" --var "base=$base" --transport asynchttpclient
fi
