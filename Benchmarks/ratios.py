#!/usr/bin/env python3
"""Runs the Orchestra benchmarks once and prints each median next to its ratio to a baseline.

package-benchmark prints one table per benchmark but no ratio between two benchmarks of the
same run. This script asks it for machine-readable output (`--format influx --path stdout`,
one CSV line per benchmark, metric and percentile, raw values: nanoseconds, bytes or counts)
and prints, for every benchmark and metric:

    median (p50) | median per operation | ratio to the baseline of its group

then the lines the Standard Task Graph Set benchmarks print (they start with "STG "; they are
figures computed once, not timings), then whether each target of the benchmark issue was met
(see TARGETS below).

Groups and baselines come from the benchmark names: "Group/what", and in each group the
benchmark whose name ends in "(baseline)" is the reference (see
Benchmarks/OrchestraBenchmarks/OrchestraBenchmarks.swift).

Usage, from the repository root or anywhere:

    python3 Benchmarks/ratios.py                         # build, run everything, print the table
    python3 Benchmarks/ratios.py --filter 'Semaphore/.*' # extra arguments go to `benchmark`
    python3 Benchmarks/ratios.py --save run.csv          # also keep the raw CSV
    python3 Benchmarks/ratios.py --from-file run.csv     # table from a saved CSV, no run

Exit status: that of the benchmark run (non-zero if it failed), or 1 if no result was parsed.
"""

import argparse
import csv
import os
import subprocess
import sys
from collections import OrderedDict

# Operations done by one measured iteration, per group, for the "per op" column. Keep in step
# with BatchWorkload.jobCount, SemaphoreWorkload.scalingFactor, GraphWorkload's sizes and
# RateLimitWorkload in the Swift sources.
OPS_PER_ITERATION = {
    "Batch": 100_000,
    "Semaphore contended": 8_000,
    "Semaphore": 1_000,
    "Graph 1 node": 1,
    "Graph 1k": 1_000,
    "Graph deep 1k": 1_000,
    "Graph 10k": 10_000,
    "Graph 100k": 100_000,
    "Graph 1M": 1_000_000,
    "Graph deep 10k": 10_000,
    "Graph deep 100k": 100_000,
    "Operations 100k": 100_000,
    "Operations chain 10k": 10_000,
    "Operations DAG 10k": 10_000,
    "Operations layered DAG 10k": 10_000,
    "HTTP 10k GETs": 10_000,
    "Durable 10k": 10_000,
    "Durable 100k": 100_000,
    "HTTP AHC 10k GETs": 10_000,
    "Rate 100k": 100_000,
    "Rate": 1_000,
}

# Groups whose memory metrics are also divided by the operations (here: bytes per graph node).
# Elsewhere memory is not per operation: a batch's window holds O(limit) state, not O(inputs).
# These groups also get a row with the first iteration's resident peak delta (its p0, since the
# peak only grows): over later iterations the peak creeps up as freed memory stays resident in
# the allocator's per-thread arenas, so the first iteration is the memory one run needs.
MEMORY_PER_OP_GROUPS = ("Graph 10k", "Graph 100k", "Graph 1M", "Graph deep 10k", "Graph deep 100k")

# Lines the benchmarks print themselves (Graph STG/…), repeated after the table.
PRINTED_PREFIX = "STG "

BASELINE_MARK = "(baseline)"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# The targets of the benchmark issue, checked after the table. Each is (description, function of
# the medians and of the printed "STG" figures returning (figure as text, met)) and is skipped
# when its benchmarks were not run (e.g. with --filter).
WALL = "Time(wallclock)"
PEAK_DELTA = "MemoryΔ(residentpeak)"
PEAK_DELTA_FIRST = "MemoryΔ(residentpeak) 1st iteration"


def target_window_ratio(medians, _printed):
    figure = medians["Batch/concurrentMap"][WALL] / medians["Batch/TaskGroup sliding window (baseline)"][WALL]
    return f"{figure:.2f}x", figure <= 1.3


def stream_vs_concurrent_map(name):
    def check(medians, _printed):
        figure = medians[f"Batch/{name}"][WALL] / medians["Batch/concurrentMap"][WALL]
        return f"{figure:.2f}x", figure <= 1.5
    return check


def target_semaphore_ns(name, group, limit):
    def check(medians, _printed):
        figure = medians[f"{group}/{name}"][WALL] / OPS_PER_ITERATION[group]
        return f"{figure:.1f} ns", figure < limit
    return check


def flat_memory(group, expect_flat=True):
    # Growth of the resident peak from 10k to 100k inputs, per extra input. Anything kept per
    # input (a task, a continuation, a boxed result) costs well over 16 bytes, as the unbounded
    # task-group control shows (BENCHMARKS.md#batches).
    def check(medians, _printed):
        small = medians[f"{group}/10k (baseline)"][PEAK_DELTA]
        large = medians[f"{group}/100k"][PEAK_DELTA]
        per_input = round((large - small) / 90_000, 1) + 0.0  # + 0.0 prints -0.0 as 0.0
        return f"{per_input:.1f} B/input ({large / small:.2f}x for 10x inputs)", (per_input < 16) == expect_flat
    return check


def graph_ratio(size, limit):
    def check(medians, _printed):
        figure = medians[f"Graph {size}/TaskGraph run"][WALL] / medians[f"Graph {size}/bare TaskGroup scheduler (baseline)"][WALL]
        return f"{figure:.2f}x", figure <= limit
    return check


def graph_fixed_cost(medians, _printed):
    # A 1-node graph: what a run costs whatever its size (set-up, validation, a worker, the end).
    run = medians["Graph 1 node/TaskGraph run"][WALL]
    bare = medians["Graph 1 node/bare TaskGroup scheduler (baseline)"][WALL]
    return f"{run / 1000:.1f} us a run, bare scheduler {bare / 1000:.1f} us ({run / bare:.2f}x)", True


def graph_flat(small, large, limit=1.2):
    # Time per node of the larger graph against the smaller one's: flat means within `limit`.
    def check(medians, _printed):
        per_node = {
            size: medians[f"Graph {size}/TaskGraph run"][WALL] / OPS_PER_ITERATION[f"Graph {size}"]
            for size in (small, large)
        }
        figure = per_node[large] / per_node[small]
        return f"{per_node[small]:.0f} ns -> {per_node[large]:.0f} ns per node ({figure:.2f}x)", figure <= limit
    return check


def graph_memory(size, with_build):
    # The run benchmark has no warm-up, so its peak resident delta counts the graph's description
    # (built in the iteration) and the run; the build benchmark's counts the description alone.
    # The first iteration's figure is the one judged (see MEMORY_PER_OP_GROUPS). The 10k build
    # can end between two memory samples (BENCHMARKS.md#task-graphs), so its first iteration's
    # peak may not be sampled at all: the description is only quoted from the 100k build.
    def check(medians, _printed):
        nodes = OPS_PER_ITERATION[f"Graph {size}"]
        run = medians[f"Graph {size}/TaskGraph run"]
        total = run[PEAK_DELTA_FIRST] / nodes
        text = f"{total:.0f} B/node, description + run (peak resident delta, 1st iteration; median {run[PEAK_DELTA] / nodes:.0f})"
        build = medians.get(f"Graph {size}/TaskGraph build", {}).get(PEAK_DELTA_FIRST)
        if with_build and build is not None:
            text += f"; description alone {build / nodes:.0f} B/node"
        return text, total < 1024
    return check


def stg_simulated(printed):
    figures = printed["STG simulated criticalPath"]
    mean, worst = float(figures["mean"]), float(figures["worst"])
    text = f"mean {mean:.4f}, worst {worst:.4f} ({figures['worst_case']})"
    fifo = printed.get("STG simulated fifo")
    if fifo:
        text += f"; FIFO mean {float(fifo['mean']):.4f}, worst {float(fifo['worst']):.4f}"
    return text, mean <= 1.01 and worst <= 1.25


def operations_ratio(medians, _printed):
    figure = medians["Operations 100k/AsyncOperation on OperationQueue"][WALL] / medians["Operations 100k/BlockOperation on OperationQueue (baseline)"][WALL]
    return f"{figure:.2f}x", figure <= 1.5


def bridge_vs_median(group):
    # The bridge against the queue's median (the queue is erratic, so not its best run).
    def check(medians, _printed):
        figure = medians[f"{group}/TaskGraph bridge"][WALL] / medians[f"{group}/OperationQueue addDependency (baseline)"][WALL]
        return f"{figure:.3f}x the queue's median", figure <= 1.0
    return check


def bridge_speedup(group):
    def check(medians, _printed):
        figure = medians[f"{group}/OperationQueue addDependency (baseline)"][WALL] / medians[f"{group}/TaskGraph bridge"][WALL]
        return f"{figure:.0f}x faster", figure >= 100
    return check


def http_overhead(group, baseline):
    def check(medians, _printed):
        figure = medians[f"{group}/HTTPCoordinator"][WALL] / medians[f"{group}/{baseline}"][WALL]
        return f"{figure:.2f}x ({(figure - 1) * 100:+.0f} %)", figure <= 1.10
    return check


TARGETS = [
    ("TaskGraph within 1.3x of the bare scheduler, 10k nodes", graph_ratio("10k", 1.3)),
    ("TaskGraph within 1.3x of the bare scheduler, 100k nodes", graph_ratio("100k", 1.3)),
    ("TaskGraph within 1.3x of the bare scheduler, 1M nodes", graph_ratio("1M", 1.3)),
    ("TaskGraph within 1.3x of the bare scheduler, deep random DAG, 10k nodes", graph_ratio("deep 10k", 1.3)),
    ("TaskGraph within 1.3x of the bare scheduler, deep random DAG, 100k nodes", graph_ratio("deep 100k", 1.3)),
    ("TaskGraph at most the bare scheduler's time (goal), 100k nodes", graph_ratio("100k", 1.0)),
    *[(f"TaskGraph at most the bare scheduler's time (issue 38), {size.replace('deep ', 'deep random DAG, ')} nodes",
       graph_ratio(size, 1.0))
      for size in ("1k", "10k", "1M", "deep 1k", "deep 10k", "deep 100k")],
    ("TaskGraph's fixed costs, a 1-node graph (reported, no goal)", graph_fixed_cost),
    ("TaskGraph cost per node flat from 10k to 1M nodes (within 1.2x)", graph_flat("10k", "1M")),
    ("TaskGraph cost per node flat from 10k to 100k nodes, deep random DAG", graph_flat("deep 10k", "deep 100k")),
    ("TaskGraph memory under 1 KB per node, 10k nodes", graph_memory("10k", with_build=False)),
    ("TaskGraph memory under 1 KB per node, 100k nodes", graph_memory("100k", with_build=True)),
    ("STG scheduling quality, critical path, 720 cases: mean <= 1.01, worst <= 1.25",
     lambda _medians, printed: stg_simulated(printed)),
    ("concurrentMap within 1.3x of the hand-written window", target_window_ratio),
    ("completions within 1.5x of concurrentMap", stream_vs_concurrent_map("completions")),
    ("orderedResults within 1.5x of concurrentMap", stream_vs_concurrent_map("orderedResults")),
    ("AsyncSemaphore wait()+signal() under 40 ns, uncontended",
     target_semaphore_ns("AsyncSemaphore wait+signal", "Semaphore", 40)),
    ("ConcurrencyLimiter acquire()+release() under 40 ns, uncontended",
     target_semaphore_ns("ConcurrencyLimiter acquire+release", "Semaphore", 40)),
    ("AsyncSemaphore withPermit under 400 ns per pair, 8 tasks on 1 permit",
     target_semaphore_ns("AsyncSemaphore, 8 tasks, 1 permit", "Semaphore contended", 400)),
    ("memory flat in inputs: concurrentMap returning Void", flat_memory("Memory concurrentMap Void")),
    ("memory flat in inputs: completions consumed", flat_memory("Memory completions")),
    ("control, must grow (the metric sees per-input state): unbounded TaskGroup",
     flat_memory("Memory unbounded TaskGroup (control)", expect_flat=False)),
    ("AsyncOperation within 1.5x of BlockOperation on OperationQueue", operations_ratio),
    ("HTTPCoordinator within 10 % of a bare window on URLSessionTransport, 10k GETs, limit 32",
     http_overhead("HTTP 10k GETs", "URLSession window (baseline)")),
    ("HTTPCoordinator within 10 % of a bare window on AsyncHTTPClientTransport, 10k GETs, limit 32",
     http_overhead("HTTP AHC 10k GETs", "AsyncHTTPClient window (baseline)")),
    ("TaskGraph bridge at least 100x faster than OperationQueue, 10k chain", bridge_speedup("Operations chain 10k")),
    ("TaskGraph bridge at least 100x faster than OperationQueue, 10k random DAG", bridge_speedup("Operations DAG 10k")),
    ("TaskGraph bridge at least 100x faster than OperationQueue, 10k layered DAG", bridge_speedup("Operations layered DAG 10k")),
    ("TaskGraph(operations:) at most the queue's median, 10k random DAG", bridge_vs_median("Operations DAG 10k")),
    ("TaskGraph(operations:) at most the queue's median, 10k layered DAG", bridge_vs_median("Operations layered DAG 10k")),
]


def metric_kind(metric):
    """'time', 'bytes' or 'count', from package-benchmark's metric description."""
    if metric.startswith("Time"):
        return "time"
    if metric.startswith("Memory"):
        return "bytes"
    return "count"


def format_value(value, kind):
    if value is None:
        return "-"
    if kind == "time":
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {unit}"
        return f"{value:.3g} ns"
    if kind == "bytes":
        for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {unit}"
        return f"{value:.0f} B"
    if value == int(value) and abs(value) >= 1:
        return f"{int(value):,}"
    return f"{value:.3g}"


def parse_influx(lines):
    """Returns {benchmark: {metric: median}} in first-seen order, plus, in the groups of
    MEMORY_PER_OP_GROUPS, the first iteration's resident peak delta as metric PEAK_DELTA_FIRST.

    Influx rows are: measurement, hostName, processorType, processors, memory, kernelVersion,
    metric, unit, test, percentile, value, test_average, iterations, warmup_iterations, time.
    Fields are read from the end so that a comma in a host description cannot shift them;
    a benchmark name with a comma arrives quoted, which the csv module handles.
    """
    medians = OrderedDict()
    for row in csv.reader(lines):
        if len(row) < 15 or row[0].startswith("#") or row[0] == "measurement":
            continue
        metric, test, percentile, value = row[-9], row[-7], row[-6], row[-5]
        try:
            percentile, value = float(percentile), float(value)
        except ValueError:
            continue  # not a result line (build output that happens to contain commas)
        if percentile == 50.0:
            medians.setdefault(test, OrderedDict())[metric] = value
        if metric == WALL and percentile in (0.0, 100.0):
            SPREADS.setdefault(test, {})[percentile] = value
        elif percentile == 0.0 and metric == PEAK_DELTA and group_of(test) in MEMORY_PER_OP_GROUPS:
            medians.setdefault(test, OrderedDict())[PEAK_DELTA_FIRST] = value
    return medians


# Wall-clock minimum and maximum of every benchmark ({name: {0.0: min, 100.0: max}}), filled by
# parse_influx; printed for the erratic OperationQueue baselines.
SPREADS = {}


def spread_report(medians):
    lines = []
    for name, extremes in SPREADS.items():
        if "OperationQueue" not in name or name not in medians or WALL not in medians[name]:
            continue
        low, high = extremes.get(0.0), extremes.get(100.0)
        if low is None or high is None:
            continue
        median = medians[name][WALL]
        lines.append(f"  {name}: min {format_value(low, 'time')} / median {format_value(median, 'time')}"
                     f" / max {format_value(high, 'time')}")
    return "\n".join(["", "OperationQueue wall clock, min / median / max over the iterations:"] + lines) if lines else ""


def group_of(name):
    return name.rsplit("/", 1)[0] if "/" in name else name


def table(medians):
    baselines = {}
    for name in medians:
        if name.endswith(BASELINE_MARK):
            baselines.setdefault(group_of(name), name)

    rows = [("Benchmark", "Metric", "Median", "Per op", "vs baseline")]
    for name, metrics in medians.items():
        group = group_of(name)
        ops = next((n for prefix, n in OPS_PER_ITERATION.items() if group.startswith(prefix)), None)
        baseline = baselines.get(group)
        for metric, median in metrics.items():
            kind = metric_kind(metric)
            per_op = None
            if ops and (kind in ("time", "count") or group in MEMORY_PER_OP_GROUPS):
                per_op = median / ops
            ratio = "-"
            if baseline is not None:
                reference = medians[baseline].get(metric)
                if name == baseline:
                    ratio = "1.00x (ref)"
                elif reference:
                    ratio = f"{median / reference:.2f}x"
            rows.append((name, metric, format_value(median, kind), format_value(per_op, kind), ratio))

    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def parse_printed(lines):
    """Returns the "STG …" lines, and {label: {field: value}} from their "label: k=v k=v" form."""
    kept, figures = [], OrderedDict()
    for line in lines:
        if not line.startswith(PRINTED_PREFIX):
            continue
        kept.append(line)
        label, _, rest = line.partition(": ")
        figures[label] = dict(field.split("=", 1) for field in rest.split() if "=" in field)
    return kept, figures


def target_report(medians, printed):
    lines = []
    for description, check in TARGETS:
        try:
            figure, met = check(medians, printed)
        except (KeyError, ZeroDivisionError, ValueError):
            continue
        lines.append(f"{'met    ' if met else 'MISSED '} {description}: {figure}")
    return "\n".join(["", "Targets:"] + lines) if lines else ""


def run_benchmarks(extra_arguments):
    command = [
        "swift", "package", "--package-path", PACKAGE_DIR, "benchmark",
        "--format", "influx", "--path", "stdout", "--no-progress",
    ] + extra_arguments
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    completed = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    return completed.returncode, completed.stdout


def main():
    parser = argparse.ArgumentParser(
        description="Run the Orchestra benchmarks and print medians with ratios to each group's baseline.",
        epilog="Unrecognised arguments (e.g. --filter REGEX) are passed to `swift package benchmark`.",
    )
    parser.add_argument("--from-file", metavar="CSV", help="read a saved influx CSV instead of running")
    parser.add_argument("--save", metavar="CSV", help="also write the raw influx CSV of this run here")
    options, extra = parser.parse_known_args()

    if options.from_file:
        status = 0
        with open(options.from_file, encoding="utf-8") as file:
            output = file.read()
    else:
        status, output = run_benchmarks(extra)
        if options.save:
            with open(options.save, "w", encoding="utf-8") as file:
                file.write(output)

    medians = parse_influx(output.splitlines())
    if not medians:
        sys.stdout.write(output)
        print("ratios.py: no benchmark results found in the output above", file=sys.stderr)
        return status or 1
    printed_lines, printed = parse_printed(output.splitlines())
    print(table(medians))
    if printed_lines:
        print("\nStandard Task Graph Set (printed by the Graph STG benchmarks):")
        print("\n".join(printed_lines))
    print(spread_report(medians))
    print(target_report(medians, printed))
    if status != 0:
        print(f"ratios.py: the benchmark run exited with status {status}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
