#!/usr/bin/env python3
"""The distributed crash experiment of `orchestra run --state postgres://…`, with default options.

    eval "$(Scripts/postgres.sh start)"          # a throwaway PostgreSQL (sets ORCHESTRA_POSTGRES_URL)
    Scripts/distributed-crash.py crash           # 3 workers, 4 SIGKILLs during a 4,000-request for_each
    Scripts/distributed-crash.py late-worker     # no worker for 40 s, then one
    Scripts/postgres.sh stop

`crash`: starts the demo server (`orchestra demo --serve`), a coordinator and `--workers` workers
(`orchestra worker`, default options: `--lease` 10 s, `--limit` 8), and SIGKILLs a worker
`--kills` times, evenly over the run (by requests ended), starting a new worker after each kill;
the victim is the worker that holds the most requests at that moment.
The workflow: a list of `--requests` items, then one GET per item with `--latency-ms` of server
latency, default `limit` and `timeout`. At each kill it reads from the store the requests the
victim held (`lease_owner`), and then polls them every 0.1 s: a request's failover time is from
the SIGKILL to the first poll that finds it claimed by another worker (or ended). It checks that
the coordinator exits 0 with every request succeeded and none timed out, and prints the failover
times (min / median / max over all requests a killed worker held).

`late-worker`: a coordinator of `--requests` requests with no worker for `--wait` seconds, then
one worker: the run must succeed, and the coordinator must have said that it waits for a worker.

Options: `--orchestra PATH` (default .build/debug/orchestra), `--url` (default
$ORCHESTRA_POSTGRES_URL). Needs `psql`. Exit status 0 when every check held.
"""

import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def psql(url, sql):
    out = subprocess.run(["psql", url, "-AtXq", "-c", sql], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"psql: {out.stderr.strip()}")
    return [line.split("|") for line in out.stdout.splitlines() if line]


class Experiment:
    def __init__(self, args):
        self.args = args
        self.folder = tempfile.mkdtemp(prefix="orchestra-distributed-crash-")
        self.schema = f"crash_{random.randrange(1 << 30)}"
        self.run_id = f"crash-{int(time.time())}"
        self.processes = []
        self.host = socket.gethostname()

    def log(self, name):
        return open(os.path.join(self.folder, name), "w")

    def start(self, name, arguments):
        out = self.log(f"{name}.out")
        err = self.log(f"{name}.err")
        process = subprocess.Popen([self.args.orchestra] + arguments, stdout=out, stderr=err,
                                   env={**os.environ, "NO_COLOR": "1"})
        self.processes.append(process)
        return process

    def demo_server(self):
        process = subprocess.Popen([self.args.orchestra, "demo", "--serve", "--no-color"], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        self.processes.append(process)
        for line in process.stdout:
            found = re.search(r"http://127\.0\.0\.1:\d+", line)
            if found:
                threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
                return found.group(0)
        raise RuntimeError("the demo server printed no address")

    def workflow(self, base):
        path = os.path.join(self.folder, "crash.yaml")
        with open(path, "w") as file:
            file.write(f"""name: Distributed crash
steps:
  - {{ id: list, url: "{base}/list/{self.args.requests}", captures: {{ items: $.items }} }}
  - id: each
    for_each: "{{{{list.items}}}}"
    url: "{base}/payload/{{{{item}}}}?latency_ms={self.args.latency_ms}"
    expect: [200]
""")
        return path

    def worker(self, index):
        process = self.start(f"worker-{index}", ["worker", "--state", self.args.url, "--schema", self.schema])
        return process

    def coordinator(self, file):
        return self.start("coordinator", ["run", file, "--state", self.args.url, "--schema", self.schema,
                                          "--run-id", self.run_id, "--no-color"])

    def jobs(self):
        return f"{self.schema}.jobs"

    def ended(self):
        try:
            rows = psql(self.args.url, f"SELECT count(*) FROM {self.jobs()} WHERE run_id = '{self.run_id}' "
                                       "AND state NOT IN ('ready', 'running', 'blocked')")
            return int(rows[0][0])
        except Exception:
            return 0  # the schema is not there yet

    def held_by(self, name):
        rows = psql(self.args.url, f"SELECT id FROM {self.jobs()} WHERE run_id = '{self.run_id}' "
                                   f"AND state = 'running' AND lease_owner = '{name}'")
        return [row[0] for row in rows]

    def watch_failover(self, victim, held, killed_at, results):
        """Polls the jobs `victim` held until each is claimed by another worker or ended."""
        pending = set(held)
        ids = ",".join(f"'{job}'" for job in held)
        while pending and time.monotonic() - killed_at < 300:
            rows = psql(self.args.url, f"SELECT id, state, coalesce(lease_owner, '') FROM {self.jobs()} "
                                       f"WHERE run_id = '{self.run_id}' AND id IN ({ids})")
            now = time.monotonic()
            for job, state, owner in rows:
                if job in pending and (state != "running" or owner != victim):
                    pending.discard(job)
                    results.append((victim, job, now - killed_at, state, owner))
            time.sleep(0.1)
        for job in pending:
            results.append((victim, job, None, "not re-sent within 300 s", ""))

    def stop_all(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        if not self.args.keep:
            try:
                psql(self.args.url, f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
            except Exception as error:
                print(f"could not drop schema {self.schema}: {error}", file=sys.stderr)

    def coordinator_output(self):
        with open(os.path.join(self.folder, "coordinator.out")) as out, \
                open(os.path.join(self.folder, "coordinator.err")) as err:
            return out.read(), err.read()


def crash(experiment):
    args = experiment.args
    base = experiment.demo_server()
    file = experiment.workflow(base)
    workers = [experiment.worker(index) for index in range(args.workers)]
    started = time.monotonic()
    coordinator = experiment.coordinator(file)
    total = args.requests + 1
    results, watchers, kills = [], [], []
    for kill in range(args.kills):
        target = total * (kill + 1) // (args.kills + 1)
        while experiment.ended() < target and coordinator.poll() is None:
            time.sleep(0.2)
        if coordinator.poll() is not None:
            break
        # The worker holding the most requests now (a random one among equals): a failover to time.
        names = [f"{experiment.host}-{worker.pid}" for worker in workers]
        holdings = [(len(experiment.held_by(name)), random.random(), index) for index, name in enumerate(names)]
        index = max(holdings)[2]
        victim = names[index]
        held = experiment.held_by(victim)
        workers[index].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        workers[index].wait()
        kills.append((round(killed_at - started, 1), victim, len(held)))
        watcher = threading.Thread(target=experiment.watch_failover, args=(victim, held, killed_at, results))
        watcher.start()
        watchers.append(watcher)
        workers[index] = experiment.worker(f"{len(experiment.processes)}")
    status = coordinator.wait(timeout=3600)
    elapsed = time.monotonic() - started
    for watcher in watchers:
        watcher.join()
    out, err = experiment.coordinator_output()
    summary = psql(args.url, f"SELECT count(*), count(*) FILTER (WHERE attempts > 1), "
                             f"count(*) FILTER (WHERE state = 'succeeded') FROM {experiment.jobs()} "
                             f"WHERE run_id = '{experiment.run_id}'")[0]
    experiment.stop_all()

    times = sorted(result[2] for result in results if result[2] is not None)
    print(f"orchestra: {args.orchestra}; {args.workers} workers, default options; {args.requests} requests of "
          f"{args.latency_ms} ms latency; logs in {experiment.folder}")
    print(f"coordinator: exit {status} after {elapsed:.1f} s")
    for line in out.splitlines():
        if "requests sent" in line or line.startswith("state:"):
            print(f"  {line.strip()}")
    timed_out = out.count("timed out") + err.count("timed out")
    print(f"kills (s after start, worker, requests it held): {kills}")
    print(f"jobs: {summary[0]}, succeeded {summary[2]}, claimed more than once {summary[1]}")
    if times:
        print(f"failover (SIGKILL -> claimed by another worker), {len(times)} requests: "
              f"min {times[0]:.2f} s, median {statistics.median(times):.2f} s, max {times[-1]:.2f} s")
    lost = [result for result in results if result[2] is None]
    ok = (status == 0 and f"{args.requests} requests sent, {args.requests} succeeded" in out and timed_out == 0
          and not lost and len(kills) == args.kills)
    print("every request succeeded, none timed out" if ok else
          f"FAILED: status {status}, 'timed out' {timed_out} times, {len(lost)} not re-sent, {len(kills)} kills")
    return ok


def late_worker(experiment):
    args = experiment.args
    base = experiment.demo_server()
    file = experiment.workflow(base)
    started = time.monotonic()
    coordinator = experiment.coordinator(file)
    time.sleep(args.wait)
    alive = coordinator.poll() is None
    experiment.worker(0)
    status = coordinator.wait(timeout=3600)
    elapsed = time.monotonic() - started
    out, err = experiment.coordinator_output()
    experiment.stop_all()
    print(f"orchestra: {args.orchestra}; no worker for {args.wait} s, then one; {args.requests} requests; "
          f"logs in {experiment.folder}")
    print(f"coordinator: exit {status} after {elapsed:.1f} s; still running when the worker started: {alive}")
    notes = [line for line in err.splitlines() if "waiting for a worker" in line]
    for line in out.splitlines():
        if "requests sent" in line or line.startswith("state:"):
            print(f"  {line.strip()}")
    for note in notes:
        print(f"  stderr: {note}")
    ok = alive and status == 0 and f"{args.requests} requests sent, {args.requests} succeeded" in out and notes
    print("succeeded" if ok else "FAILED")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["crash", "late-worker"])
    parser.add_argument("--orchestra", default=".build/debug/orchestra")
    parser.add_argument("--url", default=os.environ.get("ORCHESTRA_POSTGRES_URL"))
    parser.add_argument("--requests", type=int, default=None, help="4000 (crash) or 200 (late-worker)")
    parser.add_argument("--latency-ms", type=int, default=100)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--wait", type=float, default=40, help="late-worker: seconds without a worker")
    parser.add_argument("--keep", action="store_true", help="keep the schema")
    args = parser.parse_args()
    if not args.url:
        parser.error("no --url and no ORCHESTRA_POSTGRES_URL: eval \"$(Scripts/postgres.sh start)\"")
    if args.requests is None:
        args.requests = 4000 if args.mode == "crash" else 200
    experiment = Experiment(args)
    try:
        ok = crash(experiment) if args.mode == "crash" else late_worker(experiment)
    finally:
        for process in experiment.processes:
            if process.poll() is None:
                process.kill()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
