#!/usr/bin/env bash
# The durable job store on PostgreSQL (issue 19), against SQLite in the same run: figures in
# BENCHMARKS.md#durable-runs-on-postgresql.
#
#   Benchmarks/postgres-benchmarks.sh                 # everything, 3 rounds
#   RUNS=5 JOBS=20000 Benchmarks/postgres-benchmarks.sh throughput claims latency
#
# Parts (any of them, in any order; all by default):
#   throughput  JOBS independent no-op jobs submitted first, then 1, 2 and 4 worker processes
#               (limit 32 each) started together drain them: jobs per second from the moment
#               they are told to start to the moment the run's last outcome is recorded
#   claims      the same with one process and limit 1, 8, 32, 128: a claim asks for the
#               worker's free slots, so the limit is the largest claim
#   latency     a chain of CHAIN jobs (each after the one before), alone, and 8 chains of CHAIN/2
#               side by side (8 jobs ready at once: the worker's limit of 8 is full); one
#               process and two: from a dependency's handler returning to its dependent's
#               handler starting, p50 and p99
#   sqlite      the baseline: the throughput (limit 32) and latency workloads on SQLiteJobStore,
#               one process (also run by each part above that prints a ratio to it)
#   procrastinate  a peer PostgreSQL job queue (PyPI procrastinate, installed in a venv in
#               $PEER_VENV, /tmp/orchestra-procrastinate by default) on the same server, round-
#               robin with Orchestra: JOBS no-op jobs drained by one process at concurrency 32
#               (Orchestra: limit 32), and a chain of CHAIN jobs (procrastinate has no
#               dependencies: each job defers the next as its last act), each in a database of
#               its own (procrastinate's tables live in `public`)
#
# Two builds compared (a change of the store): build PostgresThroughput at each commit, copy it
# aside, and run the parts with THROUGHPUT_BIN=/path/to/copy in turn, several times each.
#
# Every configuration runs RUNS times (round-robin: one run of each, then the next round, so a
# drift of the machine's speed spreads over all of them), each in a new PostgreSQL schema that
# is dropped afterwards. The server is a throwaway cluster of Scripts/postgres.sh (fsync off),
# started here and stopped on exit; it shares the machine's cores with the workers.
set -euo pipefail
cd "$(dirname "$0")/.."

export RUNS=${RUNS:-3} JOBS=${JOBS:-20000} CHAIN=${CHAIN:-500}
parts=${*:-throughput claims latency}

if [[ " $parts " == *" procrastinate "* ]]; then
    export PEER_VENV=${PEER_VENV:-/tmp/orchestra-procrastinate}
    [[ -x $PEER_VENV/bin/python ]] || python3 -m venv "$PEER_VENV"
    timeout 600 "$PEER_VENV/bin/pip" install -q "procrastinate==3.10.0"
fi

# THROUGHPUT_BIN: a PostgresThroughput built before (another commit's, to compare two in turn).
if [[ -n ${THROUGHPUT_BIN:-} ]]; then
    bin=$THROUGHPUT_BIN
else
    timeout 1200 swift build -c release --package-path Benchmarks --product PostgresThroughput
    bin=$PWD/Benchmarks/.build/release/PostgresThroughput
fi

env_file=$(mktemp /tmp/postgres-benchmarks-env.XXXXXX)
timeout 300 Scripts/postgres.sh start > "$env_file"
# shellcheck disable=SC1090
source "$env_file"
trap 'timeout 120 Scripts/postgres.sh stop || true; rm -f "$env_file"' EXIT

psql_bin=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql | sort -V | tail -1)
export BIN=$bin PSQL=$psql_bin PARTS=$parts

timeout 3000 python3 - <<'PY'
import os, re, statistics, subprocess, sys, time

sys.path.insert(0, "Benchmarks")  # run from the repository's root
import postgres_cpu  # noqa: E402

BIN, PSQL, URL = os.environ["BIN"], os.environ["PSQL"], os.environ["ORCHESTRA_POSTGRES_URL"]
DATA = os.path.join(os.environ["ORCHESTRA_POSTGRES_DIR"], "data")
RUNS, JOBS, CHAIN = int(os.environ["RUNS"]), int(os.environ["JOBS"]), int(os.environ["CHAIN"])
PARTS = os.environ["PARTS"].split()
counter = 0


def words(line):
    return dict(w.split("=", 1) for w in line.split()[1:])


def server_cpu():
    return postgres_cpu.server_cpu(DATA)


def children_cpu():
    usage = os.times()
    return usage.children_user + usage.children_system


def postgres_run(shape, jobs, processes, limit, times=False):
    """Submits a run in a new schema, starts `processes` workers, releases them together.
    Returns the seconds from the release to the run's end, the workers' output lines, and the
    CPU seconds of the workers and of the server over that time."""
    global counter
    counter += 1
    schema = f"bench_{os.getpid()}_{counter}"
    out = subprocess.run([BIN, "submit", URL, schema, shape, str(jobs)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        sys.exit(f"submit failed: {out.stderr}")
    command = [BIN, "work", URL, schema, str(limit)] + (["times"] if times else [])
    workers = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    for worker in workers:
        if worker.stdout.readline().strip() != "ready":
            sys.exit("a worker did not start")
    cpu0, server0 = children_cpu(), server_cpu()
    go = time.time_ns()  # CLOCK_REALTIME, as the workers' times
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    lines = []
    for worker in workers:
        output, _ = worker.communicate(timeout=900)
        if worker.returncode != 0:
            sys.exit(f"a worker failed ({worker.returncode})")
        lines += output.splitlines()
    cpu, server = children_cpu() - cpu0, server_cpu() - server0
    summaries = [words(l) for l in lines if l.startswith("worker ")]
    ends = [int(s["run_end_ns"]) for s in summaries if s["run_end_ns"] != "none"]
    if len(ends) != 1 or sum(int(s["jobs"]) for s in summaries) != jobs:
        sys.exit(f"unexpected worker output: {summaries}")
    subprocess.run([PSQL, URL, "-qc", f"DROP SCHEMA {schema} CASCADE"], check=True, capture_output=True, timeout=120)
    return (ends[0] - go) / 1e9, lines, cpu, server


def sqlite_run(shape, jobs, limit, times=False):
    """The same in one process on a new SQLite file: seconds from `drain`'s start to the end."""
    out = subprocess.run(
        [BIN, "sqlite", shape, str(jobs), str(limit)] + (["times"] if times else []),
        capture_output=True, text=True, timeout=900, check=True)
    lines = out.stdout.splitlines()
    summary = words(next(l for l in lines if l.startswith("worker ")))
    return (int(summary["run_end_ns"]) - int(summary["go_ns"])) / 1e9, lines


def latencies(lines, shape):
    """Milliseconds from each dependency's end to its dependent's start. One process: its
    monotonic clock; several: the wall clock (CLOCK_REALTIME, one machine). Also how many of
    the dependents started in another process than their dependency."""
    jobs = {}
    for line in lines:
        if line.startswith("job "):
            w = words(line)
            jobs[w["id"]] = w
    clock = "mono" if len({j["pid"] for j in jobs.values()}) == 1 else "real"
    if shape == "chain":
        edges = [(f"j{i - 1}", f"j{i}") for i in range(1, len(jobs))]
    elif shape == "pairs":
        edges = [(f"a{i}", f"b{i}") for i in range(len(jobs) // 2)]
    else:
        chains = int(shape[len("chains"):])
        edges = [(f"c{k}_{i - 1}", f"c{k}_{i}") for k in range(chains) for i in range(1, len(jobs) // chains)]
    values = [(int(jobs[b]["start_" + clock]) - int(jobs[a]["end_" + clock])) / 1e6 for a, b in edges]
    crossed = sum(jobs[a]["pid"] != jobs[b]["pid"] for a, b in edges)
    return values, crossed / len(edges)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def spread(values, fmt="{:,.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


cores = os.cpu_count()
print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cores} cores, {RUNS} runs each, "
      f"PostgreSQL {re.search(r'[0-9.]+', subprocess.run([PSQL, '--version'], capture_output=True, text=True).stdout).group()}", flush=True)

sqlite_rate = []
def sqlite_throughput():
    seconds, _ = sqlite_run("independent", JOBS, 32)
    sqlite_rate.append(JOBS / seconds)

if "throughput" in PARTS or "claims" in PARTS or "sqlite" in PARTS:
    configs = []
    if "throughput" in PARTS:
        configs += [("processes", n, 32) for n in (1, 2, 4)]
    if "claims" in PARTS:
        configs += [("claim", 1, limit) for limit in (1, 8, 32, 128) if not ("throughput" in PARTS and limit == 32)]
    results = {c: [] for c in configs}
    for rnd in range(RUNS):
        for config in configs:
            _, processes, limit = config
            seconds, _, cpu, server = postgres_run("independent", JOBS, processes, limit)
            results[config].append((JOBS / seconds, cpu, server))
            print(f"  round {rnd + 1}: {processes} process(es), limit {limit}: {JOBS / seconds:,.0f} jobs/s "
                  f"(workers {cpu:.1f} s CPU, server {server:.1f} s CPU)", flush=True)
        sqlite_throughput()
        print(f"  round {rnd + 1}: SQLite, 1 process, limit 32: {sqlite_rate[-1]:,.0f} jobs/s", flush=True)
    sqlite_median = statistics.median(sqlite_rate)
    print()
    print(f"## No-op jobs per second, {JOBS:,} independent jobs, median (min–max) of {RUNS}")
    print()
    print("| Store, workers | jobs/s | jobs/s per core | vs 1 process | vs SQLite | CPU s per 1k jobs: workers / server |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    base = None
    for config in configs:
        kind, processes, limit = config
        rates = [r for r, _, _ in results[config]]
        if processes == 1 and limit == 32:
            base = statistics.median(rates)
    for config in configs:
        kind, processes, limit = config
        rates = [r for r, _, _ in results[config]]
        median = statistics.median(rates)
        cpu = statistics.median(c / JOBS * 1000 for _, c, _ in results[config])
        server = statistics.median(s / JOBS * 1000 for _, _, s in results[config])
        versus = f"{median / base:.2f}x" if base else "–"
        print(f"| PostgreSQL, {processes} process{'es' if processes > 1 else ''}, limit {limit} | {spread(rates)} | "
              f"{median / cores:,.0f} | {versus} | {median / sqlite_median:.3f}x | {cpu:.2f} / {server:.2f} |")
    print(f"| SQLite (baseline), 1 process, limit 32 | {spread(sqlite_rate)} | {sqlite_median / cores:,.0f} | – | 1x | – |")
    print(flush=True)

if "latency" in PARTS or "sqlite" in PARTS:
    shapes = (("chain", CHAIN), ("chains8", CHAIN * 4))
    configs = [(shape, jobs, processes) for shape, jobs in shapes for processes in (1, 2)]
    results = {c: [] for c in configs}
    sqlite_results = {shape: [] for shape, _ in shapes}
    for rnd in range(RUNS):
        for config in configs:
            shape, jobs, processes = config
            _, lines, _, _ = postgres_run(shape, jobs, processes, 8, times=True)
            values, crossed = latencies(lines, shape)
            results[config].append((percentile(values, 50), percentile(values, 99), crossed))
            print(f"  round {rnd + 1}: {shape}, {processes} process(es): p50 {percentile(values, 50):.2f} ms, "
                  f"p99 {percentile(values, 99):.2f} ms, {crossed:.0%} in the other process", flush=True)
        for shape, jobs in shapes:
            _, lines = sqlite_run(shape, jobs, 8, times=True)
            values, _ = latencies(lines, shape)
            sqlite_results[shape].append((percentile(values, 50), percentile(values, 99)))
            print(f"  round {rnd + 1}: {shape}, SQLite: p50 {percentile(values, 50):.3f} ms, "
                  f"p99 {percentile(values, 99):.3f} ms", flush=True)
    print()
    print(f"## From a dependency's end to its dependent's start, worker limit 8, median (min–max) of {RUNS} runs' percentiles")
    print()
    print("| Workload | Store, workers | p50 ms | p99 ms | p50 vs SQLite | dependents started in the other process |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for shape, jobs in shapes:
        name = f"1 chain of {CHAIN} jobs" if shape == "chain" else f"8 chains of {CHAIN // 2} jobs"
        sqlite_p50 = statistics.median(p for p, _ in sqlite_results[shape])
        for processes in (1, 2):
            rows = results[(shape, jobs, processes)]
            p50 = [p for p, _, _ in rows]
            p99 = [p for _, p, _ in rows]
            crossed = statistics.median(c for _, _, c in rows)
            print(f"| {name} | PostgreSQL, {processes} process{'es' if processes > 1 else ''} | {spread(p50, '{:.2f}')} | "
                  f"{spread(p99, '{:.2f}')} | {statistics.median(p50) / sqlite_p50:.0f}x | {crossed:.0%} |")
        print(f"| {name} | SQLite (baseline), 1 process | {spread([p for p, _ in sqlite_results[shape]], '{:.3f}')} | "
              f"{spread([p for _, p in sqlite_results[shape]], '{:.3f}')} | 1x | – |")
    print(flush=True)

if "procrastinate" in PARTS:
    PEER = [os.path.join(os.environ["PEER_VENV"], "bin", "python"),
            os.path.join(os.path.dirname(os.path.abspath(BIN)), "..", "..", "Peers", "procrastinate_bench.py")]
    PEER[1] = os.path.normpath(PEER[1])

    def peer_run(mode, jobs, concurrency):
        """procrastinate in a new database: its output's words, and the server's CPU seconds."""
        global counter
        counter += 1
        database = f"peer_{os.getpid()}_{counter}"
        subprocess.run([PSQL, URL, "-qc", f"CREATE DATABASE {database}"], check=True, capture_output=True, timeout=120)
        peer_url = URL.rsplit("/", 1)[0] + "/" + database
        server0 = server_cpu()
        out = subprocess.run(PEER + [peer_url, mode, str(jobs), str(concurrency)],
                             capture_output=True, text=True, timeout=1800)
        server = server_cpu() - server0
        subprocess.run([PSQL, URL, "-qc", f"DROP DATABASE {database}"], check=True, capture_output=True, timeout=120)
        line = next((l for l in out.stdout.splitlines() if l.startswith("procrastinate ")), None)
        if out.returncode != 0 or line is None:
            sys.exit(f"procrastinate failed: {out.stderr[-2000:]}")
        return dict(w.split("=", 1) for w in line.split() if "=" in w), server

    ours, theirs, our_chain, their_chain = [], [], [], []
    for rnd in range(RUNS):
        seconds, _, cpu, server = postgres_run("independent", JOBS, 1, 32)
        ours.append((JOBS / seconds, server))
        result, server = peer_run("throughput", JOBS, 32)
        theirs.append((JOBS / float(result["seconds"]), server))
        _, lines, _, _ = postgres_run("chain", CHAIN, 1, 8, times=True)
        values, _ = latencies(lines, "chain")
        our_chain.append((percentile(values, 50), percentile(values, 99)))
        result, _ = peer_run("chain", CHAIN, 8)
        their_chain.append((float(result["p50_ms"]), float(result["p99_ms"])))
        print(f"  round {rnd + 1}: Orchestra {ours[-1][0]:,.0f} jobs/s, chain p50 {our_chain[-1][0]:.2f} ms; "
              f"procrastinate {theirs[-1][0]:,.0f} jobs/s, chain p50 {their_chain[-1][0]:.2f} ms", flush=True)
    print()
    print(f"## Against procrastinate 3.10.0, one process, median (min–max) of {RUNS}")
    print()
    print(f"| Queue | No-op jobs/s ({JOBS:,}, concurrency 32) | vs procrastinate | server CPU s per 1k jobs "
          f"| chain of {CHAIN}: p50 ms | p99 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    base = statistics.median(r for r, _ in theirs)
    for name, rates, chain in (("Orchestra (PostgresJobStore)", ours, our_chain), ("procrastinate", theirs, their_chain)):
        values = [r for r, _ in rates]
        print(f"| {name} | {spread(values)} | {statistics.median(values) / base:.1f}x | "
              f"{statistics.median(s / JOBS * 1000 for _, s in rates):.2f} | {spread([p for p, _ in chain], '{:.2f}')} | "
              f"{spread([p for _, p in chain], '{:.2f}')} |")
    print(flush=True)
PY
