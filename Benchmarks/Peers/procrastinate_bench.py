"""One measurement of procrastinate (PyPI), a PostgreSQL job queue, for
Benchmarks/procrastinate-compare.sh: the same two workloads as Orchestra's PostgresThroughput.

    python procrastinate_bench.py URL throughput JOBS CONCURRENCY
    python procrastinate_bench.py URL chain JOBS

throughput: JOBS no-op jobs deferred first (in batches), then one worker with CONCURRENCY
drains them; prints the seconds from the worker's start to its end (it ends when no job is
left). chain: JOBS jobs, each deferred by the one before as its last act (procrastinate has no
dependencies; this is how one chains jobs with it); prints the p50 and p99 milliseconds from a
job's handler returning to the next one's handler starting. Defaults otherwise (LISTEN/NOTIFY on).
"""
import asyncio
import statistics
import sys
import time

from procrastinate import App, PsycopgConnector

url, mode, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 8
app = App(connector=PsycopgConnector(conninfo=url))
starts, ends = {}, {}


@app.task(name="noop")
async def noop(i):
    return None


finished = asyncio.Event()


@app.task(name="link")
async def link(i, n):
    starts[i] = time.monotonic_ns()
    if i + 1 < n:
        await link.defer_async(i=i + 1, n=n)
    ends[i] = time.monotonic_ns()
    if i + 1 == n:
        finished.set()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def main():
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        if mode == "throughput":
            for first in range(0, jobs, 1000):
                await noop.batch_defer_async(*[{"i": i} for i in range(first, min(jobs, first + 1000))])
            began = time.monotonic()
            await app.run_worker_async(concurrency=concurrency, wait=False, install_signal_handlers=False)
            print(f"procrastinate throughput jobs={jobs} seconds={time.monotonic() - began:.3f}")
        else:
            await link.defer_async(i=0, n=jobs)
            # A worker that waits for jobs (one that does not ends between two links), stopped
            # once the last link ended.
            worker = asyncio.create_task(
                app.run_worker_async(concurrency=concurrency, install_signal_handlers=False))
            await asyncio.wait_for(finished.wait(), timeout=600)
            worker.cancel()
            try:
                await worker
            except asyncio.CancelledError:
                pass
            gaps = [(starts[i + 1] - ends[i]) / 1e6 for i in range(jobs - 1) if i in ends and i + 1 in starts]
            if len(gaps) != jobs - 1:
                sys.exit(f"the chain did not run to its end: {len(gaps) + 1} of {jobs}")
            print(f"procrastinate chain jobs={jobs} p50_ms={percentile(gaps, 50):.3f} p99_ms={percentile(gaps, 99):.3f}")


asyncio.run(main())
