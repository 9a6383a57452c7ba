#!/usr/bin/env bash
# orchestra run across machines (issue 34): the same workflow of REQUESTS GETs in memory, with
# --state FILE, and with --state postgres://… and 1, 2 and 4 `orchestra worker` processes;
# figures in BENCHMARKS.md#throughput-with-workers.
#
#   Benchmarks/distributed-scaling.sh                  # 3 rounds of 10,000 requests
#   RUNS=5 REQUESTS=10000 Benchmarks/distributed-scaling.sh
#   BIN=/tmp/orchestra-before RUNS=3 Benchmarks/distributed-scaling.sh   # another build
#   VS=/tmp/orchestra-before CONFIGS="pg1 pg4" Benchmarks/distributed-scaling.sh
#       # this build against another, alternating in every round, on the configurations named
#       # (of memory, state, pg1, pg2, pg4; all by default)
#
# The workflow: a `for_each` of REQUESTS GETs of the demo server's /users/{id}, `limit: 64`;
# each worker `--limit 32`. Every configuration runs RUNS times round-robin (one of each, then
# the next round), the PostgreSQL ones each in a new schema; the workers start first and are
# stopped (SIGTERM) after the run. Measured: the coordinator's wall time, the CPU seconds of
# the coordinator and the workers together, and of the PostgreSQL server (its postmaster and
# backends, from /proc), per 1,000 requests. The demo server, PostgreSQL (a throwaway cluster
# of Scripts/postgres.sh, fsync off) and every process share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUNS=${RUNS:-3} REQUESTS=${REQUESTS:-10000}
# BIN=path: that executable instead of this checkout's release build (to compare two builds).
if [ -z "${BIN:-}" ]; then
    timeout 1800 swift build -c release --product orchestra
    BIN=$PWD/.build/release/orchestra
fi
export BIN VS=${VS:-} CONFIGS=${CONFIGS:-memory state pg1 pg2 pg4}

env_file=$(mktemp /tmp/distributed-scaling-env.XXXXXX)
timeout 300 Scripts/postgres.sh start > "$env_file"
# shellcheck disable=SC1090
source "$env_file"
work=$(mktemp -d /tmp/distributed-scaling.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" demo --serve --port "$port" > "$work/demo.log" 2>&1 &
demo=$!
trap 'kill $demo 2>/dev/null || true; timeout 120 Scripts/postgres.sh stop || true; rm -rf "$work" "$env_file"' EXIT
cat > "$work/scale.yaml" <<YAML
name: scale
vars: { base: "http://127.0.0.1:$port" }
limit: 64
steps:
  - { id: list, url: "{{vars.base}}/list/$REQUESTS", captures: { ids: \$.items } }
  - id: each
    for_each: "{{list.ids}}"
    url: "{{vars.base}}/users/{{item}}"
    expect: [200]
YAML
psql_bin=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql | sort -V | tail -1)
export WORK=$work PSQL=$psql_bin
sleep 1

timeout 5400 python3 - <<'PY'
import os, signal, statistics, subprocess, sys, time

sys.path.insert(0, "Benchmarks")  # run from the repository's root
import postgres_cpu  # noqa: E402

BIN, PSQL, URL, WORK = os.environ["BIN"], os.environ["PSQL"], os.environ["ORCHESTRA_POSTGRES_URL"], os.environ["WORK"]
DATA = os.path.join(os.environ["ORCHESTRA_POSTGRES_DIR"], "data")
RUNS, REQUESTS = int(os.environ["RUNS"]), int(os.environ["REQUESTS"])
WORKFLOW = os.path.join(WORK, "scale.yaml")
BINS = [BIN] + ([os.environ["VS"]] if os.environ["VS"] else [])
counter = 0


def server_cpu():
    return postgres_cpu.server_cpu(DATA)


def process_cpu(pid):
    return postgres_cpu.process_cpu(pid)


def children_cpu():
    usage = os.times()
    return usage.children_user + usage.children_system


def run(config, BIN):
    """One run of BIN: (seconds, CPU s of the orchestra processes, CPU s of the server)."""
    global counter
    counter += 1
    arguments = [BIN, "run", WORKFLOW, "--no-color"]
    workers, schema = [], None
    if config == "state":
        arguments += ["--state", os.path.join(WORK, f"run-{counter}.state")]
    elif config.startswith("pg"):
        schema = f"scale_{counter}"
        arguments += ["--state", URL, "--schema", schema]
        for _ in range(int(config[2:])):
            worker = subprocess.Popen([BIN, "worker", "--state", URL, "--schema", schema, "--limit", "32", "--no-color"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if "sending the requests" not in worker.stdout.readline():
                sys.exit("a worker did not start")
            workers.append(worker)
    cpu0, server0 = children_cpu(), server_cpu()
    began = time.monotonic()
    out = subprocess.run(arguments, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - began
    worker_cpu = sum(process_cpu(w.pid) for w in workers)
    cpu, server = children_cpu() - cpu0 + worker_cpu, server_cpu() - server0
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.wait(timeout=120)
    if schema:
        subprocess.run([PSQL, URL, "-qc", f"DROP SCHEMA {schema} CASCADE"], check=True, capture_output=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"{config}: exit {out.returncode}: {out.stdout[-1500:]} {out.stderr[-1500:]}")
    return seconds, cpu, server


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


configs = os.environ["CONFIGS"].split()
names = {"memory": "in memory", "state": "--state FILE", "pg1": "PostgreSQL, 1 worker",
         "pg2": "PostgreSQL, 2 workers", "pg4": "PostgreSQL, 4 workers"}
results = {(c, b): [] for c in configs for b in BINS}
print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, {RUNS} rounds, "
      f"{REQUESTS:,} GETs", flush=True)
for rnd in range(RUNS):
    for config in configs:
        # Two builds alternate, the first one first in odd rounds and second in even ones.
        for b in BINS if rnd % 2 == 0 else reversed(BINS):
            seconds, cpu, server = run(config, b)
            results[(config, b)].append((seconds, cpu, server))
            print(f"  round {rnd + 1}: {b}: {names[config]}: {seconds:.2f} s, {REQUESTS / seconds:,.0f} req/s, "
                  f"CPU {cpu:.1f} s (orchestra) / {server:.1f} s (PostgreSQL)", flush=True)
for b in BINS:
    memory = statistics.median(s for s, _, _ in results[("memory", b)]) if "memory" in configs else None
    one = statistics.median(s for s, _, _ in results[("pg1", b)]) if "pg1" in configs else None
    print()
    print(f"{b}:")
    print(f"| Run | Wall s | Requests/s | vs in memory | vs 1 worker | CPU s per 1,000 requests: orchestra / PostgreSQL |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for config in configs:
        walls = [s for s, _, _ in results[(config, b)]]
        wall = statistics.median(walls)
        cpu = statistics.median(c / REQUESTS * 1000 for _, c, _ in results[(config, b)])
        server = statistics.median(p / REQUESTS * 1000 for _, _, p in results[(config, b)])
        versus_memory = f"{memory / wall:.2f}x" if memory else "–"
        versus_one = f"{one / wall:.2f}x" if one and config.startswith("pg") else "–"
        server_text = f"{server:.2f}" if config.startswith("pg") else "–"
        print(f"| {names[config]} | {spread(walls)} | {REQUESTS / wall:,.0f} | {versus_memory} | {versus_one} | "
              f"{cpu:.2f} / {server_text} |")
PY
